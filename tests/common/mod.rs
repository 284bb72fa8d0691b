//! Shared helpers of the integration tests.
#![allow(dead_code)]

use epsilab::data::DataDir;
use epsilab::runner::RunOptions;
use epsilab::store::TrialRecord;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The built `epsilab` binary, with `EPSILAB_DATA` unset (as on a fresh clone).
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_epsilab"));
    c.env_remove("EPSILAB_DATA");
    c
}

/// Run options writing into `out` on `threads` threads: no data dir (synthetic data only), no
/// force, no progress bar, no shard. Vary a field with `RunOptions { force: true, ..opts }`.
pub fn run_options(out: &Path, threads: usize) -> RunOptions {
    RunOptions::quiet(out, DataDir("unused".into()), threads)
}

/// Records by key with the wall-clock field zeroed (the only field allowed to differ).
pub fn by_key(records: Vec<TrialRecord>) -> BTreeMap<String, TrialRecord> {
    records
        .into_iter()
        .map(|mut r| {
            r.fit_seconds = 0.0;
            (r.key.clone(), r)
        })
        .collect()
}

/// The datasets shipped in the repository (`datasets/`, gzip-compressed): every real-data test
/// runs on a fresh clone with no setting.
pub fn data_dir() -> DataDir {
    DataDir(Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets"))
}

/// A user dataset in LIBSVM format, `dir/mine.libsvm`: 60 rows, 4 binary features, labels 1 and
/// 2 (swapped with `flip`, to change the data under a stored run).
pub fn user_dataset(dir: &Path, flip: bool) -> PathBuf {
    let mut text = String::new();
    for i in 0..60 {
        let label = if (i % 2 == 0) != flip { 1 } else { 2 };
        let f = if i % 2 == 0 { 1 } else { 2 };
        text.push_str(&format!("{label} {f}:1 {}:1\n", 3 + i / 2 % 2));
    }
    let p = dir.join("mine.libsvm");
    std::fs::write(&p, text).unwrap();
    p
}

/// A spec on [`user_dataset`] (`mine.libsvm` beside it): `trials` trials at each ε of
/// `epsilons` (a TOML array), a private and a non-private NB pipeline.
pub fn user_spec(trials: u32, epsilons: &str) -> String {
    format!(
        "[experiment]\nname = \"mine\"\ntrials = {trials}\nseed = 1\ndatasets = [\"mine\"]\n\
         [dataset.mine]\nsource = \"libsvm\"\ndimension = 4\ntrain = \"mine.libsvm\"\ntrain_fraction = 0.5\n\
         classes = [{{ label = 1, name = \"a\" }}, {{ label = 2, name = \"b\" }}]\n\
         [grid]\nepsilon = {epsilons}\n\
         [[pipeline]]\nname = \"private\"\nlearner = \"private_nb\"\n\
         [[pipeline]]\nname = \"nb\"\nlearner = \"nb\"\n[report]\nx = \"epsilon\"\n"
    )
}

/// The Markdown links `[text](target)` of `text`, in order (text empty where no `[` opens it).
pub fn markdown_links(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let shown = rest[..at].rfind('[').map_or("", |open| &rest[open + 1..at]);
        let Some(end) = rest[at + 2..].find(')').map(|e| at + 2 + e) else {
            break;
        };
        out.push((shown, &rest[at + 2..end]));
        rest = &rest[end..];
    }
    out
}

/// Writes `text` as a spec file in `dir` and returns its path.
pub fn write_spec(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A small synthetic spec (no files needed) with private and reference pipelines.
pub const SYNTHETIC_SPEC: &str = r#"
[experiment]
name = "synthetic"
trials = 6
seed = 7
datasets = ["dense", "sparse"]

[dataset.dense]
source = "nb_sampled"
dimension = 30
theta = [0.8, 0.5]
train = 400
test = 400

[dataset.sparse]
source = "nb_sampled"
dimension = 30
theta = [0.05, 0.15]
train = 400
test = 400
seed = 3

[grid]
epsilon = [0.1, 1, 10]
threshold = ["q65", 0, "ln2/eps"]

[[pipeline]]
name = "private"
learner = "private_nb"

[[pipeline]]
name = "on-only"
learner = "private_nb"
release = "on_only"

[[pipeline]]
name = "reference"
learner = "nb"

[[pipeline]]
name = "majority"
learner = "majority"

[report]
x = "epsilon"
log_x = true
"#;
