//! Audits of the real-valued classifiers (issue 50), each beside a planted mutant it must catch:
//!
//! * `private_gnb` (add/remove, eps = 1): one feature with public bounds [0, 1]; X = one row of
//!   class 0 at 0.5 and one of class 1 at 0.5, X' = X plus a class-0 row at 1. Statistic: the
//!   released prior of class 0 (n~_0 / (n~_0 + n~_1)), which reads the class-count release
//!   (eps/3). Mutant `private_gnb_exact_counts`: the class counts released without noise (the
//!   prior is 1/2 on X and 2/3 on X' every time: infinite privacy loss).
//! * `private_gnb_sums` (add/remove, the class-sum release's own eps/3 of eps = 1): two
//!   features in [0, 1]; X = 200 class-0 rows at (0.5, 0.5) and one class-1 row, X' = X plus a
//!   class-0 row at (1, 1), which moves the class-0 sums by D = 2 in L1. Statistic: the Laplace
//!   log-likelihood ratio of the noisy class-0 sums, read back from the released means. Mutant
//!   `private_gnb_sums_unit_sensitivity`: the sums calibrated for sensitivity 1 instead of D
//!   (real eps 2/3 of the release's claimed 1/3).
//! * `private_random_tree` (add/remove, eps = 1, 10 trees of depth 0, one feature in [0, 1]):
//!   X = {(0.5, c0)}, X' = X + (0.5, c1). Statistic: the class-1 noisy count summed over the
//!   trees. Mutant `private_random_tree_budget_not_split`: each tree's Laplace at eps instead
//!   of eps/10 (real eps 10).
//! * `private_forest` (add/remove, eps = 1, 10 trees of depth 0, same pair). Statistic: the
//!   number of trees whose leaf chose class 1. Mutant `private_forest_all_rows`: every tree
//!   fitted on all rows instead of its own random part (no parallel composition: real eps 10).
//! * `private_id3` (add/remove, eps = 1, depth 1, 2 bins, one feature in [0, 1]): X =
//!   {(0.5, c0)}, X' = X + (0.5, c1). Statistic: the noisy class-1 counts summed over the
//!   leaves (the root is a leaf unless its noisy size clears the floor). Mutant
//!   `private_id3_exact_leaf_counts`: the leaf counts released without noise (infinite loss).
//! * `svm_rff_output`, `svm_rff_objective` (and its Delta branch): the Huber SVM's output and
//!   objective perturbation on rows mapped by `RffMap` with one component chosen so that the
//!   features are the worst-case neighbours of `svm_output` and `svm_objective`
//!   (`audit::logistic`, `LrOutput::rff`, `LrObjective::rff`). Mutants: the `lambda_twice`
//!   noise (N times too small) and the Delta branch without its Delta.

use super::logistic::{LrObjective, LrOutput};
use super::{Auditable, Claim, Side, with_mutant};
use crate::learners::gaussian_nb::{Bounds, Planted, PrivateGnbParams, Released, TrainRows};
use crate::learners::private_id3::{Id3Node, LeafNoise, PrivateId3Params};
use crate::learners::random_trees::{Ensemble, RandomTreesParams, TreeEnsemble};
use crate::privacy::{Ledger, Relation};
use crate::rng::Rng;
use linfa::ParamGuard;
use ndarray::array;
use rand::Rng as _;

/// The classifier audits, in report order: each correct row, then its mutant.
pub fn all() -> Vec<Box<dyn Auditable>> {
    let gnb = "one feature in [0, 1]: X = {(0.5, c0), (0.5, c1)}, X' = X + (1, c0); statistic: \
               the released class-0 prior";
    let gnb_sums = "the class-sum release (eps/3 of the fit's eps), two features in [0, 1]: X = \
                    200 rows (0.5, 0.5, c0) and one (0.5, 0.5, c1), X' = X + (1, 1, c0); \
                    statistic: Laplace log-likelihood ratio of the class-0 noisy sums";
    let jag = "10 trees of depth 0: X = {(0.5, c0)}, X' = X + (0.5, c1); statistic: the class-1 \
               noisy count summed over the trees";
    let forest = "10 trees of depth 0: X = {(0.5, c0)}, X' = X + (0.5, c1); statistic: the trees \
                  voting class 1";
    let trees = |forest: bool| {
        move |c: &Claim, side: Side, rng: &mut Rng| random_trees(c, forest, side, rng)
    };
    let claim = |name, neighbours, kind| Claim::new(name, EPS, neighbours).covers(kind);
    let rff: [Box<dyn Auditable>; 5] = [
        Box::new(LrOutput::rff(EPS, 1.0, false)),
        Box::new(LrOutput::rff(EPS, 1.0, true)),
        Box::new(LrObjective::rff(EPS, 1.0, false)),
        Box::new(LrObjective::rff(EPS, 0.01, false)),
        Box::new(LrObjective::rff(EPS, 0.01, true)),
    ];
    let correct_and_mutant = [
        with_mutant(
            claim("private_gnb", gnb, &["learner:private_gnb"]),
            "private_gnb_exact_counts",
            private_gnb,
        ),
        with_mutant(
            Claim::new("private_gnb_sums", EPS / 3.0, gnb_sums).covers(&["learner:private_gnb"]),
            "private_gnb_sums_unit_sensitivity",
            private_gnb_sums,
        ),
        with_mutant(
            claim("private_random_tree", jag, &["learner:private_random_tree"]),
            "private_random_tree_budget_not_split",
            trees(false),
        ),
        with_mutant(
            claim("private_forest", forest, &["learner:private_forest"]),
            "private_forest_all_rows",
            trees(true),
        ),
        with_mutant(
            claim("private_id3", id3_pair(), &["learner:private_id3"]),
            "private_id3_exact_leaf_counts",
            private_id3,
        ),
    ];
    correct_and_mutant
        .into_iter()
        .flatten()
        .chain(rff)
        .collect()
}

const EPS: f64 = 1.0;

/// The public bounds of the audits' one feature.
const UNIT: Bounds<'static> = Bounds {
    lo: &[0.0],
    hi: &[1.0],
};

/// The private Gaussian NB's releases on an add/remove pair (the mutant: exact counts).
fn private_gnb(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
    let x = array![[0.5], [0.5], [1.0]];
    let labels = [0u16, 1, 0];
    let rows: &[u32] = side.pick(&[0, 1][..], &[0, 1, 2][..]);
    let t = TrainRows {
        x: x.view(),
        rows,
        labels: &labels,
        n_classes: 2,
        cols: &[0],
    };
    let r = gnb_release(&t, &UNIT, planted(claim, Planted::ExactCounts), rng);
    r.counts[0] / (r.counts[0] + r.counts[1])
}

/// `mutant` for a claim's planted mutant, else the releases as proven.
fn planted(claim: &Claim, mutant: Planted) -> Planted {
    if claim.mutant { mutant } else { Planted::None }
}

/// The private Gaussian NB's three releases at [`EPS`] under add/remove, as proven or with
/// the `planted` mutant.
fn gnb_release(t: &TrainRows, bounds: &Bounds, planted: Planted, rng: &mut Rng) -> Released {
    let p = PrivateGnbParams::new(EPS).check().expect("valid");
    let mut ledger = Ledger::new(Relation::AddRemove);
    p.release(t, bounds, rng, &mut ledger, planted)
        .expect("valid release")
}

/// The class-0 rows of the sums audit's X.
const GNB_SUMS_ROWS: usize = 200;

/// The private Gaussian NB's class-sum release on a two-feature add/remove pair, read back
/// from the released means (noisy sum = mean × noisy count; at 200 rows no mean is clamped
/// but with probability about 1e-7). The mutant calibrates the sums for sensitivity 1, not D.
fn private_gnb_sums(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
    let n = GNB_SUMS_ROWS;
    let mut x = ndarray::Array2::from_elem((n + 2, 2), 0.5);
    x.row_mut(n + 1).fill(1.0);
    let mut labels = vec![0u16; n + 2];
    labels[n] = 1;
    let all: Vec<u32> = (0..(n + 2) as u32).collect();
    let rows = side.pick(&all[..n + 1], &all[..]);
    let t = TrainRows {
        x: x.view(),
        rows,
        labels: &labels,
        n_classes: 2,
        cols: &[0, 1],
    };
    let planted = planted(claim, Planted::SumsAtUnitSensitivity);
    let r = gnb_release(&t, &Bounds::UNIT_SQUARE, planted, rng);
    let noisy: Vec<f64> = r.mean.row(0).iter().map(|m| m * r.counts[0]).collect();
    let exact = |side| match side {
        Side::X => 0.5 * n as f64,
        Side::XPrime => 0.5 * n as f64 + 1.0,
    };
    // Claimed scale: sensitivity D = 2 at eps/3.
    let scale = 2.0 / (EPS / 3.0);
    noisy
        .iter()
        .map(|o| ((o - exact(Side::X)).abs() - (o - exact(Side::XPrime)).abs()) / scale)
        .sum()
}

/// Trees per audited ensemble.
const TREES: usize = 10;

/// The class-1 scores summed over the trees of one random-tree ensemble on the add/remove
/// pair: `private_random_tree`'s, or `private_forest`'s when `forest`.
fn random_trees(claim: &Claim, forest: bool, side: Side, rng: &mut Rng) -> f64 {
    with_pair(side, |t| ensemble(claim.mutant, forest, t, rng))
        .trees
        .iter()
        .map(|(_, scores)| scores[1])
        .sum()
}

/// The ensemble of one run (the mutants through the same code: each tree at the whole eps,
/// or ten one-tree forests on all rows).
fn ensemble(mutant: bool, forest: bool, t: &TrainRows, rng: &mut Rng) -> TreeEnsemble {
    let mut ledger = Ledger::new(Relation::AddRemove);
    let p = |epsilon, trees| RandomTreesParams {
        epsilon,
        trees,
        max_depth: 0,
    };
    let mut structure = crate::rng::rng_from(&["audit", "structure"]);
    if !forest {
        let eps = if mutant { EPS * TREES as f64 } else { EPS };
        let p = p(eps, TREES);
        return p
            .fit(
                Ensemble::Jagannathan,
                t,
                &UNIT,
                &mut structure,
                rng,
                &mut ledger,
            )
            .expect("valid");
    }
    if !mutant {
        let p = p(EPS, TREES);
        // The parts are public randomness, but drawn fresh each run like the noise.
        let mut parts = crate::rng::rng_from(&["audit", &rng.r#gen::<u64>().to_string()]);
        return p
            .fit(Ensemble::Forest, t, &UNIT, &mut parts, rng, &mut ledger)
            .expect("valid");
    }
    let mut all = TreeEnsemble {
        trees: Vec::new(),
        n_classes: 2,
        cols: vec![0],
    };
    for _ in 0..TREES {
        let one = p(EPS, 1)
            .fit(Ensemble::Forest, t, &UNIT, &mut structure, rng, &mut ledger)
            .expect("valid");
        all.trees.extend(one.trees);
    }
    all
}

/// `f` on the one-feature pair of the tree audits: X = {(0.5, c0)}, X' = X + (0.5, c1).
fn with_pair<T>(side: Side, f: impl FnOnce(&TrainRows) -> T) -> T {
    let x = array![[0.5], [0.5]];
    let labels = [0u16, 1];
    let rows: &[u32] = side.pick(&[0][..], &[0, 1][..]);
    f(&TrainRows {
        x: x.view(),
        rows,
        labels: &labels,
        n_classes: 2,
        cols: &[0],
    })
}

/// The private ID3 row's neighbours and statistic.
const fn id3_pair() -> &'static str {
    "depth 1, 2 bins: X = {(0.5, c0)}, X' = X + (0.5, c1); statistic: the class-1 noisy counts \
     summed over the leaves"
}

/// Private ID3 on an add/remove pair (the mutant: exact leaf counts): the leaves' class-1
/// noisy counts summed, of one fit.
fn private_id3(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
    let noise = if claim.mutant {
        LeafNoise::ExactMutant
    } else {
        LeafNoise::Laplace
    };
    let p = PrivateId3Params {
        epsilon: EPS,
        max_depth: 1,
        bins: 2,
    };
    let mut ledger = Ledger::new(Relation::AddRemove);
    let tree = with_pair(side, |t| p.fit_with(t, &UNIT, rng, &mut ledger, noise)).expect("valid");
    (tree.nodes.iter())
        .map(|n| match n {
            Id3Node::Leaf { counts, .. } => counts[1],
            Id3Node::Split { .. } => 0.0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 20,000 runs per side: the correct row stays below its claim, the mutant is caught.
    #[test]
    fn classifier_rows_pass_and_their_mutants_are_caught() {
        let (results, table) = crate::audit::testing::audited(&all(), 15, Relation::AddRemove);
        for name in [
            "private_gnb_exact_counts",
            "private_random_tree_budget_not_split",
            "private_forest_all_rows",
            "private_id3_exact_leaf_counts",
            "svm_rff_output_lambda_as_big_lambda",
            "svm_rff_objective_ignore_delta",
        ] {
            let mutant = results.iter().find(|r| r.mechanism == name).unwrap();
            assert!(mutant.caught, "{table}");
        }
    }
}
