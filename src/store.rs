//! The results store: `<out>/<experiment>/trials.jsonl`, one JSON object per finished trial.
//!
//! Appends are one `write` of a whole line to a file opened in append mode, so a crash (even
//! `kill -9`) leaves at most one unterminated last line; opening the store cuts it off and the
//! trial is simply run again. A failed append (a full disk) cuts its partial line off at once
//! and closes the store to further appends. A rerun skips every key already stored.
//!
//! `manifest.json` pins what the stored cells were computed from: the spec's
//! [`cells_hash`](crate::spec::Spec::cells_hash) and the SHA-256 of every input (each dataset
//! file, each inline dataset definition), so results of a changed spec or changed data are never
//! silently mixed with new ones. A forced run writes `trials.jsonl.staging` beside the old
//! results and swaps it in only when it has finished, so a failed or interrupted forced run
//! leaves the previous results where they were.

use crate::error::{Error, Result};
use crate::privacy::Ledger;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
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
    /// Accuracy on the test rows of the training majority class (absent for a scalar source,
    /// which has no classes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_accuracy: Option<f64>,
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
    /// Memo keys of the noise-free results (scaled design, exact fit) this trial shared with
    /// other trials: what each result depends on, hashed (`epsilab::memo`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub shared: BTreeMap<String, String>,
}

impl TrialRecord {
    /// A per-trial quantity by name: an accuracy field or a named metric.
    pub fn metric(&self, name: &str) -> Option<f64> {
        match name {
            "test_accuracy" => self.test_accuracy,
            "train_accuracy" => self.train_accuracy,
            "baseline_accuracy" => self.baseline_accuracy,
            "fit_seconds" => Some(self.fit_seconds),
            _ => self.metrics.get(name).copied(),
        }
    }

    /// The first field holding NaN or an infinity, which JSON cannot hold (it would be written
    /// as `null` and the line could not be read back).
    pub fn non_finite_field(&self) -> Option<String> {
        let scalars = [
            ("epsilon", self.epsilon),
            ("test_accuracy", self.test_accuracy),
            ("train_accuracy", self.train_accuracy),
            ("baseline_accuracy", self.baseline_accuracy),
            ("fit_seconds", Some(self.fit_seconds)),
        ];
        let ledger = self.ledger.entries.iter().flat_map(|e| {
            [
                (format!("ledger `{}` epsilon", e.name), e.epsilon),
                (format!("ledger `{}` sensitivity", e.name), e.sensitivity),
            ]
        });
        let metrics = self
            .metrics
            .iter()
            .map(|(k, v)| (format!("metrics.{k}"), Some(*v)));
        let vectors = self.vectors.iter().filter_map(|(k, v)| {
            let bad = v.iter().find(|x| !x.is_finite())?;
            Some((format!("vectors.{k}"), Some(*bad)))
        });
        scalars
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .chain(ledger)
            .chain(metrics)
            .chain(vectors)
            .find(|(_, v)| v.is_some_and(|x| !x.is_finite()))
            .map(|(k, _)| k)
    }
}

/// Inputs of one dataset: file path (or `definition`) → SHA-256.
pub type Inputs = BTreeMap<String, String>;

/// What a results folder was computed from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub experiment: String,
    /// Hash of the whole spec of the last run (informational; see `cells_hash`).
    pub spec_hash: String,
    /// Must match for stored cells to be reused, in a manifest without `base_hash` (written
    /// before pipelines were pinned one by one).
    #[serde(default)]
    pub cells_hash: String,
    /// Must match for stored cells to be reused: the cells' settings but the pipelines.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base_hash: String,
    /// Per pipeline: must match for that pipeline's stored cells to be reused; a pipeline the
    /// new spec adds has none stored.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pipelines: BTreeMap<String, String>,
    /// Per dataset: must match for that dataset's stored cells to be reused.
    #[serde(default)]
    pub inputs: BTreeMap<String, Inputs>,
    /// Per pipeline that runs an external program: the files its `command` names (the program
    /// and each argument that is a file), as written in the spec → SHA-256. Must match for that
    /// pipeline's stored cells to be reused. A pipeline without an entry stored its trials
    /// before epsilab recorded these checksums (see [`Manifest::unchecked_programs`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub programs: BTreeMap<String, Inputs>,
    pub epsilab_version: String,
}

impl Manifest {
    pub fn new(
        experiment: &str,
        spec_hash: &str,
        cells_hash: &str,
        inputs: BTreeMap<String, Inputs>,
    ) -> Self {
        Manifest {
            experiment: experiment.into(),
            spec_hash: spec_hash.into(),
            cells_hash: cells_hash.into(),
            base_hash: String::new(),
            pipelines: BTreeMap::new(),
            inputs,
            programs: BTreeMap::new(),
            epsilab_version: env!("CARGO_PKG_VERSION").into(),
        }
    }

    /// With the spec's hash without pipelines and each pipeline's own.
    pub fn with_pipelines(mut self, base_hash: &str, pipelines: BTreeMap<String, String>) -> Self {
        self.base_hash = base_hash.into();
        self.pipelines = pipelines;
        self
    }

    /// With the checksums of the files each external pipeline's `command` names.
    pub fn with_programs(mut self, programs: BTreeMap<String, Inputs>) -> Self {
        self.programs = programs;
        self
    }

    /// Whether `self` and `other` describe the same run: the same spec, data and programs (a
    /// forced run resumes its staging files only then).
    pub fn same_run(&self, other: &Manifest) -> bool {
        self.spec_hash == other.spec_hash
            && self.inputs == other.inputs
            && self.programs == other.programs
    }

    /// The pipelines of `new` that name program files, whose trials stored under `self` (the
    /// stored manifest) were stored before epsilab recorded program checksums: a change to
    /// their programs cannot be detected. A pipeline `self` does not list (added since, with
    /// no stored trials) is not one of them.
    pub fn unchecked_programs(&self, new: &Manifest) -> Vec<String> {
        (new.programs.iter())
            .filter(|(name, files)| {
                !files.is_empty()
                    && !self.programs.contains_key(*name)
                    && (self.base_hash.is_empty() || self.pipelines.contains_key(*name))
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Why stored results made from `self` cannot be reused for `new`, if they cannot.
    fn conflict(&self, new: &Manifest) -> Option<String> {
        self.conflict_but(new, &[])
    }

    /// [`Self::conflict`], where the pipelines named in `rerun` may have changed (their stored
    /// cells are recomputed, not reused).
    fn conflict_but(&self, new: &Manifest, rerun: &[String]) -> Option<String> {
        if self.cells_hash.is_empty() {
            return Some(format!(
                "{MANIFEST_FILE} predates input checksums (epsilab {}); rerun with --force to recompute, or choose another --out",
                self.epsilab_version
            ));
        }
        let other_spec = |what: &str| {
            format!(
                "holds results of a different version of the spec `{}` ({what}); rerun with --force to replace them, or choose another --out",
                self.experiment
            )
        };
        if self.base_hash.is_empty() || new.base_hash.is_empty() {
            if self.cells_hash != new.cells_hash {
                return Some(other_spec(
                    "a change to the seed, a pipeline or another setting that alters stored trials",
                ));
            }
        } else if self.base_hash != new.base_hash {
            return Some(other_spec(
                "a change to the seed, the neighbours or another setting that alters stored trials",
            ));
        } else if let Some(name) = (self.pipelines.iter())
            .filter(|(name, _)| !rerun.contains(name))
            .find(|(name, h)| new.pipelines.get(*name).is_some_and(|n| n != *h))
            .map(|(name, _)| name)
        {
            return Some(other_spec(&format!(
                "[[pipeline]] `{name}` changed since its trials were stored, which `--rerun '{name}'` recomputes alone"
            )));
        }
        for (name, old) in self.programs.iter().filter(|(n, _)| !rerun.contains(n)) {
            let Some(now) = new.programs.get(name) else {
                continue;
            };
            if let Some(file) = changed_key(old, now) {
                return Some(format!(
                    "holds trials of [[pipeline]] `{name}` computed by another version of its external program: the file {file} changed since (or is gone); `--rerun '{name}'` recomputes that pipeline alone, or rerun with --force to replace everything, or choose another --out"
                ));
            }
        }
        for (dataset, old) in &self.inputs {
            let Some(now) = new.inputs.get(dataset) else {
                continue;
            };
            if let Some(what) = changed_key(old, now) {
                let what = if what == DEFINITION {
                    format!("the definition [dataset.{dataset}] in the spec")
                } else {
                    format!("the file {what}")
                };
                return Some(format!(
                    "holds results of dataset `{dataset}` computed from other data: {what} changed since; rerun with --force to replace them, or choose another --out"
                ));
            }
        }
        None
    }
}

/// The first file (or definition) whose checksum differs between `old` and `now`, or that only
/// one of them lists.
fn changed_key<'a>(old: &'a Inputs, now: &'a Inputs) -> Option<&'a str> {
    (old.iter())
        .filter(|(k, v)| now.get(*k) != Some(*v))
        .map(|(k, _)| k.as_str())
        .chain(
            now.keys()
                .filter(|k| !old.contains_key(*k))
                .map(String::as_str),
        )
        .next()
}

/// The [`Inputs`] entry of an inline dataset definition.
pub const DEFINITION: &str = "definition";

/// Suffix of a forced run's files until they replace the old ones.
pub const STAGING: &str = ".staging";

/// What an unfinished forced run (`run --force`, or `run --rerun`) left in a results folder:
/// its staging files, which the previous results stay beside until it finishes.
#[derive(Debug, Clone)]
pub struct Staging {
    /// Records in `trials.jsonl.staging` (0 where it is missing or unreadable).
    pub records: usize,
    /// `manifest.json.staging`, where it is there and readable.
    pub manifest: Option<Manifest>,
}

/// The staging files an unfinished forced run left in `dir`, if it left any.
pub fn unfinished_staging(dir: &Path) -> Result<Option<Staging>> {
    let (trials, manifest) = paths(dir, true, TRIALS_FILE);
    if !trials.exists() && !manifest.exists() {
        return Ok(None);
    }
    let manifest = existing(std::fs::read_to_string(&manifest), &manifest)?
        .and_then(|text| serde_json::from_str(&text).ok());
    let records = read_records(&trials).map_or(0, |r| r.len());
    Ok(Some(Staging { records, manifest }))
}

/// What a results folder holds for a run, read without changing anything.
#[derive(Debug, Default)]
pub struct Stored {
    /// Keys of the stored records the run may reuse.
    pub keys: HashSet<String>,
    /// A forced run resumes its own unfinished staging files.
    pub resumes_staging: bool,
    /// The stored manifest predates per-pipeline hashes: the run rewrites it (even with
    /// nothing to run), so that the next spec may gain a pipeline without `--force`.
    pub upgrades_manifest: bool,
    /// A run that recomputes some pipelines (`run --rerun`) starts its staging file with the
    /// stored records of every other pipeline, copied line for line.
    pub kept: Vec<String>,
    /// Pipelines whose stored (and kept) trials predate checksums of their external programs
    /// ([`Manifest::unchecked_programs`]): the manifest the run writes records none for them.
    pub unpinned: Vec<String>,
}

/// Reads what `dir` holds for a run described by `manifest`. Without `force`, stored results
/// of another spec or other data are an error (nothing is touched); with `force` only the
/// staging files of an interrupted forced run of the same spec and data are reused.
pub fn inspect(dir: &Path, manifest: &Manifest, force: bool) -> Result<Stored> {
    inspect_rerun(dir, manifest, force, &[])
}

/// [`inspect`] for a run that recomputes the stored cells of the pipelines in `rerun` (`run
/// --rerun`, never with `force`) and keeps every other stored cell: the rest of the spec, its
/// other pipelines and its data must be what the stored cells were computed from. The run
/// writes staging files like a forced one, so the old results stay until it has finished.
pub fn inspect_rerun(
    dir: &Path,
    manifest: &Manifest,
    force: bool,
    rerun: &[String],
) -> Result<Stored> {
    if !rerun.is_empty() {
        return inspect_partial(dir, manifest, rerun);
    }
    let (trials, man) = paths(dir, force, TRIALS_FILE);
    let old = match std::fs::read_to_string(&man) {
        Ok(text) => Some(
            serde_json::from_str::<Manifest>(&text).map_err(|e| Error::Store {
                path: dir.into(),
                reason: format!("{} is unreadable ({e}); rerun with --force", man.display()),
            }),
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(&man, e)),
    };
    match old {
        Some(Err(e)) if !force => Err(e),
        Some(Ok(old)) if !force => match old.conflict(manifest) {
            Some(reason) => Err(Error::Store {
                path: dir.into(),
                reason,
            }),
            None => Ok(Stored {
                keys: dir_keys(dir)?,
                resumes_staging: false,
                upgrades_manifest: old.base_hash.is_empty() && !manifest.base_hash.is_empty(),
                unpinned: old.unchecked_programs(manifest),
                ..Stored::default()
            }),
        },
        None if !force => Ok(Stored {
            keys: dir_keys(dir)?,
            ..Stored::default()
        }),
        Some(Ok(old)) if old.same_run(manifest) => Ok(Stored {
            keys: keys(&trials)?,
            resumes_staging: true,
            ..Stored::default()
        }),
        _ => Ok(Stored::default()),
    }
}

/// [`inspect_rerun`] with pipelines to recompute.
fn inspect_partial(dir: &Path, manifest: &Manifest, rerun: &[String]) -> Result<Stored> {
    let refuse = |reason: String| Error::Store {
        path: dir.into(),
        reason,
    };
    let read = |path: &Path| match existing(std::fs::read_to_string(path), path)? {
        Some(text) => serde_json::from_str::<Manifest>(&text)
            .map(Some)
            .map_err(|e| refuse(format!("{} is unreadable ({e})", path.display()))),
        None => Ok(None),
    };
    let (staging, staging_manifest) = paths(dir, true, TRIALS_FILE);
    if let Some(m) = read(&staging_manifest)?
        && m.same_run(manifest)
    {
        // An interrupted run of the same spec: its staging file already holds the kept cells.
        return Ok(Stored {
            keys: keys(&staging)?,
            resumes_staging: true,
            ..Stored::default()
        });
    }
    let Some(old) = read(&dir.join(MANIFEST_FILE))? else {
        return Err(refuse(
            "holds no results to keep: run without --rerun".into(),
        ));
    };
    if old.base_hash.is_empty() {
        return Err(refuse(format!(
            "{MANIFEST_FILE} predates per-pipeline hashes, so the other pipelines' cells cannot be checked: run the spec as it was once without --rerun (that upgrades it), or rerun everything with --force"
        )));
    }
    if let Some(reason) = old.conflict_but(manifest, rerun) {
        return Err(refuse(reason));
    }
    let (kept, keys) = kept_lines(dir, rerun)?;
    let unpinned = (old.unchecked_programs(manifest).into_iter())
        .filter(|name| !rerun.contains(name))
        .collect();
    Ok(Stored {
        keys,
        kept,
        unpinned,
        ..Stored::default()
    })
}

/// The stored record lines of `dir` (every record file, each key once) whose pipeline is not
/// in `drop`, verbatim, and their keys.
fn kept_lines(dir: &Path, drop: &[String]) -> Result<(Vec<String>, HashSet<String>)> {
    #[derive(Deserialize)]
    struct Head {
        key: String,
        pipeline: String,
    }
    impl Keyed for Head {
        fn key(&self) -> &str {
            &self.key
        }
    }
    let (mut lines, mut seen) = (Vec::new(), HashSet::new());
    for path in record_files(dir)? {
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        for parsed in parsed_lines::<Head>(&path, &text) {
            let (line, h) = parsed?;
            if !drop.contains(&h.pipeline) && seen.insert(h.key) {
                lines.push(line.to_string());
            }
        }
    }
    Ok((lines, seen))
}

fn keys(trials: &Path) -> Result<HashSet<String>> {
    Ok(read_records(trials)?.into_iter().map(|r| r.key).collect())
}

/// Keys stored in every record file of `dir` (unsharded and shards).
fn dir_keys(dir: &Path) -> Result<HashSet<String>> {
    Ok(read_dir_records(dir)?.into_iter().map(|r| r.key).collect())
}

/// The record file and manifest a run writes (the staging pair when forced).
fn paths(dir: &Path, force: bool, records: &str) -> (PathBuf, PathBuf) {
    let suffix = if force { STAGING } else { "" };
    (
        dir.join(format!("{records}{suffix}")),
        dir.join(format!("{MANIFEST_FILE}{suffix}")),
    )
}

/// Writes `path` through a temporary file and a rename, so it is never seen half-written. The
/// temporary name carries the process id: the shards of an array write the same manifest.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// The file appends go to: its length after the last complete line, and why an append failed
/// (then the store takes no more, and every later append names that first cause, so a run on
/// several threads reports the full disk whichever thread's error surfaces first).
struct Appender {
    file: File,
    len: u64,
    failed: Option<String>,
}

/// An open results folder accepting appends.
pub struct Store {
    dir: PathBuf,
    /// The record file appends go to: `trials.jsonl`, or this shard's own.
    records: String,
    file: Mutex<Appender>,
    done: HashSet<String>,
    /// Staging files to swap in by [`Store::finish`] (a forced run).
    staging: bool,
    /// Whether this run created the record file and manifest it writes (no record stored
    /// before it): a run that then fails before storing any record removes them again
    /// ([`Drop`]), so a refused first run or forced run leaves nothing that a corrected spec
    /// would be refused for.
    fresh: bool,
    finished: bool,
    _lock: FolderLock,
}

/// Name of the lock file of a results folder.
pub const LOCK_FILE: &str = ".lock";

/// Holds a results folder against other epsilab processes while it lives (advisory `flock`
/// locks from the standard library, released by the kernel when a process dies, even by
/// `kill -9`). An unsharded run holds the folder exclusively; a shard holds it shared and its
/// own shard lock exclusively, so the shards of one array run side by side while two runs of
/// one shard, or a shard and an unsharded run, never write at the same time.
struct FolderLock {
    _folder: File,
    _own: Option<File>,
}

/// Who holds a lock: written into the lock file by its holder, read by whoever waits.
fn holder_note() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "this host".into());
    let args: Vec<String> = std::env::args().collect();
    format!("pid {} on {host}: {}\n", std::process::id(), args.join(" "))
}

/// Takes `file`'s lock (shared or exclusive), telling on stderr whom it waits for.
fn take_lock(path: &Path, shared: bool, what: &str) -> Result<File> {
    use std::fs::TryLockError;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let attempt = if shared {
        file.try_lock_shared()
    } else {
        file.try_lock()
    };
    match attempt {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(path).unwrap_or_default();
            let holder = match holder.trim() {
                "" => "the shards of an array run".to_string(),
                h => h.to_string(),
            };
            let _ = writeln!(
                std::io::stderr(),
                "{what} is in use by another epsilab run ({holder}); waiting for it to finish"
            );
            let r = if shared {
                file.lock_shared()
            } else {
                file.lock()
            };
            r.map_err(|e| Error::io(path, e))?;
        }
        Err(TryLockError::Error(e)) => return Err(Error::io(path, e)),
    }
    if !shared {
        let mut f = &file;
        let _ = f
            .set_len(0)
            .and_then(|()| f.write_all(holder_note().as_bytes()));
    }
    Ok(file)
}

impl FolderLock {
    fn take(dir: &Path, records: &str) -> Result<FolderLock> {
        let what = dir.display().to_string();
        if records == TRIALS_FILE {
            let folder = take_lock(&dir.join(LOCK_FILE), false, &what)?;
            Ok(FolderLock {
                _folder: folder,
                _own: None,
            })
        } else {
            let folder = take_lock(&dir.join(LOCK_FILE), true, &what)?;
            let own = dir.join(format!("{LOCK_FILE}.{records}"));
            let own = take_lock(&own, false, &format!("{what} ({records})"))?;
            Ok(FolderLock {
                _folder: folder,
                _own: Some(own),
            })
        }
    }
}

impl Store {
    /// Opens (creating) `dir` for a run after [`inspect`] returned `stored` and everything that
    /// can fail early has been checked. A forced run writes staging files (starting them afresh
    /// unless it resumes its own); the previous results stay untouched until [`Store::finish`].
    ///
    /// `records` is the file appends go to (`trials.jsonl`, or a shard's own, see
    /// [`crate::shard::Shard::records_file`]). The folder is locked first (waiting for another
    /// run that holds it), and the stored keys are read again under the lock, so a run that
    /// waited never repeats what the other one stored meanwhile.
    pub fn open(
        dir: &Path,
        manifest: &Manifest,
        force: bool,
        stored: Stored,
        records: &str,
    ) -> Result<Store> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let lock = FolderLock::take(dir, records)?;
        let (trials_path, manifest_path) = paths(dir, force, records);
        let done = match (force, stored.resumes_staging) {
            (false, _) => dir_keys(dir)?,
            (true, true) => keys(&trials_path)?,
            (true, false) => stored.keys,
        };
        let mut m = manifest.clone();
        // Stored trials whose program no checksum pinned stay unpinned: recording the program
        // as it is now would claim that it computed them.
        for name in &stored.unpinned {
            m.programs.remove(name);
        }
        if !force && let Ok(text) = std::fs::read_to_string(&manifest_path) {
            // Keep the checksums of datasets this spec no longer lists (their records stay).
            if let Ok(old) = serde_json::from_str::<Manifest>(&text) {
                for (k, v) in old.inputs {
                    m.inputs.entry(k).or_insert(v);
                }
            }
        }
        // A shard shares the manifest with the other shards, which may store records meanwhile.
        let fresh = done.is_empty() && (force || records == TRIALS_FILE);
        if force && !stored.resumes_staging && trials_path.exists() {
            std::fs::remove_file(&trials_path).map_err(|e| Error::io(&trials_path, e))?;
        }
        let text = serde_json::to_string_pretty(&m).expect("manifest") + "\n";
        write_atomic(&manifest_path, &text)?;
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&trials_path)
            .map_err(|e| Error::io(&trials_path, e))?;
        cut_partial_line(&mut file).map_err(|e| Error::io(&trials_path, e))?;
        if force && !stored.resumes_staging && !stored.kept.is_empty() {
            let text = stored.kept.join("\n") + "\n";
            file.write_all(text.as_bytes())
                .map_err(|e| Error::io(&trials_path, e))?;
        }
        let len = file
            .metadata()
            .map_err(|e| Error::io(&trials_path, e))?
            .len();
        Ok(Store {
            dir: dir.into(),
            records: records.into(),
            file: Mutex::new(Appender {
                file,
                len,
                failed: None,
            }),
            done,
            staging: force,
            fresh,
            finished: false,
            _lock: lock,
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

    /// Appends one record as a single write of one line; a record with a non-finite number
    /// is refused, since it could not be read back. If the write fails (a full disk) the
    /// partial line is cut off and every later append fails too, so no line is ever corrupt.
    pub fn append(&self, record: &TrialRecord) -> Result<()> {
        if let Some(field) = record.non_finite_field() {
            return Err(Error::Store {
                path: paths(&self.dir, self.staging, &self.records).0,
                reason: format!(
                    "trial `{}` computed a non-finite {field} (is a training or test set empty?); it was not stored",
                    record.key
                ),
            });
        }
        let mut line = serde_json::to_vec(record).expect("records serialise");
        line.push(b'\n');
        let path = || paths(&self.dir, self.staging, &self.records).0;
        let mut a = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cause) = &a.failed {
            return Err(Error::Store {
                path: path(),
                reason: format!("an earlier append failed: {cause}"),
            });
        }
        match a.file.write_all(&line) {
            Ok(()) => {
                a.len += line.len() as u64;
                Ok(())
            }
            Err(e) => {
                a.failed = Some(e.to_string());
                let len = a.len;
                let _ = a.file.set_len(len);
                Err(Error::io(path(), e))
            }
        }
    }

    /// Ends a run: a forced run's staging files replace the previous results (trials first,
    /// then the manifest that describes them).
    pub fn finish(mut self) -> Result<()> {
        let a = self.file.get_mut().unwrap_or_else(|p| p.into_inner());
        a.file
            .sync_all()
            .map_err(|e| Error::io(paths(&self.dir, self.staging, &self.records).0, e))?;
        self.finished = true;
        if self.staging {
            let (st, sm) = paths(&self.dir, true, &self.records);
            let (t, m) = paths(&self.dir, false, &self.records);
            std::fs::rename(&st, &t).map_err(|e| Error::io(&t, e))?;
            std::fs::rename(&sm, &m).map_err(|e| Error::io(&m, e))?;
            // The shards' records are replaced or were copied into the new `trials.jsonl`:
            // left behind, they would be read again as results of this spec, and each
            // shard's provenance would describe records that are gone.
            for shard in record_files(&self.dir)? {
                if shard != t {
                    std::fs::remove_file(&shard).map_err(|e| Error::io(&shard, e))?;
                    remove_shard_provenance(&shard)?;
                }
            }
        }
        Ok(())
    }
}

impl Drop for Store {
    /// A run that ends without [`Store::finish`] (an error) having stored nothing removes the
    /// record file and manifest it created; a run that stored records keeps them, to resume.
    fn drop(&mut self) {
        let a = self.file.get_mut().unwrap_or_else(|p| p.into_inner());
        if self.finished || !self.fresh || a.len > 0 {
            return;
        }
        let (trials, manifest) = paths(&self.dir, self.staging, &self.records);
        let _ = std::fs::remove_file(trials);
        let _ = std::fs::remove_file(manifest);
    }
}

/// Removes the provenance of the shard whose records file is `records`
/// ([`crate::shard::Shard::provenance_file`]), if it exists.
fn remove_shard_provenance(records: &Path) -> Result<()> {
    let name = records.file_name().and_then(|n| n.to_str());
    let Some(shard) = name.and_then(crate::shard::Shard::of_records_file) else {
        return Ok(());
    };
    let provenance = records.with_file_name(shard.provenance_file());
    match std::fs::remove_file(&provenance) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&provenance, e)),
        _ => Ok(()),
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

/// What reading `path` gave, `None` where it does not exist.
fn existing<T>(read: std::io::Result<T>, path: &Path) -> Result<Option<T>> {
    match read {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Whether `name` is a record file of a results folder: `trials.jsonl` or a shard's
/// `trials.shard-I-of-N.jsonl` (not a staging file).
pub fn is_records_file(name: &str) -> bool {
    name == TRIALS_FILE || (name.starts_with("trials.shard-") && name.ends_with(".jsonl"))
}

/// The record files of a results folder, sorted by name (none if it does not exist).
pub fn record_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let Some(entries) = existing(std::fs::read_dir(dir), dir)? else {
        return Ok(Vec::new());
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        if entry.file_name().to_str().is_some_and(is_records_file) {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

/// Every record of a results folder, all shards merged as one: each key once, sorted by key
/// (as [`read_records`]), so a sharded run reports exactly as a single-process one.
pub fn read_dir_records(dir: &Path) -> Result<Vec<TrialRecord>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for f in record_files(dir)? {
        out.extend(
            read_records(&f)?
                .into_iter()
                .filter(|r| seen.insert(r.key.clone())),
        );
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

/// All complete records of a trials file (a missing file has none), sorted by key so that every
/// aggregate sums in the same order whatever order the trials finished in (bit-for-bit reports
/// on any thread count). A malformed complete line, or a trial stored twice, is an error naming
/// the line; an unterminated last line is ignored (an interrupted append).
pub fn read_records(path: &Path) -> Result<Vec<TrialRecord>> {
    let Some(text) = existing(std::fs::read_to_string(path), path)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for parsed in parsed_lines::<TrialRecord>(path, &text) {
        out.push(parsed?.1);
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

/// A parsed record line: its trial's key.
trait Keyed {
    fn key(&self) -> &str;
}

impl Keyed for TrialRecord {
    fn key(&self) -> &str {
        &self.key
    }
}

/// The complete, non-blank lines of the record file `path` holding `text` (an unterminated
/// last line is an interrupted append), each with its parse as `T`; a malformed complete line,
/// or one repeating an earlier line's trial, is an error naming it. A run never appends a
/// stored trial again, so a repeat is an edited or concatenated file: which copy holds the
/// result cannot be told.
fn parsed_lines<'t, T: serde::de::DeserializeOwned + Keyed>(
    path: &'t Path,
    text: &'t str,
) -> impl Iterator<Item = Result<(&'t str, T)>> + 't {
    let complete = text.rfind('\n').map_or("", |p| &text[..p]);
    let mut first = HashMap::new();
    (complete.lines().enumerate())
        .filter(|(_, line)| !line.trim().is_empty())
        .map(move |(i, line)| {
            let fail = |reason: String| Error::Parse {
                path: path.into(),
                line: i + 1,
                reason,
            };
            let parsed: T =
                serde_json::from_str(line).map_err(|e| fail(format!("not a trial record: {e}")))?;
            if let Some(at) = first.insert(parsed.key().to_string(), i + 1) {
                return Err(fail(format!(
                    "trial `{}` is stored twice (also on line {at}); each trial has one line",
                    parsed.key()
                )));
            }
            Ok((line, parsed))
        })
}
