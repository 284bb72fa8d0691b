//! The RDP accountant against a reference implementation and a published number.
//!
//! Reference: Google's dp-accounting 0.6.0 (`pip install dp-accounting==0.6.0`),
//! `RdpAccountant` with its default orders and add/remove neighbours; the values were generated
//! by `tests/fixtures/rdp_dp_accounting.py` into `tests/fixtures/rdp_dp_accounting.json`.

use epsilab::privacy::accountant::{
    Conversion, SubsampledGaussian, noise_multiplier_for,
    rdp::{compute_rdp, default_orders},
};
use serde_json::Value;

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/rdp_dp_accounting.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn f(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} in {v}"))
}

fn rel_close(a: f64, b: f64, tol: f64) -> bool {
    (a == b) || (a - b).abs() <= tol * a.abs().max(b.abs())
}

#[test]
fn fixture_names_the_reference_and_its_orders() {
    let fx = fixture();
    assert!(
        fx["source"]
            .as_str()
            .unwrap()
            .starts_with("dp-accounting 0.6.0"),
        "{}",
        fx["source"]
    );
    let orders: Vec<f64> = fx["orders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(orders, default_orders());
}

/// Every per-order RDP value of five curves (fractional orders included), to 1e-9 relative
/// or 1e-13 absolute (ln A_α near 0 cancels: A_α = 1 + 4e-9 at σ = 4, q = 0.001, α = 1.1);
/// orders where the reference's fractional series did not converge (null) must be dropped
/// (infinite) here too.
#[test]
fn rdp_curves_match_dp_accounting() {
    let fx = fixture();
    let orders = default_orders();
    for c in fx["rdp"].as_array().unwrap() {
        let (sigma, q) = (f(c, "sigma"), f(c, "q"));
        let ours = compute_rdp(q, sigma, 1, &orders).unwrap();
        for ((a, want), got) in orders.iter().zip(c["rdp"].as_array().unwrap()).zip(&ours) {
            match want.as_f64() {
                Some(w) => assert!(
                    rel_close(w, *got, 1e-9) || (w - got).abs() < 1e-13,
                    "sigma {sigma} q {q} order {a}: reference {w}, ours {got}"
                ),
                None => assert!(
                    got.is_infinite(),
                    "order {a}: reference dropped it, ours {got}"
                ),
            }
        }
    }
}

/// 512 (sigma, q, steps, delta) -> epsilon values and their optimal orders.
#[test]
fn epsilons_match_dp_accounting() {
    let fx = fixture();
    let rows = fx["epsilon"].as_array().unwrap();
    assert_eq!(rows.len(), 512);
    let mut worst: f64 = 0.0;
    for r in rows {
        let plan = SubsampledGaussian::new(f(r, "sigma"), f(r, "q"), r["steps"].as_u64().unwrap())
            .unwrap();
        let g = plan.epsilon(f(r, "delta")).unwrap();
        let want = f(r, "epsilon");
        assert!(
            rel_close(want, g.epsilon, 1e-8),
            "{r}: ours {} at order {}",
            g.epsilon,
            g.order
        );
        assert_eq!(g.order, f(r, "order"), "{r}");
        if want > 0.0 {
            worst = worst.max((want - g.epsilon).abs() / want);
        }
    }
    eprintln!("largest relative difference from dp-accounting: {worst:e}");
}

/// dp-accounting's `calibrate_dp_mechanism` (Brent's method, tol 1e-9) against our bisection
/// on Adult's sampling rate 256/32561 with delta = 1/n^2.
#[test]
fn noise_multiplier_search_matches_dp_accounting_calibration() {
    let fx = fixture();
    for c in fx["calibration"].as_array().unwrap() {
        let (sigma, g) = noise_multiplier_for(
            f(c, "epsilon"),
            f(c, "q"),
            c["steps"].as_u64().unwrap(),
            f(c, "delta"),
        )
        .unwrap();
        assert!(rel_close(f(c, "sigma"), sigma, 1e-6), "{c}: ours {sigma}");
        assert!(g.epsilon <= f(c, "epsilon"), "{g:?}");
    }
}

/// Published: TensorFlow Privacy's `compute_dp_sgd_privacy.py` (2019) states that DP-SGD on
/// N = 60000 with batch 256, noise multiplier 1.12, 60 epochs and delta = 1e-5 "satisfies
/// (2.92, 1e-5)-DP". That script used steps = ceil(60 N / 256) = 14063, orders
/// [1.25, 1.5, 1.75, 2, 2.25, 2.5, 3, 3.5, 4, 4.5] + 5..63 + [128, 256, 512] and the
/// Mironov 2017 conversion.
#[test]
fn tf_privacy_published_example() {
    let steps = (60.0f64 * 60000.0 / 256.0).ceil() as u64;
    assert_eq!(steps, 14063);
    let orders: Vec<f64> = [1.25, 1.5, 1.75, 2., 2.25, 2.5, 3., 3.5, 4., 4.5]
        .into_iter()
        .chain((5..64).map(f64::from))
        .chain([128.0, 256.0, 512.0])
        .collect();
    let plan = SubsampledGaussian::new(1.12, 256.0 / 60000.0, steps).unwrap();
    let g = plan
        .epsilon_with(1e-5, &orders, Conversion::Mironov2017)
        .unwrap();
    assert_eq!(format!("{:.2}", g.epsilon), "2.92", "{g:?}");
    // The tighter conversion gives a smaller epsilon for the same curve.
    assert!(
        plan.epsilon_with(1e-5, &orders, Conversion::Balle2020)
            .unwrap()
            .epsilon
            < g.epsilon
    );
}

fn bin() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_epsilab"));
    c.env_remove("EPSILAB_DATA");
    c
}

fn run(args: &[&str]) -> (bool, String, String) {
    let o = bin().arg("accountant").args(args).output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn field(out: &str, key: &str) -> f64 {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .unwrap_or_else(|| panic!("no `{key}:` in {out}"))
        .parse()
        .unwrap()
}

#[test]
fn cli_prints_epsilon_and_order_of_a_plan() {
    let fx = fixture();
    // A fixture row: sigma 1.1, q = 256/32561, 1000 steps, delta = 1/32561^2.
    let row = fx["epsilon"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            f(r, "sigma") == 1.1
                && f(r, "q") == 256.0 / 32561.0
                && f(r, "steps") == 1000.0
                && f(r, "delta") < 1e-5
        })
        .unwrap()
        .clone();
    let (ok, out, err) = run(&[
        "--noise-multiplier",
        "1.1",
        "--sampling-rate",
        &(256.0f64 / 32561.0).to_string(),
        "--steps",
        "1000",
        "--dataset-size",
        "32561",
    ]);
    assert!(ok, "{err}");
    assert!(
        (field(&out, "epsilon") - f(&row, "epsilon")).abs() < 1e-6,
        "{out} vs {row}"
    );
    assert_eq!(field(&out, "order"), f(&row, "order"), "{out}");
    assert_eq!(field(&out, "delta"), 1.0 / (32561.0f64 * 32561.0), "{out}");
}

#[test]
fn cli_inverts_a_target_epsilon() {
    let (ok, out, err) = run(&[
        "--epsilon",
        "1",
        "--sampling-rate",
        "0.01",
        "--steps",
        "1000",
        "--delta",
        "1e-5",
    ]);
    assert!(ok, "{err}");
    let sigma = field(&out, "noise multiplier");
    assert!(field(&out, "epsilon") <= 1.0, "{out}");
    // Feeding the printed multiplier back gives the target (up to the 6 printed digits).
    let (ok, back, err) = run(&[
        "--noise-multiplier",
        &sigma.to_string(),
        "--sampling-rate",
        "0.01",
        "--steps",
        "1000",
        "--delta",
        "1e-5",
    ]);
    assert!(ok, "{err}");
    assert!((field(&back, "epsilon") - 1.0).abs() < 1e-4, "{back}");
}

#[test]
fn cli_refuses_bad_values_naming_the_flag() {
    let base = ["--sampling-rate", "0.5", "--steps", "10", "--delta", "1e-5"];
    for (flag, value, want) in [
        ("--noise-multiplier", "-1", "must be finite and > 0"),
        ("--noise-multiplier", "0", "must be finite and > 0"),
        ("--noise-multiplier", "nan", "must be finite and > 0"),
        ("--epsilon", "0", "must be finite and > 0"),
        ("--sampling-rate", "0", "must be in (0, 1]"),
        ("--sampling-rate", "1.5", "must be in (0, 1]"),
        ("--steps", "0", "whole number >= 1"),
        ("--delta", "1", "must be in (0, 1)"),
        ("--delta", "0", "must be in (0, 1)"),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        if let Some(i) = args.iter().position(|a| *a == flag) {
            args[i + 1] = value;
        } else {
            args.extend([flag, value]);
        }
        if flag != "--noise-multiplier" && flag != "--epsilon" {
            args.extend(["--noise-multiplier", "1"]);
        }
        let (ok, _, err) = run(&args);
        assert!(!ok, "{args:?} accepted");
        assert!(err.contains(flag) && err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // Neither or both of --noise-multiplier / --epsilon; no delta and no dataset size.
    let (ok, _, err) = run(&base);
    assert!(
        !ok && err.contains("--noise-multiplier") && err.contains("--epsilon"),
        "{err}"
    );
    let mut both = base.to_vec();
    both.extend(["--noise-multiplier", "1", "--epsilon", "1"]);
    let (ok, _, err) = run(&both);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
    let (ok, _, err) = run(&[
        "--noise-multiplier",
        "1",
        "--sampling-rate",
        "0.5",
        "--steps",
        "3",
    ]);
    assert!(!ok && err.contains("--delta"), "{err}");
    // An unreachable target is an error, not a hang or a panic.
    let (ok, _, err) = run(&[
        "--epsilon",
        "1e-9",
        "--sampling-rate",
        "1",
        "--steps",
        "100000",
        "--delta",
        "1e-5",
    ]);
    assert!(!ok && err.contains("not reached"), "{err}");
}

#[test]
fn cli_help_explains_every_flag() {
    let o = bin().args(["accountant", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    for flag in [
        "--noise-multiplier",
        "--epsilon",
        "--sampling-rate",
        "--steps",
        "--delta",
        "--dataset-size",
    ] {
        let line = help
            .lines()
            .position(|l| l.trim_start().starts_with(flag))
            .unwrap_or_else(|| panic!("{flag} missing from {help}"));
        // The flag's description follows on the next line (long help).
        assert!(
            help.lines().nth(line + 1).unwrap().trim().len() > 10,
            "{flag}: {help}"
        );
    }
    assert!(
        help.contains("Balle") && help.contains("dp-accounting"),
        "{help}"
    );
}

/// `--delta` and `--dataset-size` are alternatives: without either, the usage names both as
/// one required choice, not `--delta` alone.
#[test]
fn cli_usage_offers_delta_or_dataset_size() {
    let plan = [
        "--noise-multiplier",
        "1.1",
        "--sampling-rate",
        "0.01",
        "--steps",
        "10",
    ];
    let (ok, _, err) = run(&plan);
    assert!(
        !ok && err.contains("<--delta <D>|--dataset-size <N>>"),
        "{err}"
    );
    for extra in [["--delta", "1e-5"], ["--dataset-size", "100"]] {
        let mut args = plan.to_vec();
        args.extend(extra);
        let (ok, out, err) = run(&args);
        assert!(ok && out.contains("epsilon: "), "{extra:?}: {err}");
    }
}
