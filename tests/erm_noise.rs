//! The noise of the ERM shoot-out's mechanisms (issue 13) has the calibrated law, and the same
//! draws reject the scale off by ±30%. Norm tests are Kolmogorov–Smirnov at level 0.001
//! (critical value 1.949/√n); the label flips are a two-sided binomial test at 4 standard errors
//! (level about 6e-5). DP-SGD's per-step Gaussian is tested beside the learner
//! (`learners::logistic::dp_sgd` tests, `noise_has_standard_deviation_sigma_times_c`).

use epsilab::learners::logistic::Design;
use epsilab::learners::logistic::ensemble::{Ensemble, fit_ensemble};
use epsilab::learners::logistic::erm::minimise;
use epsilab::learners::logistic::input::perturb_inputs;
use epsilab::learners::logistic::loss::Loss;
use epsilab::learners::logistic::mechanisms::{Problem, output_perturbation};
use epsilab::learners::logistic::solver::{Objective, SolverSettings};
use epsilab::privacy::randomized_response::truth_probability;
use epsilab::privacy::{Ledger, Relation};
use epsilab::rng::rng_from;
use epsilab::stats::ks_statistic;
use ndarray::Array2;
use statrs::distribution::{ContinuousCDF, Gamma};

fn norm(v: impl IntoIterator<Item = f64>) -> f64 {
    v.into_iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// Accepts Gamma(D, beta) for the norms and rejects Gamma(D, 0.7 beta) and Gamma(D, 1.3 beta).
fn assert_gamma_norms(norms: &[f64], dim: usize, beta: f64, what: &str) {
    let crit = 1.949 / (norms.len() as f64).sqrt();
    let ks = |scale: f64| {
        let g = Gamma::new(dim as f64, 1.0 / scale).unwrap();
        ks_statistic(norms, |x| g.cdf(x))
    };
    assert!(ks(beta) < crit, "{what}: KS {} >= {crit}", ks(beta));
    for wrong in [0.7, 1.3] {
        assert!(
            ks(wrong * beta) > crit,
            "{what}: scale x{wrong} not rejected (KS {})",
            ks(wrong * beta)
        );
    }
}

/// Rows of norm <= 1 in D columns, and labels.
fn unit_rows(n: usize, d: usize) -> (Array2<f64>, Vec<f64>) {
    let x = Array2::from_shape_fn((n, d), |(i, j)| {
        (((i * 7 + j * 3) % 11) as f64 - 5.0) / (5.0 * (d as f64).sqrt())
    });
    let y = (0..n)
        .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
        .collect();
    (x, y)
}

/// Huber SVM output perturbation: theta_priv - theta* has norm Gamma(D, 1/(lambda eps))
/// (add/remove sensitivity 1/lambda, the same as for the logistic loss since |l'| <= 1).
#[test]
fn huber_output_perturbation_noise_norm_is_gamma() {
    let (d, lambda, eps) = (3, 2.0, 0.5);
    let (x, y) = unit_rows(40, d);
    let design = Design::dense(x.view());
    let settings = SolverSettings::default();
    let loss = Loss::HUBER_SVM;
    let (exact, _) = minimise(
        loss,
        &Objective::regularised(&design, &y, lambda),
        &settings,
    );
    let mut rng = rng_from(&["erm_noise", "huber output"]);
    let norms: Vec<f64> = (0..2000)
        .map(|_| {
            let mut ledger = Ledger::new(Relation::AddRemove);
            let problem = Problem {
                loss,
                design: &design,
                y: &y,
                lambda,
                settings: &settings,
            };
            let (theta, _) = output_perturbation(problem, eps, &mut rng, &mut ledger).unwrap();
            norm(theta.iter().zip(&exact).map(|(a, b)| a - b))
        })
        .collect();
    assert_gamma_norms(&norms, d, 1.0 / (lambda * eps), "huber output perturbation");
}

/// Input perturbation: each row's noise has norm Gamma(D, 2/eps_x) (replace-one sensitivity 2,
/// the unit ball's diameter) and each label flips with probability 1/(1 + e^eps_y).
#[test]
fn input_perturbation_row_noise_is_gamma_and_labels_flip_at_the_rr_rate() {
    let (d, eps, share) = (2, 1.0, 0.5);
    let (x, y) = unit_rows(20_000, d);
    let design = Design::dense(x.view());
    let mut rng = rng_from(&["erm_noise", "input perturbation"]);
    let mut ledger = Ledger::new(Relation::ReplaceOne);
    let (xt, yt) = perturb_inputs(&design, &y, eps, share, &mut rng, &mut ledger).unwrap();
    let norms: Vec<f64> = xt
        .rows()
        .into_iter()
        .zip(x.rows())
        .map(|(a, b)| norm(a.iter().zip(b.iter()).map(|(u, v)| u - v)))
        .collect();
    let (eps_x, eps_y) = (eps * (1.0 - share), eps * share);
    assert_gamma_norms(&norms, d, 2.0 / eps_x, "input perturbation rows");
    let n = y.len() as f64;
    let flips = y.iter().zip(&yt).filter(|(a, b)| a != b).count() as f64;
    let within = |e: f64| {
        let p = 1.0 - truth_probability(e);
        (flips - n * p).abs() < 4.0 * (n * p * (1.0 - p)).sqrt()
    };
    assert!(within(eps_y), "{flips} flips of {n}");
    for wrong in [0.7, 1.3] {
        assert!(!within(wrong * eps_y), "eps_y x{wrong} not rejected");
    }
}

/// Subsample-and-aggregate: the released mean minus the mean of the clipped block estimates
/// has norm Gamma(D, 2 B sqrt(D) / (k eps)).
#[test]
fn subsample_and_aggregate_noise_norm_is_gamma() {
    let (d, k, bound, eps) = (4, 5, 0.5, 0.8);
    let mut rng = rng_from(&["erm_noise", "subsample and aggregate"]);
    let norms: Vec<f64> = (0..4000)
        .map(|_| {
            let mut ledger = Ledger::new(Relation::AddRemove);
            // Block estimates: 0.3 in every coordinate, inside the box, so the mean is 0.3.
            let theta = fit_ensemble(
                Ensemble::SubsampleAggregate { blocks: k, bound },
                50,
                eps,
                &mut rng,
                &mut ledger,
                |_, _, _, _| Ok(vec![0.3; d]),
            )
            .unwrap();
            norm(theta.iter().map(|t| t - 0.3))
        })
        .collect();
    let beta = 2.0 * bound * (d as f64).sqrt() / (k as f64 * eps);
    assert_gamma_norms(&norms, d, beta, "subsample-and-aggregate");
}
