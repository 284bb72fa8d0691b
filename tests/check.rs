//! `epsilab check`: an unchanged run passes; a learner 3 points worse than its expectation fails
//! with a message naming the cell.

use epsilab::check::{CheckOptions, Expectation, check};
use epsilab::data::DataDir;
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
epsilon = [0.1, 10]

[[pipeline]]
name = "private NB"
learner = "private_nb"

[[pipeline]]
name = "non-private NB"
learner = "nb"

[report]
x = "epsilon"
"#;

fn opts(dir: &Path, update: bool) -> CheckOptions {
    CheckOptions {
        experiments: dir.into(),
        data_dir: DataDir(dir.into()),
        update,
        only: Vec::new(),
        speed: false,
    }
}

#[test]
fn check_passes_unchanged_and_fails_on_a_three_point_loss() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("gate.toml"), SPEC).unwrap();

    let r = check(&opts(tmp.path(), true)).unwrap();
    assert_eq!(r.specs, 1);
    assert!(r.failures.is_empty());

    // Unchanged code: deterministic runs reproduce every expectation.
    let r = check(&opts(tmp.path(), false)).unwrap();
    assert!(r.failures.is_empty(), "{:?}", r.failures);

    // The truth is now 3 points below the expectation: as if the learner lost 3 points.
    let file = tmp.path().join("expectations/gate.json");
    let mut e: Expectation =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    for c in &mut e.cells {
        if c.pipeline == "non-private NB" && c.metric == "test_accuracy" {
            c.mean += 0.03;
        }
    }
    std::fs::write(&file, serde_json::to_string(&e).unwrap()).unwrap();
    let r = check(&opts(tmp.path(), false)).unwrap();
    assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
    let msg = &r.failures[0];
    for part in [
        "gate",
        "dataset `dense`",
        "pipeline `non-private NB`",
        "metric `test_accuracy`",
        "-0.03",
    ] {
        assert!(msg.contains(part), "`{part}` not in: {msg}");
    }
}

#[test]
fn normal_noise_passes() {
    // A correct change that reorders random draws: the smoke means become fresh samples. Shift
    // every expected mean by one combined standard error; the 4-SE (>= 2 points) rule passes.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("gate.toml"), SPEC).unwrap();
    check(&opts(tmp.path(), true)).unwrap();
    let file = tmp.path().join("expectations/gate.json");
    let mut e: Expectation =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    for c in &mut e.cells {
        c.mean += (2.0f64).sqrt() * c.se;
    }
    std::fs::write(&file, serde_json::to_string(&e).unwrap()).unwrap();
    let r = check(&opts(tmp.path(), false)).unwrap();
    assert!(r.failures.is_empty(), "{:?}", r.failures);
}

#[test]
fn changed_spec_and_missing_expectations_fail() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("gate.toml"), SPEC).unwrap();
    let r = check(&opts(tmp.path(), false)).unwrap();
    assert!(
        r.failures[0].contains("no expectations"),
        "{:?}",
        r.failures
    );
    check(&opts(tmp.path(), true)).unwrap();
    std::fs::write(
        tmp.path().join("gate.toml"),
        SPEC.replace("seed = 7", "seed = 8"),
    )
    .unwrap();
    let r = check(&opts(tmp.path(), false)).unwrap();
    assert!(
        r.failures.iter().any(|f| f.contains("spec changed")),
        "{:?}",
        r.failures
    );
}
