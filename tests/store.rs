//! Nothing lost, nothing stale: a forced run that fails keeps the previous results, stored
//! results of changed data are refused, and a spec that only gains trials or grid values reuses
//! what is stored.

mod common;

use epsilab::runner::{RunOptions, run};
use epsilab::spec::Spec;
use epsilab::store::{TRIALS_FILE, TrialRecord, read_records};
use std::collections::BTreeMap;
use std::path::Path;

fn opts(out: &Path, force: bool) -> RunOptions {
    RunOptions {
        force,
        ..common::run_options(out, 2)
    }
}

/// The spec `text`, written to `dir/name` and loaded.
fn spec_in(dir: &Path, name: &str, text: &str) -> Spec {
    Spec::load(&common::write_spec(dir, name, text)).unwrap()
}

fn by_key(path: &Path) -> BTreeMap<String, TrialRecord> {
    common::by_key(read_records(path).unwrap())
}

/// The user-data spec of these tests: 3 trials × 2 ε × 2 pipelines.
fn user_spec() -> String {
    common::user_spec(3, "[1, 10]")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// The reported case: `run f3_6 --force` with no data found used to empty the 400 records.
#[test]
fn a_forced_run_without_its_data_keeps_the_committed_results() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("f3_6_accuracy_vs_epsilon");
    copy_dir(Path::new("results/f3_6_accuracy_vs_epsilon"), &dir);
    let before = std::fs::read(dir.join(TRIALS_FILE)).unwrap();
    let manifest = std::fs::read(dir.join("manifest.json")).unwrap();
    let o = common::bin()
        .args([
            "run",
            "experiments/f3_6_accuracy_vs_epsilon.toml",
            "--force",
        ])
        .arg("--out")
        .arg(out.path())
        .arg("--data-dir")
        .arg(out.path().join("no-data-here"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("file not found"), "{err}");
    assert_eq!(std::fs::read(dir.join(TRIALS_FILE)).unwrap(), before);
    assert_eq!(before.iter().filter(|&&b| b == b'\n').count(), 400);
    assert_eq!(std::fs::read(dir.join("manifest.json")).unwrap(), manifest);
}

/// The first README command reuses the committed results on a fresh clone (no data, no env).
#[test]
fn the_committed_quickstart_results_are_reused_as_they_are() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("quickstart");
    copy_dir(Path::new("results/quickstart"), &dir);
    let before = std::fs::read(dir.join(TRIALS_FILE)).unwrap();
    let o = common::bin()
        .args(["run", "experiments/quickstart.toml", "--no-report", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("300 trials (0 run, 300 already stored)"),
        "{err}"
    );
    assert_eq!(std::fs::read(dir.join(TRIALS_FILE)).unwrap(), before);
    assert!(!dir.join(format!("{TRIALS_FILE}.staging")).exists());
}

#[test]
fn a_changed_dataset_file_is_refused_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    common::user_dataset(d.path(), false);
    let spec = spec_in(d.path(), "s.toml", &user_spec());
    let out = d.path().join("out");
    let first = run(&spec, &opts(&out, false)).unwrap();
    let trials = first.results_dir.join(TRIALS_FILE);
    let stored = std::fs::read(&trials).unwrap();
    // Same spec, labels flipped in the file.
    common::user_dataset(d.path(), true);
    let err = run(&spec, &opts(&out, false)).unwrap_err().to_string();
    assert!(
        err.contains("mine.libsvm") && err.contains("changed") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read(&trials).unwrap(), stored);
    // --force recomputes on the new file.
    let forced = run(&spec, &opts(&out, true)).unwrap();
    assert_eq!((forced.ran, forced.skipped), (first.total, 0));
    assert_ne!(std::fs::read(&trials).unwrap(), stored);
    assert_eq!(run(&spec, &opts(&out, false)).unwrap().ran, 0);
}

#[test]
fn a_forced_run_with_a_bad_line_keeps_the_previous_results() {
    let d = tempfile::tempdir().unwrap();
    let data = common::user_dataset(d.path(), false);
    let spec = spec_in(d.path(), "s.toml", &user_spec());
    let out = d.path().join("out");
    let s = run(&spec, &opts(&out, false)).unwrap();
    let trials = s.results_dir.join(TRIALS_FILE);
    let stored = std::fs::read(&trials).unwrap();
    let mut text = std::fs::read_to_string(&data).unwrap();
    text.push_str("1 0:1\n");
    std::fs::write(&data, text).unwrap();
    let err = run(&spec, &opts(&out, true)).unwrap_err().to_string();
    assert!(err.contains("mine.libsvm:61"), "{err}");
    assert_eq!(std::fs::read(&trials).unwrap(), stored);
}

/// A trial stored twice in one record file (a hand-edited or concatenated file: a run never
/// appends a stored trial again) is refused naming the file and the line, as a malformed line
/// is; it was read as the first copy in silence.
#[test]
fn a_trial_stored_twice_is_refused_naming_the_line() {
    let d = tempfile::tempdir().unwrap();
    common::user_dataset(d.path(), false);
    let spec = spec_in(d.path(), "s.toml", &user_spec());
    let out = d.path().join("out");
    let s = run(&spec, &opts(&out, false)).unwrap();
    let trials = s.results_dir.join(TRIALS_FILE);
    let mut text = std::fs::read_to_string(&trials).unwrap();
    let n = text.lines().count();
    let first = text.lines().next().unwrap().to_string();
    let key = serde_json::from_str::<TrialRecord>(&first).unwrap().key;
    text.push_str(&format!("{first}\n"));
    std::fs::write(&trials, text).unwrap();
    let want = format!(
        "{}:{}: trial `{key}` is stored twice (also on line 1); each trial has one line",
        trials.display(),
        n + 1
    );
    let err = read_records(&trials).unwrap_err().to_string();
    assert_eq!(err, want);
    let err = epsilab::report::write(&spec, &s.results_dir)
        .unwrap_err()
        .to_string();
    assert_eq!(err, want);
    // `run --rerun` reads the lines it keeps the same way.
    let o = opts(&out, false);
    let err = epsilab::runner::prepare_rerun(&spec, &o, &["nb".to_string()])
        .err()
        .unwrap()
        .to_string();
    assert_eq!(err, want);
}

#[test]
fn an_interrupted_forced_run_keeps_the_previous_results_then_resumes() {
    let d = tempfile::tempdir().unwrap();
    let small = common::SYNTHETIC_SPEC.replace("train = 400", "train = 3000");
    let spec_path = common::write_spec(d.path(), "s.toml", &small);
    let out = d.path().join("out");
    run(&Spec::load(&spec_path).unwrap(), &opts(&out, false)).unwrap();
    let trials = out.join("synthetic").join(TRIALS_FILE);
    let stored = std::fs::read(&trials).unwrap();
    // A changed seed needs --force; kill the forced run mid-way.
    let changed = small
        .replace("seed = 7", "seed = 8")
        .replace("trials = 6", "trials = 30");
    let spec_path = common::write_spec(d.path(), "s.toml", &changed);
    let forced = || {
        let mut c = common::bin();
        c.arg("run").arg(&spec_path).arg("--out").arg(&out).args([
            "--no-report",
            "--force",
            "-j",
            "2",
        ]);
        c
    };
    let mut child = forced().spawn().unwrap();
    let staging = out.join("synthetic").join(format!("{TRIALS_FILE}.staging"));
    let start = std::time::Instant::now();
    while std::fs::metadata(&staging).map_or(0, |m| m.len()) < 8_000
        && start.elapsed().as_secs() < 60
    {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(child.try_wait().unwrap().is_none(), "killed mid-run");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        std::fs::read(&trials).unwrap(),
        stored,
        "old results intact"
    );
    let partial = read_records(&staging).unwrap().len();
    assert!(partial > 0);
    // Without --force the old results are still refused for the new spec.
    let spec = Spec::load(&spec_path).unwrap();
    assert!(run(&spec, &opts(&out, false)).is_err());
    // A second --force resumes the staging file, then swaps it in.
    let o = forced().output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&format!("{partial} already stored")), "{err}");
    assert!(!staging.exists());
    let fresh = tempfile::tempdir().unwrap();
    let clean = run(&spec, &opts(fresh.path(), false)).unwrap();
    assert_eq!(
        by_key(&trials),
        by_key(&clean.results_dir.join(TRIALS_FILE))
    );
    let lines = std::fs::read_to_string(&trials).unwrap().lines().count();
    assert_eq!(lines, clean.total);
}

#[test]
fn adding_trials_and_grid_values_runs_only_the_new_cells() {
    let d = tempfile::tempdir().unwrap();
    let spec = spec_in(d.path(), "s.toml", common::SYNTHETIC_SPEC);
    let out = d.path().join("out");
    let first = run(&spec, &opts(&out, false)).unwrap();
    let bigger = common::SYNTHETIC_SPEC
        .replace("trials = 6", "trials = 8")
        .replace("epsilon = [0.1, 1, 10]", "epsilon = [0.1, 0.5, 1, 10]");
    let bigger = spec_in(d.path(), "b.toml", &bigger);
    let second = run(&bigger, &opts(&out, false)).unwrap();
    assert_eq!(second.skipped, first.total);
    assert_eq!(second.ran, second.total - first.total);
    let fresh = tempfile::tempdir().unwrap();
    let clean = run(&bigger, &opts(fresh.path(), false)).unwrap();
    assert_eq!(
        by_key(&second.results_dir.join(TRIALS_FILE)),
        by_key(&clean.results_dir.join(TRIALS_FILE))
    );
}

#[test]
fn changes_that_alter_stored_cells_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let spec = spec_in(d.path(), "s.toml", common::SYNTHETIC_SPEC);
    let out = d.path().join("out");
    run(&spec, &opts(&out, false)).unwrap();
    let cases = [
        (
            "a pipeline parameter",
            "learner = \"nb\"",
            "learner = \"nb\"\nalpha = 2",
        ),
        ("a dataset definition", "seed = 3", "seed = 4"),
        ("a removed grid value", "[0.1, 1, 10]", "[0.1, 1]"),
        ("fewer trials", "trials = 6", "trials = 5"),
    ];
    for (what, from, to) in cases {
        let text = common::SYNTHETIC_SPEC.replacen(from, to, 1);
        assert_ne!(text, common::SYNTHETIC_SPEC, "{what}");
        let changed = spec_in(d.path(), "c.toml", &text);
        let err = run(&changed, &opts(&out, false)).unwrap_err().to_string();
        assert!(err.contains("--force"), "{what}: {err}");
    }
}

/// A trial that computes NaN would be stored as `null` and make the whole results file
/// unreadable, so it is refused and the store stays readable. (An empty test set made one;
/// specs now refuse `test = 0`, so the record is made NaN by hand.)
#[test]
fn a_record_that_cannot_be_read_back_is_not_stored() {
    let d = tempfile::tempdir().unwrap();
    let text = "[experiment]\nname = \"z\"\ntrials = 1\nseed = 1\ndatasets = [\"a\"]\n\
        [dataset.a]\nsource = \"nb_sampled\"\ndimension = 3\ntheta = [0.5, 0.5]\ntrain = 10\ntest = 4\n\
        [[pipeline]]\nname = \"nb\"\nlearner = \"nb\"\n[report]\nkind = \"dataset_summary\"\n";
    let spec = spec_in(d.path(), "z.toml", text);
    let s = run(&spec, &opts(&d.path().join("out"), false)).unwrap();
    let mut record = read_records(&s.results_dir.join(TRIALS_FILE))
        .unwrap()
        .remove(0);
    record.test_accuracy = Some(f64::NAN);
    let dir = d.path().join("fresh");
    let manifest =
        epsilab::runner::manifest(&spec, &epsilab::data::DataDir("unused".into())).unwrap();
    let stored = epsilab::store::inspect(&dir, &manifest, false).unwrap();
    let store = epsilab::store::Store::open(&dir, &manifest, false, stored, TRIALS_FILE).unwrap();
    let err = store.append(&record).unwrap_err().to_string();
    assert!(
        err.contains("non-finite test_accuracy") && err.contains("a|nb|{}|0"),
        "{err}"
    );
    drop(store);
    assert!(read_records(&dir.join(TRIALS_FILE)).unwrap().is_empty());
}

#[test]
fn a_forced_run_failing_its_checksum_keeps_the_previous_results() {
    use sha2::Digest as _;
    let d = tempfile::tempdir().unwrap();
    let data = common::user_dataset(d.path(), false);
    let sha = sha2::Sha256::digest(std::fs::read(&data).unwrap());
    let hex: String = sha.iter().map(|b| format!("{b:02x}")).collect();
    let text = user_spec().replace(
        "train_fraction = 0.5\n",
        &format!("train_fraction = 0.5\nsha256 = {{ \"mine.libsvm\" = \"{hex}\" }}\n"),
    );
    let spec = spec_in(d.path(), "s.toml", &text);
    let out = d.path().join("out");
    let s = run(&spec, &opts(&out, false)).unwrap();
    let trials = s.results_dir.join(TRIALS_FILE);
    let stored = std::fs::read(&trials).unwrap();
    common::user_dataset(d.path(), true);
    let err = run(&spec, &opts(&out, true)).unwrap_err().to_string();
    assert!(
        err.contains("SHA-256") && err.contains("mine.libsvm"),
        "{err}"
    );
    assert_eq!(std::fs::read(&trials).unwrap(), stored);
}

/// `run --rerun P`: a changed pipeline is recomputed alone, every other stored record is kept
/// byte for byte, and the result equals a fresh run of the changed spec. Sharded records are
/// folded into `trials.jsonl` and the shard files retired.
#[test]
fn a_partial_rerun_recomputes_one_pipeline_and_keeps_the_others() {
    use epsilab::runner::prepare_rerun;
    use epsilab::shard::Shard;
    use epsilab::store::{read_dir_records, record_files};
    let d = tempfile::tempdir().unwrap();
    let spec = spec_in(d.path(), "s.toml", common::SYNTHETIC_SPEC);
    let out = d.path().join("out");
    for i in 0..2 {
        let shard = Some(Shard::new(i, 2).unwrap());
        run(
            &spec,
            &RunOptions {
                shard,
                ..opts(&out, false)
            },
        )
        .unwrap();
    }
    let dir = out.join("synthetic");
    let lines = |pipeline: &str| -> Vec<String> {
        let mut v: Vec<String> = record_files(&dir)
            .unwrap()
            .iter()
            .flat_map(|f| {
                std::fs::read_to_string(f)
                    .unwrap()
                    .lines()
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .filter(|l| l.contains(&format!("\"pipeline\":\"{pipeline}\"")))
            .collect();
        v.sort();
        v
    };
    let kept_before = lines("private");
    let reference = lines("reference").len();
    let text =
        common::SYNTHETIC_SPEC.replacen("learner = \"nb\"", "learner = \"nb\"\nalpha = 2", 1);
    let changed = spec_in(d.path(), "c.toml", &text);
    let o = opts(&out, false);
    let no_such = prepare_rerun(&changed, &o, &["nope".to_string()])
        .err()
        .unwrap()
        .to_string();
    assert!(
        no_such.contains("no pipeline `nope`") && no_such.contains("reference"),
        "{no_such}"
    );
    // Another pipeline changed too: its stored cells would be stale, so it is refused.
    let both = text.replacen(
        "release = \"on_only\"",
        "release = \"on_only\"\nalpha = 2",
        1,
    );
    let both = spec_in(d.path(), "b.toml", &both);
    let only = ["reference".to_string()];
    let err = prepare_rerun(&both, &o, &only).err().unwrap().to_string();
    assert!(err.contains("`on-only` changed"), "{err}");

    let s = prepare_rerun(&changed, &o, &only)
        .unwrap()
        .execute()
        .unwrap();
    assert_eq!(s.ran, reference, "only the reference's cells ran");
    assert!(reference > 0 && reference < s.total);
    assert_eq!(
        record_files(&dir).unwrap(),
        vec![dir.join(TRIALS_FILE)],
        "shards retired"
    );
    assert_eq!(lines("private"), kept_before, "kept byte for byte");
    let fresh = run(&changed, &opts(&d.path().join("fresh"), false)).unwrap();
    assert_eq!(
        common::by_key(read_dir_records(&dir).unwrap()),
        by_key(&fresh.results_dir.join(TRIALS_FILE))
    );
    // The upgraded folder now takes the changed spec as it is.
    assert_eq!(run(&changed, &o).unwrap().ran, 0);
}

/// A forced run replaces a sharded folder whole: no shard file is left to be read again, and
/// no shard's provenance is left to describe records that are gone.
#[test]
fn a_forced_run_retires_the_shard_files_it_replaces() {
    use epsilab::shard::Shard;
    use epsilab::store::record_files;
    let d = tempfile::tempdir().unwrap();
    let spec = spec_in(d.path(), "s.toml", common::SYNTHETIC_SPEC);
    let out = d.path().join("out");
    let shard = Some(Shard::new(0, 2).unwrap());
    run(
        &spec,
        &RunOptions {
            shard,
            ..opts(&out, false)
        },
    )
    .unwrap();
    let shard_provenance = out.join("synthetic/provenance.shard-0-of-2.json");
    assert!(shard_provenance.exists());
    let s = run(&spec, &opts(&out, true)).unwrap();
    assert_eq!(
        record_files(&s.results_dir).unwrap(),
        vec![s.results_dir.join(TRIALS_FILE)]
    );
    assert!(
        !shard_provenance.exists(),
        "the retired shard's provenance is gone"
    );
    assert!(s.results_dir.join("provenance.json").exists());
    assert_eq!(by_key(&s.results_dir.join(TRIALS_FILE)).len(), s.total);
}
