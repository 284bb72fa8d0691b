//! Growing a spec to larger N (appendix B at full size): a toy Gaussian with `first_train`
//! keeps every row, the test set and the nested `n_train` subsets of the smaller spec, so its
//! stored results are resumed, not refused, and equal a fresh run of the grown spec bit for bit;
//! `grid.n_train_of` stops a pipeline's doubling without touching its other cells, and
//! `grid.smoke_n_train_of` keeps the smoke run of a grown spec small without touching the full run.

mod common;

use epsilab::runner::run;
use epsilab::spec::Spec;
use epsilab::store::{TRIALS_FILE, read_records};

use common::{by_key, run_options as opts};

const SMALL: &str = r#"
[experiment]
name = "grown"
trials = 3
seed = 5
datasets = ["toy"]

[dataset.toy]
source = "toy_gaussian"
dimension = 3
train = 64
test = 50
seed = 2

[grid]
epsilon = [1]
n_train = [8, 16, 32, 64]
lambda = [1, 100]

[[pipeline]]
name = "LR"
learner = "lr"
scaling = "thesis"

[[pipeline]]
name = "FM"
learner = "lr_functional"
scaling = "thesis"
fm_sensitivity = "sens2"

[report]
kind = "sample_complexity"
reference = "LR"
tolerance = 0.02
"#;

fn grown() -> String {
    SMALL
        .replace("train = 64\n", "train = 256\nfirst_train = 64\n")
        .replace(
            "n_train = [8, 16, 32, 64]",
            "n_train = [8, 16, 32, 64, 128, 256]",
        )
        .replace(
            "[[pipeline]]\nname = \"LR\"",
            "[grid.n_train_of]\nLR = [8, 16, 32, 64, 256]\n\n[[pipeline]]\nname = \"LR\"",
        )
}

/// The grown spec with its `grid.n_train_of` line for LR replaced by `lines`, loaded from a
/// temporary folder (kept alive by the caller).
fn grown_with(lines: &str) -> (tempfile::TempDir, Spec) {
    let dir = tempfile::tempdir().unwrap();
    let text = grown().replace("LR = [8, 16, 32, 64, 256]", lines);
    let spec = Spec::load(&common::write_spec(dir.path(), "cut.toml", &text)).unwrap();
    (dir, spec)
}

#[test]
fn a_grown_toy_dataset_resumes_the_smaller_specs_results_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let small = Spec::load(&common::write_spec(dir.path(), "small.toml", SMALL)).unwrap();
    let big = Spec::load(&common::write_spec(dir.path(), "big.toml", &grown())).unwrap();
    let out = tempfile::tempdir().unwrap();
    // 3 trials x (LR: 4 sizes x 2 lambdas + FM: 4 sizes).
    let first = run(&small, &opts(out.path(), 2)).unwrap();
    assert_eq!(first.ran, 3 * (8 + 4));
    let stored = by_key(read_records(&first.results_dir.join(TRIALS_FILE)).unwrap());
    // The grown spec adds LR at 256 only (n_train_of) and FM at 128 and 256.
    let resumed = run(&big, &opts(out.path(), 1)).unwrap();
    assert_eq!((resumed.skipped, resumed.ran), (3 * 12, 3 * (2 + 2)));
    let all = by_key(read_records(&resumed.results_dir.join(TRIALS_FILE)).unwrap());
    assert!(stored.iter().all(|(k, r)| all[k] == *r));
    assert!(
        !all.keys()
            .any(|k| k.contains("LR") && k.contains("\"n_train\":128"))
    );
    let fresh = tempfile::tempdir().unwrap();
    let again = run(&big, &opts(fresh.path(), 2)).unwrap();
    let fresh = by_key(read_records(&again.results_dir.join(TRIALS_FILE)).unwrap());
    assert_eq!(
        fresh, all,
        "the grown spec recomputes the stored cells bit for bit"
    );
}

#[test]
fn a_grown_spec_cut_to_its_first_block_generates_only_that_block_with_the_same_results() {
    let (dir, cut) = grown_with("LR = [8, 16, 32, 64, 256]\ntoy = [8, 16, 32, 64]");
    let plan = epsilab::plan::plan(&cut, false);
    assert_eq!(plan.max_n_train(0), Some(64));
    let data = epsilab::data::DataDir(dir.path().to_path_buf());
    let head = cut
        .catalog
        .load_for("toy", &data, plan.max_n_train(0))
        .unwrap();
    let whole = cut.catalog.load("toy", &data).unwrap();
    assert_eq!((head.n_rows(), whole.n_rows()), (64 + 50, 256 + 50));
    let small = Spec::load(&common::write_spec(dir.path(), "small.toml", SMALL)).unwrap();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let from_small = run(&small, &opts(a.path(), 2)).unwrap();
    let from_cut = run(&cut, &opts(b.path(), 1)).unwrap();
    let small = by_key(read_records(&from_small.results_dir.join(TRIALS_FILE)).unwrap());
    let cut = by_key(read_records(&from_cut.results_dir.join(TRIALS_FILE)).unwrap());
    assert_eq!(cut.len(), small.len());
    assert_eq!(
        cut, small,
        "the first block alone gives the small spec's results"
    );
}

#[test]
fn toy_rows_mapped_from_a_temporary_file_give_the_same_trials() {
    // EPSILAB_SPILL_BYTES=0 keeps every generated matrix in a mapped, unlinked file (as
    // appendix B's D = 1000/1500 rows are at full size): same values, so the same trials.
    let dir = tempfile::tempdir().unwrap();
    let spec = common::write_spec(dir.path(), "big.toml", &grown());
    let trials = |spill: Option<&str>, out: &std::path::Path| {
        let mut cmd = common::bin();
        if let Some(v) = spill {
            cmd.env("EPSILAB_SPILL_BYTES", v);
        }
        let o = cmd
            .arg("run")
            .arg(&spec)
            .arg("--out")
            .arg(out)
            .args(["--no-report", "-j", "2"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        by_key(read_records(&out.join("grown").join(TRIALS_FILE)).unwrap())
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let in_memory = trials(None, a.path());
    let mapped = trials(Some("0"), b.path());
    assert_eq!(in_memory.len(), 3 * (10 + 6));
    assert_eq!(mapped, in_memory);
}

#[test]
fn growing_the_data_another_way_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let small = Spec::load(&common::write_spec(dir.path(), "small.toml", SMALL)).unwrap();
    // Without first_train the test rows come after 256 training rows: other data.
    let other = grown().replace("first_train = 64\n", "");
    let other = Spec::load(&common::write_spec(dir.path(), "other.toml", &other)).unwrap();
    let out = tempfile::tempdir().unwrap();
    run(&small, &opts(out.path(), 2)).unwrap();
    let err = run(&other, &opts(out.path(), 2)).unwrap_err().to_string();
    assert!(
        err.contains("[dataset.toy]") && err.contains("--force"),
        "{err}"
    );
}

#[test]
fn n_train_of_may_stop_a_dataset_too() {
    let (_dir, spec) = grown_with("LR = [8, 16, 32, 64, 256]\ntoy = [8, 16, 32, 64, 128]");
    // Per trial: LR at 8..64 x 2 lambdas (its 256 is cut by the dataset), FM at 8..128.
    assert_eq!(epsilab::plan::plan(&spec, false).n_cells(), 3 * (8 + 5));
    // Smoke runs every value each allows too, with 2 trials.
    assert_eq!(epsilab::plan::plan(&spec, true).n_cells(), 2 * (8 + 5));
}

#[test]
fn a_pipeline_at_dataset_entry_replaces_both_lists_for_that_pair_only() {
    // The dataset stops everything at 64; the pair lets FM keep doubling on it, and the
    // smoke list of the dataset still applies to the pair in smoke mode.
    let (_dir, spec) = grown_with(
        "LR = [8, 16, 32, 64, 256]\ntoy = [8, 16, 32, 64]\n\"FM @ toy\" = [8, 16, 32, 64, 128, 256]\n\n[grid.smoke_n_train_of]\ntoy = [8, 16]",
    );
    let plan = epsilab::plan::plan(&spec, false);
    let sizes = |plan: &epsilab::plan::Plan, p: &str| {
        let mut n: Vec<String> = plan
            .cells()
            .filter(|c| c.key.contains(&format!("|{p}|")) && c.key.ends_with("|0"))
            .map(|c| {
                c.key
                    .split("\"n_train\":")
                    .nth(1)
                    .unwrap()
                    .split('}')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect();
        n.sort_by_key(|v| v.parse::<u32>().unwrap());
        n.dedup();
        n
    };
    assert_eq!(sizes(&plan, "FM"), ["8", "16", "32", "64", "128", "256"]);
    assert_eq!(sizes(&plan, "LR"), ["8", "16", "32", "64"]);
    let smoke = epsilab::plan::plan(&spec, true);
    assert_eq!(sizes(&smoke, "FM"), ["8", "16"]);
    assert_eq!(sizes(&smoke, "LR"), ["8", "16"]);
    let dir = tempfile::tempdir().unwrap();
    let text = grown().replace("LR = [8,", "\"FM @ other\" = [8]\nLR = [8,");
    let err = Spec::load(&common::write_spec(dir.path(), "bad.toml", &text))
        .unwrap_err()
        .to_string();
    assert!(err.contains("grid.n_train_of.\"FM @ other\""), "{err}");
}

#[test]
fn smoke_n_train_of_restricts_the_smoke_run_only() {
    let (dir, spec) = grown_with(
        "LR = [8, 16, 32, 64, 256]\n\n[grid.smoke_n_train_of]\nLR = [8, 16, 32, 64]\ntoy = [8, 16, 32, 64, 128]",
    );
    let plain = Spec::load(&common::write_spec(dir.path(), "plain.toml", &grown())).unwrap();
    // The full run is the grown spec's: LR at 8..64 and 256 x 2 lambdas, FM at every size.
    assert_eq!(epsilab::plan::plan(&spec, false).n_cells(), 3 * (10 + 6));
    let keys = |spec: &Spec, smoke: bool| {
        let plan = epsilab::plan::plan(spec, smoke);
        let mut keys: Vec<String> = plan.cells().map(|c| c.key).collect();
        keys.sort();
        keys
    };
    assert_eq!(keys(&spec, false), keys(&plain, false));
    // Smoke: LR stops at 64 (its own smoke list); a dataset's list only removes cells, as in
    // n_train_of: FM runs every size but 256, which the dataset cuts.
    // 2 trials x (LR 8..64 x 2 lambdas + FM 8..128).
    let smoke = keys(&spec, true);
    assert_eq!(smoke.len(), 2 * (8 + 5));
    let has = |p: &str, n: u32| {
        smoke
            .iter()
            .any(|k| k.contains(&format!("|{p}|")) && k.contains(&format!("\"n_train\":{n}}}")))
    };
    assert!(has("LR", 8) && has("LR", 32) && has("LR", 64) && has("FM", 8) && has("FM", 128));
    assert!(!has("LR", 256) && !has("FM", 256));
}

#[test]
fn n_train_of_names_a_pipeline_and_values_of_the_grid() {
    let dir = tempfile::tempdir().unwrap();
    for (from, to, field) in [
        ("LR = [8,", "LRX = [8,", "grid.n_train_of.\"LRX\""),
        ("LR = [8,", "LR = [9, 8,", "grid.n_train_of.\"LR\"[0]"),
        ("first_train = 64\n", "first_train = 300\n", "first_train"),
        (
            "[grid.n_train_of]\n",
            "[grid.smoke_n_train_of]\nFM = [8, 512]\n\n[grid.n_train_of]\n",
            "grid.smoke_n_train_of.\"FM\"[1]",
        ),
    ] {
        let text = grown().replace(from, to);
        let path = common::write_spec(dir.path(), "bad.toml", &text);
        let err = Spec::load(&path)
            .and_then(|s| run(&s, &opts(dir.path(), 1)).map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(err.contains(field), "{field}: {err}");
    }
}
