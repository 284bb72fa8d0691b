//! `epsilab check`: an unchanged run passes; any moved record field (a one-point drop of one
//! private cell at one ε included) fails with a message naming the cell, the field and its old
//! and new values; `--bless` accepts a change and records its reason.

use epsilab::check::{CheckOptions, Expectation, check};
use epsilab::data::DataDir;
use epsilab::store::TrialRecord;
use std::path::Path;

const SPEC: &str = r#"
[experiment]
name = "gate"
trials = 10
seed = 7
datasets = ["dense"]

[dataset.dense]
source = "nb_sampled"
title = "Dense NB data"
dimension = 20
theta = [0.8, 0.5]
train = 2000
test = 2000
seed = 1

[grid]
epsilon = [0.01, 0.1, 1, 10]

[[pipeline]]
name = "private NB"
learner = "private_nb"

[[pipeline]]
name = "non-private NB"
learner = "nb"

[report]
x = "epsilon"
"#;

fn opts(dir: &Path, bless: bool) -> CheckOptions {
    CheckOptions {
        experiments: dir.into(),
        data_dir: DataDir(dir.into()),
        bless: bless.then(|| "the test's reason".to_string()),
        changes: dir.join("CHANGES.md"),
        only: Vec::new(),
        speed: None,
    }
}

fn read(file: &Path) -> Expectation {
    Expectation::from_bytes(&std::fs::read(file).unwrap()).unwrap()
}

#[test]
fn every_grid_value_is_checked_and_a_one_point_drop_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("gate.toml"), SPEC).unwrap();
    let r = check(&opts(tmp.path(), true)).unwrap();
    assert_eq!((r.specs, r.failures.len()), (1, 0));
    // Every ε, inner ones included: 4 private cells and 1 non-private, 2 trials each.
    let file = tmp.path().join("expectations/gate.json.gz");
    let e = read(&file);
    assert_eq!(e.records.len(), 2 * (4 + 1));
    assert!(e.records.iter().all(|r| r.get("fit_seconds").is_none()));
    let changes = std::fs::read_to_string(tmp.path().join("CHANGES.md")).unwrap();
    assert!(changes.contains("the test's reason") && changes.contains("`gate` (new)"));

    // Unchanged code reproduces every record bit for bit.
    let r = check(&opts(tmp.path(), false)).unwrap();
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(r.records, 10);

    // The code now loses one point in one private cell at an inner ε (0.1).
    let mut shifted = e.clone();
    let rec = (shifted.records.iter_mut())
        .find(|r| r["key"] == "dense|private NB|{\"epsilon\":0.1}|0")
        .unwrap();
    let acc = rec["test_accuracy"].as_f64().unwrap();
    rec["test_accuracy"] = serde_json::json!(acc + 0.01);
    std::fs::write(&file, shifted.to_gzip()).unwrap();
    let r = check(&opts(tmp.path(), false)).unwrap();
    assert_eq!(
        (r.failures.len(), r.moved_cells),
        (1, 1),
        "{:?}",
        r.failures
    );
    let msg = &r.failures[0];
    let expected = format!("trial 0: test_accuracy {} -> {acc}", acc + 0.01);
    for part in [
        "gate: cell `dense|private NB|{\"epsilon\":0.1}|`",
        &expected,
    ] {
        assert!(msg.contains(part), "`{part}` not in: {msg}");
    }

    // Blessing accepts it, names the spec in CHANGES.md, and the gate passes again.
    let r = check(&opts(tmp.path(), true)).unwrap();
    assert_eq!(r.blessed, ["`gate` (1 cells moved)"]);
    assert_eq!(read(&file), e);
    assert!(check(&opts(tmp.path(), false)).unwrap().failures.is_empty());
    let changes = std::fs::read_to_string(tmp.path().join("CHANGES.md")).unwrap();
    assert_eq!(changes.matches("## Smoke expectations blessed").count(), 2);
}

#[test]
fn only_one_spec_and_missing_or_changed_specs() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("gate.toml"), SPEC).unwrap();
    let other = SPEC.replace("name = \"gate\"", "name = \"other\"");
    std::fs::write(tmp.path().join("other.toml"), other).unwrap();
    let mut o = opts(tmp.path(), false);
    o.only = vec!["gaet".into()];
    let e = check(&o).unwrap_err().to_string();
    assert!(
        e.contains("invalid parameter `only`") && e.contains("`gaet`"),
        "a misspelt --only must not check nothing and pass: {e}"
    );
    o.only = vec!["gate".into()];
    let r = check(&o).unwrap();
    assert_eq!(r.specs, 1);
    assert!(
        r.failures[0].contains("gate: no expectations"),
        "{:?}",
        r.failures
    );
    o.bless = Some("first".into());
    check(&o).unwrap();
    assert!(!tmp.path().join("expectations/other.json.gz").exists());
    o.bless = None;
    assert!(check(&o).unwrap().failures.is_empty());
    std::fs::write(
        tmp.path().join("gate.toml"),
        SPEC.replace("seed = 7", "seed = 8"),
    )
    .unwrap();
    let r = check(&o).unwrap();
    assert!(
        r.failures[0].contains("spec changed") && r.moved_cells == 5,
        "{:?}",
        r.failures
    );
}

/// serde_json's default parser reads about 1 number in 200 one ulp off; the exact gate needs
/// `float_roundtrip` (Cargo.toml). 20,000 random doubles, written and read back as a record.
#[test]
fn a_written_record_reads_back_with_the_same_bits() {
    use rand::{Rng, SeedableRng};
    let line = r#"{"key":"k|0","dataset":"d","pipeline":"p","epsilon":0.1,"trial":0,"seed":1,"params":{},"test_accuracy":0.5,"train_accuracy":0.5,"n_train":1,"n_test":1,"n_features":1,"fit_seconds":0.0,"ledger":[],"private":false}"#;
    let mut r: TrialRecord = serde_json::from_str(line).unwrap();
    let mut rng = rand_pcg::Pcg64::seed_from_u64(1);
    let values: Vec<f64> = (0..20_000)
        .map(|i| match i % 2 {
            0 => rng.r#gen::<f64>(),
            _ => f64::from_bits(rng.r#gen::<u64>() >> 2),
        })
        .filter(|v| v.is_finite())
        .collect();
    r.vectors.insert("v".into(), values.clone());
    let back: TrialRecord = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    let moved = (values.iter().zip(&back.vectors["v"]))
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    assert_eq!(moved, 0, "of {} values", values.len());
}

/// A spec with `gate_exempt` is not run by the gate (here its program would fail), even when
/// blessing, and leaves no expectations behind.
#[test]
fn a_gate_exempt_spec_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let exempt = SPEC
        .replace(
            "datasets = [\"dense\"]",
            "datasets = [\"dense\"]\ngate_exempt = \"runs a program CI lacks\"",
        )
        .replace(
            "learner = \"nb\"",
            "learner = \"external\"\ncommand = [\"false\"]\nprivate = false",
        );
    std::fs::write(tmp.path().join("gate.toml"), exempt).unwrap();
    for bless in [false, true] {
        let r = check(&opts(tmp.path(), bless)).unwrap();
        assert_eq!((r.specs, r.records), (0, 0));
        assert!(r.failures.is_empty(), "{:?}", r.failures);
    }
    assert!(!tmp.path().join("expectations/gate.json.gz").exists());
}
