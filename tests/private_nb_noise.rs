//! Algorithm 1's mechanism: Laplace noise of scale D/eps on every count, and thresholding at the
//! 65% noise quantile. Statistical tests at level alpha = 0.001, each with a power check that a
//! wrong scale is rejected.

use epsilab::counts::ClassCounts;
use epsilab::learners::{PrivateNbParams, Release, Threshold};
use epsilab::privacy::Ledger;
use epsilab::privacy::laplace::laplace_cdf;
use epsilab::rng::rng_from;
use epsilab::stats::ks_statistic;
use linfa::ParamGuard;
use ndarray::array;

fn counts() -> ClassCounts {
    ClassCounts {
        class: vec![500.0, 300.0],
        on: array![[100.0, 0.0, 480.0, 250.0], [30.0, 300.0, 0.0, 150.0]],
    }
}

/// Noise draws (released minus true) of many independent releases.
fn noise(release: Release, eps: f64, runs: usize) -> Vec<f64> {
    let c = counts();
    let p = PrivateNbParams::new(eps).release(release).check().unwrap();
    let mut out = Vec::new();
    for r in 0..runs {
        let mut rng = rng_from(&["noise-test", &r.to_string()]);
        let n = p
            .release_counts(&c, None, &mut rng, &mut Ledger::default())
            .unwrap();
        for cl in 0..2 {
            for d in 0..4 {
                out.push(n.on[[cl, d]] - c.on[[cl, d]]);
                if let Some(off) = &n.off {
                    out.push(off[[cl, d]] - c.off(cl, d));
                }
            }
            if let Some(nc) = &n.class {
                out.push(nc[cl] - c.class[cl]);
            }
        }
    }
    out
}

/// KS critical value at alpha = 0.001 for n draws (asymptotic: 1.949 / sqrt(n)).
fn ks_crit(n: usize) -> f64 {
    1.949 / (n as f64).sqrt()
}

#[test]
fn on_off_noise_has_scale_d_over_eps() {
    let eps = 0.5;
    let b = 4.0 / eps; // D = 4 features: sensitivity 4.
    let xs = noise(Release::OnOff, eps, 1500);
    let crit = ks_crit(xs.len());
    assert!(ks_statistic(&xs, |x| laplace_cdf(b, x)) < crit);
    for wrong in [0.7 * b, 1.3 * b, 5.0 / eps] {
        assert!(
            ks_statistic(&xs, |x| laplace_cdf(wrong, x)) > crit,
            "scale {wrong} not rejected"
        );
    }
}

#[test]
fn on_only_noise_has_scale_d_plus_one_over_eps() {
    let eps = 2.0;
    let b = 5.0 / eps;
    let xs = noise(Release::OnOnly, eps, 2000);
    let crit = ks_crit(xs.len());
    assert!(ks_statistic(&xs, |x| laplace_cdf(b, x)) < crit);
    // D/eps, the on-off scale, is a wrong scale here and must be rejected.
    for wrong in [4.0 / eps, 0.7 * b, 1.3 * b] {
        assert!(
            ks_statistic(&xs, |x| laplace_cdf(wrong, x)) > crit,
            "scale {wrong} not rejected"
        );
    }
}

/// A zero count is raised to t exactly when its noise falls below t, which for the 65% noise
/// quantile happens with probability 0.65. Two-sided binomial (normal approximation) test at
/// alpha = 0.001 (|z| < 3.29); a threshold at the 70% quantile of the noise is rejected.
#[test]
fn the_65_percent_quantile_threshold_clips_65_percent_of_zero_counts() {
    let c = counts();
    let eps = 1.0;
    let p = PrivateNbParams::new(eps)
        .threshold(Threshold::NoiseQuantile(0.65))
        .check()
        .unwrap();
    let t = Threshold::NoiseQuantile(0.65).value(4.0 / eps, eps);
    assert!((t - (-(4.0 / eps) * (2.0f64 * 0.35).ln())).abs() < 1e-12);
    let runs = 4000;
    let mut clipped = 0usize;
    for r in 0..runs {
        let n = p
            .release_counts(
                &c,
                None,
                &mut rng_from(&["clip", &r.to_string()]),
                &mut Ledger::default(),
            )
            .unwrap();
        // N1[0, 1] = 0 and N1[1, 2] = 0.
        clipped += usize::from(n.on[[0, 1]] < t) + usize::from(n.on[[1, 2]] < t);
    }
    let n = (2 * runs) as f64;
    let z = |p: f64| (clipped as f64 - n * p) / (n * p * (1.0 - p)).sqrt();
    assert!(z(0.65).abs() < 3.29, "z = {}", z(0.65));
    assert!(
        z(0.70).abs() > 3.29,
        "a 70% threshold would not be rejected: z = {}",
        z(0.70)
    );
}

#[test]
fn noise_streams_differ_between_calls_and_repeat_for_a_seed() {
    let c = counts();
    let p = PrivateNbParams::new(1.0).check().unwrap();
    let mut ledger = Ledger::default();
    let a = p
        .release_counts(&c, None, &mut rng_from(&["a"]), &mut ledger)
        .unwrap();
    let b = p
        .release_counts(&c, None, &mut rng_from(&["b"]), &mut ledger)
        .unwrap();
    let a2 = p
        .release_counts(&c, None, &mut rng_from(&["a"]), &mut ledger)
        .unwrap();
    assert_ne!(a.on, b.on);
    assert_eq!(a.on, a2.on);
    // Every release is recorded with its spend: three releases, 3 eps.
    assert_eq!(ledger.entries.len(), 3);
    assert_eq!(ledger.total_epsilon(), 3.0);
}
