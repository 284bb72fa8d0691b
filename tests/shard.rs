//! Shards: every shard of a plan run on its own merges into exactly the single-process records;
//! a shard rerun finishes it; two processes on one results folder never duplicate or interleave
//! a record.

mod common;

use epsilab::data::DataDir;
use epsilab::runner::{RunOptions, run};
use epsilab::shard::Shard;
use epsilab::spec::Spec;
use epsilab::status::status;
use epsilab::store::{TrialRecord, read_dir_records, read_records, record_files};
use std::path::Path;
use std::process::Command;

use common::by_key;

fn opts(out: &Path, shard: Option<Shard>) -> RunOptions {
    RunOptions {
        shard,
        ..common::run_options(out, 2)
    }
}

fn synthetic(dir: &Path) -> Spec {
    Spec::load(&common::write_spec(dir, "s.toml", common::SYNTHETIC_SPEC)).unwrap()
}

#[test]
fn shards_merge_into_the_single_process_records() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = synthetic(tmp.path());
    let single = run(&spec, &opts(&tmp.path().join("single"), None)).unwrap();
    let single = by_key(read_dir_records(&single.results_dir).unwrap());

    let out = tmp.path().join("sharded");
    let mut sizes = Vec::new();
    for i in 0..3 {
        let s = run(&spec, &opts(&out, Some(Shard::new(i, 3).unwrap()))).unwrap();
        sizes.push(s.ran);
        let own = s.results_dir.join(format!("trials.shard-{i}-of-3.jsonl"));
        assert_eq!(
            read_records(&own).unwrap().len(),
            s.ran,
            "shard {i} wrote only its own file"
        );
    }
    let dir = out.join("synthetic");
    assert_eq!(record_files(&dir).unwrap().len(), 3);
    assert_eq!(
        by_key(read_dir_records(&dir).unwrap()),
        single,
        "merged = single process"
    );
    // 2 datasets x 6 trials dealt onto 3 shards: 4 groups each, equal cost.
    assert_eq!(sizes.iter().sum::<usize>(), single.len());
    assert!(sizes.iter().all(|&n| n == single.len() / 3), "{sizes:?}");

    // Nothing left: every shard and the whole folder are complete, and a rerun runs nothing.
    let st = status(&spec, &DataDir("unused".into()), &out, false, None).unwrap();
    assert_eq!(
        (st.done, st.planned),
        (single.len() as u64, single.len() as u64)
    );
    assert!(st.shards.unwrap().iter().all(|(_, d, p)| d == p));
    let again = run(&spec, &opts(&out, Some(Shard::new(1, 3).unwrap()))).unwrap();
    assert_eq!(again.ran, 0);
    // The report reads all shards as one.
    epsilab::report::write(&spec, &dir).unwrap();
    let unsharded = tmp.path().join("single").join("synthetic");
    epsilab::report::write(&spec, &unsharded).unwrap();
    assert_eq!(
        std::fs::read(dir.join("table.csv")).unwrap(),
        std::fs::read(unsharded.join("table.csv")).unwrap()
    );
}

#[test]
fn a_killed_shard_is_finished_by_rerunning_it_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = synthetic(tmp.path());
    let single = run(&spec, &opts(&tmp.path().join("single"), None)).unwrap();
    let single = by_key(read_dir_records(&single.results_dir).unwrap());
    let out = tmp.path().join("sharded");
    for i in [0, 2] {
        run(&spec, &opts(&out, Some(Shard::new(i, 3).unwrap()))).unwrap();
    }
    // Shard 1 "killed" after some records, its last line cut in half.
    run(&spec, &opts(&out, Some(Shard::new(1, 3).unwrap()))).unwrap();
    let f = out.join("synthetic/trials.shard-1-of-3.jsonl");
    let text = std::fs::read_to_string(&f).unwrap();
    let keep: usize = text.lines().take(5).map(|l| l.len() + 1).sum();
    std::fs::write(&f, &text[..keep + 20]).unwrap();

    let st = status(&spec, &DataDir("unused".into()), &out, false, None).unwrap();
    let shards = st.shards.unwrap();
    assert_eq!(shards[1].1, 5, "status counts the complete lines");
    assert!(shards[1].1 < shards[1].2 && shards[0].1 == shards[0].2);

    let rerun = run(&spec, &opts(&out, Some(Shard::new(1, 3).unwrap()))).unwrap();
    assert_eq!(rerun.skipped, 5);
    assert_eq!(
        by_key(read_dir_records(&out.join("synthetic")).unwrap()),
        single
    );
    let raw = std::fs::read_to_string(&f).unwrap();
    assert!(
        raw.lines()
            .all(|l| serde_json::from_str::<TrialRecord>(l).is_ok()),
        "no corrupt line"
    );
}

/// `status --shards 0` says the count must be at least 1 (it was refused as "shard 0/0: the
/// index must be below the count", of a shard nobody named).
#[test]
fn status_of_zero_shards_is_refused_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = synthetic(tmp.path());
    let e = status(&spec, &DataDir("unused".into()), tmp.path(), false, Some(0))
        .expect_err("refused")
        .to_string();
    assert_eq!(
        e,
        "invalid parameter `--shards`: must be at least 1 (the number of shards the spec was \
         run with)"
    );
}

#[test]
fn shard_and_force_are_refused_together() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = synthetic(tmp.path());
    let mut o = opts(tmp.path(), Some(Shard::new(0, 2).unwrap()));
    o.force = true;
    let e = run(&spec, &o).expect_err("refused").to_string();
    assert!(e.contains("--force") && e.contains("--shard"), "{e}");
}

/// A spec slow enough that two runs overlap.
fn slow_spec(dir: &Path) -> std::path::PathBuf {
    let text = common::SYNTHETIC_SPEC
        .replace("trials = 6", "trials = 150")
        .replace("train = 400", "train = 4000");
    common::write_spec(dir, "slow.toml", &text)
}

#[test]
fn two_concurrent_runs_of_one_spec_never_duplicate_or_interleave() {
    let tmp = tempfile::tempdir().unwrap();
    let spec_path = slow_spec(tmp.path());
    let out = tmp.path().join("out");
    let exe = env!("CARGO_BIN_EXE_epsilab");
    let start = || {
        Command::new(exe)
            .args([
                "run",
                spec_path.to_str().unwrap(),
                "--no-report",
                "-j",
                "1",
                "--out",
            ])
            .arg(&out)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = start();
    // Start the second once the first holds the folder (its lock file names it).
    let lock = out.join("synthetic").join(epsilab::store::LOCK_FILE);
    let t0 = std::time::Instant::now();
    while !std::fs::read_to_string(&lock).is_ok_and(|t| t.contains("pid")) {
        assert!(
            t0.elapsed().as_secs() < 120,
            "the first run never took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let b = start();
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success() && b.status.success());
    let stderr =
        String::from_utf8_lossy(&a.stderr).into_owned() + &String::from_utf8_lossy(&b.stderr);
    assert!(
        stderr.contains("in use by another epsilab run (pid"),
        "the second one says whom it waits for: {stderr}"
    );
    assert!(
        stderr.contains("0 run,"),
        "the second run found everything stored: {stderr}"
    );

    let file = out.join("synthetic/trials.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut keys = std::collections::HashSet::new();
    for line in text.lines() {
        let r: TrialRecord = serde_json::from_str(line).expect("every line whole");
        assert!(keys.insert(r.key), "no record twice");
    }
    let spec = Spec::load(&spec_path).unwrap();
    let single = run(&spec, &opts(&tmp.path().join("single"), None)).unwrap();
    assert_eq!(
        by_key(read_dir_records(&out.join("synthetic")).unwrap()),
        by_key(read_dir_records(&single.results_dir).unwrap())
    );
}
