//! A spec through a real Slurm cluster: an array of 4 shards plus the report job, merged records
//! equal to a single-process run, and a cancelled shard finished by rerunning it alone.
//!
//! Needs a running cluster, so it is ignored by default; `.ci/run` starts a single-node one with
//! `scripts/slurm-local.sh` and runs it with `--ignored` (or prints why it cannot).

mod common;

use epsilab::store::{TrialRecord, read_dir_records};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const EXE: &str = env!("CARGO_BIN_EXE_epsilab");

fn epsilab(args: &[&str]) -> String {
    let out = Command::new(EXE)
        .args(args)
        .output()
        .expect("epsilab starts");
    assert!(
        out.status.success(),
        "epsilab {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

fn slurm(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .expect("slurm command starts");
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Records by key with the timing field zeroed (the only field allowed to differ).
fn records(dir: &Path) -> BTreeMap<String, TrialRecord> {
    common::by_key(read_dir_records(dir).unwrap())
}

/// Waits until none of `jobs` is queued or running (10 minutes at most).
fn wait_for(jobs: &[&str]) {
    let start = Instant::now();
    loop {
        let q = slurm("squeue", &["-h", "-o", "%i %T %r", "-j", &jobs.join(",")]);
        let live: Vec<&str> = q
            .lines()
            .filter(|l| !l.contains("DependencyNeverSatisfied"))
            .collect();
        if live.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "jobs still queued: {q}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// "array job N, report job M" from `epsilab slurm --submit`.
fn job_ids(out: &str) -> (String, String) {
    let num = |tag: &str| -> String {
        let at = out
            .find(tag)
            .unwrap_or_else(|| panic!("no `{tag}` in {out}"))
            + tag.len();
        out[at..]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect()
    };
    (num("array job"), num("report job"))
}

#[test]
#[ignore = "needs a running Slurm cluster; .ci/run starts one with scripts/slurm-local.sh"]
fn array_of_four_merges_bit_for_bit_and_a_cancelled_shard_is_rerun() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("spec.toml");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/quickstart.toml"),
        &spec,
    )
    .unwrap();
    let spec = spec.to_str().unwrap();
    let out = |name: &str| tmp.path().join(name).to_str().unwrap().to_string();
    let name = "quickstart";

    epsilab(&[
        "run",
        spec,
        "--out",
        &out("single"),
        "-j",
        "2",
        "--no-report",
    ]);
    let single = records(&Path::new(&out("single")).join(name));
    assert!(!single.is_empty());

    // The whole array, then the report job.
    let submitted = epsilab(&[
        "slurm",
        spec,
        "--tasks",
        "4",
        "--cpus-per-task",
        "1",
        "--out",
        &out("array"),
        "--script-dir",
        &out("slurm1"),
        "--submit",
    ]);
    let (array, report) = job_ids(&submitted);
    wait_for(&[&array, &report]);
    let dir = Path::new(&out("array")).join(name);
    for i in 0..4 {
        assert!(
            dir.join(format!("trials.shard-{i}-of-4.jsonl")).exists(),
            "shard {i} wrote its file"
        );
    }
    assert_eq!(
        records(&dir),
        single,
        "merged shards equal the single-process run"
    );
    assert!(
        dir.join("table.md").exists(),
        "the report job ran after the array"
    );
    let status = epsilab(&["status", spec, "--out", &out("array")]);
    assert!(status.contains("complete"), "{status}");

    // Held, one task cancelled before it starts, released: shard 3 is missing until rerun.
    let submitted = epsilab(&[
        "slurm",
        spec,
        "--tasks",
        "4",
        "--cpus-per-task",
        "1",
        "--out",
        &out("cancel"),
        "--script-dir",
        &out("slurm2"),
        "--sbatch-arg=--hold",
        "--submit",
    ]);
    let (array, report) = job_ids(&submitted);
    slurm("scancel", &[&format!("{array}_3")]);
    slurm("scontrol", &["release", &array]);
    wait_for(&[&array]);
    // afterok can never be satisfied now; the report job must not have run.
    slurm("scancel", &[&report]);
    let dir = Path::new(&out("cancel")).join(name);
    assert!(
        !dir.join("table.md").exists(),
        "the report waits for every task"
    );
    let status = epsilab(&["status", spec, "--out", &out("cancel")]);
    assert!(
        status.contains("shard 3/4") && status.contains("--shard 3/4"),
        "{status}"
    );
    assert!(records(&dir).len() < single.len());

    epsilab(&[
        "run",
        spec,
        "--out",
        &out("cancel"),
        "--shard",
        "3/4",
        "--no-report",
    ]);
    assert_eq!(
        records(&dir),
        single,
        "rerunning the cancelled shard completes the set"
    );
    let status = epsilab(&["status", spec, "--out", &out("cancel")]);
    assert!(!status.contains("incomplete"), "{status}");
}
