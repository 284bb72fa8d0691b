//! `epsilab report --all --check` (the verdict gate): passes on a report just rebuilt from its
//! trials, and fails, naming the line and its section, on a tampered copy whose verdict was
//! flipped by hand, or whose trials no longer give the committed numbers.

use std::path::Path;
use std::process::{Command, Output};

const SPEC: &str = r#"
[experiment]
name = "gated"
title = "Gated"
trials = 3
seed = 5
datasets = ["dense"]

[dataset.dense]
source = "nb_sampled"
title = "Dense NB data"
dimension = 10
theta = [0.8, 0.5]
train = 500
test = 500
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
formats = ["png"]

[paper]
source = "a made-up figure"

[[paper.cell]]
dataset = "dense"
pipeline = "non-private NB"
value = 0.5
tolerance = 0.5
"#;

fn epsilab(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_epsilab"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

const REPORT_ALL: [&str; 6] = [
    "report",
    "--all",
    "--experiments",
    "exp",
    "--out",
    "results",
];

const CHECK: [&str; 7] = [
    "report",
    "--all",
    "--check",
    "--experiments",
    "exp",
    "--out",
    "results",
];

#[test]
fn a_tampered_report_fails_the_verdict_gate() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    std::fs::create_dir(t.join("exp")).unwrap();
    std::fs::write(t.join("exp/gated.toml"), SPEC).unwrap();
    let o = epsilab(t, &["run", "exp/gated.toml", "--out", "results"]);
    assert!(o.status.success(), "{o:?}");
    let o = epsilab(t, &REPORT_ALL);
    assert!(o.status.success(), "{o:?}");
    let o = epsilab(t, &CHECK);
    assert!(o.status.success(), "{o:?}");

    // A verdict flipped by hand in the committed REPORT.md.
    let report = t.join("results/REPORT.md");
    let text = std::fs::read_to_string(&report).unwrap();
    let section = text.find("\n## Gated").expect("the experiment's section");
    let at = text[..section].lines().count();
    let (n, line) = (text.lines().enumerate().skip(at))
        .find(|(_, l)| l.starts_with('|') && l.contains("reproduced"))
        .expect("a verdict line");
    std::fs::write(
        &report,
        text.replace(line, &line.replace("reproduced", "differs")),
    )
    .unwrap();
    let o = epsilab(t, &CHECK);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    let expected = format!("REPORT.md:{} (section Gated): verdict flipped", n + 1);
    assert!(err.contains(&expected), "`{expected}` not in {err}");

    // The committed report back, but a trial's accuracy changed: the table moves.
    std::fs::write(&report, &text).unwrap();
    assert!(epsilab(t, &CHECK).status.success());
    let trials = t.join("results/gated/trials.jsonl");
    let records = std::fs::read_to_string(&trials).unwrap();
    let first = records.lines().next().unwrap();
    let v: serde_json::Value = serde_json::from_str(first).unwrap();
    let acc = v["test_accuracy"].as_f64().unwrap();
    let tampered = first.replace(
        &format!("\"test_accuracy\":{acc}"),
        &format!("\"test_accuracy\":{}", acc - 0.3),
    );
    assert_ne!(tampered, first);
    std::fs::write(&trials, records.replace(first, &tampered)).unwrap();
    let o = epsilab(t, &CHECK);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("gated/table.md:"), "{err}");
}

/// The gate run over another folder of specs than the one `--out`'s REPORT.md was written from
/// says so in one line instead of diffing two unrelated reports line by line.
#[test]
fn results_of_other_specs_are_named_not_diffed() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    std::fs::create_dir_all(t.join("exp")).unwrap();
    std::fs::create_dir_all(t.join("other")).unwrap();
    std::fs::write(t.join("exp/gated.toml"), SPEC).unwrap();
    let twin = SPEC.replace("name = \"gated\"", "name = \"twin\"");
    std::fs::write(t.join("other/twin.toml"), &twin).unwrap();
    for spec in ["exp/gated.toml", "other/twin.toml"] {
        let o = epsilab(t, &["run", spec, "--out", "results"]);
        assert!(o.status.success(), "{o:?}");
    }
    // A results folder beside the specs' (an example's, a smoke run's) is no report of
    // other specs: the gate passes.
    assert!(epsilab(t, &REPORT_ALL).status.success());
    let o = epsilab(t, &CHECK);
    assert!(o.status.success(), "{o:?}");
    // REPORT.md written from both folders, checked against one of them: not comparable.
    std::fs::copy(t.join("other/twin.toml"), t.join("exp/twin.toml")).unwrap();
    assert!(epsilab(t, &REPORT_ALL).status.success());
    std::fs::remove_file(t.join("exp/twin.toml")).unwrap();
    let o = epsilab(t, &CHECK);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "REPORT.md not compared: results/REPORT.md reports an experiment with no spec in \
             exp (twin)"
        ),
        "{err}"
    );
    let fails = err.lines().filter(|l| l.starts_with("FAIL ")).count();
    assert_eq!(fails, 1, "{err}");
}
