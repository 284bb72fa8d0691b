//! Refused inputs leave nothing behind and say what to change (issue 45's smaller defects).

mod common;

use common::{bin, run_options, write_spec};
use epsilab::data::DataDir;
use epsilab::spec::Spec;
use epsilab::store::{Store, TRIALS_FILE};
use std::path::Path;

/// `rows` rows of two features in [0, 1] and a label cycling through `labels`.
fn write_csv(path: &Path, rows: usize, labels: &[&str]) {
    let mut text = String::from("a,b,y\n");
    for i in 0..rows {
        let (a, b) = ((i * 7 % 10) as f64 / 10.0, (i * 3 % 10) as f64 / 10.0);
        text += &format!("{a},{b},{}\n", labels[i % labels.len()]);
    }
    std::fs::write(path, text).unwrap();
}

/// An LR spec named `lr` on `data.csv` with `classes` and `train_fraction`.
fn lr_spec(classes: &[&str], train_fraction: f64) -> String {
    let classes: Vec<String> = classes
        .iter()
        .map(|c| format!("{{ label = \"{c}\", name = \"{c}\" }}"))
        .collect();
    format!(
        r#"
[experiment]
name = "lr"
trials = 2
seed = 1
datasets = ["mine"]

[dataset.mine]
source = "csv"
train = "data.csv"
train_fraction = {train_fraction}
label = "y"
bounds = [0, 1]
subset = true
classes = [{}]

[grid]
epsilon = [1]

[[pipeline]]
name = "lr"
learner = "lr"
lambda = 0.01

[report]
x = "epsilon"
"#,
        classes.join(", ")
    )
}

/// LR on three classes is refused before the results folder is written, so the corrected spec
/// (two classes) then runs without `--force` (it was refused as "computed from other data").
#[test]
fn a_refused_first_run_leaves_nothing_the_corrected_spec_is_refused_for() {
    let dir = tempfile::tempdir().unwrap();
    write_csv(&dir.path().join("data.csv"), 60, &["p", "q", "r"]);
    let out = dir.path().join("out");
    let opts = run_options(&out, 1);
    let three = write_spec(dir.path(), "three.toml", &lr_spec(&["p", "q", "r"], 0.7));
    let err = epsilab::runner::run(&Spec::load(&three).unwrap(), &opts)
        .unwrap_err()
        .to_string();
    assert!(err.contains("two classes, found 3"), "{err}");
    let folder = out.join("lr");
    for file in ["manifest.json", TRIALS_FILE] {
        assert!(!folder.join(file).exists(), "{file} left behind");
    }
    let two = write_spec(dir.path(), "two.toml", &lr_spec(&["p", "q"], 0.7));
    let summary = epsilab::runner::run(&Spec::load(&two).unwrap(), &opts).unwrap();
    assert_eq!(summary.ran, 2);
}

/// A forced run that fails before storing a record removes its staging files; the previous
/// results stay.
#[test]
fn a_failed_forced_run_leaves_no_staging_files() {
    let dir = tempfile::tempdir().unwrap();
    write_csv(&dir.path().join("data.csv"), 60, &["p", "q"]);
    let out = dir.path().join("out");
    let path = write_spec(dir.path(), "two.toml", &lr_spec(&["p", "q"], 0.7));
    let spec = Spec::load(&path).unwrap();
    epsilab::runner::run(&spec, &run_options(&out, 1)).unwrap();
    let folder = out.join("lr");
    let before = std::fs::read(folder.join(TRIALS_FILE)).unwrap();
    // A forced run opens its staging files, then fails (here: is dropped) before any record.
    let manifest = epsilab::runner::manifest(&spec, &DataDir("unused".into())).unwrap();
    let stored = epsilab::store::inspect(&folder, &manifest, true).unwrap();
    let store = Store::open(&folder, &manifest, true, stored, TRIALS_FILE).unwrap();
    assert!(folder.join("trials.jsonl.staging").exists());
    drop(store);
    let staging: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(epsilab::store::STAGING))
        .collect();
    assert!(staging.is_empty(), "left behind: {staging:?}");
    assert_eq!(std::fs::read(folder.join(TRIALS_FILE)).unwrap(), before);
    assert!(folder.join("manifest.json").exists());
}

/// A 0.01 split of 60 rows trains on one row: a class has no training rows, so the dataset is
/// refused (it ran with n_train = 1).
#[test]
fn a_split_training_on_fewer_rows_than_classes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_csv(&dir.path().join("data.csv"), 60, &["p", "q"]);
    let path = write_spec(dir.path(), "s.toml", &lr_spec(&["p", "q"], 0.01));
    let spec = Spec::load(&path).unwrap();
    let err = spec
        .catalog
        .load("mine", &DataDir("unused".into()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("trains on 1") && err.contains("no training rows"),
        "{err}"
    );
    // Two training rows for two classes pass this check.
    let path = write_spec(dir.path(), "s.toml", &lr_spec(&["p", "q"], 0.04));
    let spec = Spec::load(&path).unwrap();
    let data = spec
        .catalog
        .load("mine", &DataDir("unused".into()))
        .unwrap();
    assert_eq!(data.train_size(), 2);
}

#[test]
fn a_spec_without_report_says_to_add_one() {
    let dir = tempfile::tempdir().unwrap();
    let text = lr_spec(&["p", "q"], 0.7);
    let text = &text[..text.find("[report]").unwrap()];
    let path = write_spec(dir.path(), "s.toml", text);
    let err = Spec::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("field `report`") && err.contains("no `[report]` table"),
        "{err}"
    );
}

#[test]
fn list_shows_the_built_in_scalar_column() {
    let out = bin().arg("list").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("adult_age"));
    assert!(line.is_some_and(|l| l.contains("scalar column")), "{text}");
}

#[test]
fn every_data_dir_flag_has_help() {
    for command in ["run", "check", "status", "slurm", "list"] {
        let out = bin().args([command, "--help"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.contains("--data-dir"))
            .unwrap_or_else(|| panic!("{command}: {text}"));
        let help = line.split_once("--data-dir <DATA_DIR>").unwrap().1.trim();
        assert!(!help.is_empty(), "{command} --data-dir has no help: {text}");
    }
}

/// A header read as data (csv_column reads none by default) names `header = true`; with it,
/// the column is read by name.
#[test]
fn a_csv_column_header_read_as_data_says_to_set_header() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ages.csv"), "age,city\n30,x\n40,y\n").unwrap();
    let spec = |header: &str, column: &str| {
        format!(
            "[experiment]\nname = \"c\"\ntrials = 1\nseed = 1\ndatasets = [\"ages\"]\n\
             [dataset.ages]\nsource = \"csv_column\"\nfile = \"ages.csv\"\ncolumn = {column}\n{header}\n\
             [grid]\nepsilon = [1]\n\
             [[pipeline]]\nname = \"mean\"\nrelease = \"laplace\"\nquery = \"mean\"\nbounds = [0, 100]\n\
             [report]\nx = \"epsilon\"\nmetrics = [\"abs_error\"]\n"
        )
    };
    let load = |text: String| {
        let path = write_spec(dir.path(), "s.toml", &text);
        Spec::load(&path)
            .unwrap()
            .catalog
            .load("ages", &DataDir("unused".into()))
    };
    let err = load(spec("", "1")).unwrap_err().to_string();
    assert!(
        err.contains("ages.csv:1") && err.contains("set `header = true`"),
        "{err}"
    );
    let data = load(spec("header = true", "\"age\"")).unwrap();
    assert_eq!(data.n_rows(), 2);
}

/// A two-class CSV spec (add/remove neighbours) on `data.csv`: `lr`, then `pipeline` (the
/// lines of a second `[[pipeline]]` table), over `epsilon`; `public_n` lines in the dataset.
fn private_n_spec(pipeline: &str, public_n: &str, epsilon: &str) -> String {
    format!(
        r#"
[experiment]
name = "n"
trials = 2
seed = 1
datasets = ["mine"]

[dataset.mine]
source = "csv"
train = "data.csv"
train_fraction = 0.7
label = "y"
bounds = [0, 1]
classes = [{{ label = "p", name = "p" }}, {{ label = "q", name = "q" }}]
{public_n}

[grid]
epsilon = {epsilon}

[[pipeline]]
name = "lr"
learner = "lr"
lambda = 1

[[pipeline]]
name = "second"
{pipeline}

[report]
x = "epsilon"
"#
    )
}

/// A pipeline whose fit reads the training-set size N while the run keeps it private, an ε
/// the accountant cannot reach, or a relation a mechanism is not proven for, is refused by the
/// preflight: the error names the spec file, the field and the pipeline, and nothing is
/// written (these ran other pipelines' trials, then failed naming no file). The corrected
/// spec then runs.
#[test]
fn what_a_fit_reads_of_the_run_is_checked_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    write_csv(&dir.path().join("data.csv"), 60, &["p", "q"]);
    let out = dir.path().join("out");
    let opts = run_options(&out, 1);
    let sgd = "learner = \"dp_sgd\"\nlambda = 1";
    let cases = [
        (
            sgd,
            "",
            "[1]",
            "dataset.mine.public_n",
            "reads the training-set size N",
        ),
        (
            "learner = \"noisy_gd\"\nlambda = 1",
            "",
            "[1]",
            "dataset.mine.public_n",
            "reads the training-set size N",
        ),
        (
            "learner = \"lr_output\"\nlambda = { per_example = 0.01 }",
            "",
            "[1]",
            "dataset.mine.public_n",
            "lambda = N Lambda",
        ),
        // 60 rows, a 0.7 split: N = 42.
        (
            "learner = \"dp_sgd\"\nlambda = 1\ndelta = 1e-10",
            "public_n = 42",
            "[1, 0.01]",
            "grid.epsilon",
            "0.01 is not reached",
        ),
        (
            "learner = \"input_perturbation\"\nlambda = 1",
            "",
            "[1]",
            "experiment.neighbours",
            "replace-one",
        ),
    ];
    for (pipeline, public_n, epsilon, field, says) in cases {
        let text = private_n_spec(pipeline, public_n, epsilon);
        let path = write_spec(dir.path(), "s.toml", &text);
        let err = epsilab::runner::run(&Spec::load(&path).unwrap(), &opts)
            .unwrap_err()
            .to_string();
        for part in [
            "s.toml",
            &format!("field `{field}`"),
            "pipeline[1] `second`",
            says,
        ] {
            assert!(err.contains(part), "{pipeline}: no {part:?} in {err}");
        }
        for file in ["manifest.json", TRIALS_FILE] {
            assert!(
                !out.join("n").join(file).exists(),
                "{file} left behind: {err}"
            );
        }
    }
    let path = write_spec(
        dir.path(),
        "s.toml",
        &private_n_spec(sgd, "public_n = 42", "[1]"),
    );
    let summary = epsilab::runner::run(&Spec::load(&path).unwrap(), &opts).unwrap();
    assert_eq!(summary.ran, 4);
}

/// A scalar release reading the public n on a file column that declares none is refused by
/// the preflight, naming `dataset.NAME.public_n`.
#[test]
fn a_mean_of_a_column_without_public_n_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ages: String = (0..50).map(|i| format!("{},x\n", i % 10)).collect();
    std::fs::write(dir.path().join("ages.csv"), ages).unwrap();
    let spec = r#"
[experiment]
name = "mean"
trials = 1
seed = 5
datasets = ["ages"]

[dataset.ages]
source = "csv_column"
file = "ages.csv"
column = 1

[[pipeline]]
name = "mean"
release = "laplace"
query = "mean"
bounds = [0.0, 10.0]

[grid]
epsilon = [1.0]

[report]
x = "epsilon"
metrics = ["abs_error"]
"#;
    let path = write_spec(dir.path(), "m.toml", spec);
    let out = dir.path().join("out");
    let err = epsilab::runner::run(&Spec::load(&path).unwrap(), &run_options(&out, 1))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("m.toml") && err.contains("field `dataset.ages.public_n`"),
        "{err}"
    );
    assert!(!out.join("mean").join(TRIALS_FILE).exists());
}

/// `epsilab` with `args`: (exit code, standard error).
fn epsilab(args: &[&str]) -> (Option<i32>, String) {
    let o = bin().args(args).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A missing spec folder, or one with no spec, is refused by `check`, `list` and
/// `report --all`, naming the folder: `check` passed on "0 specs", so a misspelt CI path made
/// the gate green (and it created the missing folder's `expectations/`).
#[test]
fn a_missing_or_empty_experiments_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nonexist");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for folder in [&missing, &empty] {
        let f = folder.to_str().unwrap();
        let out = dir.path().join("out");
        let o = out.to_str().unwrap();
        for args in [
            vec!["check", "--experiments", f, "--no-speed"],
            vec!["list", "--experiments", f],
            vec!["report", "--all", "--experiments", f, "--out", o],
        ] {
            let (code, err) = epsilab(&args);
            assert_eq!(code, Some(1), "{args:?}: {err}");
            assert!(
                err.contains("invalid parameter `--experiments`") && err.contains(f),
                "{args:?}: {err}"
            );
        }
    }
    assert!(!missing.exists(), "check created the missing folder");
}

/// `check --bless` with an empty reason is refused: the changes file would record no why.
#[test]
fn a_bless_with_an_empty_reason_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let changes = dir.path().join("CHANGES.md");
    for reason in ["", "  "] {
        let (code, err) = epsilab(&[
            "check",
            "--experiments",
            dir.path().to_str().unwrap(),
            "--no-speed",
            "--bless",
            "--reason",
            reason,
            "--changes",
            changes.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains("invalid parameter `--reason`"), "{err}");
    }
    assert!(!changes.exists());
}

/// `check --reason` without `--bless` is refused by the parser: a reason that no bless
/// records would be dropped without a word.
#[test]
fn a_reason_without_a_bless_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = epsilab(&[
        "check",
        "--experiments",
        dir.path().to_str().unwrap(),
        "--no-speed",
        "--reason",
        "a why with nothing to record it",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--bless"), "{err}");
}

/// The reviewer's dataset: 200 rows of age, bmi and a 0/1 label `y`.
fn write_age_bmi(path: &Path) {
    let mut text = String::from("age,bmi,y\n");
    for i in 0..200 {
        text += &format!("{},{},{}\n", 20 + i % 60, 18 + i % 20, i % 2);
    }
    std::fs::write(path, text).unwrap();
}

/// The reviewer's spec on [`write_age_bmi`]'s file (a 0.7 split trains on 140 rows) with
/// `n_train` and `features`.
fn age_bmi_spec(n_train: &str, features: &str) -> String {
    format!(
        r#"
[experiment]
name = "ab"
trials = 2
seed = 1
datasets = ["d"]

[dataset.d]
source = "csv"
train = "data.csv"
train_fraction = 0.7
label = "y"
features = {features}
bounds = [0, 100]
classes = [{{ label = 0, name = "no" }}, {{ label = 1, name = "yes" }}]

[grid]
epsilon = [0.1, 1]
n_train = {n_train}

[[pipeline]]
name = "lr"
learner = "lr"
lambda = 0.01

[[pipeline]]
name = "lr_objective"
learner = "lr_objective"
lambda = 0.01

[report]
x = "epsilon"
"#
    )
}

/// `n_train` above the training split's size (140 of 200 rows) is refused before anything is
/// written, naming the value: it ran on the 140 rows, recorded n_train 140 and duplicated the
/// 140 cell. The split's own size runs.
#[test]
fn an_n_train_above_the_training_split_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_age_bmi(&dir.path().join("data.csv"));
    let out = dir.path().join("out");
    let opts = run_options(&out, 1);
    let path = write_spec(
        dir.path(),
        "ab.toml",
        &age_bmi_spec("[100, 200]", "[\"age\", \"bmi\"]"),
    );
    let err = epsilab::runner::run(&Spec::load(&path).unwrap(), &opts)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("field `grid.n_train[1]`")
            && err.contains("n_train = 200 exceeds the 140 training rows of dataset `d`"),
        "{err}"
    );
    assert!(!out.join("ab").join(TRIALS_FILE).exists());
    let path = write_spec(
        dir.path(),
        "ab.toml",
        &age_bmi_spec("[100, 140]", "[\"age\", \"bmi\"]"),
    );
    let summary = epsilab::runner::run(&Spec::load(&path).unwrap(), &opts).unwrap();
    // Two sizes x two trials: lr_objective at each epsilon, the non-private lr once.
    assert_eq!(summary.ran, 2 * 2 * (2 + 1));
}

/// One column named twice, by name and by number, is refused when the file is read (the spec
/// alone cannot tell `"age"` from 1).
#[test]
fn a_feature_column_named_twice_by_name_and_number_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_age_bmi(&dir.path().join("data.csv"));
    let path = write_spec(
        dir.path(),
        "ab.toml",
        &age_bmi_spec("[100]", "[\"age\", 1, \"bmi\"]"),
    );
    let spec = Spec::load(&path).unwrap();
    let err = spec
        .catalog
        .load("d", &DataDir("unused".into()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`features` lists column 1 twice"), "{err}");
}
