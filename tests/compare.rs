//! `epsilab compare OLD NEW`: with 20 paired trials it flags a one-point drop of one private
//! cell whose per-trial differences also jitter by half a point; zero-mean jitter of the same
//! size in the other cells flags nothing, nor do two identical folders. The command
//! exits 1 when it flags a cell and 0 when it flags none, and writes Markdown, JSON and JUnit.

use epsilab::compare::{CompareOptions, compare, load_results};
use epsilab::store::TrialRecord;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use std::path::Path;
use std::process::Command;

const TRIALS: u32 = 20;
const CELLS: usize = 12;
/// The cell that loses a point in NEW.
const DROPPED: usize = 2;

fn record(cell: usize, trial: u32, acc: f64) -> TrialRecord {
    let eps = [
        0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 0.05, 0.5, 5.0,
    ][cell];
    let line = format!(
        r#"{{"key":"adult|private NB|{{\"epsilon\":{eps}}}|{trial}","dataset":"adult","pipeline":"private NB","epsilon":{eps},"trial":{trial},"seed":{trial},"params":{{"epsilon":{eps}}},"test_accuracy":{acc},"train_accuracy":{acc},"n_train":100,"n_test":100,"n_features":5,"fit_seconds":0.0,"ledger":[],"private":true}}"#
    );
    serde_json::from_str(&line).unwrap()
}

/// OLD: trial accuracies spread by 5 points (sd) around 0.75. NEW: each trial plus a
/// zero-mean jitter of half a point (sd), and one cell (ε = 0.1) also 1 point lower.
fn write_folders(root: &Path, drop: f64) {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
    let spread = Normal::new(0.0, 0.05).unwrap();
    let jitter = Normal::new(0.0, 0.005).unwrap();
    let (mut old, mut new) = (String::new(), String::new());
    for cell in 0..CELLS {
        for t in 0..TRIALS {
            let a = 0.75 + spread.sample(&mut rng);
            let shift = if cell == DROPPED { -drop } else { 0.0 };
            let b = a + shift + jitter.sample(&mut rng);
            old += &(serde_json::to_string(&record(cell, t, a)).unwrap() + "\n");
            new += &(serde_json::to_string(&record(cell, t, b)).unwrap() + "\n");
        }
    }
    for (dir, text) in [("old", old), ("new", new)] {
        let d = root.join(dir).join("f3_6");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("trials.jsonl"), text).unwrap();
    }
}

fn opts() -> CompareOptions {
    CompareOptions {
        metrics: vec!["test_accuracy".into()],
        alpha: 0.05,
        only: vec![],
    }
}

#[test]
fn a_one_point_drop_of_one_private_cell_is_flagged_and_null_jitter_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    write_folders(tmp.path(), 0.01);
    let old = load_results(&tmp.path().join("old")).unwrap();
    let new = load_results(&tmp.path().join("new")).unwrap();
    let c = compare(&old, &new, &opts());
    assert_eq!(c.cells.len(), CELLS);
    let flagged: Vec<_> = c.flagged().map(|x| x.cell.clone()).collect();
    assert_eq!(flagged, ["adult|private NB|{\"epsilon\":0.1}|"], "{c:#?}");
    for x in &c.cells {
        assert_eq!(x.n, TRIALS as usize);
        // Half-point jitter, 20 pairs, 12 cells: a drop of 0.6 points is detectable.
        assert!(x.min_detectable.unwrap() < 0.006, "{x:?}");
    }
    // Without the drop: nothing.
    write_folders(tmp.path(), 0.0);
    let new = load_results(&tmp.path().join("new")).unwrap();
    assert_eq!(compare(&old, &new, &opts()).flagged().count(), 0);
    // Identical folders: every difference 0, p = 1.
    let same = compare(&old, &old, &opts());
    assert_eq!(same.flagged().count(), 0);
    assert!(
        same.cells
            .iter()
            .all(|x| x.p_t_holm == 1.0 && x.mean_diff == 0.0)
    );
}

#[test]
fn the_command_exits_1_on_a_flag_and_writes_its_reports() {
    let tmp = tempfile::tempdir().unwrap();
    write_folders(tmp.path(), 0.01);
    let run = |old: &str, new: &str| {
        let t = tmp.path();
        Command::new(env!("CARGO_BIN_EXE_epsilab"))
            .arg("compare")
            .args([t.join(old), t.join(new)])
            .arg("--markdown")
            .arg(t.join("c.md"))
            .arg("--json")
            .arg(t.join("c.json"))
            .arg("--junit")
            .arg(t.join("c.xml"))
            .output()
            .unwrap()
    };
    let o = run("old", "new");
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("FLAGGED f3_6: `adult|private NB|{\"epsilon\":0.1}|`"),
        "{err}"
    );
    // The command's own failure, not `check`'s.
    assert!(
        err.contains("error: compare failed: 1 cell(s) flagged; see FLAGGED lines above"),
        "{err}"
    );
    assert!(!err.contains("check failed"), "{err}");
    let md = std::fs::read_to_string(tmp.path().join("c.md")).unwrap();
    assert!(
        md.starts_with("### epsilab compare: 1 of 12 cells flagged"),
        "{md}"
    );
    assert!(
        md.len() < 65_536,
        "a GitHub comment holds 65,536 characters"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("c.json")).unwrap()).unwrap();
    assert_eq!(json["cells"].as_array().unwrap().len(), CELLS);
    let xml = std::fs::read_to_string(tmp.path().join("c.xml")).unwrap();
    assert!(
        xml.contains("tests=\"12\" failures=\"1\"") && xml.contains("<failure"),
        "{xml}"
    );
    let o = run("old", "old");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let o = Command::new(env!("CARGO_BIN_EXE_epsilab"))
        .arg("compare")
        .arg(tmp.path().join("old"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: compare failed: give OLD and NEW folders, or --rev REV [NEW]"),
        "{err}"
    );
}

/// A misspelt `--only` compares nothing; it is refused instead of passing.
#[test]
fn an_only_name_in_neither_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    write_folders(tmp.path(), 0.01);
    let only = |name: &str| {
        Command::new(env!("CARGO_BIN_EXE_epsilab"))
            .arg("compare")
            .args([tmp.path().join("old"), tmp.path().join("new")])
            .args(["--only", name])
            .output()
            .unwrap()
    };
    let o = only("f3_7");
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("invalid parameter `only`") && err.contains("`f3_7`"),
        "{err}"
    );
    assert_eq!(
        only("f3_6").status.code(),
        Some(1),
        "f3_6 has a flagged cell"
    );
}

/// `--alpha` outside (0, 1) is refused by name (NaN panicked inside the t distribution; 0 and
/// 2 were accepted), and so is a `--metric` that neither folder records (it paired no cell
/// and exited 0).
#[test]
fn a_level_outside_0_1_and_an_unrecorded_metric_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    write_folders(tmp.path(), 0.0);
    let compare = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_epsilab"))
            .arg("compare")
            .args([tmp.path().join("old"), tmp.path().join("old")])
            .args(args)
            .output()
            .unwrap()
    };
    for alpha in ["nan", "0", "2", "1", "-0.5"] {
        let o = compare(&[&format!("--alpha={alpha}")]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{alpha}: {err}");
        assert!(
            err.contains("invalid parameter `--alpha`") && err.contains("(0, 1)"),
            "{alpha}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    let o = compare(&["--metric", "nonexist"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("invalid parameter `--metric`") && err.contains("`nonexist`"),
        "{err}"
    );
    // The same folders with a valid level and a recorded metric compare (and flag nothing).
    let o = compare(&["--alpha", "0.01", "--metric", "train_accuracy"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
}
