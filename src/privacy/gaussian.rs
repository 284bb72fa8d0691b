//! The Gaussian mechanism, with the classic and the analytic calibration (the worked example of
//! an (epsilon, delta) mechanism; docs/architecture.md, "adding a mechanism").
//!
//! * Domain: vectors of real-valued query answers f(X) in R^k.
//! * Input metric: L2 distance between f(X) and f(X') for neighbours under the run's relation;
//!   the caller supplies the L2 sensitivity Delta_2 = max ||f(X) - f(X')||_2.
//! * Mechanism: f(X) + N(0, sigma^2 I).
//! * Measure: (epsilon, delta)-DP.
//! * Classic calibration (Dwork & Roth 2014, Thm. A.1): sigma = Delta_2 sqrt(2 ln(1.25/delta))
//!   / eps, proven only for eps < 1 (refused otherwise).
//! * Analytic calibration (Balle & Wang 2018, Thm. 8): the privacy loss of N(0, sigma^2) noise
//!   for a shift of norm Delta is Gaussian, and the mechanism is (eps, delta)-DP exactly when
//!   delta(sigma) = Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) -
//!   eps sigma/Delta) <= delta. delta(sigma) decreases in sigma, so the smallest valid sigma is
//!   found by bisection on an upper bound of delta(sigma) (the computed value plus a bound on
//!   its floating-point error, [`gaussian_delta_bound`]: the two terms nearly cancel at small
//!   eps and delta), returning the upper end, so the true delta(sigma) never exceeds the target
//!   (checked against mpmath at 60 digits over a grid of (eps, delta, Delta); the exact
//!   smallest sigma is at most 1e-9 relative below). Valid for every eps > 0 and never larger
//!   than the classic sigma.
//!
//! Floating-point sampling: fine for measuring accuracy, not hardened against Mironov (2012).

use super::mechanism::{Charge, PrivacyMap};
use super::{Relation, check_positive};
use crate::error::{Error, Result};
use crate::privacy::accountant::{Guarantee, SubsampledGaussian};
use rand::Rng;
use rand_distr::StandardNormal;

mechanism_with_map!(Gaussian, AccountedGaussian);

/// How a spec sets sigma from (Delta_2, eps, delta); every choice is (eps, delta)-DP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GaussCalibration {
    /// Balle & Wang 2018's analytic sigma at every eps: the least noise.
    #[default]
    Analytic,
    /// The classic sigma, refused from eps = 1 on, where it is not proven.
    Classic,
    /// SURVEYS.md sections 4.3-4.4, as the published Analyze Gauss and `dp_stats` set it: the
    /// classic sigma where it is proven (eps < 1), the analytic one from eps = 1 on.
    #[serde(rename = "classic_below_1")]
    ClassicBelowOne,
}

impl GaussCalibration {
    /// The mechanism for Delta_2 = `sensitivity` at (eps, delta) under `relation`.
    pub fn gaussian(
        self,
        sensitivity: f64,
        (epsilon, delta): (f64, f64),
        relation: Relation,
    ) -> Result<Gaussian> {
        match self {
            GaussCalibration::Classic => Gaussian::classic(sensitivity, epsilon, delta, relation),
            GaussCalibration::ClassicBelowOne if epsilon < 1.0 => {
                Gaussian::classic(sensitivity, epsilon, delta, relation)
            }
            _ => Gaussian::analytic(sensitivity, epsilon, delta, relation),
        }
    }
}

/// The Gaussian mechanism: N(0, sigma^2) noise per coordinate, drawn through a [`Charge`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gaussian {
    noise: GaussianNoise,
    map: PrivacyMap,
}

impl Gaussian {
    /// Classic calibration sigma = Delta_2 sqrt(2 ln(1.25/delta)) / eps; needs eps < 1.
    pub fn classic(sensitivity: f64, epsilon: f64, delta: f64, relation: Relation) -> Result<Self> {
        let map = PrivacyMap::approximate(sensitivity, epsilon, delta, relation)?;
        if epsilon >= 1.0 {
            return Err(Error::param(
                "epsilon",
                format!(
                    "the classic Gaussian calibration is proven only for eps < 1, got {epsilon}; use the analytic one"
                ),
            ));
        }
        let sigma = sensitivity * (2.0 * (1.25 / delta).ln()).sqrt() / epsilon;
        Ok(Gaussian {
            noise: GaussianNoise::with_sigma(sigma)?,
            map,
        })
    }

    /// Analytic calibration (Balle & Wang 2018): the smallest sigma, to a relative 1e-12, whose
    /// [`gaussian_delta_bound`] is at most `delta`, so that the exact delta(sigma) is too.
    pub fn analytic(
        sensitivity: f64,
        epsilon: f64,
        delta: f64,
        relation: Relation,
    ) -> Result<Self> {
        let map = PrivacyMap::approximate(sensitivity, epsilon, delta, relation)?;
        let ok = |s: f64| gaussian_delta_bound(s, sensitivity, epsilon) <= delta;
        let mut hi = sensitivity;
        while !ok(hi) {
            hi *= 2.0;
        }
        let mut lo = hi / 2.0;
        while ok(lo) && lo > f64::MIN_POSITIVE {
            lo /= 2.0;
        }
        // Invariant: delta(lo) > delta >= delta(hi).
        while hi - lo > 1e-12 * hi {
            let mid = 0.5 * (lo + hi);
            if ok(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(Gaussian {
            noise: GaussianNoise::with_sigma(hi)?,
            map,
        })
    }

    pub fn sigma(&self) -> f64 {
        self.noise.sigma
    }
}

impl Charge<'_, Gaussian> {
    /// One coordinate of N(0, sigma^2); a vector release draws every coordinate through the
    /// same charge.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R) -> f64 {
        self.mechanism.noise.sample(rng)
    }
}

/// The Gaussian noise of an iterative release accounted as a whole: noisy gradient descent and
/// DP-SGD (`learners::logistic::dp_sgd`), whose K steps each add N(0, sigma^2 C^2 I) to a clipped
/// gradient sum.
///
/// * Domain: training sets; the released quantities are the K clipped per-example gradient
///   sums of Poisson samples (rate q), each at the iterate the earlier releases produced.
/// * Input metric: L2 on each sum; sensitivity C under add/remove, 2C under replace-one (full
///   batches only).
/// * Mechanism: each sum + N(0, sigma^2 C^2 I), sigma the plan's noise multiplier.
/// * Measure: (epsilon, delta)-DP, with epsilon the RDP accountant's for the whole plan
///   ([`SubsampledGaussian::epsilon`] under the relation), computed here, never supplied.
/// * Proof sketch: `privacy::accountant` (subsampled-Gaussian RDP, adaptive composition, conversion).
///
/// One charge covers the whole plan: every coordinate of every step is drawn through it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccountedGaussian {
    noise: GaussianNoise,
    plan: SubsampledGaussian,
    guarantee: Guarantee,
    map: PrivacyMap,
}

impl AccountedGaussian {
    /// The noise of `plan` with clipping norm `clip`, spending the accountant's (epsilon,
    /// delta) for the plan under `relation` (a subsampled plan under replace-one is refused).
    pub fn new(
        plan: SubsampledGaussian,
        clip: f64,
        delta: f64,
        relation: Relation,
    ) -> Result<Self> {
        check_positive("clip", clip)?;
        let guarantee = plan.for_relation(relation)?.epsilon(delta)?;
        let map = PrivacyMap::approximate(
            relation.doubled_for_replace(clip),
            guarantee.epsilon,
            delta,
            relation,
        )?;
        Ok(AccountedGaussian {
            noise: GaussianNoise::with_sigma(plan.noise_multiplier * clip)?,
            plan,
            guarantee,
            map,
        })
    }

    /// The plan (noise multiplier, sampling rate, steps) the noise is drawn for.
    pub fn plan(&self) -> SubsampledGaussian {
        self.plan
    }

    /// The accountant's guarantee, as recorded in the ledger.
    pub fn guarantee(&self) -> Guarantee {
        self.guarantee
    }

    /// Standard deviation of each coordinate: noise multiplier x C.
    pub fn sigma(&self) -> f64 {
        self.noise.sigma
    }
}

impl Charge<'_, AccountedGaussian> {
    /// One coordinate of N(0, sigma^2 C^2) for one step's gradient sum.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R) -> f64 {
        self.mechanism.noise.sample(rng)
    }
}

/// The exact delta of N(0, sigma^2) noise at eps for an L2 shift of `sensitivity` (Balle &
/// Wang 2018, Thm. 8): Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D), evaluated in f64
/// (see [`gaussian_delta_bound`] for its rounding).
pub fn gaussian_delta(sigma: f64, sensitivity: f64, epsilon: f64) -> f64 {
    let a = sensitivity / (2.0 * sigma);
    let b = epsilon * sigma / sensitivity;
    std_normal_cdf(a - b) - epsilon.exp() * std_normal_cdf(-a - b)
}

/// Phi(x) = erfc(-x / sqrt 2) / 2 with musl's erfc (under one ulp relative; statrs's Phi is
/// about 5e-13 relative off in the tails the analytic calibration subtracts).
fn std_normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x * std::f64::consts::FRAC_1_SQRT_2)
}

/// An upper bound on the exact [`gaussian_delta`]: the computed value plus a bound on its
/// floating-point error. Each term Phi(x) carries a relative error of a few ulps from the
/// error function and 1e-16 x^2 from rounding its argument x (d Phi(-x) / Phi(-x) ~ x dx,
/// dx ~ 1e-16 x); 1e-15 (1 + x^2) per term covers both several times over. The terms nearly
/// cancel when eps and delta are small (e.g. 3e-7 each for delta = 1e-12 at eps = 1e-4), which
/// is where the plain difference was up to 4e-10 relative below the exact delta.
pub fn gaussian_delta_bound(sigma: f64, sensitivity: f64, epsilon: f64) -> f64 {
    let a = sensitivity / (2.0 * sigma);
    let b = epsilon * sigma / sensitivity;
    let (u, v) = (a - b, -a - b);
    let t1 = std_normal_cdf(u);
    let t2 = epsilon.exp() * std_normal_cdf(v);
    t1 - t2 + 1e-15 * ((1.0 + u * u) * t1 + (1.0 + v * v) * t2)
}

/// N(0, sigma^2) with no privacy claim of its own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaussianNoise {
    sigma: f64,
}

impl GaussianNoise {
    pub fn with_sigma(sigma: f64) -> Result<Self> {
        check_positive("sigma", sigma)?;
        Ok(GaussianNoise { sigma })
    }

    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let z: f64 = rng.sample(StandardNormal);
        self.sigma * z
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::{Ledger, Measure};
    use crate::rng::rng_from;
    use crate::stats::ks_statistic;
    use statrs::distribution::{ContinuousCDF, Normal};

    const AR: Relation = Relation::AddRemove;

    /// Kolmogorov–Smirnov at level 0.001 (critical value 1.949 / sqrt(n)): draws made through
    /// the ledger handle follow N(0, sigma^2), and the same draws reject 0.7 sigma and 1.3 sigma.
    #[test]
    fn samples_follow_the_calibrated_normal_and_wrong_scales_are_rejected() {
        let n = 20_000;
        let crit = 1.949 / (n as f64).sqrt();
        let mech = Gaussian::analytic(2.0, 1.0, 1e-5, AR).unwrap();
        let sigma = mech.sigma();
        let mut ledger = Ledger::new(AR);
        let mut charge = ledger
            .charge("release", "gaussian (analytic)", mech)
            .unwrap();
        let mut rng = rng_from(&["test", "gaussian-ks"]);
        let xs: Vec<f64> = (0..n).map(|_| charge.sample(&mut rng)).collect();
        let cdf = |s: f64| {
            let d = Normal::new(0.0, s).unwrap();
            move |x: f64| d.cdf(x)
        };
        assert!(ks_statistic(&xs, cdf(sigma)) < crit);
        for wrong in [0.7 * sigma, 1.3 * sigma] {
            assert!(ks_statistic(&xs, cdf(wrong)) > crit, "sigma {wrong}");
        }
        let e = &ledger.entries[0];
        assert_eq!(e.measure, Some(Measure::ApproxDp));
        assert_eq!(
            (e.epsilon, e.delta, e.sensitivity),
            (Some(1.0), Some(1e-5), Some(2.0))
        );
        assert_eq!(ledger.total_delta(), 1e-5);
    }

    /// The classic sigma is the textbook formula; the analytic sigma matches an independent
    /// root-finder (scipy's brentq on the same profile, xtol 1e-14) to 1e-9, is the smallest
    /// valid sigma to 1e-9, scales linearly with the sensitivity and beats the classic one.
    #[test]
    fn calibrations_match_their_definitions() {
        let classic = Gaussian::classic(1.0, 0.5, 1e-5, AR).unwrap();
        let want = (2.0 * (1.25e5f64).ln()).sqrt() / 0.5;
        assert!((classic.sigma() - want).abs() < 1e-12 * want);
        assert!(Gaussian::classic(1.0, 1.0, 1e-5, AR).is_err());
        for (eps, delta, scipy) in [
            (1.0, 1e-5, 3.730631634815946),
            (0.5, 1e-6, 8.057618480725035),
            (4.0, 1e-5, 1.081161849520239),
            (0.1, 1e-3, 17.404396203031116),
        ] {
            let s = Gaussian::analytic(1.0, eps, delta, AR).unwrap().sigma();
            assert!(
                (s - scipy).abs() < 1e-9 * scipy,
                "eps {eps}: {s} vs {scipy}"
            );
            assert!(gaussian_delta(s, 1.0, eps) <= delta);
            assert!(gaussian_delta(s * (1.0 - 1e-9), 1.0, eps) > delta);
            let s3 = Gaussian::analytic(3.0, eps, delta, AR).unwrap().sigma();
            assert!((s3 - 3.0 * s).abs() < 1e-9 * s3);
            if eps < 1.0 {
                assert!(s < Gaussian::classic(1.0, eps, delta, AR).unwrap().sigma());
            }
        }
    }

    /// A spec's calibration picks its sigma: `classic_below_1` is classic below eps = 1 and
    /// analytic from there, `classic` is refused from eps = 1 on, `analytic` is the default.
    #[test]
    fn a_calibration_picks_its_sigma() {
        let sigma =
            |c: GaussCalibration, eps: f64| c.gaussian(2.0, (eps, 1e-5), AR).map(|g| g.sigma());
        let classic = |eps| Gaussian::classic(2.0, eps, 1e-5, AR).unwrap().sigma();
        let analytic = |eps| Gaussian::analytic(2.0, eps, 1e-5, AR).unwrap().sigma();
        assert_eq!(GaussCalibration::default(), GaussCalibration::Analytic);
        for eps in [0.5, 2.0] {
            assert_eq!(
                sigma(GaussCalibration::Analytic, eps).unwrap(),
                analytic(eps)
            );
        }
        assert_eq!(sigma(GaussCalibration::Classic, 0.5).unwrap(), classic(0.5));
        assert!(sigma(GaussCalibration::Classic, 2.0).is_err());
        assert_eq!(
            sigma(GaussCalibration::ClassicBelowOne, 0.5).unwrap(),
            classic(0.5)
        );
        assert_eq!(
            sigma(GaussCalibration::ClassicBelowOne, 2.0).unwrap(),
            analytic(2.0)
        );
    }

    /// The analytic sigma never lets delta exceed its target: over the grid of
    /// tests/fixtures/analytic_gaussian.json (eps 1e-4 .. 20, delta 0.1 .. 1e-15, Delta 1e-3 ..
    /// 1000; the exact smallest sigma by mpmath at 60 digits) every sigma is at least the exact
    /// one (delta decreases in sigma) and at most 1e-8 relative above it. A calibration 1e-9
    /// relative below the exact sigma would fail the first check wherever it is that close.
    #[test]
    fn analytic_sigma_never_exceeds_its_delta() {
        let text = include_str!("../../tests/fixtures/analytic_gaussian.json");
        let fixture: serde_json::Value = serde_json::from_str(text).unwrap();
        let rows = fixture["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 308);
        let mut worst = 0f64;
        for r in rows {
            let f = |k: &str| r[k].as_f64().unwrap();
            let (eps, delta, sens) = (f("epsilon"), f("delta"), f("sensitivity"));
            let exact: f64 = r["sigma"].as_str().unwrap().parse().unwrap();
            let s = Gaussian::analytic(sens, eps, delta, AR).unwrap().sigma();
            let rel = s / exact - 1.0;
            assert!(
                rel >= 0.0,
                "eps {eps}, delta {delta}, Delta {sens}: {s} < {exact}"
            );
            assert!(rel < 1e-8, "eps {eps}, delta {delta}, Delta {sens}: {rel}");
            worst = worst.max(rel);
        }
        assert!(worst > 0.0);
    }

    /// The accounted noise records the accountant's (epsilon, delta) for its plan, sensitivity C
    /// (2C under replace-one, full batches only), and draws N(0, (sigma C)^2) (KS at level 0.001,
    /// rejecting 0.7 and 1.3 times the scale).
    #[test]
    fn accounted_noise_records_the_accountants_spend() {
        let plan = SubsampledGaussian::new(1.1, 0.01, 1000).unwrap();
        let mech = AccountedGaussian::new(plan, 0.5, 1e-5, AR).unwrap();
        let want = plan.epsilon(1e-5).unwrap();
        assert_eq!(mech.guarantee(), want);
        assert_eq!(mech.sigma(), 1.1 * 0.5);
        let mut ledger = Ledger::new(AR);
        let mut charge = ledger.charge("train", "DP-SGD", mech).unwrap();
        let n = 20_000;
        let mut rng = rng_from(&["test", "accounted-gaussian-ks"]);
        let xs: Vec<f64> = (0..n).map(|_| charge.sample(&mut rng)).collect();
        let crit = 1.949 / (n as f64).sqrt();
        let ks = |s: f64| {
            let d = Normal::new(0.0, s).unwrap();
            ks_statistic(&xs, |x| d.cdf(x))
        };
        assert!(ks(0.55) < crit);
        assert!(ks(0.7 * 0.55) > crit && ks(1.3 * 0.55) > crit);
        let e = &ledger.entries[0];
        assert_eq!(e.measure, Some(Measure::ApproxDp));
        assert_eq!(
            (e.epsilon, e.delta, e.sensitivity),
            (Some(want.epsilon), Some(1e-5), Some(0.5))
        );
        let full = SubsampledGaussian::new(2.0, 1.0, 10).unwrap();
        let rep = AccountedGaussian::new(full, 0.5, 1e-5, Relation::ReplaceOne).unwrap();
        assert_eq!(rep.map.sensitivity, 1.0);
        assert_eq!(
            rep.guarantee(),
            SubsampledGaussian::new(1.0, 1.0, 10)
                .unwrap()
                .epsilon(1e-5)
                .unwrap()
        );
        assert!(AccountedGaussian::new(plan, 0.5, 1e-5, Relation::ReplaceOne).is_err());
        assert!(AccountedGaussian::new(plan, 0.0, 1e-5, AR).is_err());
        assert!(AccountedGaussian::new(plan, 0.5, 0.0, AR).is_err());
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(Gaussian::analytic(1.0, 1.0, 0.0, AR).is_err());
        assert!(Gaussian::analytic(1.0, 1.0, 1.0, AR).is_err());
        assert!(Gaussian::analytic(0.0, 1.0, 1e-5, AR).is_err());
        assert!(Gaussian::analytic(1.0, f64::NAN, 1e-5, AR).is_err());
        assert!(GaussianNoise::with_sigma(-1.0).is_err());
    }
}
