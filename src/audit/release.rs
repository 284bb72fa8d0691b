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
//!
//! Statistic: the release (the answer bit for randomized response).

use super::{Auditable, Side};
use crate::privacy::exponential_median::ExponentialQuantile;
use crate::privacy::gaussian::Gaussian;
use crate::privacy::randomized_response::{RandomizedResponse, truth_probability};
use crate::privacy::smooth_sensitivity::{SmoothSensitivityMedian, local_sensitivity_at};
use crate::privacy::{Ledger, Relation};
use crate::release::{self, Bounds, Clamped, Predicate, Query};
use crate::rng::{Rng, Streams};
use rand::Rng as _;

/// The release-layer audits, in report order.
pub fn all() -> Vec<Box<dyn Auditable>> {
    vec![
        Box::new(ExpMedian { no_half: false }),
        Box::new(ExpMedian { no_half: true }),
        Box::new(SmoothMedian { local: false }),
        Box::new(SmoothMedian { local: true }),
        Box::new(Rr { keep_coin: false }),
        Box::new(Rr { keep_coin: true }),
        Box::new(GaussianCount::Classic),
        Box::new(GaussianCount::Analytic),
        Box::new(GaussianCount::BudgetNotSplit),
        Box::new(Composed { exact_sum: false }),
        Box::new(Composed { exact_sum: true }),
    ]
}

const EPS: f64 = 1.0;

/// The exponential-mechanism median on a replace-one pair.
pub struct ExpMedian {
    no_half: bool,
}

impl Auditable for ExpMedian {
    fn name(&self) -> &str {
        if self.no_half {
            "exponential_median_no_half"
        } else {
            "exponential_median"
        }
    }
    fn claimed_epsilon(&self) -> f64 {
        EPS
    }
    fn relation(&self) -> Relation {
        Relation::ReplaceOne
    }
    fn mutant(&self) -> bool {
        self.no_half
    }
    fn neighbours(&self) -> &str {
        "data in [0, 1]: X = {0.95, 0.99}, X' = {0.01, 0.95}; statistic: the released median"
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let data: &[f64] = if side == Side::X {
            &[0.95, 0.99]
        } else {
            &[0.01, 0.95]
        };
        let m = ExponentialQuantile::median(EPS, 0.0, 1.0, Relation::ReplaceOne).expect("valid");
        let mut w = Vec::with_capacity(3);
        if self.no_half {
            m.log_weights_scaled(data, 1.0, &mut w);
            m.sample_from_weights(data, &mut w, rng)
        } else {
            Ledger::new(Relation::ReplaceOne)
                .charge("median", "exponential", m)
                .expect("same relation")
                .sample_sorted(data, rng, &mut w)
        }
    }
}

/// The smooth-sensitivity median (Cauchy) on a replace-one pair.
pub struct SmoothMedian {
    local: bool,
}

impl Auditable for SmoothMedian {
    fn name(&self) -> &str {
        if self.local {
            "smooth_median_local_sensitivity"
        } else {
            "smooth_median"
        }
    }
    fn claimed_epsilon(&self) -> f64 {
        EPS
    }
    fn relation(&self) -> Relation {
        Relation::ReplaceOne
    }
    fn mutant(&self) -> bool {
        self.local
    }
    fn neighbours(&self) -> &str {
        "data in [0, 1]: X = {0, .5, .5, .5, 1}, X' = {0, .5, .5, 1, 1}; statistic: the release"
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let data: &[f64] = if side == Side::X {
            &[0.0, 0.5, 0.5, 0.5, 1.0]
        } else {
            &[0.0, 0.5, 0.5, 1.0, 1.0]
        };
        let m = SmoothSensitivityMedian::new(EPS, 0.0, 1.0, Relation::ReplaceOne).expect("valid");
        let released = if self.local {
            let scale = local_sensitivity_at(data, 0, 0.0, 1.0) / m.alpha();
            m.release_with_scale(data, scale, rng)
        } else {
            Ledger::new(Relation::ReplaceOne)
                .charge("median", "smooth sensitivity", m)
                .expect("same relation")
                .release(data, rng)
        };
        released.expect("non-empty")
    }
}

/// Binary randomized response at eps = ln 3.
pub struct Rr {
    keep_coin: bool,
}

impl Auditable for Rr {
    fn name(&self) -> &str {
        if self.keep_coin {
            "randomized_response_keep_coin"
        } else {
            "randomized_response"
        }
    }
    fn claimed_epsilon(&self) -> f64 {
        3f64.ln()
    }
    fn relation(&self) -> Relation {
        Relation::ReplaceOne
    }
    fn mutant(&self) -> bool {
        self.keep_coin
    }
    fn neighbours(&self) -> &str {
        "one respondent: bit 0 (X) vs bit 1 (X'), eps = ln 3; statistic: the answer"
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let bit = side == Side::XPrime;
        let answer = if self.keep_coin {
            if rng.r#gen::<f64>() < truth_probability(self.claimed_epsilon()) {
                bit
            } else {
                rng.r#gen::<bool>()
            }
        } else {
            let rr = RandomizedResponse::new(self.claimed_epsilon()).expect("valid");
            Ledger::new(Relation::ReplaceOne)
                .charge("answer", "randomized response", rr)
                .expect("same relation")
                .respond(bit, rng)
        };
        f64::from(u8::from(answer))
    }
}

/// A count of 0 (X) or 1 (X') through the Gaussian release.
pub enum GaussianCount {
    Classic,
    Analytic,
    /// Planted: the analytic sigma for 5 eps.
    BudgetNotSplit,
}

/// The Gaussian audits' epsilon (the classic calibration needs eps < 1).
const GAUSS_EPS: f64 = 0.9;

impl Auditable for GaussianCount {
    fn name(&self) -> &str {
        match self {
            GaussianCount::Classic => "gaussian_classic",
            GaussianCount::Analytic => "gaussian_analytic",
            GaussianCount::BudgetNotSplit => "gaussian_budget_not_split",
        }
    }
    fn claimed_epsilon(&self) -> f64 {
        GAUSS_EPS
    }
    fn relation(&self) -> Relation {
        Relation::ReplaceOne
    }
    fn mutant(&self) -> bool {
        matches!(self, GaussianCount::BudgetNotSplit)
    }
    fn neighbours(&self) -> &str {
        "a count of 0 (X) vs 1 (X'), sensitivity 1, delta = 1e-5; statistic: the release"
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let data =
            Clamped::new(if side == Side::X { &[0.0] } else { &[1.0] }, unit()).expect("valid");
        let (r, eps) = (Relation::ReplaceOne, GAUSS_EPS);
        let g = match self {
            GaussianCount::Classic => Gaussian::classic(1.0, eps, 1e-5, r),
            GaussianCount::Analytic => Gaussian::analytic(1.0, eps, 1e-5, r),
            GaussianCount::BudgetNotSplit => Gaussian::analytic(1.0, 5.0 * eps, 1e-5, r),
        }
        .expect("valid");
        let query = Query::Count(Predicate::AtLeast(0.5));
        let mut streams = Streams::new(rng.r#gen());
        release::gaussian("count", query, &data, g, &mut streams, &mut Ledger::new(r))
            .expect("same relation")
            .value
    }
}

fn unit() -> Bounds {
    Bounds { lo: 0.0, hi: 1.0 }
}

/// The composed average (noisy sum / row count) on a replace-one pair.
pub struct Composed {
    exact_sum: bool,
}

impl Auditable for Composed {
    fn name(&self) -> &str {
        if self.exact_sum {
            "composed_average_exact_sum"
        } else {
            "composed_average"
        }
    }
    fn claimed_epsilon(&self) -> f64 {
        EPS
    }
    fn relation(&self) -> Relation {
        Relation::ReplaceOne
    }
    fn mutant(&self) -> bool {
        self.exact_sum
    }
    fn neighbours(&self) -> &str {
        "data in [0, 1]: X = ten 0s, X' = nine 0s and a 1; statistic: the released average"
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let mut xs = [0.0; 10];
        if side == Side::XPrime {
            xs[9] = 1.0;
        }
        let data = Clamped::new(&xs, unit()).expect("valid");
        if self.exact_sum {
            return xs.iter().sum::<f64>() / xs.len() as f64;
        }
        let mut streams = Streams::new(rng.r#gen());
        let mut ledger = Ledger::new(Relation::ReplaceOne);
        release::composed_average(&data, EPS, 0.5, &mut streams, &mut ledger)
            .expect("valid")
            .value
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
