//! One error type for the whole crate, reported once at the CLI edge.

use std::path::PathBuf;

/// Everything that can go wrong, each variant naming the file and field or line involved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}:{line}: {reason}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{}: field `{field}`: {reason}", file.display())]
    Spec {
        file: PathBuf,
        field: String,
        reason: String,
    },
    #[error("{}", missing_data(dataset, path, dir))]
    MissingData {
        dataset: String,
        path: PathBuf,
        dir: PathBuf,
    },
    #[error(
        "dataset `{dataset}`: {} has SHA-256 {actual}, the catalog expects {expected}: the file is corrupt or a different version",
        path.display()
    )]
    Checksum {
        dataset: String,
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error("download of {url} failed: {reason}")]
    Fetch { url: String, reason: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid parameter `{name}`: {reason}")]
    Param { name: String, reason: String },
    #[error("dataset `{dataset}`: {reason}")]
    Data { dataset: String, reason: String },
    #[error("results store {}: {reason}", path.display())]
    Store { path: PathBuf, reason: String },
    /// A plan above `limit` pending trials was not confirmed.
    #[error("{what}: {reason} (plans above {limit} pending trials need confirmation)")]
    Confirm {
        what: String,
        reason: String,
        limit: u64,
    },
    /// `epsilab check` found regressions (each already printed).
    #[error("check failed: {0}")]
    Check(String),
    /// `epsilab compare` flagged cells (each already printed) or could not read its inputs.
    #[error("compare failed: {0}")]
    Compare(String),
    /// An external program's run failed (`learner`/`release = "external"`, src/external.rs).
    #[error(
        "pipeline `{pipeline}`, cell {cell}: external command `{command}`: {reason}{}",
        stderr_tail(stderr)
    )]
    External {
        pipeline: String,
        cell: String,
        command: String,
        reason: String,
        /// The tail of the program's standard error.
        stderr: String,
    },
    #[error(transparent)]
    Linfa(#[from] linfa::Error),
}

/// [`Error::MissingData`]'s message. A catalog file is looked up in the data directory, which
/// `--data-dir` moves; a spec's own file is read relative to the spec, which it does not.
fn missing_data(dataset: &str, path: &std::path::Path, dir: &std::path::Path) -> String {
    if path.starts_with(dir) {
        format!(
            "dataset `{dataset}`: file not found: {} (data directory: {}). The built-in datasets \
             ship gzip-compressed in the repository's datasets/ folder; point --data-dir or \
             EPSILAB_DATA at a folder holding the files (plain or .gz), or fetch a file with \
             `epsilab data fetch`",
            path.display(),
            dir.display()
        )
    } else {
        format!(
            "dataset `{dataset}`: file not found: {} (nor with .gz). A path in a spec's \
             [dataset.{dataset}] is relative to the spec's folder (--data-dir does not move it)",
            path.display()
        )
    }
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// The same error with the pipeline and cell it happened in, for an external program's
    /// error (the program does not know them); any other error unchanged.
    pub fn in_cell(self, in_pipeline: &str, in_cell: &str) -> Self {
        match self {
            Error::External {
                command,
                reason,
                stderr,
                ..
            } => Error::External {
                pipeline: in_pipeline.into(),
                cell: in_cell.into(),
                command,
                reason,
                stderr,
            },
            other => other,
        }
    }

    pub fn param(name: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Param {
            name: name.into(),
            reason: reason.into(),
        }
    }
}

/// "; its standard error ends with: ..." when there is one.
fn stderr_tail(stderr: &str) -> String {
    if stderr.is_empty() {
        "; it wrote nothing on standard error".into()
    } else {
        format!("; its standard error ends with:\n{stderr}")
    }
}

pub type Result<T> = std::result::Result<T, Error>;
