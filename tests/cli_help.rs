//! What the command line says is complete: every flag of every subcommand has help text,
//! `epsilab list` names every built-in dataset and every source a spec may use, and a report
//! or histogram metric no trial records is named instead of drawing an empty table in silence.

mod common;

use clap::CommandFactory;
use epsilab::cli::Cli;

/// Each argument of `cmd` and its subcommands (clap's own `--help`/`--version` aside) that has
/// no help text, as "subcommand path: argument".
fn undocumented(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if id == "help" || id == "version" {
            continue;
        }
        if arg.get_help().is_none() && arg.get_long_help().is_none() {
            out.push(format!("{path}: {id}"));
        }
    }
    for sub in cmd.get_subcommands() {
        undocumented(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

#[test]
fn every_flag_and_argument_has_help() {
    let mut missing = Vec::new();
    undocumented(&Cli::command(), "epsilab", &mut missing);
    assert!(missing.is_empty(), "no help text: {missing:?}");
}

#[test]
fn list_names_every_catalog_dataset_and_every_source() {
    let o = common::bin().arg("list").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let datasets = text.split("\nLearners:").next().unwrap();
    let names = |line: &str| -> Vec<String> {
        line.split(':')
            .nth(1)
            .unwrap_or("")
            .split(',')
            .map(|s| s.split_whitespace().next().unwrap_or("").to_string())
            .collect()
    };
    let mut listed: Vec<String> = datasets
        .lines()
        .skip(1)
        .filter(|l| !l.contains("sources"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    for l in datasets.lines().filter(|l| l.contains("sources")) {
        listed.extend(names(l));
    }
    let catalog = epsilab::data::Catalog::builtin();
    let sources = [
        "libsvm",
        "csv",
        "toy_gaussian",
        "logistic_ball",
        "nb_sampled",
        "nb_proxy",
        "gaussian_mixture",
        "uniform",
        "beta",
        "contaminated",
        "student_t",
        "table_i",
        "csv_column",
        "none",
    ];
    for name in catalog.names().chain(sources) {
        assert!(
            listed.iter().any(|l| l == name),
            "`epsilab list` does not name {name}:\n{datasets}"
        );
    }
}

#[test]
fn a_report_metric_no_trial_records_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::SYNTHETIC_SPEC
        .replace("trials = 6", "trials = 1")
        .replace("log_x = true", "log_x = true\nmetrics = [\"test_acuracy\"]");
    let spec = common::write_spec(dir.path(), "s.toml", &text);
    // `run` writes the report after its trials, as `report` does.
    let run = |metric: &str| {
        std::fs::write(&spec, text.replace("test_acuracy", metric)).unwrap();
        let o = common::bin()
            .arg("run")
            .arg(&spec)
            .arg("--out")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    let err = run("test_acuracy");
    assert!(
        err.contains("field `report.metrics`: no trial records `test_acuracy`"),
        "{err}"
    );
    assert!(!run("test_accuracy").contains("warning"));
    // A histogram of a metric no trial records is named the same way (its figure is empty).
    let err = run("test_accuracy\"]\nhistograms = [\"test_acuracy");
    assert!(
        err.contains(
            "field `report.histograms`: no trial records `test_acuracy`, so its histogram is empty"
        ),
        "{err}"
    );
    assert!(!run("test_accuracy\"]\nhistograms = [\"test_accuracy").contains("warning"));
}
