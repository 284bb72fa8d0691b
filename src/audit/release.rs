//! Audits of the release layer's mechanisms, each beside a planted mutant it must catch:
//!
//! * `exponential_median` (replace-one, eps = 1): X = {0.95, 0.99}, X' replaces 0.99 by 0.01
//!   (the pair found by searching small datasets for the largest exact threshold-event
//!   privacy loss: 0.87 for the correct mechanism). Mutant `exponential_median_no_half`:
//!   weights exp(eps q) instead of exp(eps q / 2) (utility sensitivity halved), exact loss 1.75.
//! * `smooth_median` (Cauchy, replace-one, eps = 1): X = {0, .5, .5, .5, 1} (local sensitivity
//!   0), X' = {0, .5, .5, 1, 1} (local sensitivity .5). Mutant `smooth_median_local_sensitivity`:
//!   the noise scaled by the local instead of the smooth sensitivity, so X's release is exactly
//!   0.5 every time — infinite privacy loss.
//! * `randomized_response` (eps = ln 3): X answers about bit 0, X' about bit 1. Mutant
//!   `randomized_response_keep_coin`: the coin version with heads probability e^eps / (1 + e^eps)
//!   (the truth probability used as the coin's bias), truthful with probability 7/8: ln 7.
//!
//! * `gaussian_classic`, `gaussian_analytic` (count, replace-one, eps = 0.9, delta = 1e-5): X's
//!   count is 0, X''s is 1 (sensitivity 1). An (eps, delta) mechanism may exceed e^eps only on
//!   events of mass about delta; the held-out half (10^4 runs) cannot see events that rare, so
//!   a correct row's bound stays below the claim. Mutant `gaussian_budget_not_split`: the
//!   analytic sigma for 5 eps (one release's budget given to each of five releases), caught.
//! * `composed_average` (replace-one, eps = 1, sum_share 1/2; the row count is exact there):
//!   X = ten 0s, X' = nine 0s and a 1, bounds [0, 1]. Mutant `composed_average_exact_sum`: the
//!   sum released without noise, so X's average is exactly 0 and X''s is 0.1.
//! * `sum_replace_one` (the release layer's Laplace sum, bounds [-1, 1]): X = {-1, 0},
//!   X' = {1, 0}: the sum moves by the width 2, the replace-one sensitivity: tight. Mutant
//!   `sum_max_abs_under_replace_one`: the add/remove sensitivity max(|lo|, |hi|) = 1 (the sum
//!   run with an add/remove ledger on the replace-one pair), really 2 eps.
//! * `histogram_replace_one` (`release::histogram`, bins [0, 1/2), [1/2, 1]): X = {0.2, 0.7},
//!   X' = {0.8, 0.7}: one count falls and one rises, L1 change 2, the replace-one sensitivity;
//!   statistic: the clamped likelihood ratio of the two changed counts (as for Algorithm 1),
//!   tight. Mutant `histogram_add_remove_sensitivity`: the add/remove sensitivity 1 on the same
//!   pair, really 2 eps.
//!
//! Statistic: the release (the answer bit for randomized response) unless stated.

use super::{Auditable, Claim, Side, row, with_charge, with_mutant};
use crate::privacy::Ledger;
use crate::privacy::Relation;
use crate::privacy::exponential_median::ExponentialQuantile;
use crate::privacy::gaussian::Gaussian;
use crate::privacy::randomized_response::{RandomizedResponse, truth_probability};
use crate::privacy::smooth_sensitivity::{SmoothSensitivityMedian, local_sensitivity_at};
use crate::release::{self, Bounds, Clamped, Predicate, Query};
use crate::rng::{Rng, Streams};
use rand::Rng as _;

/// The release-layer audits, in report order: each correct row, then its mutant.
pub fn all() -> Vec<Box<dyn Auditable>> {
    let claim = |name, epsilon, neighbours| {
        Claim::new(name, epsilon, neighbours).under(Relation::ReplaceOne)
    };
    let median =
        "data in [0, 1]: X = {0.95, 0.99}, X' = {0.01, 0.95}; statistic: the released median";
    let smooth =
        "data in [0, 1]: X = {0, .5, .5, .5, 1}, X' = {0, .5, .5, 1, 1}; statistic: the release";
    let rr = "one respondent: bit 0 (X) vs bit 1 (X'), eps = ln 3; statistic: the answer";
    let ln3 = 3f64.ln();
    let gauss = "a count of 0 (X) vs 1 (X'), sensitivity 1, delta = 1e-5; statistic: the release";
    let composed =
        "data in [0, 1]: X = ten 0s, X' = nine 0s and a 1; statistic: the released average";
    let sum_pair = "data in [-1, 1]: X = {-1, 0}, X' = {1, 0}; statistic: the released sum";
    let bins = "bins [0, 1/2), [1/2, 1]: X = {0.2, 0.7}, X' = {0.8, 0.7}; statistic: clamped LR of the two counts";
    let gaussian = |claim: Claim, calib: Calib| {
        let claim = claim.covers(&["release:gaussian"]);
        row(claim, move |c: &Claim, side, rng: &mut Rng| {
            gaussian_count(c, calib, side, rng)
        })
    };
    let gaussian: [Box<dyn Auditable>; 3] = [
        gaussian(claim("gaussian_classic", GAUSS_EPS, gauss), Calib::Classic),
        gaussian(
            claim("gaussian_analytic", GAUSS_EPS, gauss),
            Calib::Analytic,
        ),
        gaussian(
            claim("gaussian_budget_not_split", GAUSS_EPS, gauss).mutant(true),
            Calib::Analytic,
        ),
    ];
    let pairs = [
        with_mutant(
            claim("exponential_median", EPS, median).covers(&["release:exponential_median"]),
            "exponential_median_no_half",
            exp_median,
        ),
        with_mutant(
            claim("smooth_median", EPS, smooth).covers(&["release:smooth_median"]),
            "smooth_median_local_sensitivity",
            smooth_median,
        ),
        with_mutant(
            claim("randomized_response", ln3, rr).covers(&["release:randomized_response"]),
            "randomized_response_keep_coin",
            randomized_response,
        ),
    ];
    let composed = with_mutant(
        claim("composed_average", EPS, composed).covers(&["release:composed_average"]),
        "composed_average_exact_sum",
        composed_average,
    );
    let sums = [
        with_mutant(
            claim("sum_replace_one", EPS, sum_pair).covers(&["release:laplace"]),
            "sum_max_abs_under_replace_one",
            sum,
        ),
        with_mutant(
            claim("histogram_replace_one", EPS, bins).covers(&["release:histogram"]),
            "histogram_add_remove_sensitivity",
            histogram,
        ),
    ];
    pairs
        .into_iter()
        .flatten()
        .chain(gaussian)
        .chain(composed)
        .chain(sums.into_iter().flatten())
        .collect()
}

const EPS: f64 = 1.0;

/// The exponential-mechanism median on a replace-one pair (the mutant: no halving).
fn exp_median(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
    let data: &[f64] = side.pick(&[0.95, 0.99], &[0.01, 0.95]);
    let m = ExponentialQuantile::median(EPS, 0.0, 1.0, Relation::ReplaceOne).expect("valid");
    let mut w = Vec::with_capacity(3);
    if claim.mutant {
        m.log_weights_scaled(data, 1.0, &mut w);
        m.sample_from_weights(data, &mut w, rng)
    } else {
        with_charge("exponential", m, |c| c.sample_sorted(data, rng, &mut w))
    }
}

/// The smooth-sensitivity median (Cauchy) on a replace-one pair (the mutant: local
/// sensitivity).
fn smooth_median(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
    let data: &[f64] = side.pick(&[0.0, 0.5, 0.5, 0.5, 1.0], &[0.0, 0.5, 0.5, 1.0, 1.0]);
    let m = SmoothSensitivityMedian::new(EPS, 0.0, 1.0, Relation::ReplaceOne).expect("valid");
    let released = if claim.mutant {
        let scale = local_sensitivity_at(data, 0, 0.0, 1.0) / m.alpha();
        m.release_with_scale(data, scale, rng)
    } else {
        with_charge("smooth sensitivity", m, |c| c.release(data, rng))
    };
    released.expect("non-empty")
}

/// Binary randomized response at eps = ln 3 (the mutant: the truth probability as a coin).
fn randomized_response(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
    let bit = side == Side::XPrime;
    let answer = if claim.mutant {
        if rng.r#gen::<f64>() < truth_probability(claim.epsilon) {
            bit
        } else {
            rng.r#gen::<bool>()
        }
    } else {
        let rr = RandomizedResponse::new(claim.epsilon).expect("valid");
        with_charge("randomized response", rr, |c| c.respond(bit, rng))
    };
    f64::from(u8::from(answer))
}

/// Which Gaussian calibration a row audits.
#[derive(Clone, Copy)]
pub enum Calib {
    Classic,
    Analytic,
}

/// The Gaussian audits' epsilon (the classic calibration needs eps < 1).
const GAUSS_EPS: f64 = 0.9;

/// A count of 0 (X) or 1 (X') through the Gaussian release calibrated by `calib` (the
/// mutant: the analytic sigma for 5 eps).
fn gaussian_count(claim: &Claim, calib: Calib, side: Side, rng: &mut Rng) -> f64 {
    let data = Clamped::new(side.pick(&[0.0], &[1.0]), unit()).expect("valid");
    let r = Relation::ReplaceOne;
    let eps = if claim.mutant {
        5.0 * GAUSS_EPS
    } else {
        GAUSS_EPS
    };
    let g = match calib {
        Calib::Classic => Gaussian::classic(1.0, eps, 1e-5, r),
        Calib::Analytic => Gaussian::analytic(1.0, eps, 1e-5, r),
    }
    .expect("valid");
    let query = Query::Count(Predicate::AtLeast(0.5));
    let mut streams = Streams::new(rng.r#gen());
    release::gaussian("count", query, &data, g, &mut streams, &mut Ledger::new(r))
        .expect("same relation")
        .value
}

fn unit() -> Bounds {
    Bounds { lo: 0.0, hi: 1.0 }
}

/// The composed average (noisy sum / row count) on a replace-one pair (the mutant: the sum
/// released without noise).
fn composed_average(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
    let mut xs = [0.0; 10];
    if side == Side::XPrime {
        xs[9] = 1.0;
    }
    if claim.mutant {
        return xs.iter().sum::<f64>() / xs.len() as f64;
    }
    let data = Clamped::new(&xs, unit()).expect("valid");
    let mut streams = Streams::new(rng.r#gen());
    let mut ledger = Ledger::new(Relation::ReplaceOne);
    release::composed_average(&data, EPS, 0.5, &mut streams, &mut ledger)
        .expect("valid")
        .value
}

/// The relation a release row's noise is calibrated for: replace-one, or (mutant) add/remove,
/// whose sensitivity is half the replace-one one for these queries.
fn noise_relation(claim: &Claim) -> Relation {
    if claim.mutant {
        Relation::AddRemove
    } else {
        Relation::ReplaceOne
    }
}

/// The Laplace sum on [-1, 1] on a replace-one pair (the mutant: the add/remove sensitivity).
fn sum(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
    let bounds = Bounds { lo: -1.0, hi: 1.0 };
    let data = Clamped::new(side.pick(&[-1.0, 0.0], &[1.0, 0.0]), bounds).expect("valid");
    let mut streams = Streams::new(rng.r#gen());
    let mut ledger = Ledger::new(noise_relation(claim));
    release::laplace("sum", Query::Sum, &data, EPS, &mut streams, &mut ledger)
        .expect("valid")
        .value
}

/// The Laplace histogram on two bins on a replace-one pair (the mutant: the add/remove
/// sensitivity). Statistic: clamp(1 - y_0, 0, 1) + clamp(y_1 - 1, 0, 1), the log-likelihood ratio
/// of the two changed counts up to an affine map (X's exact counts (1, 1), X''s (0, 2)).
fn histogram(claim: &Claim, side: Side, rng: &mut Rng) -> f64 {
    let data = Clamped::new(side.pick(&[0.2, 0.7], &[0.8, 0.7]), unit()).expect("valid");
    let mut streams = Streams::new(rng.r#gen());
    let mut ledger = Ledger::new(noise_relation(claim));
    let (noisy, _) =
        release::histogram(&data, &[0.0, 0.5, 1.0], EPS, &mut streams, &mut ledger).expect("valid");
    (1.0 - noisy[0]).clamp(0.0, 1.0) + (noisy[1] - 1.0).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::testing::{assert_tight, audited};

    /// 20,000 runs per side, seed 1: every mutant caught, every correct row at or below its
    /// claim, and the tight rows close to it (the exponential median's exact loss on this pair
    /// is 0.87, randomized response's, the sum's and the histogram's are the claim itself).
    #[test]
    fn release_mutants_are_caught_and_correct_rows_pass() {
        let (results, _) = audited(&all(), 15, Relation::ReplaceOne);
        let rr = 0.8 * 3f64.ln();
        assert_tight(
            &results,
            &[
                ("exponential_median", 0.6),
                ("randomized_response", rr),
                ("sum_replace_one", 0.8),
                ("histogram_replace_one", 0.8),
            ],
        );
    }
}
