//! The Laplace mechanism (Dwork et al. 2006).
//!
//! * Domain: vectors of real-valued query answers f(X) in R^k.
//! * Input metric: L1 distance between f(X) and f(X') for neighbours under the run's relation;
//!   the caller supplies the L1 sensitivity Delta_1 = max ||f(X) - f(X')||_1.
//! * Measure: pure epsilon-DP.
//! * Proof sketch: with b = Delta_1 / eps, the density ratio of f(X) + Lap(b)^k and
//!   f(X') + Lap(b)^k at any output z is exp((||z - f(X')||_1 - ||z - f(X)||_1) / b)
//!   <= exp(||f(X) - f(X')||_1 / b) <= exp(eps).
//!
//! Sampling uses floating point (see docs/threat-model.md): fine for measuring
//! accuracy, not hardened against the floating-point attacks of Mironov (2012).

use super::check_positive;
use super::mechanism::Charge;
use crate::error::Result;
use rand::Rng;
use rand_distr::Exp1;

mechanism_with_map!(Laplace);

pure_noise_mechanism! {
    /// The Laplace mechanism: Lap(b) noise with b = Delta_1 / eps, drawn through a [`Charge`].
    pub struct Laplace(LaplaceNoise);
    /// The mechanism for an L1 sensitivity under `relation` and an epsilon (both finite and
    /// positive): pure eps-DP.
    fn new;
}

impl Laplace {
    /// b.
    pub fn scale(&self) -> f64 {
        self.noise.scale
    }

    /// The q-quantile of the noise for q in [0.5, 1): -b ln(2 (1 - q)).
    pub fn quantile(&self, q: f64) -> f64 {
        self.noise.quantile(q)
    }
}

impl Charge<'_, Laplace> {
    /// One draw of Lap(b); a vector release draws each coordinate through the same charge.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R) -> f64 {
        self.mechanism.noise.sample(rng)
    }
}

/// The Laplace distribution Lap(b) (variance 2 b^2): noise with no privacy claim of its own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaplaceNoise {
    scale: f64,
}

impl LaplaceNoise {
    /// Lap(b) for a finite, positive b.
    pub fn with_scale(scale: f64) -> Result<Self> {
        check_positive("scale", scale)?;
        Ok(LaplaceNoise { scale })
    }

    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// One draw of Lap(b): a fair sign times an Exp(1) magnitude times b (exact, no log(0)).
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let magnitude: f64 = rng.sample(Exp1);
        if rng.r#gen::<bool>() {
            self.scale * magnitude
        } else {
            -self.scale * magnitude
        }
    }

    /// The q-quantile of Lap(b) for q in [0.5, 1): -b ln(2 (1 - q)).
    pub fn quantile(&self, q: f64) -> f64 {
        laplace_quantile(self.scale, q)
    }
}

/// The q-quantile of Lap(b), q in [0.5, 1) (SPEC 2).
pub fn laplace_quantile(scale: f64, q: f64) -> f64 {
    debug_assert!((0.5..1.0).contains(&q));
    -scale * (2.0 * (1.0 - q)).ln()
}

/// CDF of Lap(b) at x.
pub fn laplace_cdf(scale: f64, x: f64) -> f64 {
    if x < 0.0 {
        0.5 * (x / scale).exp()
    } else {
        1.0 - 0.5 * (-x / scale).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Relation;
    use crate::rng::rng_from;
    use crate::stats::ks_statistic;

    const AR: Relation = Relation::AddRemove;

    #[test]
    fn rejects_bad_parameters() {
        assert!(Laplace::new(1.0, 0.0, AR).is_err());
        assert!(Laplace::new(1.0, -0.1, AR).is_err());
        assert!(Laplace::new(1.0, f64::NAN, AR).is_err());
        assert!(Laplace::new(0.0, 1.0, AR).is_err());
        assert!(LaplaceNoise::with_scale(0.0).is_err());
        assert_eq!(Laplace::new(600.0, 0.1, AR).unwrap().scale(), 6000.0);
    }

    /// Drawing through the ledger handle records the step with the mechanism's map, and a
    /// mechanism calibrated for another relation is refused before any draw.
    #[test]
    fn draws_go_through_a_recorded_charge() {
        let mut ledger = crate::privacy::Ledger::new(AR);
        let lap = Laplace::new(2.0, 0.5, AR).unwrap();
        let mut rng = rng_from(&["test", "laplace-charge"]);
        let mut charge = ledger.charge("train", "laplace (counts)", lap).unwrap();
        let x = charge.sample(&mut rng);
        let same = LaplaceNoise::with_scale(4.0)
            .unwrap()
            .sample(&mut rng_from(&["test", "laplace-charge"]));
        assert_eq!(x, same);
        let e = &ledger.entries[0];
        assert_eq!(
            (e.epsilon, e.sensitivity, e.measure, e.delta),
            (
                Some(0.5),
                Some(2.0),
                Some(crate::privacy::Measure::PureDp),
                None
            )
        );
        let replace = Laplace::new(2.0, 0.5, Relation::ReplaceOne).unwrap();
        let err = ledger.charge("train", "laplace", replace).unwrap_err();
        assert!(err.to_string().contains("replace one"), "{err}");
        assert_eq!(ledger.entries.len(), 1);
    }

    #[test]
    fn quantile_matches_the_thesis_threshold() {
        // D = 600, eps = 1: t = -(600) ln(2 * 0.35) = 214 (thesis section 3.3.2).
        let t = Laplace::new(600.0, 1.0, AR).unwrap().quantile(0.65);
        assert!((t - 214.0).abs() < 0.1, "{t}");
        assert!((laplace_cdf(600.0, t) - 0.65).abs() < 1e-12);
    }

    /// Kolmogorov–Smirnov at level 0.001: accepts Lap(b) and rejects the same draws against
    /// Lap(0.7 b) and Lap(1.3 b) (the test has power against a wrong scale).
    #[test]
    fn samples_follow_laplace_and_wrong_scales_are_rejected() {
        let n = 20_000;
        let b = 3.0;
        let lap = LaplaceNoise::with_scale(b).unwrap();
        let mut rng = rng_from(&["test", "laplace-ks"]);
        let xs: Vec<f64> = (0..n).map(|_| lap.sample(&mut rng)).collect();
        // Critical value of the one-sample KS statistic at alpha = 0.001: 1.949 / sqrt(n).
        let crit = 1.949 / (n as f64).sqrt();
        assert!(ks_statistic(&xs, |x| laplace_cdf(b, x)) < crit);
        for wrong in [0.7 * b, 1.3 * b] {
            assert!(
                ks_statistic(&xs, |x| laplace_cdf(wrong, x)) > crit,
                "scale {wrong}"
            );
        }
    }
}
