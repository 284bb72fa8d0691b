//! `private_id3`: Friedman & Schuster's (2010) differentially private ID3 ("DiffP-ID3", their
//! Algorithm 2) on real-valued features with public bounds.
//!
//! # The algorithm
//! ID3 splits on categorical attributes, each used at most once on a path. Each real feature is
//! made one by cutting its public range [lo, hi] into `bins` equal-width intervals (a value v is
//! in bin floor(bins (v - lo) / (hi - lo)), the top edge in the last bin): the attribute values
//! are fixed before the data is read. With d = `max_depth` and eps' = eps / (2 (d + 1)), a node
//! holding the rows T with the unused attributes A:
//! 1. releases its size N_T = |T| + Lap(Δ / eps');
//! 2. if A is empty, the node is at depth d, or N_T / (bins k) < sqrt(2) / eps' (k classes;
//!    Friedman & Schuster's rule: below it the class counts are mostly noise), it is a leaf:
//!    its class counts plus Lap(Δ / eps') each, and its class the largest noisy count (ties to
//!    the lowest class);
//! 3. else it splits on the attribute drawn by the exponential mechanism at eps' with the
//!    quality q(A) = sum over A's values j of max_c τ^j_c (their "max operator", τ^j_c the rows
//!    of class c with value j), one child per bin, and A leaves the children's sets.
//!
//! The max operator is the quality used here because its sensitivity is a constant; information
//! gain's, log(N + 1) + 1/ln 2 in their section 4, grows with the node's size, so its noise scale
//! would read a private count.
//!
//! # Relation, sensitivity, proof
//! Δ = 1 under add/remove and 2 under replace-one (`Relation::doubled_for_replace`) for every
//! release: a node size is a count; a leaf's class counts are a histogram (one example adds one
//! to one count); the max operator changes by at most 1 when an example is added or removed,
//! since it raises or lowers one τ^j_c by one and so one max_c τ^j_c by at most one. The exponential
//! mechanism with quality sensitivity Δ is eps'-DP.
//!
//! The nodes of one depth hold disjoint rows (a row goes to exactly one child of a split and is
//! in no deeper node once it reaches a leaf), and which nodes exist there follows from the
//! releases above them and the public bins alone, so by parallel composition each depth's sizes
//! cost eps' and its leaf counts and split choices eps' more (under replace-one the two rows of a
//! replacement may sit in two nodes; each node's release is then (eps'/2)-DP for the one change it
//! sees, since Δ was doubled, eps' for both). The d + 1 depths compose sequentially:
//! 2 eps' (d + 1) = eps; a tree that stops early spends less. The ledger records each depth's two
//! steps (`Ledger::absorb_parallel`).

use super::Classifier;
use super::trees::{class_counts, majority};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::learners::gaussian_nb::{Bounds, ColumnBounds, TrainRows};
use crate::privacy::exponential::Exponential;
use crate::privacy::{Laplace, Ledger};
use crate::rng::Rng;

/// Nodes a tree may have at most (bins^depth leaves): refused above (memory), no privacy limit.
pub const MAX_NODES: usize = 1 << 20;

/// A node of a fitted private ID3 tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Id3Node {
    /// A leaf: its noisy class counts and their arg max.
    Leaf { class: u16, counts: Vec<f64> },
    /// A split on `cols[feature]`: the child of bin b is node `first + b`.
    Split { feature: usize, first: usize },
}

/// The public discretisation: `bins` equal-width bins of each column's public range.
#[derive(Debug, Clone, PartialEq)]
pub struct Bins {
    pub bounds: ColumnBounds,
    pub bins: usize,
}

impl Bins {
    /// The bin of value `v` of feature `j` (clamped into the range; a constant column is one
    /// bin).
    pub fn of(&self, j: usize, v: f64) -> usize {
        let b = (self.bounds.unit(j, v) * self.bins as f64).floor();
        (b as usize).min(self.bins - 1)
    }
}

/// A fitted private ID3 tree over the dataset columns `cols` (node 0 is the root).
#[derive(Debug, Clone, PartialEq)]
pub struct Id3Tree {
    pub nodes: Vec<Id3Node>,
    pub cols: Vec<usize>,
    pub bins: Bins,
}

impl Id3Tree {
    /// The leaf a row reaches (its values at `cols`).
    pub fn leaf(&self, x: impl Fn(usize) -> f64) -> &Id3Node {
        let mut at = 0;
        while let Id3Node::Split { feature, first } = self.nodes[at] {
            at = first + self.bins.of(feature, x(feature));
        }
        &self.nodes[at]
    }

    pub fn predict_values(&self, x: impl Fn(usize) -> f64) -> u16 {
        match self.leaf(x) {
            Id3Node::Leaf { class, .. } => *class,
            Id3Node::Split { .. } => unreachable!("`leaf` walks to a leaf"),
        }
    }
}

impl Classifier for Id3Tree {
    fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Vec<u16>> {
        super::trees::predict_rows(data, rows, &self.cols, |x| self.predict_values(x))
    }
}

/// How a leaf's class counts are released: Laplace, or exactly (the audit's planted mutant).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum LeafNoise {
    Laplace,
    ExactMutant,
}

/// `private_id3`'s settings: total eps, public depth limit and bins per feature.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrivateId3Params {
    pub epsilon: f64,
    pub max_depth: usize,
    pub bins: usize,
}

/// A node still to be grown: its index, rows and unused attributes.
struct Open {
    at: usize,
    rows: Vec<u32>,
    unused: Vec<usize>,
}

impl PrivateId3Params {
    pub fn check(&self) -> Result<()> {
        crate::privacy::check_epsilon(self.epsilon)?;
        if self.bins < 2 {
            return Err(Error::param("bins", "must be at least 2"));
        }
        let leaves = u32::try_from(self.max_depth)
            .ok()
            .and_then(|d| self.bins.checked_pow(d));
        if leaves.is_none_or(|l| l > MAX_NODES) {
            return Err(Error::param(
                "max_depth",
                format!("bins^max_depth must stay at most {MAX_NODES}"),
            ));
        }
        Ok(())
    }

    /// Each step's epsilon: eps / (2 (d + 1)).
    pub fn level_epsilon(&self) -> f64 {
        self.epsilon / (2.0 * (self.max_depth as f64 + 1.0))
    }

    /// Grows the tree on `t.rows` (module docs); `noise` draws every release.
    pub fn fit(
        &self,
        t: &TrainRows,
        bounds: &Bounds,
        noise: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<Id3Tree> {
        self.fit_with(t, bounds, noise, ledger, LeafNoise::Laplace)
    }

    pub(crate) fn fit_with(
        &self,
        t: &TrainRows,
        bounds: &Bounds,
        noise: &mut Rng,
        ledger: &mut Ledger,
        leaf_noise: LeafNoise,
    ) -> Result<Id3Tree> {
        self.check()?;
        t.check()?;
        let bins = Bins {
            bounds: bounds.columns(t.cols),
            bins: self.bins,
        };
        let mut tree = Id3Tree {
            nodes: vec![Id3Node::Split {
                feature: 0,
                first: 0,
            }],
            cols: t.cols.to_vec(),
            bins,
        };
        let mut open = vec![Open {
            at: 0,
            rows: t.rows.to_vec(),
            unused: (0..t.cols.len()).collect(),
        }];
        for depth in 0..=self.max_depth {
            if open.is_empty() {
                break;
            }
            open = self.grow_level(t, &mut tree, open, depth, noise, ledger, leaf_noise)?;
        }
        Ok(tree)
    }

    /// One depth: every open node's size, then its leaf counts or split (parallel over the
    /// nodes, module docs); returns the children to grow at the next depth.
    #[allow(clippy::too_many_arguments)]
    fn grow_level(
        &self,
        t: &TrainRows,
        tree: &mut Id3Tree,
        open: Vec<Open>,
        depth: usize,
        noise: &mut Rng,
        ledger: &mut Ledger,
        leaf_noise: LeafNoise,
    ) -> Result<Vec<Open>> {
        let (eps, relation) = (self.level_epsilon(), ledger.relation());
        let delta = relation.doubled_for_replace(1.0);
        let (mut sizes, mut choices) = (ledger.scratch(), ledger.scratch());
        let floor = std::f64::consts::SQRT_2 / eps * (self.bins * t.n_classes) as f64;
        let mut next = Vec::new();
        for node in open {
            let lap = Laplace::new(delta, eps, relation)?;
            let size = node.rows.len() as f64
                + sizes
                    .charge("train", "laplace (node size)", lap)?
                    .sample(noise);
            if node.unused.is_empty() || depth == self.max_depth || size < floor {
                let mut counts = class_counts(t, &node.rows);
                let lap = Laplace::new(delta, eps, relation)?;
                let mut charge = choices.charge("train", "laplace (leaf class counts)", lap)?;
                if leaf_noise == LeafNoise::Laplace {
                    counts.iter_mut().for_each(|c| *c += charge.sample(noise));
                }
                let class = majority(&counts);
                tree.nodes[node.at] = Id3Node::Leaf { class, counts };
                continue;
            }
            let q: Vec<f64> = (node.unused.iter())
                .map(|&j| max_operator(t, &tree.bins, &node.rows, j))
                .collect();
            let em = Exponential::new(delta, eps, relation)?;
            let label = "exponential (split attribute, max operator)";
            let pick = choices.charge("train", label, em)?.choose(&q, noise);
            next.extend(split(t, tree, node, pick));
        }
        let at = format!("depth {depth}; parallel over its nodes");
        let sizes_label = format!("laplace (node sizes, {at})");
        ledger.absorb_parallel(sizes, "train", &sizes_label)?;
        let label = format!("laplace leaf counts / exponential split choice ({at})");
        ledger
            .absorb_parallel(choices, "train", &label)
            .map(|()| next)
    }
}

/// Splits `node` on its unused attribute number `pick`: one child per bin, appended to the tree.
fn split(t: &TrainRows, tree: &mut Id3Tree, node: Open, pick: usize) -> Vec<Open> {
    let feature = node.unused[pick];
    let first = tree.nodes.len();
    let unused: Vec<usize> = node.unused.into_iter().filter(|&j| j != feature).collect();
    let mut children: Vec<Open> = (0..tree.bins.bins)
        .map(|b| Open {
            at: first + b,
            rows: Vec::new(),
            unused: unused.clone(),
        })
        .collect();
    for r in node.rows {
        children[tree.bins.of(feature, t.value(r, feature))]
            .rows
            .push(r);
    }
    tree.nodes.extend(children.iter().map(|_| Id3Node::Split {
        feature: 0,
        first: 0,
    }));
    tree.nodes[node.at] = Id3Node::Split { feature, first };
    children
}

/// Friedman & Schuster's max operator: sum over the bins j of feature `j` of the largest class
/// count among `rows` in bin j.
fn max_operator(t: &TrainRows, bins: &Bins, rows: &[u32], j: usize) -> f64 {
    let k = t.n_classes;
    let mut counts = vec![0.0; bins.bins * k];
    for &r in rows {
        counts[bins.of(j, t.value(r, j)) * k + usize::from(t.labels[r as usize])] += 1.0;
    }
    counts
        .chunks(k)
        .map(|c| c.iter().copied().fold(0.0, f64::max))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Relation;
    use crate::rng::rng_from;
    use ndarray::Array2;
    use rand::Rng as _;

    /// Class 1 exactly when x0 > 0.5 (x1 is noise): `n` rows in [0, 1]^2, and `p` fitted on
    /// them under `relation` (its tree, ledger and training accuracy).
    fn fit_half_plane(n: usize, p: PrivateId3Params, relation: Relation) -> (Id3Tree, Ledger, f64) {
        let mut rng = rng_from(&["id3-half-plane"]);
        let x = Array2::from_shape_fn((n, 2), |_| rng.r#gen::<f64>());
        let y: Vec<u16> = (x.rows().into_iter())
            .map(|r| u16::from(r[0] > 0.5))
            .collect();
        let rows: Vec<u32> = (0..n as u32).collect();
        let t = TrainRows::two_columns(x.view(), &rows, &y);
        let b = Bounds::UNIT_SQUARE;
        let mut ledger = Ledger::new(relation);
        let tree = p.fit(&t, &b, &mut rng_from(&["n"]), &mut ledger).unwrap();
        let right = (rows.iter())
            .filter(|&&r| tree.predict_values(|j| x[[r as usize, j]]) == y[r as usize])
            .count();
        (tree, ledger, right as f64 / n as f64)
    }

    /// At a large eps the tree splits on x0 first and learns the half-plane; the ledger has
    /// two parallel steps per depth grown, each eps' with the relation's Δ, within eps.
    #[test]
    fn the_tree_learns_the_half_plane_within_its_budget() {
        let p = PrivateId3Params {
            epsilon: 20.0,
            max_depth: 2,
            bins: 2,
        };
        for relation in [Relation::AddRemove, Relation::ReplaceOne] {
            let (tree, ledger, accuracy) = fit_half_plane(4000, p, relation);
            assert_eq!(
                tree.nodes[0],
                Id3Node::Split {
                    feature: 0,
                    first: 1
                }
            );
            assert!(accuracy > 0.975, "{accuracy}");
            let per = p.level_epsilon();
            assert_eq!(ledger.entries.len(), 2 * 3);
            assert!(ledger.entries.iter().all(|e| e.epsilon == Some(per)));
            let delta = relation.doubled_for_replace(1.0);
            assert!(ledger.entries.iter().all(|e| e.sensitivity == Some(delta)));
            assert!(ledger.is_private_within(Some(20.0)));
        }
    }

    /// At a tiny eps the noisy root size is below the floor: a lone leaf, two steps spent.
    #[test]
    fn a_small_noisy_count_stops_at_the_root() {
        let p = PrivateId3Params {
            epsilon: 0.01,
            max_depth: 3,
            bins: 4,
        };
        let (tree, ledger, _) = fit_half_plane(40, p, Relation::AddRemove);
        assert!(matches!(tree.nodes[..], [Id3Node::Leaf { .. }]));
        assert_eq!(ledger.entries.len(), 2);
        assert!((ledger.total_epsilon() - 2.0 * p.level_epsilon()).abs() < 1e-15);
        let bad = [
            PrivateId3Params { bins: 1, ..p },
            PrivateId3Params {
                max_depth: 21,
                bins: 2,
                ..p
            },
            PrivateId3Params { epsilon: 0.0, ..p },
        ];
        assert!(bad.iter().all(|b| b.check().is_err()));
    }

    /// Bins: equal width over the public range, edges and outside values clamped.
    #[test]
    fn bins_cut_the_public_range_evenly() {
        let b = Bins {
            bounds: ColumnBounds {
                lo: vec![0.0, 5.0],
                hi: vec![1.0, 5.0],
            },
            bins: 4,
        };
        let got: Vec<usize> = [-1.0, 0.0, 0.26, 0.5, 0.99, 1.0, 7.0]
            .iter()
            .map(|&v| b.of(0, v))
            .collect();
        assert_eq!(got, vec![0, 0, 1, 2, 3, 3, 3]);
        assert_eq!(b.of(1, 5.0), 0, "a constant column is one bin");
    }
}
