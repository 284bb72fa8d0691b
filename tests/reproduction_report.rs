//! `report --all`: REPORT.md with published values, verdicts and non-private labels; table.tex.

mod common;

use epsilab::data::DataDir;
use epsilab::runner::{RunOptions, run};
use epsilab::spec::Spec;

const SPEC: &str = r#"
[experiment]
name = "rep"
title = "Report test"
trials = 4
seed = 3
datasets = ["dense"]

[dataset.dense]
source = "nb_sampled"
dimension = 20
theta = [0.8, 0.5]
train = 1000
test = 1000
seed = 1

[grid]
epsilon = [0.1, 10]

[[pipeline]]
name = "private NB"
learner = "private_nb"

[[pipeline]]
name = "NB"
learner = "nb"

[report]
x = "epsilon"

[[paper.cell]]
dataset = "dense"
pipeline = "NB"
value = 0.0
tolerance = 0.01
note = "deliberately wrong"

[[paper.claim]]
text = "NB above private NB"
dataset = "dense"
above = "NB"
below = "private NB"
"#;

#[test]
fn report_all_writes_verdicts_and_booktabs() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = tmp.path().join("experiments");
    let out = tmp.path().join("results");
    std::fs::create_dir_all(&exp).unwrap();
    std::fs::write(exp.join("rep.toml"), SPEC).unwrap();
    let spec = Spec::load(&exp.join("rep.toml")).unwrap();
    let opts = RunOptions {
        data_dir: DataDir(tmp.path().into()),
        ..common::run_options(&out, 1)
    };
    let s = run(&spec, &opts).unwrap();
    epsilab::report::write(&spec, &s.results_dir).unwrap();
    let prov = std::fs::read_to_string(s.results_dir.join("provenance.json")).unwrap();
    assert!(prov.contains("\"spec_hash\"") && prov.contains("\"crate_versions\""));

    let notes = "Why it differs: a hand-written note.";
    std::fs::write(s.results_dir.join("NOTES.md"), notes).unwrap();
    epsilab::report::reproduction::write_all(&exp, &out).unwrap();
    let md = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    let verdicts = md.find("deliberately wrong").unwrap();
    assert!(md.find(notes).is_some_and(|at| at > verdicts), "{md}");
    assert!(md.contains("## Report test"), "{md}");
    assert!(md.contains("rep/figure.png"));
    assert!(md.contains("NB (non-private)"));
    assert!(md.contains("**differs**") && md.contains("deliberately wrong"));
    assert!(md.contains("NB above private NB — **holds"));
    let tex = std::fs::read_to_string(out.join("rep/table.tex")).unwrap();
    for k in [
        "\\toprule",
        "\\midrule",
        "\\bottomrule",
        "non-private",
        "$\\varepsilon$",
        "S[table-format=",
    ] {
        assert!(tex.contains(k), "`{k}` missing:\n{tex}");
    }
}
