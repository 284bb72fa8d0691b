//! The results store: `<out>/<experiment>/trials.jsonl`, one JSON object per finished trial.
//!
//! Appends are one `write` of a whole line to a file opened in append mode, so a crash (even
//! `kill -9`) leaves at most one unterminated last line; opening the store cuts it off and the
//! trial is simply run again. A rerun skips every key already stored. `manifest.json` pins the
//! spec hash so results of a changed spec are never silently mixed with new ones.

use crate::error::{Error, Result};
use crate::privacy::Ledger;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const TRIALS_FILE: &str = "trials.jsonl";
pub const MANIFEST_FILE: &str = "manifest.json";

/// One finished trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    pub key: String,
    pub dataset: String,
    pub pipeline: String,
    /// Total budget of the pipeline; `null` for non-private reference pipelines.
    pub epsilon: Option<f64>,
    pub trial: u32,
    pub seed: u64,
    /// Grid values of this trial.
    pub params: BTreeMap<String, Value>,
    /// `null` for analysis probes, which fit no classifier.
    pub test_accuracy: Option<f64>,
    pub train_accuracy: Option<f64>,
    /// Accuracy on the test rows of the training majority class.
    pub baseline_accuracy: f64,
    pub n_train: usize,
    pub n_test: usize,
    pub n_features: usize,
    pub fit_seconds: f64,
    pub ledger: Ledger,
    /// True only if every step is private and the ledger is within `epsilon`.
    pub private: bool,
    /// Other named quantities (thresholded features, ...).
    #[serde(default)]
    pub metrics: BTreeMap<String, f64>,
    /// Features kept by the selection step (ascending), if the pipeline has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_features: Option<Vec<usize>>,
    /// Named vectors recorded by analysis probes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vectors: BTreeMap<String, Vec<f64>>,
    /// Names of the features a probe lists, in its order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_names: Option<Vec<String>>,
}

impl TrialRecord {
    /// A per-trial quantity by name: an accuracy field or a named metric.
    pub fn metric(&self, name: &str) -> Option<f64> {
        match name {
            "test_accuracy" => self.test_accuracy,
            "train_accuracy" => self.train_accuracy,
            "baseline_accuracy" => Some(self.baseline_accuracy),
            "fit_seconds" => Some(self.fit_seconds),
            _ => self.metrics.get(name).copied(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    experiment: String,
    spec_hash: String,
    epsilab_version: String,
}

/// An open results folder accepting appends.
pub struct Store {
    dir: PathBuf,
    file: Mutex<File>,
    done: HashSet<String>,
}

impl Store {
    /// Opens (creating) `dir`; with `force`, discards results of any earlier run.
    pub fn open(dir: &Path, experiment: &str, spec_hash: &str, force: bool) -> Result<Store> {
        let store_err = |reason: String| Error::Store {
            path: dir.into(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let manifest_path = dir.join(MANIFEST_FILE);
        let trials_path = dir.join(TRIALS_FILE);
        if force {
            for p in [&trials_path, &manifest_path] {
                if p.exists() {
                    std::fs::remove_file(p).map_err(|e| Error::io(p, e))?;
                }
            }
        }
        if manifest_path.exists() {
            let text = std::fs::read_to_string(&manifest_path)
                .map_err(|e| Error::io(&manifest_path, e))?;
            let m: Manifest = serde_json::from_str(&text).map_err(|e| {
                store_err(format!(
                    "{MANIFEST_FILE} is unreadable ({e}); rerun with --force"
                ))
            })?;
            if m.spec_hash != spec_hash {
                return Err(store_err(format!(
                    "holds results of a different version of the spec `{}`; rerun with --force to discard them, or choose another --out",
                    m.experiment
                )));
            }
        } else {
            let m = Manifest {
                experiment: experiment.into(),
                spec_hash: spec_hash.into(),
                epsilab_version: env!("CARGO_PKG_VERSION").into(),
            };
            let text = serde_json::to_string_pretty(&m).expect("manifest") + "\n";
            std::fs::write(&manifest_path, text).map_err(|e| Error::io(&manifest_path, e))?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&trials_path)
            .map_err(|e| Error::io(&trials_path, e))?;
        cut_partial_line(&mut file).map_err(|e| Error::io(&trials_path, e))?;
        let done = read_records(&trials_path)?
            .into_iter()
            .map(|r| r.key)
            .collect();
        Ok(Store {
            dir: dir.into(),
            file: Mutex::new(file),
            done,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn is_done(&self, key: &str) -> bool {
        self.done.contains(key)
    }

    pub fn n_done(&self) -> usize {
        self.done.len()
    }

    /// Appends one record as a single write of one line.
    pub fn append(&self, record: &TrialRecord) -> Result<()> {
        let mut line = serde_json::to_vec(record).expect("records serialise");
        line.push(b'\n');
        let mut f = self.file.lock().expect("store lock");
        f.write_all(&line)
            .map_err(|e| Error::io(self.dir.join(TRIALS_FILE), e))
    }
}

/// Truncates the file after its last newline (a record cut short by a crash).
fn cut_partial_line(f: &mut File) -> std::io::Result<()> {
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    let mut buf = Vec::new();
    f.seek(SeekFrom::Start(0))?;
    f.read_to_end(&mut buf)?;
    if buf.last() != Some(&b'\n') {
        let keep = buf.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        f.set_len(keep as u64)?;
    }
    Ok(())
}

/// All complete records of a trials file (a missing file has none), sorted by key so that every
/// aggregate sums in the same order whatever order the trials finished in (bit-for-bit reports
/// on any thread count). A malformed complete line is an error naming the line; an unterminated
/// last line is ignored (an interrupted append).
pub fn read_records(path: &Path) -> Result<Vec<TrialRecord>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let complete = text.rfind('\n').map_or("", |p| &text[..p]);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, line) in complete.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: TrialRecord = serde_json::from_str(line).map_err(|e| Error::Parse {
            path: path.into(),
            line: i + 1,
            reason: format!("not a trial record: {e}"),
        })?;
        if seen.insert(r.key.clone()) {
            out.push(r);
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}
