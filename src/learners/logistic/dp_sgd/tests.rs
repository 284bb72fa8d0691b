use super::*;
use crate::learners::logistic::LogisticParams;
use crate::privacy::accountant::SubsampledGaussian;
use crate::privacy::{Measure, PublicSize};
use crate::stats::ks_statistic;
use ndarray::Array2;
use rand_distr::StandardNormal;
use statrs::distribution::{ContinuousCDF, Normal};

/// n rows in R^d with norms spread up to `max_norm`, labels from a logistic model.
fn toy(n: usize, d: usize, max_norm: f64, seed: &str) -> (Array2<f64>, Vec<f64>) {
    let mut rng = rng_from(&["dp_sgd test", seed]);
    let w: Vec<f64> = (0..d)
        .map(|j| if j % 2 == 0 { 3.0 } else { -2.0 })
        .collect();
    let mut x = Array2::zeros((n, d));
    let mut y = vec![0.0; n];
    for i in 0..n {
        let v: Vec<f64> = (0..d).map(|_| rng.sample(StandardNormal)).collect();
        let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
        let r = max_norm * rng.r#gen::<f64>();
        let mut z = 0.0;
        for j in 0..d {
            x[[i, j]] = v[j] / norm * r;
            z += w[j] * x[[i, j]];
        }
        y[i] = if rng.r#gen::<f64>() < 1.0 / (1.0 + (-z).exp()) {
            1.0
        } else {
            -1.0
        };
    }
    (x, y)
}

/// The accounting tests' setting: [`toy`]'s 500 rows in R^3 (norms up to 1) under `seed`, a
/// fresh stream of the same seed for the fit, and DP-SGD at ε = 0.5 with an expected batch of
/// 50.
fn accounting_setting(seed: &str) -> (Array2<f64>, Vec<f64>, Rng, DpSgdParams) {
    let (x, y) = toy(500, 3, 1.0, seed);
    let p = DpSgdParams::dp_sgd(0.5).sampling(Sampling::ExpectedBatch(50));
    (x, y, rng_from(&["dp_sgd test", seed]), p)
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|a| a * a).sum::<f64>().sqrt()
}

fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

fn params() -> DpSgdValidParams {
    DpSgdParams::noisy_gd(1.0).check().unwrap()
}

/// Each example's clipped gradient has norm <= C (attained by the large rows), and removing
/// one example moves the clipped sum by at most C: the sensitivity the noise is scaled to.
#[test]
fn clipping_bounds_every_gradient_and_the_sum_sensitivity() {
    let (x, y) = toy(200, 5, 20.0, "clip");
    let design = Design::dense(x.view());
    for loss in [Loss::Logistic, Loss::HUBER_SVM] {
        let c = 0.5;
        let p = DpSgdParams::noisy_gd(1.0)
            .clip(c)
            .loss(loss)
            .check()
            .unwrap();
        let mut run = DpSgdRun::new(&design, &y, &p, 1.0, design.n_rows());
        run.theta = vec![0.3, -0.7, 0.2, 0.1, -0.4];
        let mut largest: f64 = 0.0;
        for i in 0..200u32 {
            run.batch.clear();
            run.batch.push(i);
            run.clipped_sum();
            let g = norm(&run.grad);
            assert!(g <= c * (1.0 + 1e-12), "{loss:?} row {i}: {g}");
            largest = largest.max(g);
        }
        assert!(
            largest > c * (1.0 - 1e-12),
            "{loss:?}: clipping never active"
        );
        run.batch = (0..200).collect();
        run.clipped_sum();
        let full = run.grad.clone();
        for j in [0u32, 57, 199] {
            run.batch = (0..200).filter(|&i| i != j).collect();
            run.clipped_sum();
            assert!(
                dist(&full, &run.grad) <= c * (1.0 + 1e-12),
                "{loss:?} without {j}"
            );
        }
    }
}

/// The noise of a step is N(0, σ²C²) per coordinate: Kolmogorov–Smirnov at level 0.001 on
/// 20,000 draws accepts σC and rejects 0.7 σC and 1.3 σC.
#[test]
fn noise_has_standard_deviation_sigma_times_c() {
    let (x, y) = toy(50, 40, 3.0, "noise");
    let design = Design::dense(x.view());
    let (sigma, c) = (1.3, 0.8);
    let p = DpSgdParams::noisy_gd(1.0).clip(c).check().unwrap();
    let mut run = DpSgdRun::new(&design, &y, &p, 1.0, design.n_rows());
    run.theta = (0..40).map(|j| (j as f64 - 20.0) / 40.0).collect();
    run.batch = (0..50).collect();
    run.clipped_sum();
    let exact = run.grad.clone();
    let plan = SubsampledGaussian::new(sigma, 1.0, 500).unwrap();
    let mech = AccountedGaussian::new(plan, c, 1e-5, Relation::AddRemove).unwrap();
    let mut ledger = Ledger::default();
    let mut charge = ledger
        .charge("train", "noisy gradient descent", mech)
        .unwrap();
    let mut rng = rng_from(&["dp_sgd test", "noise draws"]);
    let mut noise = Vec::with_capacity(20_000);
    for _ in 0..500 {
        run.noisy_gradient(&mut rng, &mut charge);
        noise.extend(run.grad.iter().zip(&exact).map(|(g, e)| g - e));
    }
    // The draws were charged: the accountant's spend for the 500 steps is in the ledger.
    let want = plan.epsilon(1e-5).unwrap().epsilon;
    assert_eq!(ledger.entries[0].epsilon, Some(want));
    let crit = 1.949 / (noise.len() as f64).sqrt();
    let ks = |sd: f64| {
        let nd = Normal::new(0.0, sd).unwrap();
        ks_statistic(&noise, |v| nd.cdf(v))
    };
    assert!(ks(sigma * c) < crit, "{} >= {crit}", ks(sigma * c));
    for wrong in [0.7, 1.3] {
        assert!(ks(wrong * sigma * c) > crit, "scale x{wrong} not rejected");
    }
}

/// Poisson sampling: every row is kept with probability q, so the batch size is
/// Binomial(N, q); over 4000 steps its mean is within 4 standard errors of qN and each
/// row's inclusion frequency within 5 standard errors of q.
#[test]
fn poisson_batches_have_the_right_law() {
    let (x, y) = toy(1000, 2, 1.0, "poisson");
    let design = Design::dense(x.view());
    let q = 0.03;
    let mut run = DpSgdRun::new(&design, &y, &params(), q, 1000);
    let mut rng = rng_from(&["dp_sgd test", "poisson"]);
    let steps = 4000;
    let mut hits = vec![0u32; 1000];
    let mut total = 0usize;
    for _ in 0..steps {
        run.sample_batch(&mut rng);
        assert!(run.batch.windows(2).all(|w| w[0] < w[1]));
        total += run.batch.len();
        run.batch.iter().for_each(|&i| hits[i as usize] += 1);
    }
    let mean = total as f64 / steps as f64;
    let se = (1000.0 * q * (1.0 - q) / steps as f64).sqrt();
    assert!((mean - 30.0).abs() < 4.0 * se, "mean batch {mean}");
    let row_se = (q * (1.0 - q) / steps as f64).sqrt();
    let worst = hits
        .iter()
        .map(|&h| (h as f64 / steps as f64 - q).abs() / row_se)
        .fold(0.0, f64::max);
    // Max of 1000 |z| scores: above 5 has probability ~6e-4.
    assert!(worst < 5.0, "a row's inclusion rate is off by {worst} s.e.");
    // The first and last rows are reachable.
    assert!(hits[0] > 0 && hits[999] > 0);
}

/// With C above every gradient norm and σ -> 0, noisy GD minimises the non-private
/// objective: the distance to the non-private minimiser falls with σ and vanishes.
#[test]
fn approaches_the_non_private_fit_as_sigma_vanishes() {
    let (x, y) = toy(300, 4, 1.0, "converge");
    let design = Design::dense(x.view());
    let lambda = 5.0;
    let reference = LogisticParams::new(lambda)
        .check()
        .unwrap()
        .fit_design(&design, &y)
        .theta
        .to_vec();
    let fit = |sigma: f64, sampling: Sampling, steps: u64, eta: f64| {
        let p = DpSgdParams::noisy_gd(1.0)
            .noise_multiplier(sigma)
            .clip(2.0)
            .lambda(lambda)
            .learning_rate(eta)
            .sampling(sampling)
            .length(Length::Steps(steps))
            .check()
            .unwrap();
        let mut rng = rng_from(&["dp_sgd test", "converge", &sigma.to_string()]);
        let f = p
            .fit_design(&design, &y, &mut rng, &mut sized(design.n_rows()))
            .unwrap();
        dist(f.model.theta.as_slice().unwrap(), &reference)
    };
    let scale = norm(&reference);
    let errs: Vec<f64> = [10.0, 0.1, 1e-4]
        .iter()
        .map(|&s| fit(s, Sampling::Full, 4000, 2.0))
        .collect();
    assert!(errs[0] > errs[1] && errs[1] > errs[2], "{errs:?}");
    assert!(errs[2] < 1e-3 * scale, "{errs:?} vs |theta| {scale}");
    // DP-SGD (q = 0.2) with tiny noise: close, up to the SGD sampling noise.
    let sgd = fit(1e-4, Sampling::Rate(0.2), 20_000, 0.5);
    assert!(sgd < 0.1 * scale, "{sgd} vs |theta| {scale}");
}

#[test]
fn same_seed_same_model_other_seed_other_model() {
    let (x, y) = toy(400, 6, 2.0, "determinism");
    let design = Design::dense(x.view());
    let p = DpSgdParams::dp_sgd(1.0)
        .sampling(Sampling::ExpectedBatch(40))
        .length(Length::Epochs(3.0))
        .check()
        .unwrap();
    let fit = |seed: &str| {
        let mut rng = rng_from(&["dp_sgd test", seed]);
        p.fit_design(&design, &y, &mut rng, &mut sized(design.n_rows()))
            .unwrap()
    };
    let (a, b, c) = (fit("a"), fit("a"), fit("b"));
    assert_eq!(a, b);
    assert_ne!(a.model.theta, c.model.theta);
    assert_eq!(a.plan.steps, 30);
}

/// The ledger entry carries the accountant's (ε, δ) at δ = 1/N², the (ε,δ)-DP measure and
/// the sensitivity C (2C under replace-one, full batches only).
#[test]
fn ledger_states_the_accountant_guarantee() {
    let (x, y, mut rng, p) = accounting_setting("ledger");
    let design = Design::dense(x.view());
    let p = p.clip(0.7).check().unwrap();
    let mut ledger = sized(500);
    let f = p.fit_design(&design, &y, &mut rng, &mut ledger).unwrap();
    assert_eq!(ledger.entries[0].name, "size");
    let e = &ledger.entries[1];
    assert_eq!(e, &f.entry);
    assert_eq!(e.delta, Some(1.0 / 250_000.0));
    assert_eq!(e.measure, Some(Measure::ApproxDp));
    assert_eq!(e.sensitivity, Some(0.7));
    assert!(e.mechanism.starts_with("DP-SGD"), "{}", e.mechanism);
    let eps = e.epsilon.unwrap();
    assert!(eps <= 0.5 && eps > 0.4999, "{eps}");
    assert!(ledger.is_private_within(Some(0.5)));
    // The recorded epsilon is the accountant's for the plan actually run.
    let again = f.plan.epsilon(1.0 / 250_000.0).unwrap();
    assert_eq!(again.epsilon, eps);
    assert_eq!((f.plan.sampling_rate, f.plan.steps), (0.1, 100));

    // Replace-one: refused when subsampled; with full batches twice the noise of add/remove.
    let mut replace = Ledger::new(Relation::ReplaceOne)
        .with_public_size(Some(PublicSize::new(500, "the test's")));
    let err = p
        .fit_design(&design, &y, &mut rng, &mut replace)
        .unwrap_err()
        .to_string();
    assert!(err.contains("add/remove"), "{err}");
    let gd = DpSgdParams::noisy_gd(1.0).check().unwrap();
    let add = gd
        .fit_design(&design, &y, &mut rng, &mut sized(500))
        .unwrap();
    let rep = gd.fit_design(&design, &y, &mut rng, &mut replace).unwrap();
    assert!((rep.plan.noise_multiplier / add.plan.noise_multiplier - 2.0).abs() < 1e-6);
    assert_eq!(rep.entry.sensitivity, Some(2.0));
    assert!(add.entry.mechanism.starts_with("noisy gradient descent"));
}

/// The plan reads the run's public N, not the rows handed in: with N = 1000 declared for 500
/// rows, q = 50/1000 and 10 epochs are 200 steps, and delta defaults to 1/1000^2; without a
/// public N (the harness's ledger, or `public_n` for linfa's `Fit`) the fit is refused.
#[test]
fn the_plan_reads_the_public_size_not_the_rows() {
    let (x, y, mut rng, p) = accounting_setting("public size");
    let design = Design::dense(x.view());
    let p = p.check().unwrap();
    let mut ledger = sized(1000);
    let f = p.fit_design(&design, &y, &mut rng, &mut ledger).unwrap();
    assert_eq!((f.plan.sampling_rate, f.plan.steps), (0.05, 200));
    assert_eq!(f.entry.delta, Some(1e-6));
    assert!(
        ledger.entries[0]
            .note
            .as_deref()
            .unwrap()
            .contains("sampling rate")
    );
    let err = p
        .fit_design(&design, &y, &mut rng, &mut Ledger::default())
        .unwrap_err();
    assert!(err.to_string().contains("public_n"), "{err}");
    let t: Array1<usize> = y.iter().map(|&v| usize::from(v > 0.0)).collect();
    let data = linfa::DatasetBase::new(x, t);
    assert!(p.fit(&data).is_err());
}

/// The size step names only what reads N: DP-SGD's batch rate, its epochs' step count, the
/// default δ, the update and the weight decay; noisy GD's q = 1 and fixed 100 steps read
/// nothing, so are not named.
#[test]
fn the_size_step_names_what_reads_n() {
    let (x, y, mut rng, _) = accounting_setting("size step");
    let design = Design::dense(x.view());
    let mut note = |p: DpSgdParams| {
        let mut ledger = sized(1000);
        p.check()
            .unwrap()
            .fit_design(&design, &y, &mut rng, &mut ledger)
            .unwrap();
        ledger.entries[0].note.clone().unwrap()
    };
    for (params, readers) in [
        (
            DpSgdParams::dp_sgd(1.0),
            "DP-SGD's sampling rate q = B/N, step count epochs/q, delta = 1/N^2, update \
             1/(qN) and weight decay lambda/N",
        ),
        (
            DpSgdParams::noisy_gd(1.0),
            "noisy GD's delta = 1/N^2, update 1/N and weight decay lambda/N",
        ),
        (
            DpSgdParams::noisy_gd(1.0).delta(1e-5),
            "noisy GD's update 1/N and weight decay lambda/N",
        ),
    ] {
        let n = note(params);
        assert!(n.ends_with(&format!("read by {readers}")), "{n}");
    }
}

/// An add/remove ledger whose public N is `n`.
fn sized(n: usize) -> Ledger {
    Ledger::default().with_public_size(Some(PublicSize::new(n, "the test's")))
}

#[test]
fn bad_parameters_are_refused_by_name() {
    for (p, name) in [
        (DpSgdParams::dp_sgd(0.0), "epsilon"),
        (
            DpSgdParams::dp_sgd(1.0).noise_multiplier(-1.0),
            "noise_multiplier",
        ),
        (DpSgdParams::dp_sgd(1.0).clip(0.0), "clip"),
        (DpSgdParams::dp_sgd(1.0).delta(1.0), "delta"),
        (
            DpSgdParams::dp_sgd(1.0).learning_rate(f64::NAN),
            "learning_rate",
        ),
        (DpSgdParams::dp_sgd(1.0).lambda(-1.0), "lambda"),
        (
            DpSgdParams::dp_sgd(1.0).sampling(Sampling::Rate(1.5)),
            "sampling_rate",
        ),
        (
            DpSgdParams::dp_sgd(1.0).sampling(Sampling::ExpectedBatch(0)),
            "batch_size",
        ),
        (DpSgdParams::dp_sgd(1.0).length(Length::Steps(0)), "steps"),
        (DpSgdParams::dp_sgd(1.0).loss(Loss::Huber { h: 0.0 }), "h"),
    ] {
        let err = p.check().unwrap_err().to_string();
        assert!(err.contains(&format!("`{name}`")), "{name}: {err}");
    }
}

#[test]
fn huber_loss_and_derivative_agree() {
    let l = Loss::HUBER_SVM;
    for m in [-2.0, 0.4, 0.6, 1.0, 1.4, 1.6, 3.0] {
        let num = (l.value(m + 1e-6) - l.value(m - 1e-6)) / 2e-6;
        assert!((num - l.derivative(m)).abs() < 1e-6, "m = {m}");
        let lg = (Loss::Logistic.value(m + 1e-6) - Loss::Logistic.value(m - 1e-6)) / 2e-6;
        assert!((lg - Loss::Logistic.derivative(m)).abs() < 1e-6, "m = {m}");
    }
    assert_eq!(l.value(1.6), 0.0);
    assert_eq!(l.value(0.0), 1.0);
}

/// The linfa path: Fit on an Array2 with 0/1 targets, then predict; a loose ε learns the toy
/// problem nearly as well as the non-private fit.
#[test]
fn linfa_fit_and_predict() {
    use linfa::prelude::*;
    let (x, y) = toy(2000, 4, 1.0, "linfa");
    let t: Array1<usize> = y.iter().map(|&v| usize::from(v > 0.0)).collect();
    let data = DatasetBase::new(x.clone(), t.clone());
    let fit = DpSgdParams::dp_sgd(8.0)
        .sampling(Sampling::ExpectedBatch(100))
        .seed(3)
        .public_n(2000)
        .check()
        .unwrap()
        .fit(&data)
        .unwrap();
    let pred = fit.predict(&x);
    let np = LogisticParams::new(1.0)
        .check()
        .unwrap()
        .fit(&data)
        .unwrap();
    let np_pred = np.predict(&x);
    let acc = |p: &Array1<usize>| p.iter().zip(&t).filter(|(a, b)| a == b).count() as f64 / 2000.0;
    assert!(
        acc(&pred) > acc(&np_pred) - 0.05,
        "{} vs {}",
        acc(&pred),
        acc(&np_pred)
    );
    assert!(fit.guarantee.epsilon <= 8.0);
}
