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

/// A temporary folder with `experiments/` (created) and `results/` inside.
fn folders() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let exp = tmp.path().join("experiments");
    std::fs::create_dir_all(&exp).unwrap();
    let out = tmp.path().join("results");
    (tmp, exp, out)
}

#[test]
fn report_all_writes_verdicts_and_booktabs() {
    let (tmp, exp, out) = folders();
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
    // The commit the binary was built from, as well as the checkout's at the time of writing.
    let binary = epsilab::provenance::BUILD_COMMIT;
    assert!(!binary.is_empty() && prov.contains(&format!("\"binary_commit\": \"{binary}\"")));

    let notes = "Why it differs: a hand-written note.";
    std::fs::write(s.results_dir.join("NOTES.md"), notes).unwrap();
    epsilab::report::reproduction::write_all(&exp, &out).unwrap();
    let md = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    let verdicts = md.find("deliberately wrong").unwrap();
    assert!(md.find(notes).is_some_and(|at| at > verdicts), "{md}");
    assert_eq!(md.matches(notes).count(), 1, "NOTES.md printed once: {md}");
    // A second spec of the same name would share the results folder and print its section,
    // NOTES.md included, twice: refused, naming both files.
    std::fs::write(exp.join("rep_copy.toml"), SPEC).unwrap();
    let err = epsilab::report::reproduction::write_all(&exp, &out)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("rep_copy.toml")
            && err.contains("experiment.name")
            && err.contains("rep.toml"),
        "{err}"
    );
    std::fs::remove_file(exp.join("rep_copy.toml")).unwrap();
    assert!(md.contains("## Report test"), "{md}");
    assert!(md.contains("rep/figure.png"));
    assert!(md.contains("NB (non-private)"));
    assert!(md.contains("**differs**") && md.contains("deliberately wrong"));
    assert!(md.contains("NB above private NB — **holds"));
    // The differing cell has no ablation: the summary says it is untested, not just unexplained.
    assert!(md.contains("| 0 / 0 / 0 / 1 (1 untested) |"), "{md}");
    assert!(
        md.contains("(12 trials;") && !md.contains("incomplete"),
        "{md}"
    );
    // A run stopped part-way is reported as incomplete, with the trials stored so far.
    let trials = s.results_dir.join("trials.jsonl");
    let text = std::fs::read_to_string(&trials).unwrap();
    let kept: String = text.lines().take(5).map(|l| format!("{l}\n")).collect();
    std::fs::write(&trials, kept).unwrap();
    epsilab::report::reproduction::write_all(&exp, &out).unwrap();
    let partial = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    assert!(
        partial.contains("5 of 12 planned trials, **incomplete**"),
        "{partial}"
    );
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

/// The base experiment: `SPEC`'s dataset, a private NB on all features and a count mask, and
/// two published values that both differ.
fn base_spec() -> String {
    let dataset = &SPEC[SPEC.find("[dataset.dense]").unwrap()..SPEC.find("[grid]").unwrap()];
    format!(
        "[experiment]\nname = \"base\"\ntitle = \"Base\"\ntrials = 4\nseed = 5\n\
         datasets = [\"dense\"]\n\n{dataset}[grid]\nepsilon = [0.1]\nfeatures = [2, 5]\n\n\
         [[pipeline]]\nname = \"all\"\nlearner = \"private_nb\"\n\n{}\n\
         [report]\nx = \"features\"\n\n[[paper.cell]]\ndataset = \"dense\"\n\
         pipeline = \"mask\"\nx = 5\nvalue = 0.93\ntolerance = 0.03\n\n[[paper.claim]]\n\
         text = \"mask beats all by 60 points\"\ndataset = \"dense\"\nabove = \"mask\"\n\
         below = \"all\"\nmargin = 0.6\n",
        mask_pipeline("mask", "")
    )
}

/// A count-mask pipeline table, with extra lines (`variant = ...`).
fn mask_pipeline(name: &str, extra: &str) -> String {
    format!(
        "[[pipeline]]\nname = \"{name}\"\nlearner = \"private_nb\"\nselection = \"mask\"\n\
         score = \"count\"\n{extra}budget = {{ selection = 0.5, train = 0.5 }}\n"
    )
}

/// The ablation of `base_spec`: the same runs plus the mask's `delta_q` variant and the
/// non-private NB as hypotheses.
fn ablation_spec() -> String {
    let base = base_spec().replace(
        "name = \"base\"\ntitle = \"Base\"",
        "name = \"abl\"\ntitle = \"Ablation of Base\"",
    );
    format!(
        "{base}\n{}\n[[pipeline]]\nname = \"exact NB\"\nlearner = \"nb\"\n\n[ablation]\n\
         of = \"base\"\nmeaning = \"Only a non-private model reaches it.\"\n\n\
         [[ablation.hypothesis]]\nid = \"H1\"\ngrade = \"variant\"\ntext = \"Delta = Delta_q\"\n\
         pipeline = \"mask dq\"\nreplaces = \"mask\"\n\n[[ablation.hypothesis]]\nid = \"H2\"\n\
         grade = \"variant\"\ntext = \"no noise at all\"\npipeline = \"exact NB\"\n\
         replaces = \"mask\"\n",
        mask_pipeline("mask dq", "variant = \"delta_q\"\n")
    )
}

/// A weakening variant is labelled not ε-DP with its factor in the ledger, the tables, the
/// figure legend and REPORT.md; the ablation spec's hypotheses are re-evaluated on the base
/// experiment's differing verdicts, and the summary counts explained and unexplained ones.
#[test]
fn ablations_label_weakening_variants_and_explain_differing_verdicts() {
    let (_tmp, exp, out) = folders();
    for (name, text) in [("base.toml", base_spec()), ("abl.toml", ablation_spec())] {
        std::fs::write(exp.join(name), text).unwrap();
        let spec = Spec::load(&exp.join(name)).unwrap();
        let s = run(&spec, &common::run_options(&out, 1)).unwrap();
        epsilab::report::write(&spec, &s.results_dir).unwrap();
    }
    let label = "NOT ε-DP: real ε = T × claimed";
    // The ledger: the real spend T eps_select beside the claim.
    let records = epsilab::store::read_dir_records(&out.join("abl")).unwrap();
    let r = records
        .iter()
        .find(|r| r.pipeline == "mask dq" && r.params["features"] == 5)
        .unwrap();
    let e = r
        .ledger
        .entries
        .iter()
        .find(|e| e.claimed.is_some())
        .unwrap();
    assert!((e.claimed.unwrap() - 0.05).abs() < 1e-12);
    assert!((e.epsilon.unwrap() - 0.25).abs() < 1e-12, "{e:?}");
    assert!(!r.private, "the real spend exceeds the budget");
    let faithful = records.iter().find(|r| r.pipeline == "mask").unwrap();
    assert!(faithful.private && faithful.ledger.excess() == 1.0);
    // Tables and the figure legend.
    let table = std::fs::read_to_string(out.join("abl/table.md")).unwrap();
    assert!(
        table.contains(&format!("mask dq (ε = 0.1) [{label}] (non-private)")),
        "{table}"
    );
    let svg = std::fs::read_to_string(out.join("abl/figure.svg")).unwrap();
    assert!(svg.contains("NOT ε-DP"), "legend without the label");
    // REPORT.md: the base experiment's Ablation sub-section and the summary counts.
    epsilab::report::reproduction::write_all(&exp, &out).unwrap();
    let md = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    assert!(
        md.contains("differences explained (faithful ε-DP / variant / post hoc) / unexplained"),
        "{md}"
    );
    assert!(md.contains("### Ablation: Ablation of Base"), "{md}");
    assert!(md.contains(&format!("**[{label}]**")), "{md}");
    assert!(md.contains("**What it means:** Only a non-private model reaches it."));
    assert!(
        md.contains("| [Ablation of Base](#abl) | ablation of [Base](#base) | 2 hypotheses | — |")
    );
    let base = Spec::load(&exp.join("base.toml")).unwrap();
    let abl = Spec::load(&exp.join("abl.toml")).unwrap();
    let base_records = epsilab::store::read_dir_records(&out.join("base")).unwrap();
    let v = epsilab::report::verdict::evaluate(&base, &base_records);
    assert_eq!(v.tally().0, 0, "both base verdicts differ");
    let a = epsilab::report::ablation::evaluate(&abl, &records, None).unwrap();
    assert_eq!(a.rows.len(), 2);
    // The non-private NB on all 20 features (92.9%) reproduces the 93% cell; nothing gains 60
    // points.
    assert_eq!(a.rows[0].explained_by(&a.def.hypothesis), ["H2"], "{md}");
    assert!(a.rows[1].explained_by(&a.def.hypothesis).is_empty());
    assert!(md.contains("none (ruled out: H1, H2)"), "{md}");
    // The one explanation is by a non-private series: graded a variant, not a faithful reading.
    assert!(
        md.contains(
            "| [Base](#base) | 2 differ (1 contradicted) | published 0 / 2 | 0 / 1 / 0 / 1 |"
        ),
        "{md}"
    );
    assert!(md.contains("**H2** (variant)"), "{md}");
    assert!(
        md.contains("1 explained by a non-private or non-faithful variant"),
        "{md}"
    );
    // Neither series may be graded a faithful ε-DP reading: one is not ε-DP as claimed, the
    // other a non-private model in place of a private one.
    for (id, grade) in [("H1", "variant"), ("H2", "variant")] {
        let text = ablation_spec().replacen(
            &format!("id = \"{id}\"\ngrade = \"{grade}\""),
            &format!("id = \"{id}\"\ngrade = \"faithful\""),
            1,
        );
        let err = Spec::parse(&text, std::path::Path::new("abl.toml")).unwrap_err();
        assert!(err.to_string().contains("grade"), "{err}");
    }
}

/// An ablation that reuses the explained experiment's trials plans only its own series: it is
/// complete when those are, and incomplete when they are cut, whatever it reads besides.
#[test]
fn a_reusing_ablation_is_complete_by_its_own_series() {
    let (tmp, exp, out) = folders();
    std::fs::write(exp.join("rep.toml"), SPEC).unwrap();
    let abl = r#"
[experiment]
name = "abl"
title = "Ablation test"
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
name = "private NB again"
learner = "private_nb"

[report]
x = "epsilon"

[[paper.cell]]
dataset = "dense"
pipeline = "NB"
value = 0.0
tolerance = 0.01

[ablation]
of = "rep"
reuse = true
meaning = "m"

[[ablation.hypothesis]]
id = "H1"
grade = "faithful"
text = "t"
pipeline = "private NB again"
replaces = "NB"

[[ablation.hypothesis]]
id = "H2"
grade = "faithful"
text = "t"
replaces = "NB"
metric = "train_accuracy"
"#;
    std::fs::write(exp.join("abl.toml"), abl).unwrap();
    let opts = RunOptions {
        data_dir: DataDir(tmp.path().into()),
        ..common::run_options(&out, 1)
    };
    let mut dirs = Vec::new();
    for f in ["rep.toml", "abl.toml"] {
        let spec = Spec::load(&exp.join(f)).unwrap();
        dirs.push(run(&spec, &opts).unwrap().results_dir);
    }
    epsilab::report::reproduction::write_all(&exp, &out).unwrap();
    let md = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    let section = &md[md.find("## Ablation test").unwrap()..];
    // Its 8 own trials and the 12 reused ones are read; 8 are planned.
    assert!(section.contains("(20 trials;"), "{section}");
    assert!(!md.contains("incomplete"), "{md}");
    // The ablation tests the explained experiment's differing cell: unexplained, not untested.
    assert!(
        md.contains("| 0 / 0 / 0 / 1 |") && !md.contains("untested"),
        "{md}"
    );
    let trials = dirs[1].join("trials.jsonl");
    let text = std::fs::read_to_string(&trials).unwrap();
    let kept: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
    std::fs::write(&trials, kept).unwrap();
    epsilab::report::reproduction::write_all(&exp, &out).unwrap();
    let md = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    let section = &md[md.find("## Ablation test").unwrap()..];
    assert!(
        section.contains("3 of 8 planned trials, **incomplete**"),
        "{section}"
    );
}
