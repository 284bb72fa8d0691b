//! Tests of the audit. The suite runs every mechanism with `TEST_TRIALS` = 20,000 runs per
//! side (10,000 to choose the event, 10,000 held out), seed 1; the CLI default is 100,000.

use super::*;
use crate::selection::count_scores;

const TEST_TRIALS: usize = 20_000;

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
    let mut names: Vec<&str> = ms.iter().map(|m| m.name()).collect();
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
    let results = audit_all(TEST_TRIALS, 1).unwrap();
    let table = table(&results);
    for r in &results {
        assert!(r.ok, "{}\n{table}", r.mechanism);
        assert!(r.lower_bound.is_finite() && r.lower_bound >= 0.0);
    }
    for name in [
        "laplace_half_scale",
        "laplace_reused_stream",
        "alg1_nb_sensitivity_d_minus_1",
        "vaidya_nb",
    ] {
        let r = results.iter().find(|r| r.mechanism == name).unwrap();
        assert!(r.mutant && r.caught, "{name}\n{table}");
    }
    // The tight audits get close to the claim (the audit has power, not just validity).
    for name in ["laplace", "alg1_nb", "alg1_nb_single_sample_class"] {
        let r = results.iter().find(|r| r.mechanism == name).unwrap();
        assert!(r.lower_bound > 0.7 * r.claimed, "{name}\n{table}");
    }
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
    use clap::Parser;
    let cli = crate::cli::Cli::try_parse_from(["epsilab", "audit", "--all", "--json"]).unwrap();
    assert!(matches!(
        cli.command,
        crate::cli::Command::Audit {
            all: true,
            json: true,
            trials: 100_000,
            seed: 1,
            ..
        }
    ));
    assert!(
        crate::cli::Cli::try_parse_from(["epsilab", "audit", "--all", "--mechanism", "laplace"])
            .is_err()
    );
    // Neither --all nor --mechanism: an error listing the mechanisms.
    let cli = crate::cli::Cli::try_parse_from(["epsilab", "audit"]).unwrap();
    let e = crate::cli::execute(cli).unwrap_err().to_string();
    assert!(e.contains("--all") && e.contains("vaidya_nb"), "{e}");
}
