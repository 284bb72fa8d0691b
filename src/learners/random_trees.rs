//! Private ensembles of random decision trees on real-valued features with public bounds:
//! `private_random_tree` (Jagannathan, Pillaipakkamnatt & Wright 2009) and `private_forest`
//! (diffprivlib 0.6.6's `RandomForestClassifier`, after Fletcher & Islam).
//!
//! A random tree is grown without looking at the data: a full binary tree of depth `max_depth`
//! whose every internal node tests a feature drawn uniformly and a threshold drawn uniformly in
//! that feature's range within the node's box (the public bounds, narrowed by the ancestors'
//! cuts), as diffprivlib's `_FittingTree.build`. Its structure is therefore public randomness;
//! only the leaves read the data, and each row reaches exactly one leaf of a tree.
//!
//! # `private_random_tree`: relation, sensitivity, proof
//! `trees` random trees, each on all training rows. Each tree releases its leaf x class counts
//! plus Lap(r / (eps / trees)) noise: one example adds 1 to one count (L1 sensitivity 1; under
//! replace-one it may leave one leaf and enter another, 2), so each tree is (eps/trees)-DP and
//! the ensemble eps-DP by sequential composition. A row is classified by the largest sum over
//! the trees of the noisy counts of the leaves it reaches (their summed class distributions).
//!
//! # `private_forest`: relation, sensitivity, proof
//! The training rows are split into `trees` parts by independent uniform labels
//! (`privacy::partition::random_parts`: parallel composition needs the parts' law not to depend
//! on the data; diffprivlib cuts the row order into equal blocks, whose boundaries follow the
//! private row count). Tree t's leaves each choose their class by the exponential mechanism with
//! quality the part's class counts in that leaf (sensitivity 1), at eps. Under add/remove one
//! example is in one part and one leaf: one choice sees a neighbour, so the forest is eps-DP
//! (parallel composition). Under replace-one it may move between two leaves, so the quality
//! sensitivity is taken as 2 (each leaf's choice (eps/2)-DP, two of them eps). diffprivlib uses
//! permute-and-flip with the monotone bound; the exponential mechanism (non-monotone bound) is
//! the one epsilab has, and is at least as conservative. An empty leaf's counts are all 0, so
//! its class is uniform, as diffprivlib's random class for empty leaves. The forest votes.

use super::Classifier;
use super::trees::majority;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::learners::gaussian_nb::{Bounds, TrainRows};
use crate::privacy::exponential::Exponential;
use crate::privacy::{Laplace, Ledger};
use crate::rng::Rng;
use rand::Rng as _;

/// A data-independent full binary tree in heap order: internal node i has children 2i + 1
/// and 2i + 2; leaf k is node 2^depth - 1 + k.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomTree {
    pub depth: usize,
    /// Feature index (into `cols`) of each internal node.
    pub feature: Vec<usize>,
    pub threshold: Vec<f64>,
}

impl RandomTree {
    /// Draws the structure within the public box `[lo, hi]` of the columns `cols`.
    pub fn draw(depth: usize, cols: &[usize], bounds: &Bounds, rng: &mut Rng) -> RandomTree {
        let internal = (1usize << depth) - 1;
        let mut tree = RandomTree {
            depth,
            feature: vec![0; internal],
            threshold: vec![0.0; internal],
        };
        let lo: Vec<f64> = cols.iter().map(|&c| bounds.lo[c]).collect();
        let hi: Vec<f64> = cols.iter().map(|&c| bounds.hi[c]).collect();
        tree.fill(0, lo, hi, rng);
        tree
    }

    fn fill(&mut self, node: usize, lo: Vec<f64>, hi: Vec<f64>, rng: &mut Rng) {
        if node >= self.feature.len() {
            return;
        }
        let f = rng.gen_range(0..lo.len());
        let t = lo[f] + (hi[f] - lo[f]) * rng.r#gen::<f64>();
        self.feature[node] = f;
        self.threshold[node] = t;
        let (mut left_hi, mut right_lo) = (hi.clone(), lo.clone());
        left_hi[f] = t;
        right_lo[f] = t;
        self.fill(2 * node + 1, lo, left_hi, rng);
        self.fill(2 * node + 2, right_lo, hi, rng);
    }

    pub fn n_leaves(&self) -> usize {
        1 << self.depth
    }

    /// The leaf a row reaches (left when its value is <= the threshold).
    pub fn leaf(&self, x: impl Fn(usize) -> f64) -> usize {
        let mut node = 0;
        while node < self.feature.len() {
            node = if x(self.feature[node]) <= self.threshold[node] {
                2 * node + 1
            } else {
                2 * node + 2
            };
        }
        node - self.feature.len()
    }

    /// Exact leaf x class counts of `t.rows` (row-major by leaf).
    fn counts(&self, t: &TrainRows, rows: &[u32]) -> Vec<f64> {
        let mut c = vec![0.0; self.n_leaves() * t.n_classes];
        for &r in rows {
            let leaf = self.leaf(|j| t.value(r, j));
            c[leaf * t.n_classes + usize::from(t.labels[r as usize])] += 1.0;
        }
        c
    }
}

/// A fitted ensemble: each tree's leaf scores (leaf x class, row-major); a row's class is the
/// arg max of the summed scores of its leaves (ties to the lowest class).
#[derive(Debug, Clone, PartialEq)]
pub struct TreeEnsemble {
    pub trees: Vec<(RandomTree, Vec<f64>)>,
    pub n_classes: usize,
    pub cols: Vec<usize>,
}

impl TreeEnsemble {
    pub fn predict_values(&self, x: impl Fn(usize) -> f64) -> u16 {
        let k = self.n_classes;
        let mut sum = vec![0.0; k];
        for (tree, scores) in &self.trees {
            let leaf = tree.leaf(&x);
            for (s, v) in sum.iter_mut().zip(&scores[leaf * k..(leaf + 1) * k]) {
                *s += v;
            }
        }
        majority(&sum)
    }
}

impl Classifier for TreeEnsemble {
    fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Vec<u16>> {
        super::trees::predict_rows(data, rows, &self.cols, |x| self.predict_values(x))
    }
}

/// Settings shared by both private ensembles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomTreesParams {
    pub epsilon: f64,
    pub trees: usize,
    pub max_depth: usize,
}

/// Deeper trees have more than 2^20 leaves per tree: refused (memory), not a privacy limit.
pub const MAX_DEPTH: usize = 20;

impl RandomTreesParams {
    pub fn check(&self) -> Result<()> {
        crate::privacy::check_epsilon(self.epsilon)?;
        if self.trees == 0 {
            return Err(Error::param("trees", "must be at least 1"));
        }
        if self.max_depth > MAX_DEPTH {
            return Err(Error::param(
                "max_depth",
                format!("at most {MAX_DEPTH}, got {}", self.max_depth),
            ));
        }
        Ok(())
    }

    /// Fits `ensemble` (module docs). `structure` draws the trees (and the forest's parts),
    /// `noise` the Laplace noise or the exponential choices.
    pub fn fit(
        &self,
        ensemble: Ensemble,
        t: &TrainRows,
        bounds: &Bounds,
        structure: &mut Rng,
        noise: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<TreeEnsemble> {
        self.check()?;
        t.check()?;
        let relation = ledger.relation();
        let unit = relation.doubled_for_replace(1.0);
        let k = t.n_classes;
        let mut trees = Vec::with_capacity(self.trees);
        match ensemble {
            Ensemble::Jagannathan => {
                let each = self.epsilon / self.trees as f64;
                for _ in 0..self.trees {
                    let tree = RandomTree::draw(self.max_depth, t.cols, bounds, structure);
                    let mut counts = tree.counts(t, t.rows);
                    let lap = Laplace::new(unit, each, relation)?;
                    let mut charge =
                        ledger.charge("train", "laplace (random tree leaf counts)", lap)?;
                    counts.iter_mut().for_each(|c| *c += charge.sample(noise));
                    trees.push((tree, counts));
                }
            }
            Ensemble::Forest => {
                let parts =
                    crate::privacy::partition::random_parts(t.rows.len(), self.trees, structure);
                let em = Exponential::new(unit, self.epsilon, relation)?;
                let mut charge = ledger.charge(
                    "train",
                    "exponential (random forest leaf classes; parallel over parts and leaves)",
                    em,
                )?;
                for part in parts {
                    let rows: Vec<u32> = part.iter().map(|&i| t.rows[i]).collect();
                    let tree = RandomTree::draw(self.max_depth, t.cols, bounds, structure);
                    let counts = tree.counts(t, &rows);
                    let mut votes = vec![0.0; counts.len()];
                    for (leaf, q) in counts.chunks(k).enumerate() {
                        votes[leaf * k + charge.choose(q, noise)] = 1.0;
                    }
                    trees.push((tree, votes));
                }
            }
        }
        Ok(TreeEnsemble {
            trees,
            n_classes: k,
            cols: t.cols.to_vec(),
        })
    }
}

/// Which private ensemble [`RandomTreesParams::fit`] grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ensemble {
    /// `private_random_tree`: every tree on all rows, Laplace leaf counts at eps / trees each.
    Jagannathan,
    /// `private_forest`: disjoint random parts, one tree each, every leaf's class by the
    /// exponential mechanism at eps (parallel composition).
    Forest,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Relation;
    use crate::rng::rng_from;
    use ndarray::Array2;

    /// Class 1 exactly when x0 > 0.5 (x1 is noise), 4000 rows in [0, 1]^2.
    fn half_plane() -> (Array2<f64>, Vec<u16>) {
        let mut rng = rng_from(&["half-plane"]);
        let x = Array2::from_shape_fn((4000, 2), |_| rng.r#gen::<f64>());
        let y = x
            .rows()
            .into_iter()
            .map(|r| u16::from(r[0] > 0.5))
            .collect();
        (x, y)
    }

    /// Structure inside the bounds; the ledger adds up to eps with the stated sensitivities;
    /// at a large eps both ensembles learn the half-plane.
    #[test]
    fn both_ensembles_spend_eps_and_learn_at_large_epsilon() {
        let (x, y) = half_plane();
        let rows: Vec<u32> = (0..4000).collect();
        let t = TrainRows::two_columns(x.view(), &rows, &y);
        let b = Bounds::UNIT_SQUARE;
        let p = RandomTreesParams {
            epsilon: 50.0,
            trees: 10,
            max_depth: 4,
        };
        for relation in [Relation::AddRemove, Relation::ReplaceOne] {
            let r = relation.doubled_for_replace(1.0);
            let mut ledger = Ledger::new(relation);
            let (mut s, mut n) = (rng_from(&["s"]), rng_from(&["n"]));
            let jag = p
                .fit(Ensemble::Jagannathan, &t, &b, &mut s, &mut n, &mut ledger)
                .unwrap();
            assert_eq!(ledger.entries.len(), 10);
            assert!((ledger.total_epsilon() - 50.0).abs() < 1e-9);
            assert!(ledger.entries.iter().all(|e| e.sensitivity == Some(r)));
            let mut ledger = Ledger::new(relation);
            let forest = p
                .fit(Ensemble::Forest, &t, &b, &mut s, &mut n, &mut ledger)
                .unwrap();
            assert_eq!(ledger.entries.len(), 1);
            assert_eq!(ledger.total_epsilon(), 50.0);
            for model in [&jag, &forest] {
                let right = rows
                    .iter()
                    .filter(|&&r| {
                        let row = x.row(r as usize);
                        model.predict_values(|j| row[j]) == y[r as usize]
                    })
                    .count();
                assert!(right > 3000, "{right} of 4000");
                for (tree, _) in &model.trees {
                    assert!(tree.threshold.iter().all(|&v| (0.0..=1.0).contains(&v)));
                }
            }
        }
        let bad = RandomTreesParams { trees: 0, ..p };
        assert!(bad.check().is_err());
    }
}
