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
//! Statistic: the release (the answer bit for randomized response).

use super::{Auditable, Claim, Side, with_charge};
use crate::privacy::Relation;
use crate::privacy::exponential_median::ExponentialQuantile;
use crate::privacy::randomized_response::{RandomizedResponse, truth_probability};
use crate::privacy::smooth_sensitivity::{SmoothSensitivityMedian, local_sensitivity_at};
use crate::rng::Rng;
use rand::Rng as _;

/// The release-layer audits, in report order: each correct row, then its mutant.
pub fn all() -> Vec<Box<dyn Auditable>> {
    let row = |name, epsilon, neighbours| {
        Claim::new(name, epsilon, neighbours).under(Relation::ReplaceOne)
    };
    let median =
        "data in [0, 1]: X = {0.95, 0.99}, X' = {0.01, 0.95}; statistic: the released median";
    let smooth =
        "data in [0, 1]: X = {0, .5, .5, .5, 1}, X' = {0, .5, .5, 1, 1}; statistic: the release";
    let rr = "one respondent: bit 0 (X) vs bit 1 (X'), eps = ln 3; statistic: the answer";
    let ln3 = 3f64.ln();
    vec![
        Box::new(ExpMedian(row("exponential_median", EPS, median))),
        Box::new(ExpMedian(
            row("exponential_median_no_half", EPS, median).mutant(true),
        )),
        Box::new(SmoothMedian(row("smooth_median", EPS, smooth))),
        Box::new(SmoothMedian(
            row("smooth_median_local_sensitivity", EPS, smooth).mutant(true),
        )),
        Box::new(Rr(row("randomized_response", ln3, rr))),
        Box::new(Rr(
            row("randomized_response_keep_coin", ln3, rr).mutant(true)
        )),
    ]
}

const EPS: f64 = 1.0;

/// The exponential-mechanism median on a replace-one pair (the mutant: no halving).
pub struct ExpMedian(Claim);

impl Auditable for ExpMedian {
    fn claim(&self) -> Claim {
        self.0
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let data: &[f64] = side.pick(&[0.95, 0.99], &[0.01, 0.95]);
        let m = ExponentialQuantile::median(EPS, 0.0, 1.0, Relation::ReplaceOne).expect("valid");
        let mut w = Vec::with_capacity(3);
        if self.0.mutant {
            m.log_weights_scaled(data, 1.0, &mut w);
            m.sample_from_weights(data, &mut w, rng)
        } else {
            with_charge("exponential", m, |c| c.sample_sorted(data, rng, &mut w))
        }
    }
}

/// The smooth-sensitivity median (Cauchy) on a replace-one pair (the mutant: local
/// sensitivity).
pub struct SmoothMedian(Claim);

impl Auditable for SmoothMedian {
    fn claim(&self) -> Claim {
        self.0
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let data: &[f64] = side.pick(&[0.0, 0.5, 0.5, 0.5, 1.0], &[0.0, 0.5, 0.5, 1.0, 1.0]);
        let m = SmoothSensitivityMedian::new(EPS, 0.0, 1.0, Relation::ReplaceOne).expect("valid");
        let released = if self.0.mutant {
            let scale = local_sensitivity_at(data, 0, 0.0, 1.0) / m.alpha();
            m.release_with_scale(data, scale, rng)
        } else {
            with_charge("smooth sensitivity", m, |c| c.release(data, rng))
        };
        released.expect("non-empty")
    }
}

/// Binary randomized response at eps = ln 3 (the mutant: the truth probability as a coin).
pub struct Rr(Claim);

impl Auditable for Rr {
    fn claim(&self) -> Claim {
        self.0
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let bit = side == Side::XPrime;
        let answer = if self.0.mutant {
            if rng.r#gen::<f64>() < truth_probability(self.0.epsilon) {
                bit
            } else {
                rng.r#gen::<bool>()
            }
        } else {
            let rr = RandomizedResponse::new(self.0.epsilon).expect("valid");
            with_charge("randomized response", rr, |c| c.respond(bit, rng))
        };
        f64::from(u8::from(answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 20,000 runs per side, seed 1: every mutant caught, every correct row at or below its
    /// claim, and the tight rows close to it (the exponential median's exact loss on this pair
    /// is 0.87, randomized response's is the claim itself).
    #[test]
    fn release_mutants_are_caught_and_correct_rows_pass() {
        let results = super::super::audit_each(&all(), 20_000, 1).unwrap();
        let table = super::super::table(&results);
        for r in &results {
            assert!(r.ok, "{}\n{table}", r.mechanism);
            assert_eq!(r.relation, "replace_one");
            assert_eq!(r.caught, r.mutant, "{}\n{table}", r.mechanism);
        }
        let bound = |name: &str| {
            results
                .iter()
                .find(|r| r.mechanism == name)
                .unwrap()
                .lower_bound
        };
        assert!(bound("exponential_median") > 0.6, "{table}");
        assert!(bound("randomized_response") > 0.8 * 3f64.ln(), "{table}");
    }
}
