//! A user's own datasets: validation of empty files, empty training sets and classes without
//! training rows; real-valued LIBSVM and CSV files behind declared public bounds, with the
//! clipping recorded in every LR trial's ledger; binary-only learners refusing real values.

mod common;

use epsilab::data::{DataDir, Features};
use epsilab::error::Error;
use epsilab::runner::run;
use epsilab::spec::Spec;
use std::path::Path;

/// Writes `files` into `dir` and a spec with one inline dataset `[dataset.mine]` (`def`) and the
/// given pipelines; returns the loaded spec.
fn spec_with(dir: &Path, files: &[(&str, &str)], def: &str, pipelines: &str) -> Spec {
    load_spec(dir, files, def, pipelines).unwrap()
}

fn load_spec(
    dir: &Path,
    files: &[(&str, &str)],
    def: &str,
    pipelines: &str,
) -> epsilab::error::Result<Spec> {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let text = format!(
        "[experiment]\nname = \"mine\"\ntrials = 3\nseed = 1\ndatasets = [\"mine\"]\n\
         [dataset.mine]\n{def}\n[grid]\nepsilon = [1.0]\n{pipelines}\n[report]\nx = \"epsilon\"\n"
    );
    Spec::load(&common::write_spec(dir, "s.toml", &text))
}

fn load_err(dir: &Path, files: &[(&str, &str)], def: &str) -> String {
    let spec = spec_with(dir, files, def, NB);
    spec.catalog
        .load("mine", &DataDir("unused".into()))
        .unwrap_err()
        .to_string()
}

const NB: &str = "[[pipeline]]\nname = \"nb\"\nlearner = \"nb\"\n";
const TWO_CLASSES: &str = "classes = [{ label = 1, name = \"a\" }, { label = 2, name = \"b\" }]";

#[test]
fn an_empty_training_file_is_an_error_naming_file_and_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let def = format!(
        "source = \"libsvm\"\ndimension = 2\ntrain = \"train.libsvm\"\ntest = \"test.libsvm\"\n{TWO_CLASSES}"
    );
    let err = load_err(
        dir.path(),
        &[("train.libsvm", ""), ("test.libsvm", "1 1:1\n2 2:1\n")],
        &def,
    );
    assert!(
        err.contains("s.toml: field `dataset.mine`: ") && err.contains("train.libsvm is empty"),
        "{err}"
    );
    // Blank lines only are empty too.
    let err = load_err(
        dir.path(),
        &[("train.libsvm", "\n  \n"), ("test.libsvm", "1 1:1\n")],
        &def,
    );
    assert!(err.contains("train.libsvm is empty"), "{err}");
}

/// A spec's own file is read relative to the spec: its error says so and does not send the user
/// to `--data-dir`, which moves only the built-in datasets.
#[test]
fn a_missing_own_file_names_it_and_where_it_was_looked_for() {
    let dir = tempfile::tempdir().unwrap();
    let def = format!(
        "source = \"libsvm\"\ndimension = 2\ntrain = \"trian.libsvm\"\ntest = \"test.libsvm\"\n{TWO_CLASSES}"
    );
    let err = load_err(dir.path(), &[("test.libsvm", "1 1:1\n2 2:1\n")], &def);
    assert!(
        err.contains("dataset `mine`: file not found:")
            && err.contains("trian.libsvm")
            && err.contains("relative to the spec's folder")
            && !err.contains("point --data-dir"),
        "{err}"
    );
    // The spec file and the field that names the file, when loading and when hashing (a run
    // hashes its inputs first).
    let spec = spec_with(dir.path(), &[], &def, NB);
    let hashed = spec
        .catalog
        .input_hashes("mine", &DataDir("unused".into()))
        .unwrap_err()
        .to_string();
    for e in [&err, &hashed] {
        assert!(
            e.contains("s.toml: field `dataset.mine.train`: dataset `mine`: file not found"),
            "{e}"
        );
    }
    let test = def.replace("test = \"test.libsvm\"", "test = \"tset.libsvm\"");
    let spec = spec_with(dir.path(), &[("trian.libsvm", "1 1:1\n")], &test, NB);
    let err = spec
        .catalog
        .input_hashes("mine", &DataDir("unused".into()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("field `dataset.mine.test`"), "{err}");
}

/// A CSV dataset without `classes` (and no regression target) says what to add, rather than
/// that its first label is not among no classes.
#[test]
fn a_csv_without_classes_asks_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let def = "source = \"csv\"\ntrain = \"d.csv\"\ntrain_fraction = 0.5\nlabel = \"y\"";
    let err = load_err(dir.path(), &[("d.csv", "a,y\n1,0\n0,1\n1,1\n0,0\n")], def);
    assert!(
        err.contains("s.toml: field `dataset.mine.classes`: `classes` is empty")
            && err.contains("target_bounds"),
        "{err}"
    );
}

#[test]
fn an_empty_training_set_after_subset_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let def = format!(
        "source = \"libsvm\"\ndimension = 2\ntrain = \"train.libsvm\"\ntest = \"test.libsvm\"\nsubset = true\n{TWO_CLASSES}"
    );
    let err = load_err(
        dir.path(),
        &[
            ("train.libsvm", "3 1:1\n3 2:1\n"),
            ("test.libsvm", "1 1:1\n2 2:1\n"),
        ],
        &def,
    );
    assert!(
        err.contains("training set is empty") && err.contains("train.libsvm"),
        "{err}"
    );
}

#[test]
fn a_class_with_no_training_rows_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let def = format!(
        "source = \"libsvm\"\ndimension = 2\ntrain = \"train.libsvm\"\ntest = \"test.libsvm\"\n{TWO_CLASSES}"
    );
    let err = load_err(
        dir.path(),
        &[
            ("train.libsvm", "1 1:1\n1 2:1\n"),
            ("test.libsvm", "1 1:1\n2 2:1\n"),
        ],
        &def,
    );
    assert!(
        err.contains("class `b` (label 2) has no training rows") && err.contains("train.libsvm"),
        "{err}"
    );
    // Random split: a class absent from the only file.
    let def = format!(
        "source = \"libsvm\"\ndimension = 2\ntrain = \"all.libsvm\"\ntrain_fraction = 0.5\n{TWO_CLASSES}"
    );
    let err = load_err(dir.path(), &[("all.libsvm", "1 1:1\n1 2:1\n1 1:1\n")], &def);
    assert!(err.contains("class `b` (label 2) has no rows"), "{err}");
}

/// A value of a spec's dataset refused while loading names the spec file and the field, as a
/// wrong type does when the spec is read; a column the file lacks names the data file's line too.
#[test]
fn a_refused_dataset_value_names_the_spec_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let csv = [(
        "d.csv",
        "a,b,y\n0.5,0.1,1\n0.2,0.3,2\n0.1,0.9,1\n0.7,0.4,2\n",
    )];
    let base = format!("source = \"csv\"\ntrain = \"d.csv\"\nbounds = [0, 1]\n{TWO_CLASSES}");
    let cases = [
        (
            "train_fraction = 0\nlabel = \"y\"",
            "s.toml: field `dataset.mine.train_fraction`: train_fraction 0 is not in (0, 1)",
        ),
        (
            "train_fraction = 0.5\nlabel = \"y\"\ndelimiter = \";;\"",
            "s.toml: field `dataset.mine.delimiter`: `delimiter` must be one ASCII character",
        ),
        (
            "train_fraction = 0.5\nlabel = 7",
            "s.toml: field `dataset.mine.label`: ",
        ),
        (
            "train_fraction = 0.5\nlabel = \"y\"\nfeatures = [\"a\", \"c\"]",
            "s.toml: field `dataset.mine.features`: ",
        ),
    ];
    for (def, needle) in cases {
        let err = load_err(dir.path(), &csv, &format!("{base}\n{def}"));
        assert!(err.contains(needle), "{def}: {err}");
    }
    // A generated source's out-of-range value names its own field.
    let mixture = |clusters, dimension, train, test, spread| {
        format!(
            "source = \"gaussian_mixture\"\nclusters = {clusters}\ndimension = {dimension}\n\
             train = {train}\ntest = {test}\nspread = {spread}"
        )
    };
    for (def, field) in [
        (mixture(1, 2, 10, 5, 0.1), "clusters"),
        (mixture(2, 0, 10, 5, 0.1), "dimension"),
        (mixture(3, 2, 2, 5, 0.1), "train"),
        (mixture(2, 2, 10, 0, 0.1), "test"),
        (mixture(2, 2, 10, 5, -1.0), "spread"),
    ] {
        let err = load_err(dir.path(), &[], &def);
        let needle = format!("s.toml: field `dataset.mine.{field}`: `{field}` must be");
        assert!(err.contains(&needle), "{def}: {err}");
    }
    let err = load_err(
        dir.path(),
        &csv,
        &format!("{base}\ntrain_fraction = 0.5\nlabel = 7"),
    );
    assert!(
        err.contains("d.csv:1: label column 7 is outside 1..=3"),
        "{err}"
    );
}

#[test]
fn a_bad_csv_cell_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let def = format!(
        "source = \"csv\"\ntrain = \"d.csv\"\ntrain_fraction = 0.5\nlabel = \"y\"\nbounds = [0, 1]\n{TWO_CLASSES}"
    );
    let err = load_err(dir.path(), &[("d.csv", "y,age\n1,0.5\n2,old\n")], &def);
    assert!(
        err.contains("d.csv:3: column 2 (`age`): `old` is not a number"),
        "{err}"
    );
}

/// A comma-separated file read with `delimiter = ";"` is one column wide: the error says so and
/// points at `delimiter`, not at a label column "missing" from a header that is one glued cell.
#[test]
fn a_delimiter_mismatch_is_named_not_reported_as_a_missing_label() {
    let dir = tempfile::tempdir().unwrap();
    let def = format!(
        "source = \"csv\"\ntrain = \"d.csv\"\ntrain_fraction = 0.5\nlabel = \"y\"\n\
         delimiter = \";\"\n{TWO_CLASSES}"
    );
    let err = load_err(dir.path(), &[("d.csv", "y,a\n1,0\n2,1\n")], &def);
    assert!(
        err.contains(
            "d.csv:1: the first line has only one column when split at the delimiter `;`, but \
             a label and a feature need two: check the dataset's `delimiter` (default \",\"); \
             the line holds `,`: is the file `,`-separated?"
        ),
        "{err}"
    );
    assert!(!err.contains("not in the header"), "{err}");
}

/// A file that fails the spec's own `sha256` is reported as the spec's checksum, naming the spec
/// and the field, not as "the catalog expects".
#[test]
fn a_checksum_mismatch_of_a_spec_dataset_names_the_spec_field() {
    let dir = tempfile::tempdir().unwrap();
    let sum = "0".repeat(64);
    let def = format!(
        "source = \"csv\"\ntrain = \"d.csv\"\ntrain_fraction = 0.5\nlabel = \"y\"\n\
         sha256 = {{ \"d.csv\" = \"{sum}\" }}\n{TWO_CLASSES}"
    );
    let err = load_err(dir.path(), &[("d.csv", "y,a\n1,0\n2,1\n")], &def);
    assert!(
        err.contains("s.toml: field `dataset.mine.sha256`: ")
            && err.contains("d.csv has SHA-256 ")
            && err.contains(&format!("the spec's checksum is {sum}")),
        "{err}"
    );
    assert!(!err.contains("catalog"), "{err}");
}

#[test]
fn real_values_need_declared_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let def = format!(
        "source = \"libsvm\"\ndimension = 2\ntrain = \"r.libsvm\"\ntrain_fraction = 0.5\n{TWO_CLASSES}"
    );
    let err = load_err(
        dir.path(),
        &[("r.libsvm", "1 1:0.5\n2 2:3\n1 1:0.25\n2 2:1\n")],
        &def,
    );
    assert!(
        err.contains("r.libsvm:1:") && err.contains("declare public `bounds`"),
        "{err}"
    );
    // Bounds that cannot serve the declared dimension are refused with the spec, before the
    // file is read.
    for (bounds, needle) in [
        ("[1, 0]", "lo < hi"),
        ("[[0, 1]]", "1 [lo, hi] pairs for 2 features"),
    ] {
        let files = [("r.libsvm", "1 1:0.5\n2 2:3\n1 1:0.25\n2 2:1\n")];
        let def = format!("{def}\nbounds = {bounds}");
        let err = load_spec(dir.path(), &files, &def, NB)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("s.toml: field `dataset.mine.bounds`") && err.contains(needle),
            "{err}"
        );
    }
}

#[test]
fn real_libsvm_values_are_clipped_to_the_public_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let def = format!(
        "source = \"libsvm\"\ndimension = 2\ntrain = \"r.libsvm\"\ntest = \"t.libsvm\"\n\
         bounds = [[0, 1], [-5, 5]]\n{TWO_CLASSES}"
    );
    let spec = spec_with(
        dir.path(),
        &[
            ("r.libsvm", "1 1:0.5 2:-9\n2 1:3 2:4\n"),
            ("t.libsvm", "1 1:-1\n2 2:6\n"),
        ],
        &def,
        NB,
    );
    let ds = spec
        .catalog
        .load("mine", &DataDir("unused".into()))
        .unwrap();
    let Features::Dense(x) = &ds.features else {
        panic!("real-valued data is dense")
    };
    assert_eq!(
        x.as_slice().unwrap(),
        &[0.5, -5.0, 1.0, 4.0, 0.0, 0.0, 0.0, 5.0]
    );
    let b = ds.bounds.as_ref().unwrap();
    assert_eq!(b.clipped, vec![1, 1, 1, 1]);
    assert_eq!(b.clipped_in(&[0, 1]), 2);
}

/// A real-valued CSV (label column by name, two features, one value far outside its bounds):
/// LR trains with public-bounds scaling, every trial's ledger has the clipping step, the
/// number of clipped training values is a metric, and the trials are private within budget.
#[test]
fn csv_with_bounds_runs_private_lr_and_records_the_clipping() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = String::from("height,weight,label\n");
    for i in 0..200 {
        let pos = i % 2 == 0;
        let h = if pos { 1.5 } else { 0.5 } + (i % 7) as f64 * 0.05;
        let w = if i == 3 {
            500.0
        } else if pos {
            60.0
        } else {
            40.0
        };
        rows.push_str(&format!("{h},{w},{}\n", if pos { "yes" } else { "no" }));
    }
    let def = "source = \"csv\"\ntrain = \"d.csv\"\ntrain_fraction = 0.5\nlabel = \"label\"\n\
               bounds = [[0, 2], [0, 100]]\n\
               classes = [{ label = \"no\", name = \"no\" }, { label = \"yes\", name = \"yes\" }]";
    let pipelines = "[[pipeline]]\nname = \"private\"\nlearner = \"lr_output\"\n\
                     lambda = 0.01\n\
                     [[pipeline]]\nname = \"reference\"\nlearner = \"lr\"\nlambda = 0.01\n";
    let spec = spec_with(dir.path(), &[("d.csv", &rows)], def, pipelines);
    let out = tempfile::tempdir().unwrap();
    let opts = common::run_options(out.path(), 1);
    let s = run(&spec, &opts).unwrap();
    assert_eq!(s.total, 6);
    let trials = std::fs::read_to_string(s.results_dir.join("trials.jsonl")).unwrap();
    let mut clipped_total = 0.0;
    for line in trials.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let ledger = r["ledger"].as_array().unwrap();
        let clip = ledger
            .iter()
            .find(|e| e["name"] == "clipping")
            .unwrap_or_else(|| panic!("no clipping step in {line}"));
        assert_eq!(clip["private"], true);
        assert_eq!(clip["epsilon"], 0.0);
        let scaling = ledger.iter().find(|e| e["name"] == "scaling");
        assert!(
            scaling.is_none(),
            "public-bounds scaling is private: {line}"
        );
        let c = r["metrics"]["clipped_values"].as_f64().unwrap();
        assert!(c == 0.0 || c == 1.0, "{line}");
        if r["pipeline"] == "private" {
            assert_eq!(r["private"], true, "{line}");
            clipped_total += c;
        } else {
            // Public-bounds scaling keeps a non-private fit accurate on the original scale.
            assert_eq!(r["private"], false, "{line}");
            assert!(r["test_accuracy"].as_f64().unwrap() > 0.9, "{line}");
        }
    }
    // Row 4 (weight 500) is in the training half of some random split.
    assert!(clipped_total >= 1.0);
}

#[test]
fn naive_bayes_refuses_real_valued_features() {
    let dir = tempfile::tempdir().unwrap();
    let def = format!(
        "source = \"libsvm\"\ndimension = 2\ntrain = \"r.libsvm\"\ntrain_fraction = 0.5\n\
         bounds = [0, 10]\npublic_n = 2\n{TWO_CLASSES}"
    );
    // The field named is the key that needs binary features: the learner, the probe, or the
    // selection of a learner that takes real features.
    for (pipeline, field) in [
        ("learner = \"private_nb\"", "learner"),
        ("probe = \"mi_sorted\"", "probe"),
        (
            "learner = \"lr_output\"\nlambda = 1\nselection = \"mask\"\nfeatures = 1\nbudget = { selection = 0.5, train = 0.5 }",
            "selection",
        ),
    ] {
        let spec = spec_with(
            dir.path(),
            &[("r.libsvm", "1 1:0.5\n2 2:3\n1 1:2\n2 2:1\n")],
            &def,
            &format!("[[pipeline]]\nname = \"pnb\"\n{pipeline}\n"),
        );
        let out = tempfile::tempdir().unwrap();
        let opts = common::run_options(out.path(), 1);
        let err = run(&spec, &opts).unwrap_err();
        assert!(matches!(err, Error::Spec { .. }), "{err}");
        let needle = format!(
            "field `pipeline[0].{field}`: pipeline `pnb` needs binary features; \
             dataset `mine` is real-valued"
        );
        assert!(err.to_string().contains(&needle), "{err}");
    }
}

/// T above the dataset's D names where T is set: the pipeline's `features`, or the grid's
/// value.
#[test]
fn a_feature_count_above_the_dimension_names_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let def = format!(
        "source = \"libsvm\"\ndimension = 2\ntrain = \"b.libsvm\"\ntrain_fraction = 0.5\n\
         public_n = 2\n{TWO_CLASSES}"
    );
    let files = [("b.libsvm", "1 1:1\n2 2:1\n1 1:1\n2 2:1\n")];
    for (grid, pipeline, field) in [
        ("", "features = 3", "pipeline[0].features"),
        ("features = [1, 3]", "", "grid.features[1]"),
    ] {
        let pipelines = format!(
            "{grid}\n[[pipeline]]\nname = \"sel\"\nlearner = \"private_nb\"\n\
             selection = \"mask\"\nbudget = {{ selection = 0.5, train = 0.5 }}\n{pipeline}\n"
        );
        let spec = spec_with(dir.path(), &files, &def, &pipelines);
        let out = tempfile::tempdir().unwrap();
        let err = run(&spec, &common::run_options(out.path(), 1)).unwrap_err();
        let needle = format!("field `{field}`: T = 3 exceeds dataset `mine`'s 2 features");
        assert!(err.to_string().contains(&needle), "{err}");
    }
}
