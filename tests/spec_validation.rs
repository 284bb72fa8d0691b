//! Bad specs are refused with the file, the field and the reason.

mod common;

use epsilab::spec::Spec;
use std::path::Path;

const GOOD: &str = r#"
[experiment]
name = "ok"
trials = 2
seed = 1
datasets = ["xwindows"]
[grid]
epsilon = [0.1, 1]
[[pipeline]]
name = "p"
learner = "private_nb"
[report]
x = "epsilon"
"#;

fn err(text: &str) -> String {
    Spec::parse(text, Path::new("specs/bad.toml"))
        .unwrap_err()
        .to_string()
}

#[test]
fn the_reference_spec_is_valid() {
    let spec = Spec::parse(GOOD, Path::new("ok.toml")).unwrap();
    assert_eq!(spec.experiment.trials, 2);
}

#[test]
fn invalid_specs_name_file_field_and_reason() {
    let cases: Vec<(String, &str, &str)> = vec![
        (
            GOOD.replace("[0.1, 1]", "[0.1, 0]"),
            "grid.epsilon[1]",
            "> 0",
        ),
        (GOOD.replace("[0.1, 1]", "[-0.5]"), "grid.epsilon[0]", "> 0"),
        (
            GOOD.replace("[0.1, 1]", "[nan]"),
            "grid.epsilon[0]",
            "finite",
        ),
        (
            GOOD.replace("[0.1, 1]", "[inf]"),
            "grid.epsilon[0]",
            "finite",
        ),
        (
            GOOD.replace("\"private_nb\"", "\"svm\""),
            "pipeline[0].learner",
            "unknown learner `svm`",
        ),
        (
            GOOD.replace("\"xwindows\"", "\"xwindow\""),
            "experiment.datasets[0]",
            "unknown dataset",
        ),
        (
            GOOD.replace("trials = 2", "trials = 0"),
            "experiment.trials",
            "at least 1",
        ),
        (
            GOOD.replace("trials = 2", "trials = \"many\""),
            "line",
            "expected u32",
        ),
        (
            GOOD.replace("seed = 1", "seed = 1\ncolour = \"red\""),
            "line",
            "unknown field `colour`",
        ),
        (
            GOOD.replace("name = \"ok\"", "name = \"../up\""),
            "experiment.name",
            "letters",
        ),
        (
            GOOD.replace(
                "learner = \"private_nb\"",
                "learner = \"private_nb\"\nbudget = { train = 0.7, selection = 0.2 }",
            ),
            "pipeline[0].budget",
            "sum to 1",
        ),
        (
            GOOD.replace(
                "learner = \"private_nb\"",
                "learner = \"private_nb\"\nthreshold = \"q30\"",
            ),
            "pipeline[0].threshold",
            "quantile",
        ),
        (
            GOOD.replace(
                "learner = \"private_nb\"",
                "learner = \"nb\"\nthreshold = 3",
            ),
            "pipeline[0].threshold",
            "does not apply",
        ),
        (
            GOOD.replace("[grid]\nepsilon = [0.1, 1]", ""),
            "grid.epsilon",
            "needs an epsilon axis",
        ),
        (
            GOOD.replace("x = \"epsilon\"", "x = \"lambda\""),
            "report.x",
            "not a grid axis",
        ),
        (
            GOOD.replace("name = \"p\"", "name = \"\""),
            "pipeline[0].name",
            "empty",
        ),
        (
            format!("{GOOD}\n[[pipeline]]\nname = \"p\"\nlearner = \"nb\"\n"),
            "pipeline[1].name",
            "earlier pipeline",
        ),
        (
            "[experiment]\nname = \"x\"".to_string(),
            "line",
            "missing field",
        ),
    ];
    for (text, field, reason) in cases {
        let e = err(&text);
        assert!(e.starts_with("specs/bad.toml: field `"), "{e}");
        assert!(e.contains(field), "`{e}` should name {field}");
        assert!(e.contains(reason), "`{e}` should say {reason}");
    }
}

#[test]
fn missing_spec_file_is_an_io_error_naming_it() {
    let e = Spec::load(Path::new("no/such/spec.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("no/such/spec.toml:"), "{e}");
}

#[test]
fn every_shipped_spec_is_valid() {
    let mut n = 0;
    for entry in std::fs::read_dir("experiments").unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            Spec::load(&p).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 3);
}
