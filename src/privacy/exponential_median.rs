//! The exponential-mechanism median and quantiles (McSherry & Talwar 2007; Smith 2011; the
//! private median of Sarwate & Chaudhuri 2013, Fig. 2), sampled exactly over the intervals
//! between sorted data points (not over a grid).
//!
//! * Domain: n reals clamped to public bounds [lo, hi] (lo < hi); output y in [lo, hi].
//! * Quality: q(X, y) = -|#{i : x_i <= y} - p n| for the p-quantile (p = 1/2: the median;
//!   Sarwate & Chaudhuri's |1/2 - F_n(y)| with sensitivity 1/n, multiplied through by n).
//! * Input metric and utility sensitivity Delta_q = 1 under both relations: replacing one point
//!   moves the count #{x_i <= y} by at most 1 with n fixed; adding or removing one moves the
//!   count by 0 or 1 and the target p n by p, so |Delta q| <= max(p, 1 - p) <= 1. The published
//!   value 1 is used for both (the add/remove value max(p, 1 - p) would be tighter).
//! * Mechanism: density of y proportional to exp(eps q(X, y) / (2 Delta_q)) on [lo, hi].
//!   q is constant on each interval I_k = (x_(k), x_(k+1)) (x_(0) = lo, x_(n+1) = hi), where
//!   the count is k, so the sampler picks I_k with probability proportional to
//!   |I_k| exp(eps q_k / 2) (log-sum-exp in log space) and then draws y uniformly in I_k.
//! * Measure: pure eps-DP. The mechanism value carries its [`PrivacyMap`] (Delta_q = 1, eps, the
//!   relation) and samples only through the ledger [`Charge`] that records the step.
//! * Proof sketch: the exponential mechanism over a continuous output with base measure
//!   Lebesgue on [lo, hi]: the unnormalised density changes by at most exp(eps/2) pointwise
//!   between neighbours and so does the normaliser (its integral), so the density ratio at every
//!   output is at most exp(eps). The interval sampler draws from exactly this density.
//!
//! Sampling uses floating point: fine for measuring accuracy, not hardened against the
//! floating-point attacks of Mironov (2012).

use super::Relation;
use super::mechanism::{Charge, Mechanism, PrivacyMap};
use crate::error::{Error, Result};
use rand::Rng;

/// The exponential mechanism for the p-quantile of data in public bounds [lo, hi].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExponentialQuantile {
    map: PrivacyMap,
    p: f64,
    lo: f64,
    hi: f64,
}

impl Mechanism for ExponentialQuantile {
    fn privacy_map(&self) -> &PrivacyMap {
        &self.map
    }
}

impl Charge<'_, ExponentialQuantile> {
    /// One release from data sorted ascending and clamped to the bounds; `work` is reused
    /// between calls (no allocation once it has grown).
    pub fn sample_sorted<R: Rng + ?Sized>(
        &mut self,
        sorted: &[f64],
        rng: &mut R,
        work: &mut Vec<f64>,
    ) -> f64 {
        let m = self.mechanism;
        m.log_weights(sorted, work);
        m.sample_from_weights(sorted, work, rng)
    }
}

impl ExponentialQuantile {
    /// Utility sensitivity of q = -|rank - p n| (both relations; see the module doc).
    pub const UTILITY_SENSITIVITY: f64 = 1.0;

    /// The p-quantile (p in (0, 1)) at `epsilon` under `relation`, outputs in the public
    /// bounds lo < hi.
    pub fn new(p: f64, epsilon: f64, lo: f64, hi: f64, relation: Relation) -> Result<Self> {
        let map = PrivacyMap::pure(Self::UTILITY_SENSITIVITY, epsilon, relation)?;
        if !(p > 0.0 && p < 1.0) {
            return Err(Error::param(
                "quantile",
                format!("must be in (0, 1), got {p}"),
            ));
        }
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(Error::param(
                "bounds",
                format!("need finite lo < hi, got [{lo}, {hi}]"),
            ));
        }
        Ok(ExponentialQuantile { map, p, lo, hi })
    }

    /// The median (p = 1/2).
    pub fn median(epsilon: f64, lo: f64, hi: f64, relation: Relation) -> Result<Self> {
        Self::new(0.5, epsilon, lo, hi, relation)
    }

    pub fn epsilon(&self) -> f64 {
        self.map.epsilon
    }

    /// The quality of interval k (k data points at or below it) among n points.
    #[inline]
    fn quality(&self, k: usize, n: usize) -> f64 {
        -(k as f64 - self.p * n as f64).abs()
    }

    /// Log-weight of each interval I_0..I_n, ln|I_k| + eps q_k / 2 (-inf for empty ones), into
    /// `out` (cleared first). `sorted` must be ascending and inside [lo, hi].
    pub fn log_weights(&self, sorted: &[f64], out: &mut Vec<f64>) {
        self.log_weights_scaled(sorted, 2.0 * Self::UTILITY_SENSITIVITY, out)
    }

    /// As [`Self::log_weights`] with exp(eps q / divisor); `divisor` = 2 Delta_q is the correct
    /// one (the audit's mutant passes 1).
    pub(crate) fn log_weights_scaled(&self, sorted: &[f64], divisor: f64, out: &mut Vec<f64>) {
        debug_assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
        let n = sorted.len();
        out.clear();
        let mut left = self.lo;
        let rights = sorted.iter().copied().chain(std::iter::once(self.hi));
        for (k, right) in rights.enumerate() {
            let len = right - left;
            out.push(if len > 0.0 {
                len.ln() + self.map.epsilon * self.quality(k, n) / divisor
            } else {
                f64::NEG_INFINITY
            });
            left = right;
        }
    }

    /// Picks an interval in proportion to exp(log-weight), then a uniform point in it.
    pub(crate) fn sample_from_weights<R: Rng + ?Sized>(
        &self,
        sorted: &[f64],
        log_w: &mut [f64],
        rng: &mut R,
    ) -> f64 {
        let max = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut total = 0.0;
        for w in log_w.iter_mut() {
            *w = (*w - max).exp();
            total += *w;
        }
        let target = rng.r#gen::<f64>() * total;
        let mut acc = 0.0;
        let mut chosen = log_w.len() - 1;
        for (k, &w) in log_w.iter().enumerate() {
            acc += w;
            if target < acc && w > 0.0 {
                chosen = k;
                break;
            }
        }
        // Rounding can leave `target` past the last sum: take the last non-empty interval.
        while log_w[chosen] == 0.0 {
            chosen -= 1;
        }
        let (a, b) = self.interval(sorted, chosen);
        a + (b - a) * rng.r#gen::<f64>()
    }

    fn interval(&self, sorted: &[f64], k: usize) -> (f64, f64) {
        let a = if k == 0 { self.lo } else { sorted[k - 1] };
        let b = if k == sorted.len() {
            self.hi
        } else {
            sorted[k]
        };
        (a, b)
    }

    /// The exact mean of the release, sum over intervals of P(I_k) times its midpoint.
    pub fn mean(&self, sorted: &[f64]) -> f64 {
        let mut w = Vec::with_capacity(sorted.len() + 1);
        self.log_weights(sorted, &mut w);
        let max = w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (mut total, mut acc) = (0.0, 0.0);
        for (k, l) in w.iter().enumerate() {
            let (a, b) = self.interval(sorted, k);
            let p = (l - max).exp();
            total += p;
            acc += p * 0.5 * (a + b);
        }
        acc / total
    }

    /// The exact CDF of the release at y (for distribution tests and figures).
    pub fn cdf(&self, sorted: &[f64], y: f64) -> f64 {
        let mut w = Vec::with_capacity(sorted.len() + 1);
        self.log_weights(sorted, &mut w);
        let max = w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = w.iter().map(|l| (l - max).exp()).sum();
        let mut acc = 0.0;
        for (k, l) in w.iter().enumerate() {
            let (a, b) = self.interval(sorted, k);
            if b > a {
                acc += (l - max).exp() * ((y - a) / (b - a)).clamp(0.0, 1.0);
            }
        }
        acc / total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Ledger;
    use crate::rng::rng_from;

    const AR: Relation = Relation::AddRemove;

    #[test]
    fn rejects_bad_parameters() {
        assert!(ExponentialQuantile::new(0.0, 1.0, 0.0, 1.0, AR).is_err());
        assert!(ExponentialQuantile::new(1.0, 1.0, 0.0, 1.0, AR).is_err());
        assert!(ExponentialQuantile::median(0.0, 0.0, 1.0, AR).is_err());
        let e = ExponentialQuantile::median(1.0, 1.0, 1.0, AR).unwrap_err();
        assert!(e.to_string().contains("bounds"), "{e}");
    }

    #[test]
    fn weights_follow_lengths_and_ranks() {
        let m = ExponentialQuantile::median(2.0, 0.0, 1.0, AR).unwrap();
        let mut w = Vec::new();
        // Points 0.25, 0.25, 0.5: intervals (0, .25), empty, (.25, .5), (.5, 1); n = 3.
        m.log_weights(&[0.25, 0.25, 0.5], &mut w);
        assert_eq!(w[1], f64::NEG_INFINITY);
        assert!((w[0] - (0.25f64.ln() - 1.5)).abs() < 1e-12);
        assert!((w[2] - (0.25f64.ln() - 0.5)).abs() < 1e-12);
        assert!((w[3] - (0.5f64.ln() - 1.5)).abs() < 1e-12);
        assert!((m.cdf(&[0.25, 0.25, 0.5], 1.0) - 1.0).abs() < 1e-12);
        assert_eq!(m.cdf(&[0.25, 0.25, 0.5], 0.0), 0.0);
    }

    #[test]
    fn huge_epsilon_is_stable_and_lands_between_the_middle_points() {
        let m = ExponentialQuantile::median(1e6, 0.0, 1.0, AR).unwrap();
        let mut ledger = Ledger::new(AR);
        let mut m = ledger.charge("median", "exponential", m).unwrap();
        let xs: Vec<f64> = (1..=1000).map(|i| i as f64 / 1001.0).collect();
        let mut rng = rng_from(&["em-huge"]);
        let mut work = Vec::new();
        for _ in 0..100 {
            let y = m.sample_sorted(&xs, &mut rng, &mut work);
            assert!(y.is_finite() && (xs[499]..=xs[500]).contains(&y), "{y}");
        }
        // No data: uniform on the bounds.
        let y = m.sample_sorted(&[], &mut rng, &mut work);
        assert!((0.0..=1.0).contains(&y));
    }
}
