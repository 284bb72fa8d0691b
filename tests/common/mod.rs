//! Shared helpers of the integration tests.
#![allow(dead_code)]

use epsilab::data::DataDir;
use std::path::{Path, PathBuf};

/// The datasets shipped in the repository (`datasets/`, gzip-compressed): every real-data test
/// runs on a fresh clone with no setting.
pub fn data_dir() -> DataDir {
    DataDir(Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets"))
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
