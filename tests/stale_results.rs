//! Stale results are never shown or reused: `report` refuses and `status` flags stored results
//! that `run` refuses (another spec, other data, another external program), a spec that only
//! gained cells is reported as incomplete, and an unfinished forced run is told of, not hidden.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

/// A small spec on a user file (`mine.libsvm` beside it): 2 trials × 2 ε × 2 pipelines.
fn spec_text() -> String {
    common::user_spec(2, "[0.1, 1]")
}

/// `epsilab ARGS...` in the crate root.
fn epsilab(args: &[&str]) -> Output {
    common::bin().args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `run`, `report` or `status` of the spec at `spec` into `out`.
fn cmd(what: &str, spec: &Path, out: &Path, extra: &[&str]) -> Output {
    let (spec, out) = (spec.to_str().unwrap(), out.to_str().unwrap());
    let mut args = vec![what, spec, "--out", out];
    if what == "run" {
        args.extend(["--no-report", "-j", "1"]);
    }
    args.extend(extra);
    epsilab(&args)
}

/// A folder with the dataset and the spec run once: (folder, spec path, results root).
fn stored() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    common::user_dataset(d.path(), false);
    let spec = common::write_spec(d.path(), "s.toml", &spec_text());
    let out = d.path().join("out");
    let o = cmd("run", &spec, &out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    (d, spec, out)
}

/// The reviewer's cases: each change `run` refuses is refused by `report` too (non-zero,
/// naming the fix), and `status` says the results are stale instead of "complete".
#[test]
fn report_and_status_refuse_what_run_refuses() {
    let (d, spec, out) = stored();
    let table = out.join("mine").join("table.md");
    let o = cmd("report", &spec, &out, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let before = std::fs::read(&table).unwrap();
    let cases = [
        ("the seed", "seed = 1", "seed = 2", "--force"),
        (
            "a pipeline parameter",
            "learner = \"nb\"",
            "learner = \"nb\"\nalpha = 2",
            "--rerun 'nb'",
        ),
        ("fewer trials", "trials = 2", "trials = 1", "--force"),
        (
            "a dropped ε",
            "epsilon = [0.1, 1]",
            "epsilon = [1]",
            "--force",
        ),
    ];
    for (what, from, to, fix) in cases {
        let changed = spec_text().replacen(from, to, 1);
        assert_ne!(changed, spec_text(), "{what}");
        common::write_spec(d.path(), "s.toml", &changed);
        let run = cmd("run", &spec, &out, &[]);
        assert!(!run.status.success(), "{what}: run accepted it");
        let report = cmd("report", &spec, &out, &[]);
        let msg = text(&report);
        assert!(
            !report.status.success(),
            "{what}: report accepted it: {msg}"
        );
        assert!(
            msg.contains(fix) && msg.contains("Not reported"),
            "{what}: {msg}"
        );
        assert_eq!(
            std::fs::read(&table).unwrap(),
            before,
            "{what}: table rewritten"
        );
        let status = cmd("status", &spec, &out, &[]);
        let msg = text(&status);
        assert!(status.status.success(), "{what}: {msg}");
        assert!(!msg.contains("complete"), "{what}: {msg}");
        assert!(
            msg.contains("stale") && msg.contains("--force"),
            "{what}: {msg}"
        );
    }
    // The data file changed under the same spec.
    common::write_spec(d.path(), "s.toml", &spec_text());
    common::user_dataset(d.path(), true);
    let report = cmd("report", &spec, &out, &[]);
    let msg = text(&report);
    assert!(!report.status.success(), "{msg}");
    assert!(
        msg.contains("mine.libsvm") && msg.contains("--force"),
        "{msg}"
    );
    let msg = text(&cmd("status", &spec, &out, &[]));
    assert!(
        msg.contains("stale") && msg.contains("mine.libsvm"),
        "{msg}"
    );
    assert!(!msg.contains("complete"), "{msg}");
    // Back to the data it was run on: consistent again.
    common::user_dataset(d.path(), false);
    assert!(cmd("report", &spec, &out, &[]).status.success());
    let msg = text(&cmd("status", &spec, &out, &[]));
    assert!(msg.contains("6 / 6 trials done (complete)"), "{msg}");
}

/// A spec that only gained trials, grid values or a pipeline (which `run` resumes) is reported
/// as incomplete, not refused.
#[test]
fn a_spec_that_only_gained_cells_is_reported_as_incomplete() {
    let (d, spec, out) = stored();
    let gained = spec_text()
        .replace("trials = 2", "trials = 3")
        .replace("epsilon = [0.1, 1]", "epsilon = [0.1, 1, 10]")
        .replace(
            "[report]",
            "[[pipeline]]\nname = \"more\"\nlearner = \"private_nb\"\n[report]",
        );
    common::write_spec(d.path(), "s.toml", &gained);
    let report = cmd("report", &spec, &out, &[]);
    let msg = text(&report);
    assert!(report.status.success(), "{msg}");
    assert!(
        msg.contains("6 of 21 planned trials") && msg.contains("incomplete"),
        "{msg}"
    );
    let msg = text(&cmd("status", &spec, &out, &[]));
    assert!(msg.contains("6 / 21 trials done (incomplete)"), "{msg}");
    assert!(!msg.contains("stale"), "{msg}");
    // And run agrees: it resumes them.
    let run = cmd("run", &spec, &out, &[]);
    assert!(text(&run).contains("6 already stored"), "{}", text(&run));
}

/// `report --all` writes nothing when one experiment's results are stale, and names it.
#[test]
fn report_all_refuses_a_stale_experiment() {
    let (d, spec, out) = stored();
    let experiments = d.path().join("experiments");
    std::fs::create_dir(&experiments).unwrap();
    common::user_dataset(&experiments, false);
    std::fs::rename(&spec, experiments.join("s.toml")).unwrap();
    let all = |extra: &[&str]| {
        let mut args = vec![
            "report",
            "--all",
            "--out",
            out.to_str().unwrap(),
            "--experiments",
            experiments.to_str().unwrap(),
        ];
        args.extend(extra);
        epsilab(&args)
    };
    let o = all(&[]);
    assert!(o.status.success(), "{}", text(&o));
    let check = all(&["--check"]);
    assert!(check.status.success(), "{}", text(&check));
    let report_md = std::fs::read(out.join("REPORT.md")).unwrap();
    common::write_spec(
        &experiments,
        "s.toml",
        &spec_text().replace("seed = 1", "seed = 2"),
    );
    let o = all(&[]);
    let msg = text(&o);
    assert!(!o.status.success(), "{msg}");
    assert!(msg.contains("mine") && msg.contains("--force"), "{msg}");
    assert_eq!(std::fs::read(out.join("REPORT.md")).unwrap(), report_md);
    // The verdict gate fails on it too.
    let check = all(&["--check"]);
    let msg = text(&check);
    assert!(!check.status.success(), "{msg}");
    assert!(msg.contains("not of") && msg.contains("--force"), "{msg}");
}

/// An external release whose program is the file `rel.sh` beside the spec (`command` as given).
fn external_spec(command: &str, trials: u32) -> String {
    format!(
        "[experiment]\nname = \"ext\"\ntrials = {trials}\nseed = 5\nneighbours = \"replace_one\"\ndatasets = [\"ages\"]\n\
         [dataset.ages]\nsource = \"csv_column\"\nfile = \"ages.csv\"\ncolumn = 1\n\
         [[pipeline]]\nname = \"mine\"\nrelease = \"external\"\ncommand = {command}\n\
         [[pipeline]]\nname = \"laplace\"\nrelease = \"laplace\"\nquery = \"mean\"\nbounds = [0.0, 10.0]\n\
         [grid]\nepsilon = [1.0]\n[report]\nx = \"epsilon\"\nmetrics = [\"release\"]\n"
    )
}

/// A POSIX sh release that reads its request and releases `value`.
fn release_program(dir: &Path, value: f64) {
    let p = dir.join("rel.sh");
    std::fs::write(
        &p,
        format!("#!/bin/sh\ncat > /dev/null\necho '{{\"release\": {value}}}'\n"),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// An edited external program is a changed input: `run` refuses to reuse (or add to) the old
/// program's trials, `report` and `status` say so, and `--rerun` recomputes that pipeline.
#[test]
#[cfg(unix)]
fn an_edited_external_program_is_not_reused() {
    for command in [r#"["./rel.sh"]"#, r#"["sh", "./rel.sh"]"#] {
        let d = tempfile::tempdir().unwrap();
        let ages: String = (0..40).map(|i| format!("{},x\n", i % 10)).collect();
        std::fs::write(d.path().join("ages.csv"), ages).unwrap();
        release_program(d.path(), 1.5);
        let spec = common::write_spec(d.path(), "ext.toml", &external_spec(command, 2));
        let out = d.path().join("out");
        let o = cmd("run", &spec, &out, &[]);
        assert!(o.status.success(), "{command}: {}", text(&o));
        release_program(d.path(), 2.5);
        let o = cmd("run", &spec, &out, &[]);
        let msg = text(&o);
        assert!(!o.status.success(), "{command}: reused: {msg}");
        assert!(
            msg.contains("rel.sh") && msg.contains("--rerun 'mine'"),
            "{msg}"
        );
        let manifest = std::fs::read_to_string(out.join("ext/manifest.json")).unwrap();
        assert!(manifest.contains("\"./rel.sh\""), "{manifest}");
        // Raising the trials does not mix the two programs' outputs either.
        common::write_spec(d.path(), "ext.toml", &external_spec(command, 3));
        let o = cmd("run", &spec, &out, &[]);
        assert!(!o.status.success(), "{command}: mixed: {}", text(&o));
        let report = cmd("report", &spec, &out, &[]);
        assert!(!report.status.success(), "{}", text(&report));
        let msg = text(&cmd("status", &spec, &out, &[]));
        assert!(msg.contains("stale") && msg.contains("rel.sh"), "{msg}");
        // Recomputing the pipeline records the new program; its outputs are all the new one's.
        let o = cmd("run", &spec, &out, &["--rerun", "mine"]);
        assert!(o.status.success(), "{command}: {}", text(&o));
        let records = epsilab::store::read_dir_records(&out.join("ext")).unwrap();
        let mine: Vec<_> = records.iter().filter(|r| r.pipeline == "mine").collect();
        assert_eq!(mine.len(), 3);
        assert!(mine.iter().all(|r| r.metrics["release"] == 2.5), "{mine:?}");
        let o = cmd("run", &spec, &out, &[]);
        assert!(text(&o).contains("6 already stored"), "{}", text(&o));
    }
}

/// An interrupted `run --force` (its staging files left beside the old results) is told of by
/// `status` and by a plain `run`, which leaves it in place; `run --force` then resumes it.
#[test]
fn an_unfinished_forced_run_is_told_of_and_kept() {
    let (_d, spec, out) = stored();
    let dir = out.join("mine");
    // What a forced run of the same spec leaves when killed after its first trial.
    let trials = std::fs::read_to_string(dir.join("trials.jsonl")).unwrap();
    let first = format!("{}\n", trials.lines().next().unwrap());
    let staging = dir.join("trials.jsonl.staging");
    std::fs::write(&staging, &first).unwrap();
    std::fs::copy(dir.join("manifest.json"), dir.join("manifest.json.staging")).unwrap();
    let msg = text(&cmd("status", &spec, &out, &[]));
    assert!(
        msg.contains("a forced recomputation is unfinished"),
        "{msg}"
    );
    assert!(msg.contains("1 trials in trials.jsonl.staging"), "{msg}");
    assert!(msg.contains("--force` resumes it"), "{msg}");
    assert!(!msg.contains("(complete)"), "{msg}");
    let o = cmd("run", &spec, &out, &[]);
    let msg = text(&o);
    assert!(o.status.success(), "{msg}");
    assert!(msg.contains("unfinished forced recomputation"), "{msg}");
    assert_eq!(std::fs::read_to_string(&staging).unwrap(), first);
    assert!(dir.join("manifest.json.staging").exists());
    let o = cmd("run", &spec, &out, &["--force"]);
    let msg = text(&o);
    assert!(
        o.status.success() && msg.contains("1 already stored"),
        "{msg}"
    );
    assert!(!staging.exists());
    let msg = text(&cmd("status", &spec, &out, &[]));
    assert!(msg.contains("6 / 6 trials done (complete) in"), "{msg}");
}
