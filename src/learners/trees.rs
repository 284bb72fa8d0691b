//! Non-private decision trees and forests on real-valued features: `tree` (CART with the Gini
//! split rule as scikit-learn's `DecisionTreeClassifier`) and `forest` (bagged CART trees with
//! sqrt(D) candidate features per split, as scikit-learn's `RandomForestClassifier`; the same
//! algorithm, not the same random draws, and a hard vote where scikit-learn averages the trees'
//! class probabilities). Both are references without a privacy guarantee.
//! `tests/sklearn_baselines.rs` checks the bagging with all features as candidates: each tree
//! equals scikit-learn's tree on the same bootstrap sample passed as sample weights.
//!
//! The split rule (scikit-learn's `BestSplitter` with `criterion="gini"`): at a node, over every
//! candidate feature and every cut between two consecutive distinct sorted values (values closer
//! than 1e-7 count as equal), take the cut maximising -n_r gini_r - n_l gini_l (scikit-learn's
//! proxy of the weighted Gini decrease) at threshold (v_p + v_{p+1}) / 2; a row goes left when
//! its value is <= the threshold. A node is a leaf at `max_depth`, when pure, below two rows, or
//! when every candidate feature is constant there; a leaf predicts its majority class (ties to
//! the lowest class index). Candidate features are scanned in index order, so among splits of
//! exactly equal score the lowest feature wins; scikit-learn scans them in a random order, so
//! where several features tie (small nodes) the two may pick different ones
//! (`tests/sklearn_baselines.rs` compares them where no split ties).

use super::Classifier;
use crate::data::Dataset;
use crate::error::Result;
use crate::learners::gaussian_nb::{TrainRows, dense};
use crate::rng::Rng;
use rand::Rng as _;
use rand::seq::SliceRandom;

/// scikit-learn's `FEATURE_THRESHOLD`: values closer than this are one value.
const FEATURE_THRESHOLD: f64 = 1e-7;

/// A node of a fitted tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Leaf {
        class: u16,
    },
    /// Go to `left` when the value of column `cols[feature]` is <= `threshold`.
    Split {
        feature: usize,
        threshold: f64,
        left: usize,
        right: usize,
    },
}

/// A fitted decision tree (node 0 is the root) over the dataset columns `cols`.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionTree {
    pub nodes: Vec<Node>,
    pub cols: Vec<usize>,
}

impl DecisionTree {
    /// The leaf class of one row (its values at `cols`).
    pub fn predict_values(&self, x: impl Fn(usize) -> f64) -> u16 {
        let mut at = 0;
        loop {
            match self.nodes[at] {
                Node::Leaf { class } => return class,
                Node::Split {
                    feature,
                    threshold,
                    left,
                    right,
                } => at = if x(feature) <= threshold { left } else { right },
            }
        }
    }

    /// The depth of the deepest leaf (a lone leaf has depth 0).
    pub fn depth(&self) -> usize {
        fn walk(nodes: &[Node], at: usize) -> usize {
            match nodes[at] {
                Node::Leaf { .. } => 0,
                Node::Split { left, right, .. } => 1 + walk(nodes, left).max(walk(nodes, right)),
            }
        }
        walk(&self.nodes, 0)
    }

    pub fn n_leaves(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| matches!(n, Node::Leaf { .. }))
            .count()
    }
}

impl Classifier for DecisionTree {
    fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Vec<u16>> {
        predict_rows(data, rows, &self.cols, |x| self.predict_values(x))
    }
}

/// The class `predict` gives each of `rows` of a dense dataset, from its values at `cols`
/// (`predict` reads column j of `cols` as its feature j).
pub(crate) fn predict_rows(
    data: &Dataset,
    rows: &[u32],
    cols: &[usize],
    predict: impl Fn(&dyn Fn(usize) -> f64) -> u16,
) -> Result<Vec<u16>> {
    let x = dense(data)?;
    Ok(rows
        .iter()
        .map(|&r| {
            let row = x.row(r as usize);
            predict(&|j| row[cols[j]])
        })
        .collect())
}

/// CART's settings: the depth limit and how many features each split may consider.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CartParams {
    pub max_depth: usize,
    /// Candidate features drawn per split (without replacement); `None`: all, in index order.
    pub max_features: Option<usize>,
}

/// The best cut of one node: (score, feature, threshold).
type Cut = (f64, usize, f64);

impl CartParams {
    /// Grows a tree on `t.rows` (`rng` draws the candidate features when `max_features` is set).
    pub fn fit_rows(&self, t: &TrainRows, rng: &mut Rng) -> DecisionTree {
        let mut tree = DecisionTree {
            nodes: Vec::new(),
            cols: t.cols.to_vec(),
        };
        self.grow(t, t.rows.to_vec(), 0, &mut tree.nodes, rng);
        tree
    }

    /// Appends the subtree of `rows` at `depth` and returns its node index.
    fn grow(
        &self,
        t: &TrainRows,
        rows: Vec<u32>,
        depth: usize,
        nodes: &mut Vec<Node>,
        rng: &mut Rng,
    ) -> usize {
        let counts = class_counts(t, &rows);
        let at = nodes.len();
        nodes.push(Node::Leaf {
            class: majority(&counts),
        });
        let pure = counts.iter().filter(|&&c| c > 0.0).count() <= 1;
        if depth >= self.max_depth || rows.len() < 2 || pure {
            return at;
        }
        let Some((_, feature, threshold)) = self.best_cut(t, &rows, &counts, rng) else {
            return at;
        };
        let (l, r): (Vec<u32>, Vec<u32>) = rows
            .iter()
            .partition(|&&row| t.value(row, feature) <= threshold);
        let left = self.grow(t, l, depth + 1, nodes, rng);
        let right = self.grow(t, r, depth + 1, nodes, rng);
        nodes[at] = Node::Split {
            feature,
            threshold,
            left,
            right,
        };
        at
    }

    /// The best Gini cut over the candidate features, or `None` if all are constant here.
    fn best_cut(&self, t: &TrainRows, rows: &[u32], counts: &[f64], rng: &mut Rng) -> Option<Cut> {
        let d = t.cols.len();
        let mut features: Vec<usize> = (0..d).collect();
        if let Some(m) = self.max_features.filter(|&m| m < d) {
            features.partial_shuffle(rng, m);
            features.truncate(m);
            features.sort_unstable();
        }
        let mut best: Option<Cut> = None;
        let mut sorted: Vec<(f64, u16)> = Vec::with_capacity(rows.len());
        for j in features {
            sorted.clear();
            sorted.extend(rows.iter().map(|&r| (t.value(r, j), t.labels[r as usize])));
            sorted.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((score, thr)) = best_cut_on(&sorted, counts)
                && best.is_none_or(|b| score > b.0)
            {
                best = Some((score, j, thr));
            }
        }
        best
    }
}

/// The best cut of one feature's sorted (value, class) pairs: (score, threshold).
fn best_cut_on(sorted: &[(f64, u16)], counts: &[f64]) -> Option<(f64, f64)> {
    let n = sorted.len() as f64;
    let mut left = vec![0.0; counts.len()];
    let mut best: Option<(f64, f64)> = None;
    for p in 1..sorted.len() {
        left[usize::from(sorted[p - 1].1)] += 1.0;
        let (lo, hi) = (sorted[p - 1].0, sorted[p].0);
        if hi <= lo + FEATURE_THRESHOLD {
            continue;
        }
        let (nl, nr) = (p as f64, n - p as f64);
        let (mut sl, mut sr) = (0.0, 0.0);
        for (c, &l) in left.iter().enumerate() {
            sl += l * l;
            sr += (counts[c] - l) * (counts[c] - l);
        }
        // scikit-learn's proxy, -n_r gini_r - n_l gini_l, in its order of operations, so
        // mathematically equal cuts round the same way.
        let score = -(nr * (1.0 - sr / (nr * nr))) - nl * (1.0 - sl / (nl * nl));
        if best.is_none_or(|b| score > b.0) {
            let mut thr = lo / 2.0 + hi / 2.0;
            if thr == hi || !thr.is_finite() {
                thr = lo;
            }
            best = Some((score, thr));
        }
    }
    best
}

/// Class counts of `rows`.
pub(crate) fn class_counts(t: &TrainRows, rows: &[u32]) -> Vec<f64> {
    let mut c = vec![0.0; t.n_classes];
    for &r in rows {
        c[usize::from(t.labels[r as usize])] += 1.0;
    }
    c
}

/// The index of the largest count (ties to the lowest index).
pub(crate) fn majority(counts: &[f64]) -> u16 {
    let mut best = 0;
    for (c, &v) in counts.iter().enumerate() {
        if v > counts[best] {
            best = c;
        }
    }
    best as u16
}

/// A fitted forest: each tree votes, the most votes wins (ties to the lowest class).
#[derive(Debug, Clone, PartialEq)]
pub struct Forest {
    pub trees: Vec<DecisionTree>,
    pub n_classes: usize,
}

impl Classifier for Forest {
    fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Vec<u16>> {
        let x = dense(data)?;
        let mut votes = vec![0.0; self.n_classes];
        Ok(rows
            .iter()
            .map(|&r| {
                let row = x.row(r as usize);
                votes.iter_mut().for_each(|v| *v = 0.0);
                for t in &self.trees {
                    votes[usize::from(t.predict_values(|j| row[t.cols[j]]))] += 1.0;
                }
                majority(&votes)
            })
            .collect())
    }
}

/// `forest`: `trees` CART trees, each on a bootstrap sample of the training rows, with
/// round(sqrt(D)) candidate features per split (at least 1).
pub fn fit_forest(t: &TrainRows, trees: usize, max_depth: usize, rng: &mut Rng) -> Forest {
    let d = t.cols.len();
    let cart = CartParams {
        max_depth,
        max_features: Some(((d as f64).sqrt().round() as usize).max(1)),
    };
    fit_bagged(t, trees, cart, rng).0
}

/// `trees` trees of `cart`, each on its own bootstrap sample of `t.rows` (n draws with
/// replacement, drawn just before the tree is grown from the same `rng`), and the samples: the
/// rows of each tree, duplicates included (`tests/sklearn_baselines.rs` hands them to
/// scikit-learn as sample weights).
pub fn fit_bagged(
    t: &TrainRows,
    trees: usize,
    cart: CartParams,
    rng: &mut Rng,
) -> (Forest, Vec<Vec<u32>>) {
    let n = t.rows.len();
    let (fitted, samples) = (0..trees)
        .map(|_| {
            let sample: Vec<u32> = (0..n).map(|_| t.rows[rng.gen_range(0..n)]).collect();
            let part = TrainRows {
                x: t.x.view(),
                rows: &sample,
                labels: t.labels,
                n_classes: t.n_classes,
                cols: t.cols,
            };
            (cart.fit_rows(&part, rng), sample)
        })
        .unzip();
    let forest = Forest {
        trees: fitted,
        n_classes: t.n_classes,
    };
    (forest, samples)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from;
    use ndarray::array;

    /// Class 1 exactly when x0 > 2; x1 is noise: the root cuts x0 at the midpoint 2.5.
    #[test]
    fn cart_cuts_at_the_midpoint_of_the_best_gini_split() {
        let x = array![[1.0, 5.0], [2.0, 1.0], [3.0, 4.0], [4.0, 2.0], [2.0, 3.0]];
        let labels = [0u16, 0, 1, 1, 0];
        let rows = [0u32, 1, 2, 3, 4];
        let t = TrainRows::two_columns(x.view(), &rows, &labels);
        let mut rng = rng_from(&["cart"]);
        let tree = CartParams {
            max_depth: 3,
            max_features: None,
        }
        .fit_rows(&t, &mut rng);
        assert_eq!(
            tree.nodes[0],
            Node::Split {
                feature: 0,
                threshold: 2.5,
                left: 1,
                right: 2
            }
        );
        assert_eq!((tree.depth(), tree.n_leaves()), (1, 2));
        let stump = CartParams {
            max_depth: 0,
            max_features: None,
        }
        .fit_rows(&t, &mut rng);
        assert_eq!(stump.nodes, vec![Node::Leaf { class: 0 }]);
        let forest = fit_forest(&t, 15, 2, &mut rng);
        assert_eq!(forest.trees.len(), 15);
        assert!(forest.trees.iter().all(|t| t.depth() <= 2));
    }
}
