//! Bring your own mechanism: the protocol by which epsilab runs a learner or a release written
//! in any language as one step of a pipeline (`learner = "external"`, `release = "external"`;
//! the kinds are in `kinds/external.rs`, the protocol for users in docs/external.md).
//!
//! One run of a program is one trial: epsilab writes the cell's rows to CSV files in a fresh
//! temporary folder (the program's working directory), sends one JSON [`Request`] on the
//! program's standard input and reads one JSON [`Reply`] from its standard output. The request
//! names the files relative to that folder, so the same spec and seed send the same bytes.
//! Accuracy is computed here from the predictions; the program's ledger is recorded as it
//! declares it ([`record_declared`]), marked "declared, not audited".
//!
//! Every failure (the program cannot start, exits non-zero, runs past its time-out, prints
//! something that is not the reply, or a reply that does not fit the cell) is an
//! [`Error::External`] naming the command and the tail of its standard error; the pipeline
//! adds the pipeline and cell, and the runner keeps the trials stored before it.

use crate::error::{Error, Result};
use crate::privacy::{Ledger, LedgerEntry, Measure};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The note of every ledger step an external program declares.
pub const DECLARED: &str = "declared by the external program, not audited";

/// How much of the program's standard error an error quotes (its last lines).
const STDERR_TAIL: usize = 1500;

/// An external program as a spec names it: the command (relative paths resolved against the
/// spec's folder), its time-out and free-form parameters passed through in the request.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The program and its arguments, relative paths already resolved.
    pub command: Vec<String>,
    pub timeout: Duration,
}

impl Program {
    /// `command` with each element that is a relative path (it contains a `/` and does not
    /// start with `/` or `-`) taken relative to `spec_dir`; a bare name (`python3`) is looked up
    /// on `PATH` as a shell would.
    pub fn resolve(command: &[String], spec_dir: &Path, timeout_s: f64) -> Program {
        let command = command
            .iter()
            .map(|arg| {
                if arg.contains('/') && !arg.starts_with('/') && !arg.starts_with('-') {
                    // Absolute: the program runs in its temporary folder, not in ours.
                    let path = spec_dir.join(arg);
                    let path = std::path::absolute(&path).unwrap_or(path);
                    path.to_string_lossy().into_owned()
                } else {
                    arg.clone()
                }
            })
            .collect();
        Program {
            command,
            // Specs refuse a timeout above a year; a larger one here waits without limit
            // rather than panic (`from_secs_f64` does past `Duration::MAX`).
            timeout: Duration::try_from_secs_f64(timeout_s).unwrap_or(Duration::MAX),
        }
    }

    /// The files `command` (as the spec writes it) names, each as written → SHA-256 of its
    /// bytes: the program and every argument that is an existing file, looked up relative to
    /// `spec_dir` and else to the working directory (an absolute path as it is). A flag (`-x`,
    /// `--config=f`) is not looked up. These are inputs of the pipeline's cells like a dataset
    /// file: the manifest pins them, so a changed program is refused, not silently reused.
    pub fn files(command: &[String], spec_dir: &Path) -> Result<BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        for arg in command
            .iter()
            .filter(|a| !a.is_empty() && !a.starts_with('-'))
        {
            let Some(path) = [spec_dir.join(arg), PathBuf::from(arg)]
                .into_iter()
                .find(|p| p.is_file())
            else {
                continue;
            };
            let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
            out.insert(arg.clone(), crate::data::files::sha256_hex(&bytes));
        }
        Ok(out)
    }

    /// The command as one line, for error messages.
    pub fn display(&self) -> String {
        self.command.join(" ")
    }

    /// An [`Error::External`] about this program (the pipeline adds its pipeline and cell).
    pub fn error(&self, reason: impl Into<String>, stderr: &str) -> Error {
        Error::External {
            pipeline: String::new(),
            cell: String::new(),
            command: self.display(),
            reason: reason.into(),
            stderr: tail(stderr),
        }
    }

    /// Runs the program once in `dir` with `request` on its standard input and returns its
    /// reply and its standard error.
    pub fn call(&self, dir: &Path, request: &[u8]) -> Result<(Reply, String)> {
        let out = self.run(dir, request)?;
        let reply: Reply = serde_json::from_slice(&out.stdout).map_err(|e| {
            let shown = String::from_utf8_lossy(&out.stdout);
            let shown: String = shown.chars().take(200).collect();
            self.error(
                format!("its standard output is not one JSON reply ({e}): `{shown}`"),
                &out.stderr,
            )
        })?;
        Ok((reply, out.stderr))
    }

    /// Spawns, feeds and waits for the program; a time-out kills its whole process group.
    fn run(&self, dir: &Path, request: &[u8]) -> Result<Finished> {
        let Some((program, args)) = self.command.split_first() else {
            return Err(self.error("the command is empty", ""));
        };
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd
            .spawn()
            .map_err(|e| self.error(format!("cannot start `{program}`: {e}"), ""))?;
        let mut stdin = child.stdin.take().expect("piped");
        let request = request.to_vec();
        // A program that exits without reading its input must not fail the write loudly.
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&request);
        });
        let stdout = drain(child.stdout.take().expect("piped"));
        let stderr = drain(child.stderr.take().expect("piped"));
        let status = self.wait(&mut child);
        let _ = writer.join();
        let stderr = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
        let stdout = stdout.join().unwrap_or_default();
        match status {
            Some(Ok(s)) if s.success() => Ok(Finished { stdout, stderr }),
            Some(Ok(s)) => Err(self.error(format!("exited with {s}"), &stderr)),
            Some(Err(e)) => Err(self.error(format!("cannot wait for it: {e}"), &stderr)),
            None => Err(self.error(
                format!(
                    "timed out after {} s (timeout_s) and was killed",
                    self.timeout.as_secs_f64()
                ),
                &stderr,
            )),
        }
    }

    /// The exit status, or `None` once the time-out passed (the process group is then killed).
    fn wait(&self, child: &mut Child) -> Option<std::io::Result<std::process::ExitStatus>> {
        let start = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(s)) => return Some(Ok(s)),
                Ok(None) if start.elapsed() >= self.timeout => {
                    kill_group(child);
                    let _ = child.wait();
                    return None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// Kills the child's process group (the child and anything it started), or the child alone.
fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the process group the child leads
        // (spawned with process_group(0)); it reads no memory of ours.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
}

/// Reads a pipe to its end on a thread of its own (so neither pipe can block the other).
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

/// The last [`STDERR_TAIL`] bytes of a program's standard error (cut at a character boundary).
fn tail(stderr: &str) -> String {
    let s = stderr.trim_end();
    let mut start = s.len().saturating_sub(STDERR_TAIL);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_string()
}

struct Finished {
    stdout: Vec<u8>,
    stderr: String,
}

/// The one JSON object epsilab sends on the program's standard input. Field order is fixed
/// and the file names are relative to the working directory, so the bytes depend on the spec
/// and seed alone.
#[derive(Debug, Clone, Serialize)]
pub struct Request<'a> {
    /// Training rows: `label,x1,...,xD` (a learner) or `x1` (a release).
    pub train: &'static str,
    /// Test rows (a learner only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<&'static str>,
    /// The step's epsilon; `null` for a non-private pipeline.
    pub epsilon: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
    /// A seed in [0, 2^32), derived from the cell's seed like every other stream.
    pub seed: u32,
    /// `add_remove` or `replace_one`.
    pub relation: &'static str,
    /// The class labels as the CSV files write them, in epsilab's class order (a learner).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<&'a [String]>,
    /// Public bounds: per feature `[[lo, hi], ...]` for a learner on a dataset that declares
    /// them, `[lo, hi]` for a release that declares them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<serde_json::Value>,
    /// The spec's `params` table, passed through.
    pub params: &'a serde_json::Value,
}

impl Request<'_> {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).expect("a request serialises");
        bytes.push(b'\n');
        bytes
    }
}

/// A label in a reply: as the data writes it, or a number matching a numeric label.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, expecting = "expected a label: text or a number")]
pub enum Label {
    Text(String),
    Number(f64),
}

/// One ledger step as the program declares it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeclaredStep {
    pub name: String,
    pub mechanism: String,
    pub epsilon: f64,
    pub delta: Option<f64>,
    pub sensitivity: Option<f64>,
}

impl DeclaredStep {
    /// The first declared number that is not valid, and the range it must be in.
    fn problem(&self) -> Option<String> {
        if !(self.epsilon.is_finite() && self.epsilon >= 0.0) {
            return Some(format!("epsilon {} must be finite and >= 0", self.epsilon));
        }
        if let Some(d) = self.delta.filter(|d| !(0.0..1.0).contains(d)) {
            return Some(format!("delta {d} must be in [0, 1)"));
        }
        let bad_sensitivity = |v: &f64| !(v.is_finite() && *v >= 0.0);
        (self.sensitivity.filter(bad_sensitivity))
            .map(|v| format!("sensitivity {v} must be finite and >= 0"))
    }
}

/// The one JSON object the program prints on its standard output.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// A learner: one label per test row, in the test file's order.
    pub predictions: Option<Vec<Label>>,
    /// A learner: one label per training row, if it reports them.
    pub train_predictions: Option<Vec<Label>>,
    /// A release: the released value.
    pub release: Option<f64>,
    #[serde(default)]
    pub metrics: BTreeMap<String, f64>,
    #[serde(default)]
    pub ledger: Vec<DeclaredStep>,
}

/// The index of each label among `classes`; an unknown label is an error naming it.
pub fn class_indices(
    program: &Program,
    what: &str,
    labels: &[Label],
    classes: &[String],
) -> Result<Vec<u16>> {
    labels
        .iter()
        .map(|label| {
            let found = match label {
                Label::Text(s) => classes.iter().position(|c| c == s),
                Label::Number(v) => classes
                    .iter()
                    .position(|c| c.trim().parse::<f64>().is_ok_and(|n| n == *v)),
            };
            found.map(|i| i as u16).ok_or_else(|| {
                let shown = match label {
                    Label::Text(s) => format!("\"{s}\""),
                    Label::Number(v) => v.to_string(),
                };
                program.error(
                    format!(
                        "{what}: unknown label {shown} (the data's labels: {})",
                        classes.join(", ")
                    ),
                    "",
                )
            })
        })
        .collect()
}

/// Records the program's declared steps in `ledger` under the run's relation, each marked
/// [`DECLARED`]. A program that declares none gets one non-private step: nothing vouches for it.
/// Declared steps are refused when an epsilon, delta or sensitivity is not a valid number.
pub fn record_declared(
    program: &Program,
    steps: &[DeclaredStep],
    ledger: &mut Ledger,
) -> Result<()> {
    if steps.is_empty() {
        ledger.non_private(
            "train",
            "external (no ledger declared)",
            "the external program declared no privacy steps",
        );
        return Ok(());
    }
    for s in steps {
        if let Some(wrong) = s.problem() {
            return Err(program.error(
                format!(
                    "ledger step `{}` (mechanism `{}`): {wrong}",
                    s.name, s.mechanism
                ),
                "",
            ));
        }
        let approx = s.delta.is_some_and(|d| d > 0.0);
        ledger.entries.push(LedgerEntry {
            name: s.name.clone(),
            mechanism: s.mechanism.clone(),
            epsilon: Some(s.epsilon),
            delta: s.delta.filter(|_| approx),
            measure: Some(if approx {
                Measure::ApproxDp
            } else {
                Measure::PureDp
            }),
            private: true,
            relation: ledger.relation().describe().into(),
            sensitivity: s.sensitivity,
            note: Some(DECLARED.into()),
            claimed: None,
        });
    }
    Ok(())
}

/// A fresh temporary folder for one run of a program (removed when dropped).
pub fn workdir() -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("epsilab-external-")
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), e))
}

/// Writes `text` to `dir/name`.
pub fn write_file(dir: &Path, name: &str, text: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
    Ok(path)
}

/// The spec's `params` table as the JSON the request carries (`{}` when absent).
pub fn params_json(params: Option<&toml::Table>) -> serde_json::Value {
    params
        .and_then(|t| serde_json::to_value(t).ok())
        .unwrap_or_else(|| serde_json::Value::Object(Default::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(command: &[&str], timeout_s: f64) -> Program {
        let command: Vec<String> = command.iter().map(|s| s.to_string()).collect();
        Program::resolve(&command, Path::new("/spec/dir"), timeout_s)
    }

    #[test]
    fn relative_paths_resolve_against_the_spec_folder_and_names_stay() {
        let p = program(
            &["python3", "../ex/mine.py", "-v", "/abs/x", "--k=a/b"],
            1.0,
        );
        assert_eq!(
            p.command,
            [
                "python3",
                "/spec/dir/../ex/mine.py",
                "-v",
                "/abs/x",
                "--k=a/b"
            ]
        );
    }

    #[test]
    fn labels_match_as_written_or_as_numbers() {
        let p = program(&["x"], 1.0);
        let classes = vec!["+1".to_string(), "-1".to_string()];
        let got = class_indices(
            &p,
            "predictions",
            &[
                Label::Number(-1.0),
                Label::Text("+1".into()),
                Label::Number(1.0),
            ],
            &classes,
        )
        .unwrap();
        assert_eq!(got, [1, 0, 0]);
        let e = class_indices(&p, "predictions", &[Label::Text("2".into())], &classes)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown label \"2\""), "{e}");
    }

    #[test]
    fn a_program_that_sleeps_past_its_timeout_is_killed_promptly() {
        let p = program(&["sh", "-c", "sleep 30"], 0.2);
        let t = Instant::now();
        let dir = workdir().unwrap();
        let e = p.call(dir.path(), b"{}").unwrap_err().to_string();
        assert!(e.contains("timed out after 0.2 s"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    }

    #[test]
    fn declared_steps_are_marked_and_a_silent_program_is_not_private() {
        let p = program(&["x"], 1.0);
        let mut l = Ledger::default();
        record_declared(&p, &[], &mut l).unwrap();
        assert!(!l.is_private_within(Some(1.0)));
        let step = |eps| DeclaredStep {
            name: "train".into(),
            mechanism: "laplace".into(),
            epsilon: eps,
            delta: None,
            sensitivity: Some(1.0),
        };
        let mut l = Ledger::default();
        record_declared(&p, &[step(0.5), step(0.5)], &mut l).unwrap();
        assert!(l.is_private_within(Some(1.0)));
        assert!(!l.is_private_within(Some(0.9)));
        assert_eq!(l.entries[0].note.as_deref(), Some(DECLARED));
        assert!(record_declared(&p, &[step(f64::NAN)], &mut Ledger::default()).is_err());
    }
}
