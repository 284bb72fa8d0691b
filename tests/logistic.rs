//! Logistic regression: agreement with linfa-logistic, solver cross-checks, mechanism
//! sensitivities and zero-noise limits, Table 4.1, lambda selection and the harness path.

use epsilab::data::{BinaryMatrix, Dataset, Features, SplitRule};
use epsilab::learners::Classifier;
use epsilab::learners::logistic::dp_sgd::DpSgdParams;
use epsilab::learners::logistic::mechanisms::objective_perturbation;
use epsilab::learners::logistic::mechanisms::{
    BranchRule, Problem, fm_coefficients, fm_minimise, functional_mechanism, objective_branch,
    objective_branch_by, objective_branch_table, objective_lambda_threshold,
    objective_perturbation_with_noise, output_perturbation,
};
use epsilab::learners::logistic::preprocess::{scale_rows, thesis_binary};
use epsilab::learners::logistic::row_caches::DatasetCaches;
use epsilab::learners::logistic::select::{
    Starts, Tuning, cross_validate_lambda, private_select_lambda,
};
use epsilab::learners::logistic::*;
use epsilab::privacy::{Exponential, Ledger, Relation};
use epsilab::rng::{Rng, rng_from};
use epsilab::stats::ks_statistic;
use linfa::ParamGuard;
use linfa::prelude::*;
use ndarray::{Array1, Array2};
use rand::Rng as _;
use rand_distr::StandardNormal;
use statrs::distribution::{ContinuousCDF, Gamma};

/// N x D Gaussian rows scaled into the unit ball, labels from a noisy linear rule.
fn synthetic(n: usize, d: usize, tag: &str) -> (Array2<f64>, Array1<usize>) {
    let mut rng = rng_from(&["lr-test", tag]);
    let w: Vec<f64> = (0..d).map(|_| rng.sample(StandardNormal)).collect();
    let mut x = Array2::zeros((n, d));
    let mut y = Array1::zeros(n);
    for i in 0..n {
        let row: Vec<f64> = (0..d).map(|_| rng.sample(StandardNormal)).collect();
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        let s = rng.r#gen::<f64>() / norm.max(1e-12);
        let z: f64 = row.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() * s;
        let p = 1.0 / (1.0 + (-4.0 * z).exp());
        y[i] = usize::from(rng.r#gen::<f64>() < p);
        for j in 0..d {
            x[[i, j]] = row[j] * s;
        }
    }
    (x, y)
}

fn pm1(y: &Array1<usize>) -> Vec<f64> {
    y.iter().map(|&c| if c == 1 { 1.0 } else { -1.0 }).collect()
}

fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

fn newton() -> SolverSettings {
    SolverSettings {
        solver: Solver::Newton,
        ..SolverSettings::default()
    }
}

/// Newton's settings, for [`problem`].
static NEWTON: std::sync::LazyLock<SolverSettings> = std::sync::LazyLock::new(newton);

/// The logistic problem on `des` and `y` at `lambda`, solved by Newton.
fn problem<'a, 'd>(des: &'a Design<'d>, y: &'a [f64], lambda: f64) -> Problem<'a, 'd> {
    Problem {
        loss: Loss::Logistic,
        design: des,
        y,
        lambda,
        settings: &NEWTON,
    }
}

fn lbfgs() -> SolverSettings {
    SolverSettings {
        solver: Solver::Lbfgs,
        ..SolverSettings::default()
    }
}

/// linfa-logistic minimises sum_n -log sigma(y_n w.x_n) + (alpha/2)||w||^2 = N J(w) when
/// alpha = lambda (thesis lambda), so with `with_intercept(false)` the minimisers coincide.
#[test]
fn agrees_with_linfa_logistic_when_alpha_equals_lambda() {
    let (x, y) = synthetic(300, 6, "linfa");
    for lambda in [0.1, 1.0, 10.0] {
        let ds = linfa::Dataset::new(x.clone(), y.clone());
        let ours = LogisticParams::new(lambda)
            .solver(Solver::Newton)
            .check()
            .unwrap()
            .fit(&ds)
            .unwrap();
        assert!(ours.convergence.unwrap().converged);
        let theirs = linfa_logistic::LogisticRegression::default()
            .alpha(lambda)
            .with_intercept(false)
            .gradient_tolerance(1e-10)
            .max_iterations(10_000)
            .fit(&ds)
            .unwrap();
        // linfa labels the more frequent class +1; flip if that is class 0.
        let sign = if theirs.labels().pos.class == 1 {
            1.0
        } else {
            -1.0
        };
        let w: Vec<f64> = theirs.params().iter().map(|v| sign * v).collect();
        let d = dist(ours.theta.as_slice().unwrap(), &w);
        assert!(d < 1e-4, "lambda {lambda}: |theta - linfa| = {d}");
        assert_eq!(theirs.intercept(), 0.0);
        let pred: Array1<usize> = Predict::predict(&ours, &x);
        let acc = pred.iter().zip(&y).filter(|(a, b)| a == b).count() as f64 / 300.0;
        assert!(acc > 0.6, "{acc}");
    }
}

#[test]
fn newton_and_lbfgs_agree() {
    let (x, y) = synthetic(400, 8, "solvers");
    let yy = pm1(&y);
    let des = Design::dense(x.view());
    for lambda in [1e-2, 1.0, 100.0] {
        let obj = Objective::regularised(&des, &yy, lambda);
        let (a, ca) = obj.minimise(&newton());
        let (b, cb) = obj.minimise(&lbfgs());
        assert!(ca.converged && cb.converged, "{ca:?} {cb:?}");
        assert!(dist(&a, &b) < 1e-6, "lambda {lambda}: {}", dist(&a, &b));
        assert!(ca.grad_norm <= 1e-10 * ca.initial_grad_norm);
    }
    // Binary +-1 design with row scales too.
    let data = binary_dataset(500, 20, 4, "solvers-bin");
    let rows: Vec<u32> = (0..500).collect();
    let (des, _) = thesis_binary(&data, &rows, None, true).unwrap();
    let yy = labels_pm1(&data, &rows).unwrap();
    let obj = Objective::regularised(&des, &yy, 1.0);
    let (a, _) = obj.newton(&newton());
    let (b, cb) = obj.lbfgs(&lbfgs());
    assert!(cb.converged);
    assert!(dist(&a, &b) < 1e-6);
}

/// ||theta(X) - theta(X')|| <= 1/lambda (the add/remove sensitivity; half the thesis's
/// replace-one 2/lambda) for X' = X plus one example with ||x|| <= 1 (12 random instances,
/// lambda in {0.1, 1, 10}, the added example adversarial or random).
#[test]
fn output_perturbation_sensitivity_bound_holds_on_neighbours() {
    let mut rng = rng_from(&["neighbours"]);
    let mut worst: f64 = 0.0;
    for inst in 0..12 {
        let (x, y) = synthetic(40 + inst * 10, 3 + inst % 4, &format!("nb{inst}"));
        let lambda = [0.1, 1.0, 10.0][inst % 3];
        let yy = pm1(&y);
        let des = Design::dense(x.view());
        let (t, _) = Objective::regularised(&des, &yy, lambda).minimise(&newton());
        // The added example: against the current model, on the unit sphere.
        let d = x.ncols();
        let tn = t.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
        let mut xn: Vec<f64> = t.iter().map(|v| v / tn).collect();
        if inst % 2 == 1 {
            xn = (0..d)
                .map(|_| rng.sample::<f64, _>(StandardNormal))
                .collect();
            let nn = xn.iter().map(|v| v * v).sum::<f64>().sqrt();
            xn.iter_mut().for_each(|v| *v /= nn);
        }
        let mut x2 = x.clone();
        x2.push_row(ndarray::ArrayView1::from(&xn)).unwrap();
        let mut y2 = yy.clone();
        y2.push(-1.0);
        let des2 = Design::dense(x2.view());
        let (t2, _) = Objective::regularised(&des2, &y2, lambda).minimise(&newton());
        let gap = dist(&t, &t2);
        assert!(
            gap <= 1.0 / lambda,
            "instance {inst}: {gap} > {}",
            1.0 / lambda
        );
        worst = worst.max(gap * lambda);
    }
    assert!(worst > 0.0);
}

#[test]
fn output_perturbation_records_its_spend() {
    let (x, y) = synthetic(100, 4, "out");
    let des = Design::dense(x.view());
    let mut ledger = Ledger::default();
    let mut rng = rng_from(&["out"]);
    let (t, c) =
        output_perturbation(problem(&des, &pm1(&y), 2.0), 0.5, &mut rng, &mut ledger).unwrap();
    assert_eq!(t.len(), 4);
    assert!(c.converged);
    assert_eq!(ledger.entries[0].epsilon, Some(0.5));
    // lambda = 2: 1/lambda under add/remove, 2/lambda under replace-one.
    assert_eq!(ledger.entries[0].sensitivity, Some(0.5));
    assert_eq!(ledger.entries[0].relation, "add/remove one example");
    let mut replace = Ledger::new(Relation::ReplaceOne);
    output_perturbation(problem(&des, &pm1(&y), 2.0), 0.5, &mut rng, &mut replace).unwrap();
    assert_eq!(replace.entries[0].sensitivity, Some(1.0));
    assert_eq!(replace.entries[0].relation, "replace one example");
    // Rows outside the unit ball are refused.
    let big = &x * 10.0;
    let des = Design::dense(big.view());
    assert!(
        output_perturbation(problem(&des, &pm1(&y), 1.0), 1.0, &mut rng, &mut ledger,).is_err()
    );
}

#[test]
fn objective_perturbation_without_noise_is_non_private_lr() {
    let (x, y) = synthetic(200, 5, "obj0");
    let yy = pm1(&y);
    let des = Design::dense(x.view());
    for lambda in [0.5, 5.0] {
        let (a, _) = Objective::regularised(&des, &yy, lambda).minimise(&newton());
        let (b, c) =
            objective_perturbation_with_noise(&des, &yy, lambda, &[0.0; 5], 0.0, &newton());
        assert!(c.converged);
        assert!(dist(&a, &b) < 1e-12);
        // With noise and Delta, the minimiser satisfies its own first-order condition.
        let bvec = [3.0, -1.0, 0.5, 0.0, 2.0];
        let (t, _) = objective_perturbation_with_noise(&des, &yy, lambda, &bvec, 0.01, &newton());
        let g = Objective::regularised(&des, &yy, lambda).gradient(&t);
        for k in 0..5 {
            let full = g[k] + bvec[k] / 200.0 + 0.01 * t[k];
            assert!(full.abs() < 1e-9, "{full}");
        }
    }
}

/// Table 4.1 by hand (c = 1/4), the thesis's replace-one form:
/// eps' = eps - ln(1 + 2c/lambda + c^2/lambda^2).
#[test]
fn table_4_1_branches_by_hand() {
    let objective_branch = |l, e, n| objective_branch(l, e, n, Relation::ReplaceOne);
    let objective_lambda_threshold = |e| objective_lambda_threshold(e, Relation::ReplaceOne);
    // eps = 0.1, lambda = 1: ln(1.5625) = 0.446287 > 0.1 -> Delta branch, eps' = 0.05,
    // Delta = (0.25 / (e^0.025 - 1) - 1) / N.
    let b = objective_branch(1.0, 0.1, 1000);
    assert!(!b.direct);
    assert!((b.eps_prime - 0.05).abs() < 1e-15);
    let delta = (0.25 / (0.025f64.exp() - 1.0) - 1.0) / 1000.0;
    assert!((b.delta - delta).abs() < 1e-15);
    assert!((b.delta - 0.0088757).abs() < 1e-6);
    assert!((b.noise_scale - 40.0).abs() < 1e-12);
    // eps = 0.1, lambda = 10: ln(1.050625) = 0.0493852 -> direct, eps' = 0.0506148.
    let b = objective_branch(10.0, 0.1, 1000);
    assert!(b.direct && b.delta == 0.0);
    assert!((b.eps_prime - 0.0506148).abs() < 1e-6);
    // eps = 10, lambda = 0.01: ln(676) = 6.51619 -> direct; lambda = 1e-3: ln(63001) = 11.05 -> not.
    assert!(objective_branch(0.01, 10.0, 10).direct);
    assert!((objective_branch(0.01, 10.0, 10).eps_prime - (10.0 - 676f64.ln())).abs() < 1e-12);
    assert!(!objective_branch(1e-3, 10.0, 10).direct);
    // Thresholds lambda* = c / (e^(eps/2) - 1).
    for (eps, thr) in [
        (0.1, 4.8759),
        (0.5, 0.88020),
        (1.0, 0.38538),
        (10.0, 0.0016959),
    ] {
        let t = objective_lambda_threshold(eps);
        assert!((t - thr).abs() / thr < 1e-4, "eps {eps}: {t}");
        assert!(objective_branch(t * 1.001, eps, 100).direct);
        assert!(!objective_branch(t * 0.999, eps, 100).direct);
    }
    let grid = LAMBDA_GRID;
    let table = objective_branch_table(&grid, &[0.1, 0.5, 1.0, 10.0], Relation::ReplaceOne);
    assert_eq!(table.len(), 36);
    let direct_count = |e: f64| table.iter().filter(|r| r.1 == e && r.2).count();
    // lambda >= 10 at 0.1; >= 1 at 0.5 and 1; >= 1e-2 at 10.
    assert_eq!(direct_count(0.1), 5);
    assert_eq!(direct_count(0.5), 6);
    assert_eq!(direct_count(1.0), 6);
    assert_eq!(direct_count(10.0), 8);
}

#[test]
fn functional_mechanism_without_noise_minimises_the_quadratic() {
    let (x, y) = synthetic(150, 4, "fm");
    let yy = pm1(&y);
    let des = Design::dense(x.view());
    let (a, m) = fm_coefficients(&des, &yy);
    // Check the coefficients against the definition on the dense matrix.
    for k in 0..4 {
        let ak: f64 = (0..150).map(|i| (0.5 - y[i] as f64) * x[[i, k]]).sum();
        assert!((a[k] - ak).abs() < 1e-12);
        for l in 0..4 {
            let mkl: f64 = (0..150).map(|i| x[[i, k]] * x[[i, l]] / 8.0).sum();
            assert!((m[k * 4 + l] - mkl).abs() < 1e-12);
        }
    }
    let (theta, rho, trimmed) = fm_minimise(&a, &m, 4, 1.0);
    assert_eq!((rho, trimmed), (0.0, 0));
    // Stationarity of a.theta + theta^T M theta.
    for k in 0..4 {
        let g = a[k] + 2.0 * (0..4).map(|l| m[k * 4 + l] * theta[l]).sum::<f64>();
        assert!(g.abs() < 1e-10);
    }
    // Its objective is below that of nearby points.
    let q = |t: &[f64]| {
        let lin: f64 = (0..4).map(|k| a[k] * t[k]).sum();
        let quad: f64 = (0..4)
            .flat_map(|k| (0..4).map(move |l| (k, l)))
            .map(|(k, l)| t[k] * m[k * 4 + l] * t[l])
            .sum();
        lin + quad
    };
    let mut t2 = theta.clone();
    t2[1] += 1e-3;
    assert!(q(&t2) > q(&theta));
}

#[test]
fn functional_mechanism_fixes_indefinite_matrices() {
    // Indefinite even after rho: eigenvalues 2 and -5, rho = 1 -> trim one direction.
    let m = [-1.5, 3.5, 3.5, -1.5];
    let a = [1.0, -2.0];
    let (theta, rho, trimmed) = fm_minimise(&a, &m, 2, 1.0);
    assert_eq!((rho, trimmed), (1.0, 1));
    // Kept eigenvector (1, 1)/sqrt 2 with eigenvalue 2 + 1: theta = -(1/2) v (v.a) / 3.
    let va = (a[0] + a[1]) / 2f64.sqrt();
    let expect = -0.5 * va / 3.0 / 2f64.sqrt();
    assert!((theta[0] - expect).abs() < 1e-12 && (theta[1] - expect).abs() < 1e-12);
    // rho alone suffices.
    let (_, rho, trimmed) = fm_minimise(&a, &[-0.5, 0.0, 0.0, 1.0], 2, 1.0);
    assert_eq!((rho, trimmed), (1.0, 0));
    // A full private run records Delta = D^2/4 + 3D for FMsens1, D/4 + 3 sqrt(D) for FMsens2.
    let (x, y) = synthetic(200, 4, "fm-run");
    let des = Design::dense(x.view());
    let mut ledger = Ledger::default();
    let mut rng = rng_from(&["fm-run"]);
    let (_, info) = functional_mechanism(
        &des,
        &pm1(&y),
        1.0,
        FmSensitivity::Sens1,
        &mut rng,
        &mut ledger,
    )
    .unwrap();
    assert_eq!(info.sensitivity, 4.0 + 12.0);
    let (_, info) = functional_mechanism(
        &des,
        &pm1(&y),
        1.0,
        FmSensitivity::Sens2,
        &mut rng,
        &mut ledger,
    )
    .unwrap();
    assert_eq!(info.sensitivity, 1.0 + 6.0);
    assert_eq!(ledger.entries[1].sensitivity, Some(7.0));
    assert!((ledger.total_epsilon() - 2.0).abs() < 1e-15);
}

/// A binary dataset with `k` ones per row and labels from a linear rule on the first features.
fn binary_dataset(n: usize, d: usize, k: usize, tag: &str) -> Dataset {
    let mut rng = rng_from(&["lr-bin", tag]);
    let mut m = BinaryMatrix::new(d);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let mut ones: Vec<u32> = rand::seq::index::sample(&mut rng, d, k)
            .into_iter()
            .map(|j| j as u32)
            .collect();
        ones.sort_unstable();
        let score: f64 = ones
            .iter()
            .map(|&j| if j < d as u32 / 2 { 1.0 } else { -1.0 })
            .sum();
        let p = 1.0 / (1.0 + (-score).exp());
        labels.push(u16::from(rng.r#gen::<f64>() < p));
        m.push_row(&ones);
    }
    Dataset::new(
        tag.into(),
        tag.into(),
        Features::Binary(m),
        labels,
        vec!["0".into(), "1".into()],
        SplitRule::Fixed { n_train: n / 2 },
    )
}

#[test]
fn harness_path_on_sparse_binary_data() {
    let data = binary_dataset(2000, 30, 5, "harness");
    let train: Vec<u32> = (0..1000).collect();
    let test: Vec<u32> = (1000..2000).collect();
    let y = labels_pm1(&data, &train).unwrap();
    let cols: Vec<usize> = (0..30).step_by(2).collect();
    let mut des = Design::new(&data, &train, Some(&cols), Encoding::Indicator).unwrap();
    let pre = scale_rows(&mut des, RowScaling::PublicBound(5.0));
    assert!(pre.private);
    assert!(des.max_row_norm() <= 1.0 + 1e-12);
    let model = LogisticParams::new(1.0)
        .check()
        .unwrap()
        .fit_design(&des, &y);
    assert!(model.convergence.unwrap().converged);
    let pred = Classifier::predict(&model, &data, &test).unwrap();
    let acc = pred
        .iter()
        .zip(&test)
        .filter(|(p, i)| **p == data.labels[**i as usize])
        .count() as f64
        / 1000.0;
    assert!(acc > 0.65, "{acc}");
    // Private fits, all three methods, through the params.
    let mut ledger = Ledger::default();
    let mut rng: Rng = rng_from(&["harness-private"]);
    for method in [
        PrivateLrMethod::Output,
        PrivateLrMethod::Objective,
        PrivateLrMethod::Functional(FmSensitivity::Sens2),
    ] {
        let p = PrivateLogisticParams::new(method, 1e6, 1.0)
            .check()
            .unwrap();
        let fit = p.fit_design(&des, &y, &mut rng, &mut ledger).unwrap();
        let pred = Classifier::predict(&fit.model, &data, &test).unwrap();
        let acc_p = pred
            .iter()
            .zip(&test)
            .filter(|(p, i)| **p == data.labels[**i as usize])
            .count() as f64
            / 1000.0;
        // Huge eps: output and objective perturbation recover the non-private model.
        if method != PrivateLrMethod::Functional(FmSensitivity::Sens2) {
            assert!((acc_p - acc).abs() < 0.02, "{method:?}: {acc_p} vs {acc}");
        } else {
            assert!(acc_p > 0.6, "{acc_p}");
        }
    }
    assert_eq!(ledger.entries.len(), 3);
    // Thesis preprocessing is flagged non-private; the public variant is private.
    let (d1, p1) = thesis_binary(&data, &train, None, true).unwrap();
    assert!(!p1.private && (d1.max_row_norm() - 1.0).abs() < 1e-12);
    let mut l = Ledger::default();
    p1.record("scaling", &mut l);
    assert!(!l.entries[0].private);
    let (_, p2) = thesis_binary(&data, &train, None, false).unwrap();
    assert!(p2.private);
}

#[test]
fn private_params_through_linfa_fit() {
    let (x, y) = synthetic(300, 5, "linfa-private");
    let ds = linfa::Dataset::new(x.clone(), y.clone());
    let p = PrivateLogisticParams::new(PrivateLrMethod::Objective, 1.0, 1.0).seed(3);
    let a = p.clone().check().unwrap().fit(&ds).unwrap();
    let b = p.check().unwrap().fit(&ds).unwrap();
    assert_eq!(a, b, "same seed, same noise");
    assert!(a.ledger.is_private_within(Some(1.0)), "{:?}", a.ledger);
    let pa: Array1<usize> = Predict::predict(&a, &x);
    assert_eq!(pa.len(), 300);
    assert!(
        PrivateLogisticParams::new(PrivateLrMethod::Output, 0.0, 1.0)
            .check()
            .is_err()
    );
    assert!(LogisticParams::new(-1.0).check().is_err());
    let bad = linfa::Dataset::new(x, y.mapv(|c| c + 1));
    assert!(LogisticParams::new(1.0).check().unwrap().fit(&bad).is_err());
}

#[test]
fn lambda_selection_cv_and_private() {
    let (x, y) = synthetic(500, 5, "cv");
    let yy = pm1(&y);
    let des = Design::dense(x.view());
    let mut rng = rng_from(&["cv"]);
    let cv = cross_validate_lambda(
        &des,
        &yy,
        &LAMBDA_GRID,
        5,
        &newton(),
        Starts::Cold,
        &mut rng,
    )
    .unwrap();
    assert_eq!(cv.scores.len(), 9);
    let best = cv.scores.iter().map(|s| s.1).fold(0.0, f64::max);
    assert!(cv.scores.iter().any(|s| s.0 == cv.lambda && s.1 == best));
    // Huge regularisation is worse than the best.
    assert!(cv.scores[8].1 <= best);

    let mut ledger = Ledger::default();
    let params = PrivateLogisticParams::new(PrivateLrMethod::Output, 0.5, 1.0)
        .check()
        .unwrap();
    let (choice, model) = private_select_lambda(
        &des,
        &yy,
        &[0.1, 1.0, 10.0],
        Tuning::Sequential { eps_select: 0.5 },
        &mut rng,
        &mut ledger,
        |d, y, lambda, rng, ledger| {
            Ok(params
                .with_lambda(lambda)
                .fit_design(d, y, rng, ledger)?
                .model)
        },
    )
    .unwrap();
    assert!([0.1, 1.0, 10.0].contains(&choice.lambda));
    assert_eq!(model.theta.len(), 5);
    assert!((ledger.total_epsilon() - 1.0).abs() < 1e-12);
    assert_eq!(ledger.entries.len(), 2);
    assert_eq!(ledger.entries[1].sensitivity, Some(1.0));

    // The exponential mechanism with a huge eps picks the best; with eps -> 0 it is uniform-ish.
    let q = [10.0, 30.0, 20.0];
    let mut choose = |eps: f64| {
        let m = Exponential::new(1.0, eps, Relation::AddRemove).unwrap();
        let mut l = Ledger::default();
        let r = l
            .charge("choice", "exponential", m)
            .unwrap()
            .choose(&q, &mut rng);
        assert_eq!(l.total_epsilon(), eps);
        r
    };
    assert_eq!(choose(1e3), 1);
    let picks: Vec<usize> = (0..3000).map(|_| choose(1e-9)).collect();
    for r in 0..3 {
        let c = picks.iter().filter(|&&p| p == r).count();
        assert!((800..1200).contains(&c), "{c}");
    }
}

/// A ledger under `relation` with a declared public N of 100 (the tiny-input tests below).
fn declared_ledger(relation: Relation) -> Ledger {
    Ledger::new(relation).with_public_size(Some(epsilab::privacy::PublicSize::new(
        100,
        "declared in the test",
    )))
}

/// A ledger's steps as (name, epsilon): what must not depend on a private N.
fn ledger_steps(ledger: &Ledger) -> Vec<(String, Option<f64>)> {
    ledger
        .entries
        .iter()
        .map(|e| (e.name.clone(), e.epsilon))
        .collect()
}

/// Private lambda selection is defined on every training set under add/remove, where N is
/// private: one row fewer than |grid| + 1 (so some parts are empty) is answered like any N,
/// not refused, with the same ledger (a refusal on one neighbour and an answer on the other
/// would break every epsilon). Under replace-one N is public and may refuse. Every candidate
/// learner `lambda = "private"` accepts is tried: the private ERM methods, DP-SGD and noisy GD,
/// under both accountings.
#[test]
fn private_lambda_selection_answers_every_size_under_add_remove() {
    type Fit<'a> = Box<
        dyn Fn(&Design, &[f64], f64, &mut Rng, &mut Ledger) -> epsilab::error::Result<LogisticModel>
            + 'a,
    >;
    let grid = [0.1, 1.0, 10.0];
    let (x, y) = synthetic(3, 4, "tiny");
    let yy = pm1(&y);
    let mut learners: Vec<(String, Fit)> = Vec::new();
    for method in [
        PrivateLrMethod::Output,
        PrivateLrMethod::Objective,
        PrivateLrMethod::ObjectiveLargerEpsPrime,
        PrivateLrMethod::Functional(FmSensitivity::Sens2),
    ] {
        let p = PrivateLogisticParams::new(method, 0.5, 1.0)
            .check()
            .unwrap();
        let fit: Fit = Box::new(move |d, y, l, rng, ledger| {
            Ok(p.with_lambda(l).fit_design(d, y, rng, ledger)?.model)
        });
        learners.push((format!("{method:?}"), fit));
    }
    for (name, sgd) in [
        ("dp_sgd", DpSgdParams::dp_sgd(0.5)),
        ("noisy_gd", DpSgdParams::noisy_gd(0.5)),
    ] {
        let p = sgd.noise_multiplier(1.0).check().unwrap();
        let fit: Fit =
            Box::new(move |d, y, _, rng, ledger| Ok(p.fit_design(d, y, rng, ledger)?.model));
        learners.push((name.to_string(), fit));
    }
    let tunings = [
        Tuning::Sequential { eps_select: 0.5 },
        Tuning::Parallel { eps_select: 0.5 },
    ];
    for (name, fit) in &learners {
        // The candidate's own spend, read from the sequential ledger (the DP-SGD candidates'
        // fixed noise multiplier spends more than 0.5).
        let mut candidate = f64::NAN;
        for tuning in tunings {
            let select = |rows: usize, relation: Relation| {
                let des = Design::dense(x.slice(ndarray::s![..rows, ..]));
                let mut ledger = declared_ledger(relation);
                let mut rng = rng_from(&["tiny-select", &rows.to_string()]);
                let out = private_select_lambda(
                    &des,
                    &yy[..rows],
                    &grid,
                    tuning,
                    &mut rng,
                    &mut ledger,
                    |d, y, l, rng, ledger| fit(d, y, l, rng, ledger),
                );
                (out, ledger)
            };
            let mut steps = Vec::new();
            for rows in 0..=3 {
                let (out, ledger) = select(rows, Relation::AddRemove);
                let (choice, model) =
                    out.unwrap_or_else(|e| panic!("{name} {tuning:?}, N = {rows}: {e}"));
                assert!(grid.contains(&choice.lambda));
                assert_eq!(model.theta.len(), 4);
                assert!(
                    model.theta.iter().all(|t| t.is_finite()),
                    "{name} N = {rows}"
                );
                steps.push(ledger_steps(&ledger));
            }
            assert!(steps.windows(2).all(|w| w[0] == w[1]), "{name}: {steps:?}");
            // Sequential: the candidate's and the selection's spends add; parallel: one step,
            // the largest of the parts' spends.
            let spent: f64 = steps[0].iter().filter_map(|s| s.1).sum();
            match tuning {
                Tuning::Sequential { .. } => candidate = spent - 0.5,
                Tuning::Parallel { .. } => {
                    assert_eq!(steps[0].len(), 1, "{name}: {steps:?}");
                    assert!(candidate > 0.0, "{name}: {candidate}");
                    assert!(
                        (spent - candidate.max(0.5)).abs() < 1e-9,
                        "{name}: {steps:?}"
                    );
                }
            }
            assert!(
                select(3, Relation::ReplaceOne).0.is_err(),
                "N = |grid| is public there"
            );
        }
    }
}

/// Averaging on disjoint blocks and subsample-and-aggregate answer every training-set size
/// under add/remove, down to no rows (every block empty), with the same ledger steps; under
/// replace-one, where N is public, fewer rows than blocks is refused.
#[test]
fn ensembles_answer_every_size_under_add_remove() {
    use epsilab::learners::logistic::ensemble::{Ensemble, fit_ensemble};
    let (x, y) = synthetic(3, 4, "tiny-ensemble");
    let yy = pm1(&y);
    let private = PrivateLogisticParams::new(PrivateLrMethod::Output, 0.5, 1.0)
        .check()
        .unwrap();
    let exact = LogisticParams::new(1.0).check().unwrap();
    let ensembles = [
        Ensemble::Parallel(4),
        Ensemble::SubsampleAggregate {
            blocks: 4,
            bound: 1.0,
        },
    ];
    for ensemble in ensembles {
        let run = |rows: usize, relation: Relation| {
            let des = Design::dense(x.slice(ndarray::s![..rows, ..]));
            let mut ledger = declared_ledger(relation);
            let mut rng = rng_from(&["tiny-ensemble", &rows.to_string()]);
            let out = fit_ensemble(
                ensemble,
                rows,
                1.0,
                &mut rng,
                &mut ledger,
                |r, eps, rng, l| {
                    let sub = r.map(|r| des.subset(r));
                    let d = sub.as_ref().unwrap_or(&des);
                    let ys: Vec<f64> =
                        r.map_or(yy[..rows].to_vec(), |r| r.iter().map(|&i| yy[i]).collect());
                    Ok(match eps {
                        Some(_) => private.fit_design(d, &ys, rng, l)?.model.theta.to_vec(),
                        None => exact.fit_design(d, &ys).theta.to_vec(),
                    })
                },
            );
            (out, ledger)
        };
        let mut steps = Vec::new();
        for rows in 0..=3 {
            let (out, ledger) = run(rows, Relation::AddRemove);
            let theta = out.unwrap_or_else(|e| panic!("{ensemble:?}, N = {rows}: {e}"));
            assert_eq!(theta.len(), 4);
            assert!(
                theta.iter().all(|t| t.is_finite()),
                "{ensemble:?} N = {rows}"
            );
            steps.push(ledger_steps(&ledger));
        }
        assert!(
            steps.windows(2).all(|w| w[0] == w[1]),
            "{ensemble:?}: {steps:?}"
        );
        assert!(
            run(3, Relation::ReplaceOne).0.is_err(),
            "N < blocks is public there"
        );
    }
}

/// Algorithm 7 under add/remove (c = 1/4): eps' = eps - ln(1 + c/lambda), beta = 1/eps';
/// else Delta = c/(N (e^(eps/2) - 1)) - lambda/N, eps' = eps/2, so that the total regulariser
/// L = lambda + N Delta satisfies ln(1 + c/L) = eps/2.
#[test]
fn objective_branch_under_add_remove_by_hand() {
    let ar = Relation::AddRemove;
    // eps = 0.1, lambda = 10: ln(1.025) = 0.0246926 -> direct, eps' = 0.0753074, beta = 13.28.
    let b = objective_branch(10.0, 0.1, 1000, ar);
    assert!(b.direct && b.delta == 0.0);
    assert!((b.eps_prime - (0.1 - 1.025f64.ln())).abs() < 1e-15);
    assert!((b.noise_scale - 1.0 / b.eps_prime).abs() < 1e-12);
    // eps = 0.1, lambda = 1: ln(1.25) = 0.223 > 0.1 -> Delta branch.
    let b = objective_branch(1.0, 0.1, 1000, ar);
    assert!(!b.direct);
    assert!((b.eps_prime - 0.05).abs() < 1e-15);
    assert!((b.noise_scale - 20.0).abs() < 1e-12);
    let total = 1.0 + 1000.0 * b.delta;
    assert!(((1.0 + 0.25 / total).ln() - 0.05).abs() < 1e-12);
    // Thresholds lambda* = c / (e^eps - 1).
    for eps in [0.1, 0.5, 1.0, 10.0] {
        let t = objective_lambda_threshold(eps, ar);
        assert!((t - 0.25 / eps.exp_m1()).abs() < 1e-12);
        assert!(objective_branch(t * 1.001, eps, 100, ar).direct);
        assert!(!objective_branch(t * 0.999, eps, 100, ar).direct);
        // Add/remove takes the direct branch for more lambdas, never fewer.
        assert!(t < objective_lambda_threshold(eps, Relation::ReplaceOne));
    }
}

/// The `larger_eps_prime` variant's rule: the published rule's noise jumps just above its
/// threshold (replace-one, lambda = 10: eps = 0.05 gives eps' = 0.0006, 40 times less than the
/// Delta branch's eps/2 = 0.025); the variant takes the branch of the larger eps', so its noise
/// scale never rises with eps, and where the direct branch gives at least eps/2 both agree.
#[test]
fn larger_eps_prime_rule_removes_the_noise_jump() {
    let ro = Relation::ReplaceOne;
    let c = 0.25;
    let published = objective_branch_by(BranchRule::Published, c, 10.0, 0.05, 20_000, ro);
    assert!(published.direct);
    assert!((published.eps_prime - (0.05 - 2.0 * 1.025f64.ln())).abs() < 1e-15);
    let larger = objective_branch_by(BranchRule::LargerEpsPrime, c, 10.0, 0.05, 20_000, ro);
    assert!(!larger.direct);
    assert_eq!(larger.eps_prime, 0.025);
    assert!(larger.delta > 0.0);
    assert!(larger.noise_scale * 30.0 < published.noise_scale);
    // Both branches of the variant are the published ones: at eps = 0.1 the direct branch's
    // eps' = 0.0506 >= 0.05, so both rules take it.
    let both = |eps| {
        (
            objective_branch_by(BranchRule::Published, c, 10.0, eps, 20_000, ro),
            objective_branch_by(BranchRule::LargerEpsPrime, c, 10.0, eps, 20_000, ro),
        )
    };
    let (p, l) = both(0.1);
    assert_eq!(p, l);
    let (p, l) = both(0.02);
    assert_eq!(p, l);
    // Monotone: on a fine grid of eps the variant's noise scale never rises.
    let mut last = f64::INFINITY;
    let mut jumps = 0;
    let mut last_published = f64::INFINITY;
    for i in 1..=400 {
        let eps = 0.001 * i as f64;
        let (p, l) = both(eps);
        assert!(l.noise_scale <= last, "rises at eps = {eps}");
        assert!(l.eps_prime >= p.eps_prime);
        jumps += usize::from(p.noise_scale > last_published);
        last = l.noise_scale;
        last_published = p.noise_scale;
    }
    assert_eq!(jumps, 1, "the published rule jumps once, at its threshold");
}

/// Critical value of the one-sample KS statistic at alpha = 0.001.
fn ks_critical(n: usize) -> f64 {
    1.949 / (n as f64).sqrt()
}

/// KS at level 0.001 of noise norms against Gamma(D, beta): accepted at the stated beta,
/// rejected at 0.7 beta, 1.3 beta and 2 beta (the thesis's replace-one scale).
fn assert_gamma_norms(norms: &[f64], d: usize, beta: f64) {
    let crit = ks_critical(norms.len());
    let cdf = |scale: f64| {
        let g = Gamma::new(d as f64, 1.0 / scale).unwrap();
        move |x: f64| g.cdf(x)
    };
    let ks = ks_statistic(norms, cdf(beta));
    assert!(ks < crit, "KS {ks} >= {crit} at beta = {beta}");
    for wrong in [0.7, 1.3, 2.0] {
        let ks = ks_statistic(norms, cdf(wrong * beta));
        assert!(ks > crit, "scale {wrong} x beta not rejected: KS {ks}");
    }
}

/// Output perturbation under add/remove: theta_priv - theta* has norm ~ Gamma(D, 1/(lambda eps)).
#[test]
fn output_perturbation_noise_has_the_add_remove_scale() {
    let (x, y) = synthetic(60, 3, "ks-out");
    let yy = pm1(&y);
    let des = Design::dense(x.view());
    let (lambda, eps) = (2.0, 0.5);
    let (exact, _) = Objective::regularised(&des, &yy, lambda).minimise(&newton());
    let mut rng = rng_from(&["ks-out"]);
    let norms: Vec<f64> = (0..3000)
        .map(|_| {
            let mut ledger = Ledger::default();
            let (t, _) =
                output_perturbation(problem(&des, &yy, lambda), eps, &mut rng, &mut ledger)
                    .unwrap();
            dist(&t, &exact)
        })
        .collect();
    assert_gamma_norms(&norms, 3, 1.0 / (lambda * eps));
}

/// Objective perturbation under add/remove (direct branch): the noise b, recovered exactly from
/// the released theta by its first-order condition b = -N (grad J(theta) + Delta theta), has norm
/// ~ Gamma(D, 1/eps').
#[test]
fn objective_perturbation_noise_has_the_add_remove_scale() {
    let (x, y) = synthetic(60, 3, "ks-obj");
    let yy = pm1(&y);
    let des = Design::dense(x.view());
    let (lambda, eps) = (10.0, 1.0);
    let branch = objective_branch(lambda, eps, 60, Relation::AddRemove);
    assert!(branch.direct);
    let obj = Objective::regularised(&des, &yy, lambda);
    let mut rng = rng_from(&["ks-obj"]);
    let norms: Vec<f64> = (0..3000)
        .map(|_| {
            let mut ledger = Ledger::default();
            let (t, c, _) =
                objective_perturbation(problem(&des, &yy, lambda), eps, &mut rng, &mut ledger)
                    .unwrap();
            assert!(c.converged);
            let g = obj.gradient(&t);
            g.iter().map(|v| (60.0 * v).powi(2)).sum::<f64>().sqrt()
        })
        .collect();
    assert_gamma_norms(&norms, 3, branch.noise_scale);
    assert!((branch.noise_scale - 1.0 / (eps - 1.025f64.ln())).abs() < 1e-12);
}

fn with(solver: Solver, tol: f64) -> SolverSettings {
    SolverSettings {
        solver,
        tol,
        ..SolverSettings::default()
    }
}

/// Newton, Newton-CG and L-BFGS reach the same minimiser on every design kind (dense, 0/1
/// indicators with a column subset, +-1 encoding with row scales), with and without a
/// perturbation term; objectives agree to 1e-12 relative and thetas to 1e-6.
#[test]
fn every_solver_reaches_the_same_minimiser() {
    let (x, y) = synthetic(500, 12, "solver-family");
    let dense = Design::dense(x.view());
    let data = binary_dataset(600, 40, 8, "solver-family");
    let rows: Vec<u32> = (0..600).collect();
    let yb = labels_pm1(&data, &rows).unwrap();
    let cols: Vec<usize> = (0..40).filter(|c| c % 3 != 1).collect();
    let mut ind = Design::new(&data, &rows, Some(&cols), Encoding::Indicator).unwrap();
    scale_rows(&mut ind, RowScaling::OwnNorm);
    let (pm, _) = thesis_binary(&data, &rows, None, true).unwrap();
    let yd = pm1(&y);
    for (name, des, yy) in [
        ("dense", &dense, &yd),
        ("indicator", &ind, &yb),
        ("pm", &pm, &yb),
    ] {
        for lambda in [1e-2, 1.0, 100.0] {
            let mut obj = Objective::regularised(des, yy, lambda);
            for perturbed in [false, true] {
                if perturbed {
                    obj.lin = (0..des.dim()).map(|k| 0.01 * (k as f64).sin()).collect();
                    obj.reg += 1e-3;
                }
                let (tn, cn) = obj.minimise(&with(Solver::Newton, 1e-10));
                let (tc, cc) = obj.minimise(&with(Solver::NewtonCg, 1e-10));
                let (tl, cl) = obj.minimise(&with(Solver::Lbfgs, 1e-10));
                assert_eq!(
                    (cn.solver, cc.solver, cl.solver),
                    (Solver::Newton, Solver::NewtonCg, Solver::Lbfgs)
                );
                for (c, other) in [(&cc, &tc), (&cl, &tl)] {
                    assert!(c.converged, "{name} lambda {lambda}: {c:?}");
                    let rel = (c.objective - cn.objective).abs() / cn.objective.abs();
                    assert!(
                        rel < 1e-12,
                        "{name} lambda {lambda}: objective differs by {rel}"
                    );
                    let dt = dist(other, &tn);
                    assert!(dt < 1e-6, "{name} lambda {lambda}: |theta - newton| = {dt}");
                }
                // The recorded objective is the objective at the returned theta.
                assert!((obj.value(&tc) - cc.objective).abs() <= 1e-12 * cc.objective.abs());
            }
        }
    }
}

/// A warm start from a nearby solution converges to the cold-start minimiser, with the
/// tolerance still relative to grad F(0) (so it stops at the same accuracy); the Newton
/// methods need no more iterations.
#[test]
fn warm_starts_reach_the_cold_minimiser_faster() {
    let data = binary_dataset(800, 60, 10, "warm");
    let rows: Vec<u32> = (0..800).collect();
    let y = labels_pm1(&data, &rows).unwrap();
    let (des, _) = thesis_binary(&data, &rows, None, true).unwrap();
    for solver in [Solver::Newton, Solver::NewtonCg, Solver::Lbfgs] {
        let s = with(solver, 1e-10);
        let near = Objective::regularised(&des, &y, 10.0).minimise(&s).0;
        let obj = Objective::regularised(&des, &y, 1.0);
        let (cold, cc) = obj.minimise(&s);
        let (warm, cw) = obj.minimise_from(&s, Some(&near));
        assert!(cw.converged && cc.converged);
        assert_eq!(cw.initial_grad_norm, cc.initial_grad_norm, "{solver:?}");
        assert!(dist(&cold, &warm) < 1e-6, "{solver:?}");
        // L-BFGS restarts its curvature model, so only the Newton methods must not lose.
        if solver != Solver::Lbfgs {
            assert!(
                cw.iterations <= cc.iterations,
                "{solver:?}: {cw:?} vs {cc:?}"
            );
        }
    }
}

/// The cost model keeps dense Newton for narrow sparse data (Adult-like: D = 123, 14 ones per
/// row) and switches to Newton-CG when the D x D Hessian dominates (XWindowsDoc-like: 900 x
/// 600 in the +-1 encoding); dense data above D = 16 takes L-BFGS; a named solver is never
/// overridden.
#[test]
fn the_cost_model_picks_newton_for_small_d_and_newton_cg_for_large_d() {
    let narrow = binary_dataset(5000, 123, 14, "narrow");
    let rows: Vec<u32> = (0..5000).collect();
    let y = labels_pm1(&narrow, &rows).unwrap();
    let des = Design::new(&narrow, &rows, None, Encoding::Indicator).unwrap();
    let obj = Objective::regularised(&des, &y, 1.0);
    assert_eq!(obj.choose(Solver::Auto), Solver::Newton);
    assert_eq!(obj.choose(Solver::Lbfgs), Solver::Lbfgs);
    let wide = binary_dataset(900, 600, 30, "wide");
    let rows: Vec<u32> = (0..900).collect();
    let y = labels_pm1(&wide, &rows).unwrap();
    let (des, _) = thesis_binary(&wide, &rows, None, true).unwrap();
    let obj = Objective::regularised(&des, &y, 1.0);
    assert_eq!(obj.choose(Solver::Auto), Solver::NewtonCg);
    assert_eq!(
        obj.minimise(&SolverSettings::default()).1.solver,
        Solver::NewtonCg
    );
    // Dense data: L-BFGS above D = 16, Newton below (the D x D Hessian is cheap there).
    for (d, want) in [(8, Solver::Newton), (20, Solver::Lbfgs)] {
        let (x, yy) = synthetic(2000, d, "dense-cost");
        let des = Design::dense(x.view());
        let y = pm1(&yy);
        let obj = Objective::regularised(&des, &y, 1.0);
        assert_eq!(obj.choose(Solver::Auto), want, "D = {d}");
        assert_eq!(obj.minimise(&SolverSettings::default()).1.solver, want);
    }
}

/// Warm-started cross-validation draws the same folds and scores every grid point exactly as
/// the cold loop does (accuracies are counts, so they match exactly unless a validation
/// margin sits within the solver tolerance of 0).
#[test]
fn warm_cross_validation_matches_the_cold_loop() {
    let data = binary_dataset(700, 50, 9, "cv-warm");
    let rows: Vec<u32> = (0..700).collect();
    let y = labels_pm1(&data, &rows).unwrap();
    let (des, _) = thesis_binary(&data, &rows, None, true).unwrap();
    let s = SolverSettings::default();
    let cv = |starts, rng: &mut Rng| {
        cross_validate_lambda(&des, &y, &LAMBDA_GRID, 5, &s, starts, rng).unwrap()
    };
    let mut r0 = rng_from(&["cvw"]);
    let cold = cv(Starts::Cold, &mut r0);
    let mut r1 = rng_from(&["cvw"]);
    let warm = cv(Starts::Warm, &mut r1);
    assert_eq!(cold, warm);
    // Both consumed the same draws.
    assert_eq!(r0.r#gen::<u64>(), r1.r#gen::<u64>());
}

/// Every row of `data`, thesis-scaled, and its labels in {-1, +1}.
fn thesis_design_of_all_rows(data: &Dataset) -> (Design<'_>, Vec<f64>) {
    let rows: Vec<u32> = (0..data.n_rows() as u32).collect();
    let y = labels_pm1(data, &rows).unwrap();
    (thesis_binary(data, &rows, None, true).unwrap().0, y)
}

/// The private cross-validation of T4.2 and F4.2 draws every fold's noise first (in the
/// order lambda outer, fold inner) and then fits each fold along the lambda path with warm
/// starts: for output and objective perturbation it consumes exactly the draws of the cold loop
/// (`cross_validate_with` over `fit_design`), each fit's noise is the one the cold fit adds,
/// and the scores, hence the chosen lambda, are the same.
#[test]
fn private_cv_along_the_lambda_path_matches_the_cold_loop() {
    use epsilab::learners::logistic::select::{cross_validate_path, cross_validate_with};
    let data = binary_dataset(900, 30, 7, "cv-private-path");
    let (des, y) = thesis_design_of_all_rows(&data);
    for method in [PrivateLrMethod::Output, PrivateLrMethod::Objective] {
        let params = |l| PrivateLogisticParams::new(method, 2.0, l).check().unwrap();
        let cold = |rng: &mut Rng| {
            cross_validate_with(&des, &y, &LAMBDA_GRID, 5, rng, |d, yy, l, rng| {
                let fit = params(l).fit_design(d, yy, rng, &mut Ledger::new(Relation::AddRemove));
                Ok(fit?.model.theta.to_vec())
            })
            .unwrap()
        };
        let path = |rng: &mut Rng| {
            cross_validate_path(
                &des,
                &y,
                &LAMBDA_GRID,
                5,
                rng,
                |d, yy, l, rng| {
                    let noise = params(l).draw(d, yy, rng, &mut Ledger::new(Relation::AddRemove));
                    Ok((params(l), noise?))
                },
                |d, yy, _, (p, noise), start| p.fit_drawn(d, yy, noise, start),
            )
            .unwrap()
        };
        let (mut r0, mut r1) = (rng_from(&["cvp"]), rng_from(&["cvp"]));
        let (a, b) = (cold(&mut r0), path(&mut r1));
        assert_eq!(a, b, "{method:?}");
        assert_eq!(
            r0.r#gen::<u64>(),
            r1.r#gen::<u64>(),
            "{method:?}: same draws"
        );
        let other = path(&mut rng_from(&["cvp-other"]));
        assert_ne!(
            a.scores, other.scores,
            "{method:?}: another stream, other folds and noise, other scores"
        );
    }
}

/// The memo (issue 14, no work done twice): a design and an exact fit taken from it are bit
/// for bit what the cell computes alone; the keys depend on the rows' content (not the
/// dataset's name or shape) and on lambda; output perturbation's noise-free minimiser shares
/// the non-private fit's key; objective perturbation (noise inside the objective) shares none.
#[test]
fn shared_designs_and_fits_are_bit_identical_and_keyed_by_content() {
    use epsilab::learners::TrialLog;
    let data = binary_dataset(1200, 40, 6, "memo");
    let train: Vec<u32> = (0..800).collect();
    let config = |kind, lambda| LrConfig {
        kind,
        loss: epsilab::learners::logistic::Loss::Logistic,
        lambda: LambdaRule::Fixed(lambda),
        scaling: Scaling::Thesis,
        epsilon: Some(0.5),
        lambda_epsilon: None,
        settings: SolverSettings::default(),
    };
    let fit = |data: &Dataset, kind, lambda| {
        let mut log = TrialLog::new(7);
        let model = config(kind, lambda)
            .fit(data, &train, None, None, Splitting::default(), &mut log)
            .unwrap();
        (model, log.shared)
    };
    let (first, keys) = fit(&data, LrKind::NonPrivate, 10.0);
    let (again, keys_again) = fit(&data, LrKind::NonPrivate, 10.0);
    assert_eq!(first, again);
    assert_eq!(keys, keys_again);
    assert_eq!(keys.len(), 2, "{keys:?}");
    // The same fit without the memo: bit for bit.
    let (design, _) = thesis_binary(&data, &train, None, true).unwrap();
    let y = labels_pm1(&data, &train).unwrap();
    assert!(design.key().is_none());
    let (theta, conv) =
        Objective::regularised(&design, &y, 10.0).minimise(&SolverSettings::default());
    let direct: Vec<u64> = theta.iter().map(|t| t.to_bits()).collect();
    let shared: Vec<u64> = first.theta.iter().map(|t| t.to_bits()).collect();
    assert_eq!(direct, shared);
    assert_eq!(Some(conv), first.convergence);
    // Another lambda: same design, another fit.
    let (_, other_lambda) = fit(&data, LrKind::NonPrivate, 100.0);
    assert_eq!(other_lambda["design"], keys["design"]);
    assert_ne!(other_lambda["fit"], keys["fit"]);
    // Same name and shape, other content: other keys.
    let mut twin = binary_dataset(1200, 40, 6, "memo-twin");
    twin.name = data.name.clone();
    let (_, twin_keys) = fit(&twin, LrKind::NonPrivate, 10.0);
    assert_ne!(twin_keys["design"], keys["design"]);
    assert_ne!(twin_keys["fit"], keys["fit"]);
    // Output perturbation shares the exact minimiser; objective perturbation shares only the
    // design.
    let (_, out) = fit(&data, LrKind::Private(PrivateLrMethod::Output), 10.0);
    assert_eq!(out, keys);
    let (_, obj) = fit(&data, LrKind::Private(PrivateLrMethod::Objective), 10.0);
    assert_eq!(obj.get("design"), keys.get("design"));
    assert!(!obj.contains_key("fit"));
}

/// L-BFGS with the O(N) line search: the same minimiser as Newton, and few iterations on an
/// Adult-shaped problem (14 measured; the bound leaves 2x room), each two passes over the data.
#[test]
fn lbfgs_converges_in_few_iterations() {
    let data = binary_dataset(6000, 120, 14, "lbfgs-iterations");
    let rows: Vec<u32> = (0..6000).collect();
    let y = labels_pm1(&data, &rows).unwrap();
    let mut design = Design::new(&data, &rows, None, Encoding::Indicator).unwrap();
    scale_rows(&mut design, RowScaling::PublicBound(14.0));
    let obj = Objective::regularised(&design, &y, 1.0);
    let (tl, cl) = obj.lbfgs(&with(Solver::Lbfgs, 1e-8));
    let (tn, cn) = obj.newton(&with(Solver::Newton, 1e-10));
    assert!(cl.converged, "{cl:?}");
    assert!(cl.iterations <= 28, "{cl:?}");
    assert!(
        dist(&tl, &tn) <= 1e-6 * tn.iter().map(|v| v * v).sum::<f64>().sqrt(),
        "{cl:?} {cn:?}"
    );
    assert!(cl.objective - cn.objective <= 1e-12, "{cl:?} {cn:?}");
}

/// Dense rows scaled once and shared (issue 15): the functional mechanism's coefficients and
/// the scaled copy come from the memo bit for bit as computed alone; FMsens1 and FMsens2 of a
/// trial share them; the whole training set of a grown split is read in ascending order, so
/// two trials' orders of it share one key (and give the same model for the same noise), while
/// a smaller subset keeps the trial's order and a fixed split is never reordered.
#[test]
fn dense_fits_share_scaled_rows_and_fm_coefficients_bit_for_bit() {
    use epsilab::data::catalog::ToyGaussianDef;
    use epsilab::data::synthetic::toy_gaussian;
    use epsilab::learners::TrialLog;
    use epsilab::learners::logistic::dense::{DenseRows, fit_rows};
    use epsilab::learners::logistic::mechanisms::shared_fm_coefficients;
    let def = |first_train, seed| ToyGaussianDef {
        title: None,
        dimension: 6,
        train: 3000,
        test: 500,
        seed,
        first_train,
    };
    let grown = toy_gaussian("toy", "toy", &def(Some(1000), 3)).unwrap();
    let split = grown.split(&mut rng_from(&["unused"]));
    assert_eq!(split.train.len(), 3000);
    let mut order = split.train.clone();
    order.reverse();
    let mut sorted = split.train.clone();
    sorted.sort_unstable();
    assert_eq!(&*fit_rows(&grown, &order), &sorted[..]);
    assert_eq!(&*fit_rows(&grown, &order[..2000]), &order[..2000]);
    let fixed = toy_gaussian("toy", "toy", &def(None, 3)).unwrap();
    assert_eq!(&*fit_rows(&fixed, &order[..2999]), &order[..2999]);

    // The memo's coefficients equal those of the same design without a key, bit for bit.
    let caches = DatasetCaches::default();
    let Features::Dense(x) = &grown.features else {
        panic!("dense")
    };
    let rows = DenseRows {
        x: x.view(),
        rows: &order[..2000],
        features: None,
        scaling: Scaling::Thesis,
        public: None,
        digests: Some(&caches.digests),
        bounds: Some(&caches.bounds),
        work: Some(&caches.work),
        through_map: false,
    };
    let (shared, again) = (rows.shared(), rows.shared());
    let keyed = shared.design(x.view());
    assert!(keyed.key().is_some());
    assert_eq!(again.design(x.view()).key(), keyed.key());
    let mut plain = shared.design(x.view());
    plain.set_scales(plain.scales().to_vec());
    assert!(plain.key().is_none());
    let y = labels_pm1(&grown, &order[..2000]).unwrap();
    let bits = |v: &[f64]| v.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
    let (a0, m0) = fm_coefficients(&plain, &y);
    for _ in 0..2 {
        let (a, m) = shared_fm_coefficients(&keyed, &y);
        assert_eq!((bits(&a), bits(&m)), (bits(&a0), bits(&m0)));
    }

    let fm = |sens| LrConfig {
        kind: LrKind::Private(PrivateLrMethod::Functional(sens)),
        loss: Loss::Logistic,
        lambda: LambdaRule::Fixed(1.0),
        scaling: Scaling::Thesis,
        epsilon: Some(0.5),
        lambda_epsilon: None,
        settings: SolverSettings::default(),
    };
    // Each dataset's caches are its own (the runner's workspace holds one per dataset).
    let twin_caches = DatasetCaches::default();
    let fit = |data: &Dataset, rows: &[u32], sens| {
        let mut log = TrialLog::new(11);
        let caches = if std::ptr::eq(data, &grown) {
            &caches
        } else {
            &twin_caches
        };
        let model = fm(sens)
            .fit(
                data,
                rows,
                None,
                Some(caches),
                Splitting::default(),
                &mut log,
            )
            .unwrap();
        (model, log.shared)
    };
    // Two orders of the whole grown training set: one design, one fit, the same model.
    let (m1, k1) = fit(&grown, &order, FmSensitivity::Sens1);
    let (m2, k2) = fit(&grown, &split.train, FmSensitivity::Sens1);
    assert_eq!(k1, k2);
    assert_eq!(m1, m2);
    // FMsens2 on the same rows shares the design and the w_distance reference fit.
    let (_, k3) = fit(&grown, &order, FmSensitivity::Sens2);
    assert_eq!(k3, k1);
    // A strict subset in two orders: two designs.
    let (_, s1) = fit(&grown, &order[..2000], FmSensitivity::Sens1);
    let (_, s2) = fit(&grown, &split.train[1000..], FmSensitivity::Sens1);
    assert_ne!(s1["design"], s2["design"]);
    // Same name and shape, other content: another key.
    let twin = toy_gaussian("toy", "toy", &def(Some(1000), 4)).unwrap();
    let (_, t1) = fit(&twin, &order, FmSensitivity::Sens1);
    assert_ne!(t1["design"], k1["design"]);
}

/// The dense weighted Gram matrix in row blocks (cache-friendly at D = 1000) is bit for bit the
/// row-by-row sum (w_i s_i^2 x_ik) x_il in row order, with zero weights and a column subset.
#[test]
fn blocked_dense_gram_is_the_row_by_row_sum_bit_for_bit() {
    let (x, _) = synthetic(203, 9, "gram-blocks");
    let rows: Vec<u32> = (0..203).rev().collect();
    let cols = [7usize, 0, 3, 8, 5];
    for cols in [None, Some(&cols[..])] {
        let data = Dataset::new(
            "gram".into(),
            "gram".into(),
            Features::Dense(x.clone().into()),
            vec![0; 203],
            vec!["a".into(), "b".into()],
            SplitRule::Fixed { n_train: 203 },
        );
        let mut design = Design::new(&data, &rows, cols, Encoding::Indicator).unwrap();
        design.set_scales((0..203).map(|i| 0.5 + (i % 7) as f64 / 10.0).collect());
        let w: Vec<f64> = (0..203)
            .map(|i| if i % 5 == 0 { 0.0 } else { 0.1 * i as f64 })
            .collect();
        let h = design.weighted_gram(&w);
        let used: Vec<usize> = cols.map_or((0..9).collect(), <[usize]>::to_vec);
        let d = used.len();
        let mut naive = vec![0.0f64; d * d];
        for (i, &r) in rows.iter().enumerate() {
            let a = w[i] * design.scales()[i] * design.scales()[i];
            if a == 0.0 {
                continue;
            }
            let row: Vec<f64> = used.iter().map(|&c| x[[r as usize, c]]).collect();
            for k in 0..d {
                let ak = a * row[k];
                if ak == 0.0 {
                    continue;
                }
                for l in k..d {
                    naive[k * d + l] += ak * row[l];
                }
            }
        }
        for k in 0..d {
            for l in 0..k {
                naive[k * d + l] = naive[l * d + k];
            }
        }
        let bits = |v: &[f64]| v.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&h), bits(&naive), "cols {cols:?}");
    }
}
