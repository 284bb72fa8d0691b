//! `epsilab check`: the CI regression gate, exact.
//!
//! Reruns every spec of a folder in smoke mode — every grid value, at most
//! [`crate::plan::SMOKE_TRIALS`] trials per cell (a spec's `grid.smoke_n_train_of` may leave
//! out the largest training sizes of a full-size sweep) — into a temporary folder and compares
//! each trial record with `expectations/<name>.json.gz`, field by field and bit for bit, every
//! field but [`IGNORED_FIELDS`] (wall-clock time and memo provenance). Runs are deterministic
//! for a seed, so unchanged code reproduces every record exactly and any moved result, a
//! one-point drop of one private cell at one ε included, fails and is named with its old and
//! new values. No tolerance is needed: records are written with the shortest representation
//! that reads back to the same `f64`, and read with serde_json's `float_roundtrip` parser
//! (its default parser misreads about 1 number in 200 by one ulp).
//!
//! A deliberate change is accepted with `epsilab check --bless --reason "..."`: it rewrites the
//! expectations of the specs that moved and adds an entry naming them and the reason at the top
//! of `results/CHANGES.md`. Whether a moved accuracy is a regression or only reordered noise is
//! then a question for `epsilab compare` on full runs (paired tests, [`crate::compare`]).
//!
//! The speed gate is [`crate::speed`]; the check runs it after the smoke runs.

use crate::data::DataDir;
use crate::error::{Error, Result};
use crate::runner::{RunOptions, run};
use crate::spec::Spec;
use crate::store::{TrialRecord, read_dir_records};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Folder of expectation files, inside the specs folder.
pub const EXPECTATIONS_DIR: &str = "expectations";
/// Record fields the gate does not compare: wall-clock time, and the memo keys of shared
/// noise-free results (provenance of how a result was computed, not the result).
pub const IGNORED_FIELDS: &[&str] = &["fit_seconds", "shared"];
/// Moved cells named per spec before the rest are only counted.
const MOVED_SHOWN: usize = 40;
/// Changed fields named per trial before the rest are only counted.
const FIELDS_SHOWN: usize = 6;

/// `expectations/<name>.json.gz`: the smoke run's records, minus [`IGNORED_FIELDS`], by key.
/// Gzip keeps the 53 specs' files under a megabyte (the ledgers' texts repeat); `zcat` shows
/// one record per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expectation {
    pub experiment: String,
    pub spec_hash: String,
    pub records: Vec<Value>,
}

/// One line of JSON.
fn json<T: Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).expect("JSON")
}

impl Expectation {
    /// The file's text: one record per line, so that `zdiff` shows a blessed change by trial.
    pub fn to_text(&self) -> String {
        let lines: Vec<String> = self.records.iter().map(json).collect();
        format!(
            "{{\"experiment\":{},\"spec_hash\":{},\"records\":[\n{}\n]}}\n",
            json(&self.experiment),
            json(&self.spec_hash),
            lines.join(",\n")
        )
    }

    /// The file's bytes: [`Self::to_text`], gzipped with no time stamp (so the same
    /// expectation always gives the same bytes).
    pub fn to_gzip(&self) -> Vec<u8> {
        use std::io::Write as _;
        let mut enc = flate2::GzBuilder::new()
            .mtime(0)
            .write(Vec::new(), flate2::Compression::best());
        enc.write_all(self.to_text().as_bytes()).expect("in memory");
        enc.finish().expect("in memory")
    }

    /// Reads a file's bytes, gzipped or not.
    pub fn from_bytes(bytes: &[u8]) -> std::result::Result<Self, String> {
        use std::io::Read as _;
        let mut text = String::new();
        if bytes.starts_with(&[0x1f, 0x8b]) {
            flate2::read::GzDecoder::new(bytes)
                .read_to_string(&mut text)
                .map_err(|e| e.to_string())?;
        } else {
            text = String::from_utf8_lossy(bytes).into_owned();
        }
        serde_json::from_str(&text).map_err(|e| e.to_string())
    }
}

/// How to check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub experiments: PathBuf,
    pub data_dir: DataDir,
    /// Accept the smoke run's records as the new expectations, with this reason.
    pub bless: Option<String>,
    /// Where a bless records its reason (`results/CHANGES.md`).
    pub changes: PathBuf,
    /// Only these experiment names (all when empty); the speed gate needs all.
    pub only: Vec<String>,
    /// Run the speed gate after the smoke runs (and record its ratios there, if set).
    pub speed: Option<crate::speed::SpeedOptions>,
}

/// What a check found.
#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    pub specs: usize,
    /// Trial records compared (or blessed).
    pub records: usize,
    /// Cells (dataset, pipeline, grid point) whose records moved, over all specs.
    pub moved_cells: usize,
    pub failures: Vec<String>,
    /// Specs whose expectations a bless rewrote.
    pub blessed: Vec<String>,
    pub smoke_seconds: f64,
    pub speed: Option<crate::speed::SpeedReport>,
}

/// A record as the gate compares it: its JSON without [`IGNORED_FIELDS`].
pub fn comparable(r: &TrialRecord) -> Value {
    let mut v = serde_json::to_value(r).expect("a record is JSON");
    if let Value::Object(m) = &mut v {
        for f in IGNORED_FIELDS {
            m.remove(*f);
        }
    }
    v
}

fn key_of(v: &Value) -> &str {
    v.get("key").and_then(Value::as_str).unwrap_or("")
}

/// A record key's cell (dataset|pipeline|grid point|) and trial.
fn cell_and_trial(key: &str) -> (&str, &str) {
    key.rsplit_once('|')
        .map_or((key, ""), |(c, t)| (&key[..=c.len()], t))
}

/// Every leaf of a JSON value by path (`ledger.entries[2].epsilon`), as its JSON text: equal
/// texts are equal bits, since a float is written in the shortest form that reads back to it.
fn leaves(v: &Value, path: &str, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                leaves(x, &p, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                leaves(x, &format!("{path}[{i}]"), out);
            }
            if a.is_empty() {
                out.insert(path.into(), "[]".into());
            }
        }
        _ => {
            out.insert(path.into(), v.to_string());
        }
    }
}

/// The fields of one trial that moved, as `field old -> new`.
pub fn moved_fields(old: &Value, new: &Value) -> Vec<String> {
    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
    leaves(old, "", &mut a);
    leaves(new, "", &mut b);
    let absent = String::from("(absent)");
    let mut paths: Vec<&String> = a.keys().chain(b.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|p| {
            let (o, n) = (a.get(p).unwrap_or(&absent), b.get(p).unwrap_or(&absent));
            (o != n).then(|| format!("{p} {o} -> {n}"))
        })
        .collect()
}

/// Moved trials of one cell, as one line.
fn describe_cell(spec: &str, cell: &str, trials: &[(String, Vec<String>)]) -> String {
    let mut s = format!("{spec}: cell `{cell}` moved:");
    for (t, fields) in trials {
        let shown = fields.iter().take(FIELDS_SHOWN).cloned();
        let _ = write!(s, " trial {t}: {}", shown.collect::<Vec<_>>().join(", "));
        if fields.len() > FIELDS_SHOWN {
            let _ = write!(s, " (+{} more fields)", fields.len() - FIELDS_SHOWN);
        }
        s.push(';');
    }
    s.pop();
    s
}

/// Compares a run's records with the expectation; one message per moved cell (a missing or a
/// new trial counts as moved), at most [`MOVED_SHOWN`] of them, and the number of moved cells.
pub fn compare(name: &str, expected: &Expectation, now: &[Value]) -> (Vec<String>, usize) {
    let old: BTreeMap<&str, &Value> = expected.records.iter().map(|v| (key_of(v), v)).collect();
    let new: BTreeMap<&str, &Value> = now.iter().map(|v| (key_of(v), v)).collect();
    let mut keys: Vec<&str> = old.keys().chain(new.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    let mut cells: BTreeMap<&str, Vec<(String, Vec<String>)>> = BTreeMap::new();
    for k in keys {
        let fields = match (old.get(k), new.get(k)) {
            (Some(o), Some(n)) if o == n => continue,
            (Some(o), Some(n)) => moved_fields(o, n),
            (Some(_), None) => vec!["missing from the smoke run".into()],
            (None, _) => vec!["new, not in the expectations".into()],
        };
        if fields.is_empty() {
            continue;
        }
        let (cell, trial) = cell_and_trial(k);
        cells.entry(cell).or_default().push((trial.into(), fields));
    }
    let mut msgs: Vec<String> = cells
        .iter()
        .take(MOVED_SHOWN)
        .map(|(c, t)| describe_cell(name, c, t))
        .collect();
    if cells.len() > MOVED_SHOWN {
        msgs.push(format!(
            "{name}: and {} more moved cells",
            cells.len() - MOVED_SHOWN
        ));
    }
    (msgs, cells.len())
}

/// An expectation file's path.
pub fn expectation_file(exp_dir: &Path, name: &str) -> PathBuf {
    exp_dir.join(format!("{name}.json.gz"))
}

/// Reads an expectation file; `Ok(None)` when there is none.
pub fn read_expectation(p: &Path) -> Result<Option<Expectation>> {
    match std::fs::read(p) {
        Ok(b) => Expectation::from_bytes(&b)
            .map(Some)
            .map_err(|reason| Error::Parse {
                path: p.into(),
                line: 0,
                reason: format!(
                    "{reason} (an expectation file; rewrite it with `epsilab check --bless`)"
                ),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(p, e)),
    }
}

/// Runs the check (or, with `bless`, rewrites the expectations that moved).
pub fn check(opts: &CheckOptions) -> Result<CheckReport> {
    if opts.bless.as_ref().is_some_and(|r| r.trim().is_empty()) {
        return Err(Error::param(
            "--reason",
            "say why the expectations move (it is recorded in the changes file)",
        ));
    }
    // Listed before the expectations folder is made: a missing folder is refused, not created.
    let spec_files = crate::report::reproduction::spec_files(&opts.experiments)?;
    let exp_dir = opts.experiments.join(EXPECTATIONS_DIR);
    std::fs::create_dir_all(&exp_dir).map_err(|e| Error::io(&exp_dir, e))?;
    let tmp = tempfile::Builder::new()
        .prefix("epsilab-check-")
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let mut report = CheckReport::default();
    let specs = spec_files
        .iter()
        .map(|path| Spec::load(path))
        .collect::<Result<Vec<_>>>()?;
    let names: Vec<&String> = specs.iter().map(|s| &s.experiment.name).collect();
    unknown_only(&opts.only, &names, &opts.experiments)?;
    for spec in &specs {
        if opts.only.is_empty() || opts.only.contains(&spec.experiment.name) {
            check_spec(opts, spec, &exp_dir, tmp.path(), &mut report)?;
        }
    }
    if let Some(reason) = &opts.bless
        && !report.blessed.is_empty()
    {
        record_bless(&opts.changes, reason, &report.blessed)?;
    }
    if let Some(s) = &opts.speed
        && opts.only.is_empty()
    {
        let r = crate::speed::gate(&exp_dir, s)?;
        report.failures.extend(r.failures.iter().cloned());
        report.speed = Some(r);
    }
    Ok(report)
}

/// Refuses an `--only` name that no spec of `dir` has: a misspelt name would otherwise check
/// nothing and pass.
fn unknown_only(only: &[String], names: &[&String], dir: &Path) -> Result<()> {
    match only.iter().find(|o| !names.contains(o)) {
        Some(o) => Err(Error::param(
            "only",
            format!(
                "no spec in {} is named `{o}` (the name is `[experiment] name`, e.g. {})",
                dir.display(),
                names.first().map_or("quickstart", |n| n.as_str())
            ),
        )),
        None => Ok(()),
    }
}

/// One spec: its smoke run against (or, blessing, into) its expectation file.
fn check_spec(
    opts: &CheckOptions,
    spec: &Spec,
    exp_dir: &Path,
    tmp: &Path,
    report: &mut CheckReport,
) -> Result<()> {
    let name = spec.experiment.name.clone();
    if let Some(reason) = &spec.experiment.gate_exempt {
        eprintln!("SKIP {name}: not gated: {reason}");
        return Ok(());
    }
    let ropts = RunOptions {
        threads: 0,
        data_dir: opts.data_dir.clone(),
        out_dir: tmp.into(),
        smoke: true,
        force: true,
        progress: false,
        shard: None,
    };
    let s = run(spec, &ropts)?;
    report.smoke_seconds += s.seconds;
    report.specs += 1;
    let mut now: Vec<Value> = read_dir_records(&s.results_dir)?
        .iter()
        .map(comparable)
        .collect();
    now.sort_by(|a, b| key_of(a).cmp(key_of(b)));
    report.records += now.len();
    let file = expectation_file(exp_dir, &name);
    let expected = match read_expectation(&file) {
        Ok(e) => e,
        // An unreadable (e.g. older-format) file is rewritten by a bless.
        Err(_) if opts.bless.is_some() => None,
        Err(e) => {
            report.failures.push(e.to_string());
            return Ok(());
        }
    };
    let fresh = Expectation {
        experiment: name.clone(),
        spec_hash: spec.hash.clone(),
        records: now,
    };
    let Some(expected) = expected else {
        if opts.bless.is_some() {
            write_expectation(&file, &fresh)?;
            report.blessed.push(format!("`{name}` (new)"));
        } else {
            report.failures.push(format!(
                "{name}: no expectations at {} (run `epsilab check --bless --reason ...`)",
                file.display()
            ));
        }
        return Ok(());
    };
    let (mut msgs, moved) = compare(&name, &expected, &fresh.records);
    if expected.spec_hash != spec.hash {
        msgs.insert(
            0,
            format!("{name}: the spec changed since its expectations were written"),
        );
    }
    report.moved_cells += moved;
    if opts.bless.is_none() {
        report.failures.extend(msgs);
    } else if expected != fresh {
        write_expectation(&file, &fresh)?;
        report
            .blessed
            .push(format!("`{name}` ({moved} cells moved)"));
    }
    Ok(())
}

fn write_expectation(p: &Path, e: &Expectation) -> Result<()> {
    std::fs::write(p, e.to_gzip()).map_err(|err| Error::io(p, err))
}

/// Adds a bless's entry at the top of `results/CHANGES.md` (newest first, as the file is kept).
pub fn record_bless(changes: &Path, reason: &str, blessed: &[String]) -> Result<()> {
    let old = match std::fs::read_to_string(changes) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(changes, e)),
    };
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400);
    let entry = format!(
        "## Smoke expectations blessed ({}): {}\n\n`epsilab check --bless` accepted the moved smoke records of {}.\n\n",
        civil_date(days as i64),
        reason.trim(),
        blessed.join(", ")
    );
    std::fs::write(changes, entry + &old).map_err(|e| Error::io(changes, e))
}

/// `YYYY-MM-DD` of a day count since 1970-01-01 (Howard Hinnant's civil-from-days).
pub fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(key: &str, acc: f64) -> Value {
        json!({"key": key, "test_accuracy": acc, "ledger": {"entries": [{"epsilon": 0.1}]}})
    }

    #[test]
    fn a_moved_field_is_named_with_old_and_new_values() {
        let e = Expectation {
            experiment: "x".into(),
            spec_hash: String::new(),
            records: vec![rec("d|p|{\"epsilon\":0.1}|0", 0.8), rec("d|p|{}|0", 0.9)],
        };
        let same = e.records.clone();
        assert_eq!(compare("x", &e, &same), (vec![], 0));
        // One ulp is a move: the gate has no tolerance.
        let mut now = same.clone();
        now[0] = rec(
            "d|p|{\"epsilon\":0.1}|0",
            f64::from_bits(0.8f64.to_bits() + 1),
        );
        let (msgs, moved) = compare("x", &e, &now);
        assert_eq!(moved, 1);
        assert!(
            msgs[0].contains("cell `d|p|{\"epsilon\":0.1}|`")
                && msgs[0].contains("trial 0: test_accuracy 0.8 -> 0.8000000000000002"),
            "{msgs:?}"
        );
        // A missing and a new trial.
        let (msgs, moved) = compare("x", &e, &[rec("d|p|{}|0", 0.9), rec("d|p|{}|1", 0.9)]);
        assert_eq!(moved, 2, "{msgs:?}");
        assert!(
            msgs.iter()
                .any(|m| m.contains("missing from the smoke run"))
        );
        assert!(msgs.iter().any(|m| m.contains("trial 1: new")));
    }

    #[test]
    fn nested_fields_are_compared() {
        let a = rec("k|0", 0.5);
        let mut b = a.clone();
        b["ledger"]["entries"][0]["epsilon"] = json!(0.2);
        assert_eq!(
            moved_fields(&a, &b),
            ["ledger.entries[0].epsilon 0.1 -> 0.2"]
        );
    }

    #[test]
    fn the_file_reads_back_equal() {
        let e = Expectation {
            experiment: "x\"y".into(),
            spec_hash: "h".into(),
            records: vec![rec("a|0", 0.1 + 0.2), rec("b|0", 1e-300)],
        };
        assert_eq!(Expectation::from_bytes(&e.to_gzip()).unwrap(), e);
        assert_eq!(Expectation::from_bytes(e.to_text().as_bytes()).unwrap(), e);
        assert_eq!(e.to_gzip(), e.clone().to_gzip(), "no time stamp");
        let empty = Expectation {
            records: vec![],
            ..e
        };
        assert_eq!(Expectation::from_bytes(&empty.to_gzip()).unwrap(), empty);
    }

    #[test]
    fn dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_420), "2025-11-28");
        assert_eq!(civil_date(11_016), "2000-02-29");
    }
}
