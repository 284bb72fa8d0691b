//! Tests of the audit. The suite runs every non-LR mechanism with `TEST_TRIALS` = 20,000 runs
//! per side (10,000 to choose the event, 10,000 held out), seed 1, and the logistic-regression
//! audits (one Newton solve per run, slow in debug builds) with `LR_TEST_TRIALS` = 10,000 per
//! side (5,000 + 5,000), seed 1; the CLI default is 100,000.

use super::*;
use crate::selection::count_scores;

const TEST_TRIALS: usize = 20_000;
const LR_TEST_TRIALS: usize = 10_000;

fn is_lr(m: &dyn Auditable) -> bool {
    let name = m.claim().name;
    // The kernel SVM's rows run with the classifiers (`audit::classifiers`' own test).
    let rff = name.starts_with("svm_rff");
    (name.starts_with("lr_") || name.starts_with("svm_")) && !rff && !is_size(m)
}

/// The rows on add/remove neighbours of different sizes (their own test in `sizes`).
fn is_size(m: &dyn Auditable) -> bool {
    let name = m.claim().name;
    super::sizes::all().iter().any(|s| s.claim().name == name)
}

/// Averaging several private fits (its own test: four solves per run).
fn is_averaging(m: &dyn Auditable) -> bool {
    m.claim().name.starts_with("averaging")
}

/// The gradient methods and the private lambda (their own test, at `LR_TEST_TRIALS`).
fn is_sgd(m: &dyn Auditable) -> bool {
    ["noisy_gd", "dp_sgd", "private_lambda"]
        .iter()
        .any(|p| m.claim().name.starts_with(p))
        && !is_size(m)
}

#[test]
fn clopper_pearson_matches_known_values() {
    // n = 10, k = 0: upper one-sided 97.5% bound is 1 - 0.025^(1/10).
    let u = clopper_pearson_upper(0, 10, 0.025);
    assert!((u - (1.0 - 0.025f64.powf(0.1))).abs() < 1e-9, "{u}");
    // k = n: lower bound is 0.025^(1/n).
    let l = clopper_pearson_lower(10, 10, 0.025);
    assert!((l - 0.025f64.powf(0.1)).abs() < 1e-9, "{l}");
    assert_eq!(clopper_pearson_lower(0, 10, 0.025), 0.0);
    assert_eq!(clopper_pearson_upper(10, 10, 0.025), 1.0);
    // Large n: close to the normal approximation p -+ 1.96 sqrt(p (1 - p) / n).
    let (k, n) = (5_000, 50_000);
    let half = 1.96 * (0.1f64 * 0.9 / n as f64).sqrt();
    let l = clopper_pearson_lower(k, n, 0.025);
    let u = clopper_pearson_upper(k, n, 0.025);
    assert!((l - (0.1 - half)).abs() < 2e-4, "{l}");
    assert!((u - (0.1 + half)).abs() < 2e-4, "{u}");
    assert!(l < 0.1 && 0.1 < u);
    assert_eq!(epsilon_lower_bound(0, 5, 100, 0.025), 0.0);
    assert_eq!(epsilon_lower_bound(5, 50, 100, 0.025), 0.0);
}

#[test]
fn too_few_trials_and_unknown_names_are_errors() {
    assert!(audit_named("laplace", 1, 1).is_err());
    let e = audit_named("nope", 100, 1).unwrap_err().to_string();
    assert!(
        e.contains("unknown mechanism") && e.contains("laplace"),
        "{e}"
    );
}

#[test]
fn names_are_unique() {
    let ms = all();
    let mut names: Vec<&str> = ms.iter().map(|m| m.claim().name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), ms.len());
}

/// The count-score neighbours really are what the audit says: scores (0, 6) vs (1, 6).
#[test]
fn count_selector_neighbours_have_the_stated_scores() {
    let x = crate::counts::ClassCounts {
        class: vec![10.0, 10.0],
        on: ndarray::array![[5.0, 2.0], [5.0, 8.0]],
    };
    let xp = crate::counts::ClassCounts {
        class: vec![10.0, 11.0],
        on: ndarray::array![[5.0, 2.0], [6.0, 8.0]],
    };
    assert_eq!(count_scores(&x).unwrap(), vec![0.0, 6.0]);
    assert_eq!(count_scores(&xp).unwrap(), vec![1.0, 6.0]);
}

/// Every correct mechanism's lower bound stays at or below its claim; every mutant is caught.
#[test]
fn correct_mechanisms_pass_and_mutants_are_caught() {
    let ms: Vec<_> = all()
        .into_iter()
        .filter(|m| {
            let m = m.as_ref();
            !is_lr(m) && !is_sgd(m) && !is_averaging(m) && !is_size(m)
        })
        .collect();
    let results = audit_each(&ms, TEST_TRIALS, 1).unwrap();
    let table = table(&results);
    for r in &results {
        assert!(r.ok, "{}\n{table}", r.mechanism);
        assert!(r.lower_bound.is_finite() && r.lower_bound >= 0.0);
    }
    for name in [
        "laplace_half_scale",
        "laplace_reused_stream",
        "alg1_nb_sensitivity_d_minus_1",
        "alg1_nb_replace_one_add_remove_sensitivity",
        "vaidya_nb",
        "mask_selector_counts_quarter_sensitivity",
        "gumbel_top1_no_half",
        "gumbel_top2_scale_for_t1",
        "sparse_vector_query_noise_halved",
    ] {
        let r = results.iter().find(|r| r.mechanism == name).unwrap();
        assert!(r.mutant && r.caught, "{name}\n{table}");
    }
    // The tight audits get close to the claim (the audit has power, not just validity).
    for name in [
        "laplace",
        "alg1_nb",
        "alg1_nb_single_sample_class",
        "alg1_nb_replace_one",
    ] {
        let r = results.iter().find(|r| r.mechanism == name).unwrap();
        assert!(r.lower_bound > 0.7 * r.claimed, "{name}\n{table}");
    }
    // Both relations are audited, each pair built for its relation.
    for (name, relation) in [
        ("alg1_nb", "add_remove"),
        ("alg1_nb_replace_one", "replace_one"),
        ("alg1_nb_replace_one_add_remove_sensitivity", "replace_one"),
    ] {
        let r = results.iter().find(|r| r.mechanism == name).unwrap();
        assert_eq!(r.relation, relation, "{name}");
    }
}

/// Every ablation variant that weakens privacy has an audit row, stating its excess; the
/// mask's `delta_q` row measures a lower bound above the claim and within T = 2 times it, where
/// the faithful mask on the same neighbours stays below the claim.
#[test]
fn weakening_variants_are_audited_and_their_excess_measured() {
    let ms = all();
    for v in crate::kinds::variant::VARIANTS {
        let m = ms.iter().find(|m| m.claim().name == v.audit);
        assert_eq!(
            m.and_then(|m| m.claim().stated_excess).is_some(),
            v.excess.weakens(),
            "{} / {}",
            v.kind,
            v.name
        );
    }
    let pair: Vec<_> = ms
        .into_iter()
        .filter(|m| {
            let name = m.claim().name;
            name.starts_with("mask_variant") || name == "mask_sampler_t2"
        })
        .collect();
    let results = audit_each(&pair, TEST_TRIALS, 1).unwrap();
    let table = table(&results);
    let variant = results.iter().find(|r| r.mutant).unwrap();
    let faithful = results.iter().find(|r| !r.mutant).unwrap();
    assert!(variant.ok && faithful.ok, "{table}");
    assert_eq!(variant.stated_excess, Some(2.0));
    assert!(
        variant.lower_bound > variant.claimed && variant.lower_bound <= 2.0 * variant.claimed,
        "{table}"
    );
    // Power: the bound sits near the event's true log-ratio 2.65.
    assert!(variant.lower_bound > 2.2, "{table}");
    assert!(faithful.lower_bound <= 1.17 + 0.05, "{table}");
    assert!(
        table.contains("NOT eps-DP: real eps <= 2 x claimed = 4"),
        "{table}"
    );
}

#[test]
fn audits_are_reproducible() {
    let a = audit_named("laplace", 2_000, 7).unwrap();
    let b = audit_named("laplace", 2_000, 7).unwrap();
    assert_eq!(a.lower_bound, b.lower_bound);
    assert_eq!(a.event, b.event);
}

#[test]
fn json_has_the_documented_fields_and_the_cli_parses() {
    let r = audit_named("laplace", 1_000, 1).unwrap();
    let v = serde_json::to_value(vec![r]).unwrap();
    for key in [
        "mechanism",
        "claimed",
        "lower_bound",
        "trials",
        "mutant",
        "caught",
        "ok",
    ] {
        assert!(v[0].get(key).is_some(), "missing {key}");
    }
}

/// Logistic regression (`LR_TEST_TRIALS` runs per side): output perturbation, both branches of
/// objective perturbation (under both relations) and the functional mechanism stay at or below
/// their claim and the true epsilon of their neighbours; the three planted LR mutants are caught.
#[test]
fn logistic_regression_audits_pass_and_mutants_are_caught() {
    let ms: Vec<_> = all().into_iter().filter(|m| is_lr(m.as_ref())).collect();
    let results = audit_each(&ms, LR_TEST_TRIALS, 1).unwrap();
    let table = table(&results);
    let names: Vec<&str> = results.iter().map(|r| r.mechanism.as_str()).collect();
    assert_eq!(
        names,
        [
            "lr_output",
            "lr_output_lambda_as_big_lambda",
            "lr_objective",
            "lr_objective_delta_branch",
            "lr_objective_ignore_delta",
            "lr_functional",
            "lr_functional_mean_sensitivity",
            "lr_output_replace_one",
            "lr_objective_replace_one",
            "lr_objective_delta_branch_replace_one",
            "svm_output",
            "svm_output_lambda_as_big_lambda",
            "svm_objective",
            "svm_objective_delta_branch",
            "svm_objective_ignore_delta",
        ],
        "{table}"
    );
    for r in &results {
        assert!(r.ok, "{}\n{table}", r.mechanism);
        assert!(r.lower_bound.is_finite() && r.lower_bound >= 0.0);
    }
    // Upper bounds on the true epsilon of each correct audit's neighbours (eps = 1):
    // output 0.69 (add/remove, sensitivity 1/lambda); under replace-one theta* moves by less
    // than 0.69 + 0.1 of the removed row's pull, against 2/lambda; objective: the claim (the
    // add/remove analysis is tight on x = 0 rows); functional (1/2 + 1/8)/3.25.
    for (name, truth) in [
        ("lr_output", 0.69),
        ("lr_output_replace_one", 0.8 / 2.0),
        ("lr_objective", 1.0),
        ("lr_objective_delta_branch", 1.0),
        ("lr_objective_replace_one", 1.0),
        ("lr_objective_delta_branch_replace_one", 1.0),
        ("lr_functional", 0.625 / 3.25),
    ] {
        let r = results.iter().find(|r| r.mechanism == name).unwrap();
        assert!(
            !r.mutant && r.lower_bound <= truth + 0.05,
            "{name}: {truth}\n{table}"
        );
    }
    for name in [
        "lr_output_lambda_as_big_lambda",
        "lr_objective_ignore_delta",
        "lr_functional_mean_sensitivity",
    ] {
        let r = results.iter().find(|r| r.mechanism == name).unwrap();
        assert!(r.mutant && r.caught, "{name}\n{table}");
    }
    // The ablation variant `lambda_twice` states real eps <= N x claimed (N = 41 on X').
    let r = results
        .iter()
        .find(|r| r.mechanism == "lr_output_lambda_as_big_lambda")
        .unwrap();
    assert_eq!(r.stated_excess, Some(41.0));
    assert!(r.lower_bound > 5.0 && r.lower_bound <= 41.0, "{table}");
}

/// The output-perturbation neighbours move the exact minimiser by 0.69/lambda (less than the
/// add/remove bound 1/lambda, and a third of the thesis's 2/lambda).
#[test]
fn output_perturbation_neighbours_move_the_minimiser_as_stated() {
    use crate::learners::logistic::{Design, Objective, SolverSettings};
    let lambda = 1.0;
    let x = ndarray::Array2::from_elem((40, 1), 0.1);
    let mut xp = ndarray::Array2::from_elem((41, 1), 0.1);
    xp[[40, 0]] = 1.0;
    let y = vec![-1.0; 40];
    let mut yp = y.clone();
    yp.push(1.0);
    let s = SolverSettings::default();
    let (t, c) = Objective::regularised(&Design::dense(x.view()), &y, lambda).minimise(&s);
    let (tp, cp) = Objective::regularised(&Design::dense(xp.view()), &yp, lambda).minimise(&s);
    assert!(c.converged && cp.converged);
    let shift = (tp[0] - t[0]) * lambda;
    assert!((shift - 0.6876).abs() < 1e-3 && shift < 1.0, "{shift}");
}

/// Noisy GD, DP-SGD and Algorithm 3's selection step (`LR_TEST_TRIALS` per side): each claim is
/// the accountant's (eps, delta = 1e-5) for the learner's own plan (the exponential
/// mechanism's eps for the selection, eps = 1 for Algorithm 3 as a whole); the correct rows stay
/// at or below it and every planted mutant (a tenth of the noise multiplier, no clipping, the
/// selection at 2 eps, Algorithm 3's candidates on overlapping parts) is caught.
#[test]
fn gradient_methods_and_private_lambda_pass_and_mutants_are_caught() {
    use crate::learners::logistic::dp_sgd::{DpSgdParams, Length, Sampling};
    use linfa::ParamGuard;
    let names = [
        "noisy_gd",
        "noisy_gd_sigma_tenth",
        "noisy_gd_no_clipping",
        "dp_sgd",
        "dp_sgd_sigma_tenth",
        "dp_sgd_no_clipping",
        "private_lambda",
        "private_lambda_double_epsilon",
        "private_lambda_algorithm3",
        "private_lambda_algorithm3_overlapping_parts",
    ];
    let ms: Vec<_> = all().into_iter().filter(|m| is_sgd(m.as_ref())).collect();
    let got: Vec<&str> = ms.iter().map(|m| m.claim().name).collect();
    assert_eq!(got, names);
    let results = audit_each(&ms, LR_TEST_TRIALS, 1).unwrap();
    let table = table(&results);
    eprintln!("{table}");
    for r in &results {
        assert!(r.ok, "{}\n{table}", r.mechanism);
        assert_eq!(
            r.mutant,
            ![
                "noisy_gd",
                "dp_sgd",
                "private_lambda",
                "private_lambda_algorithm3"
            ]
            .contains(&r.mechanism.as_str()),
            "{table}"
        );
    }
    // The claims are the accountant's for the plans the learners run (target eps 1).
    let claim = |p: DpSgdParams, n: usize, relation| {
        let p = p.delta(1e-5).check().unwrap();
        p.plan(n, relation).unwrap().1.epsilon
    };
    let gd = claim(
        DpSgdParams::noisy_gd(1.0).length(Length::Steps(10)),
        2,
        Relation::ReplaceOne,
    );
    let sgd = claim(
        DpSgdParams::dp_sgd(1.0)
            .sampling(Sampling::Rate(0.05))
            .length(Length::Steps(20)),
        100,
        Relation::AddRemove,
    );
    for r in &results {
        let (want, delta) = match r.mechanism.split('_').next() {
            Some("noisy") => (gd, 1e-5),
            Some("dp") => (sgd, 1e-5),
            _ => (1.0, 0.0),
        };
        assert!(want <= 1.0 && want > 0.99, "{want}");
        assert_eq!((r.claimed, r.claimed_delta), (want, delta), "{table}");
    }
}

/// The (eps, delta) bound subtracts delta from the numerator's lower bound and equals the pure
/// bound at delta = 0.
#[test]
fn delta_lowers_the_bound() {
    let pure = epsilon_lower_bound(5_000, 1_000, 10_000, 0.025);
    assert_eq!(
        epsilon_lower_bound_with_delta(5_000, 1_000, 10_000, 0.025, 0.0),
        pure
    );
    let lo = clopper_pearson_lower(5_000, 10_000, 0.025);
    let hi = clopper_pearson_upper(1_000, 10_000, 0.025);
    let with = epsilon_lower_bound_with_delta(5_000, 1_000, 10_000, 0.025, 0.1);
    assert!((with - ((lo - 0.1) / hi).ln()).abs() < 1e-12 && with < pure);
    assert_eq!(
        epsilon_lower_bound_with_delta(5_000, 1_000, 10_000, 0.025, 0.9),
        0.0
    );
}

/// Averaging four output-perturbation models (eps = 2 in all; 4,000 runs per side): sequential
/// and parallel stay below the true epsilon of their neighbours (each model's theta* moves by at
/// most 0.69 / lambda, so four releases at eps/4 give 4 x 0.69 x 2/4 = 1.38, and one block at eps
/// gives 0.69 x 2 = 1.38); the budget not split and the overlapping blocks are caught.
#[test]
fn averaging_audits_pass_and_mutants_are_caught() {
    let ms: Vec<_> = all()
        .into_iter()
        .filter(|m| is_averaging(m.as_ref()))
        .collect();
    let results = audit_each(&ms, 4_000, 1).unwrap();
    let table = table(&results);
    assert_eq!(results.len(), 4, "{table}");
    for r in &results {
        assert!(r.ok, "{}\n{table}", r.mechanism);
        if r.mutant {
            assert!(
                r.caught && r.lower_bound > 1.2 * r.claimed,
                "{}\n{table}",
                r.mechanism
            );
        } else {
            assert!(r.lower_bound <= 1.38 + 0.05, "{}\n{table}", r.mechanism);
        }
    }
}
