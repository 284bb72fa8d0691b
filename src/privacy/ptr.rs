//! The test of propose-test-release (Dwork & Lei 2009; Dwork & Roth 2014, section 7.3), and
//! the (0, delta) "release each record with probability delta" mechanism of Ji, Lipton & Elkan.
//!
//! **PTR's test** ([`PtrTest`]).
//! * Domain: a distance to instability d(X) in {0, 1, 2, ...}: a lower bound on how many
//!   records of X must change before the local sensitivity of the released statistic exceeds
//!   the proposed bound b. The caller computes it (release::robust) and proves sensitivity 1.
//! * Input metric: |d(X) - d(X')| <= 1 for neighbours.
//! * Measure: (eps, delta)-DP for the whole PTR release when its answer step spends eps' on top
//!   (recorded as two ledger steps: this test with the delta, the answer pure).
//! * The test passes when d(X) + Lap(1/eps) > ln(1/delta)/eps; otherwise the release is "no
//!   answer" (⊥).
//! * Proof sketch: for neighbours X, X' with |f(X) - f(X')| <= b, the test is eps-DP
//!   (Laplace on a sensitivity-1 count) and the answer f + Lap(b/eps') is eps'-DP, so the pair
//!   is (eps + eps')-DP. If |f(X) - f(X')| > b, the local sensitivity at X (and at X') exceeds
//!   b, so d(X) = d(X') = 0 and each passes with probability P(Lap(1/eps) > ln(1/delta)/eps) =
//!   delta/2 <= delta: for every event S, P(M(X) in S) <= e^eps P(M(X') = ⊥, ⊥ in S) + delta.
//!   Hence (eps + eps', delta)-DP.
//!
//! **The delta leak** ([`DeltaLeak`]): each record is published with probability delta,
//! independently. Neighbours differ in one record, which appears in the output with
//! probability delta and is absent otherwise; every other record's coin is the same on both
//! sides. The two output distributions are within total variation delta: (0, delta)-DP under
//! both relations. Yet it publishes n delta records in expectation, which is why the heuristic
//! delta < 1/n (Ji, Lipton & Elkan 2014, section 1.1).

use super::laplace::LaplaceNoise;
use super::mechanism::{Charge, PrivacyMap};
use super::{Measure, Relation};
use crate::error::{Error, Result};
use rand::Rng;

/// PTR's noisy test of the distance to instability, charged as (eps, delta)-DP with
/// sensitivity 1 (the distance's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PtrTest {
    noise: LaplaceNoise,
    threshold: f64,
    map: PrivacyMap,
}

mechanism_with_map!(PtrTest, DeltaLeak);

impl PtrTest {
    /// The test at `epsilon` with failure probability `delta` under `relation`: Lap(1/eps)
    /// on the distance, threshold ln(1/delta)/eps.
    pub fn new(epsilon: f64, delta: f64, relation: Relation) -> Result<Self> {
        let map = PrivacyMap::approximate(1.0, epsilon, delta, relation)?;
        Ok(PtrTest {
            noise: LaplaceNoise::with_scale(1.0 / epsilon)?,
            threshold: (1.0 / delta).ln() / epsilon,
            map,
        })
    }

    /// ln(1/delta)/eps: a noisy distance at or below it answers "no answer".
    pub fn threshold(&self) -> f64 {
        self.threshold
    }
}

impl Charge<'_, PtrTest> {
    /// The noisy distance d + Lap(1/eps) and whether it clears the threshold.
    pub fn test<R: Rng + ?Sized>(&mut self, distance: f64, rng: &mut R) -> (f64, bool) {
        let noisy = distance + self.mechanism.noise.sample(rng);
        (noisy, noisy > self.mechanism.threshold)
    }
}

/// Publishes each record with probability delta: (0, delta)-DP, n delta records leaked in
/// expectation (Ji, Lipton & Elkan's example of why delta must stay below 1/n).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeltaLeak {
    map: PrivacyMap,
}

impl DeltaLeak {
    /// The mechanism for `delta` in (0, 1) under `relation` (epsilon 0: the output
    /// distributions of neighbours differ only on events of probability delta).
    pub fn new(delta: f64, relation: Relation) -> Result<Self> {
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::param(
                "delta",
                format!("must lie in (0, 1), got {delta}"),
            ));
        }
        Ok(DeltaLeak {
            map: PrivacyMap {
                measure: Measure::ApproxDp,
                epsilon: 0.0,
                delta: Some(delta),
                sensitivity: 1.0,
                relation,
            },
        })
    }

    pub fn delta(&self) -> f64 {
        self.map.delta.unwrap_or(0.0)
    }
}

impl Charge<'_, DeltaLeak> {
    /// The indices of the records published (each with probability delta, one coin a record).
    pub fn publish<R: Rng + ?Sized>(&mut self, n: usize, rng: &mut R) -> Vec<usize> {
        let delta = self.mechanism.delta();
        (0..n).filter(|_| rng.r#gen::<f64>() < delta).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Ledger;
    use crate::rng::rng_from;

    const R1: Relation = Relation::ReplaceOne;

    /// The test passes with probability delta/2 at distance 0 (the Laplace tail beyond
    /// ln(1/delta)/eps): 40,000 draws at delta = 0.1 give 0.05 within 4 s.e. (s.e. 0.0011).
    #[test]
    fn test_at_distance_zero_passes_with_half_delta() {
        let t = PtrTest::new(1.0, 0.1, R1).unwrap();
        assert!((t.threshold() - 10f64.ln()).abs() < 1e-12);
        let mut ledger = Ledger::new(R1);
        let mut c = ledger.charge("test", "ptr", t).unwrap();
        let mut rng = rng_from(&["ptr-test"]);
        let n = 40_000;
        let passes = (0..n).filter(|_| c.test(0.0, &mut rng).1).count();
        let rate = passes as f64 / n as f64;
        assert!((rate - 0.05).abs() < 4.0 * 0.0011, "rate {rate}");
        assert_eq!(ledger.total_delta(), 0.1);
        assert_eq!(ledger.total_epsilon(), 1.0);
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(PtrTest::new(1.0, 0.0, R1).is_err());
        assert!(PtrTest::new(0.0, 0.1, R1).is_err());
        assert!(DeltaLeak::new(0.0, R1).is_err());
        assert!(DeltaLeak::new(1.0, R1).is_err());
    }

    /// 10^5 records at delta = 0.01: the count leaked is Binomial(10^5, 0.01), mean 1000,
    /// sd 31.5; within 4 sd. The ledger records (0, delta).
    #[test]
    fn delta_leak_publishes_n_delta_records() {
        let m = DeltaLeak::new(0.01, R1).unwrap();
        let mut ledger = Ledger::new(R1);
        let leaked = ledger
            .charge("leak", "delta leak", m)
            .unwrap()
            .publish(100_000, &mut rng_from(&["leak"]));
        assert!(
            (leaked.len() as f64 - 1000.0).abs() < 4.0 * 31.5,
            "{}",
            leaked.len()
        );
        assert_eq!(ledger.total_epsilon(), 0.0);
        assert_eq!(ledger.total_delta(), 0.01);
    }
}
