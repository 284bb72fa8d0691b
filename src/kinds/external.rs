//! `learner = "external"` and `release = "external"`: a learner or a scalar release written in
//! any language, run through the protocol of [`crate::external`] (docs/external.md).
//!
//! Privacy: epsilab cannot see inside the program. The steps it declares are recorded as
//! declared ("declared, not audited"), under the run's relation, and the record is `private`
//! only when every declared step fits the cell's budget; a program that declares no step is
//! recorded as non-private. `epsilab audit --external` tests a declared ε from outside.

use super::{Axis, CellBudget, Described, GridValues, LearnerKind, Refusal, refuse};
use super::{ReleaseInput, ReleaseKind, ReleaseOutput};
use crate::data::{Dataset, Features};
use crate::error::Result;
use crate::external::{self, Program, Reply, Request};
use crate::learners::{Classifier, FitInput, Learner, TrialLog};
use crate::release::query::{Bounds, Clamped, Query};
use rand::RngCore;
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

/// Default `timeout_s`: ten minutes per run.
const DEFAULT_TIMEOUT_S: f64 = 600.0;

/// Largest `timeout_s`: a year. Far beyond any run, and far below what a `Duration` holds (a
/// larger value panicked in every worker when converted).
pub const MAX_TIMEOUT_S: f64 = 365.0 * 24.0 * 3600.0;

/// Declares an external kind's struct: the fields every external kind reads, then its own.
macro_rules! external_kind {
    ($(#[$doc:meta])* $ty:ident { $($(#[$fdoc:meta])* $field:ident: $t:ty,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $ty {
            /// The program and its arguments; relative paths are relative to the spec's folder.
            command: Vec<String>,
            /// Free-form parameters, passed through as the request's `params`.
            params: Option<toml::Table>,
            /// Seconds one run may take before it is killed (default 600).
            timeout_s: Option<f64>,
            /// The δ sent in the request (the program's (ε, δ) target), if any.
            delta: Option<f64>,
            $($(#[$fdoc])* $field: $t,)*
        }

        impl $ty {
            fn command(&self) -> Command {
                Command {
                    command: self.command.clone(),
                    timeout_s: self.timeout_s,
                    delta: self.delta,
                }
            }
        }
    };
}

/// The fields every external kind reads.
#[derive(Debug, Clone)]
struct Command {
    command: Vec<String>,
    timeout_s: Option<f64>,
    delta: Option<f64>,
}

impl Command {
    fn validate(&self) -> std::result::Result<(), Refusal> {
        if self.command.first().is_none_or(|c| c.trim().is_empty()) {
            return Err(refuse(
                "command",
                "give the program and its arguments, e.g. [\"python3\", \"mine.py\"]",
            ));
        }
        if let Some(t) = self.timeout_s
            && !(t > 0.0 && t <= MAX_TIMEOUT_S)
        {
            return Err(refuse(
                "timeout_s",
                format!("must be > 0 and at most {MAX_TIMEOUT_S} s (a year), got {t}"),
            ));
        }
        if let Some(d) = self.delta
            && !(d > 0.0 && d < 1.0)
        {
            return Err(refuse("delta", format!("must be in (0, 1), got {d}")));
        }
        Ok(())
    }

    /// The program with its paths resolved against the trial's spec folder.
    fn program(&self, log: &TrialLog) -> Program {
        let dir = log.spec_dir.as_deref().unwrap_or(Path::new("."));
        Program::resolve(
            &self.command,
            dir,
            self.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S),
        )
    }

    /// The request of one trial: its seed is the first draw of the trial's `external` stream.
    fn request<'a>(
        &self,
        epsilon: Option<f64>,
        log: &mut TrialLog,
        params: &'a serde_json::Value,
    ) -> Request<'a> {
        Request {
            train: "train.csv",
            test: None,
            epsilon,
            delta: self.delta,
            seed: log.streams.stream("external").next_u32(),
            relation: log.ledger.relation().key(),
            classes: None,
            bounds: None,
            params,
        }
    }
}

external_kind!(
    /// `learner = "external"`.
    ExternalLearner {
        /// `false`: a non-private reference (no epsilon is sent or spent). Default `true`.
        private: Option<bool>,
    }
);

impl Described for ExternalLearner {
    const NAME: &'static str = "external";
    const ABOUT: &'static str = "a learner run as an external program (docs/external.md): epsilab sends the split as CSV and computes accuracy from its predictions; its ledger is recorded as declared, not audited, and private only when every step fits the cell's budget";
    const FIELDS: &'static [&'static str] = &["command", "params", "timeout_s", "delta", "private"];
}

impl LearnerKind for ExternalLearner {
    fn private(&self) -> bool {
        self.private.unwrap_or(true)
    }

    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        self.command().validate()
    }

    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        let epsilon = if self.private() {
            Some(budget.train_of(Self::NAME)?)
        } else {
            None
        };
        Ok(Box::new(ExternalFit {
            command: self.command(),
            epsilon,
            params: external::params_json(self.params.as_ref()),
        }))
    }

    /// A program start and two CSV files per fit: rank it with the costlier learners.
    fn cost(&self) -> u64 {
        50
    }
}

/// One cell's external learner.
#[derive(Debug)]
struct ExternalFit {
    command: Command,
    epsilon: Option<f64>,
    params: serde_json::Value,
}

impl Learner for ExternalFit {
    fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
        let program = self.command.program(log);
        let dir = external::workdir()?;
        let columns: Vec<usize> = match input.features {
            Some(f) => f.to_vec(),
            None => (0..input.data.n_features()).collect(),
        };
        for (name, rows) in [("train.csv", input.train), ("test.csv", input.test)] {
            external::write_file(dir.path(), name, &rows_csv(input.data, rows, &columns))?;
        }
        let mut request = self.command.request(self.epsilon, log, &self.params);
        request.test = Some("test.csv");
        request.classes = Some(&input.data.class_names);
        request.bounds = input.data.bounds.as_ref().map(|b| {
            let pairs: Vec<[f64; 2]> = columns.iter().map(|&c| [b.lo[c], b.hi[c]]).collect();
            serde_json::json!(pairs)
        });
        let (reply, _) = program.call(dir.path(), &request.to_bytes())?;
        let model = ExternalModel::from_reply(&program, &reply, input)?;
        log.metrics.extend(reply.metrics);
        external::record_declared(&program, &reply.ledger, &mut log.ledger)?;
        Ok(Box::new(model))
    }
}

/// The rows as CSV: a header `label,x1,...,xD`, then the class name and the kept columns.
fn rows_csv(data: &Dataset, rows: &[u32], columns: &[usize]) -> String {
    let mut s = String::from("label");
    for j in 1..=columns.len() {
        let _ = write!(s, ",x{j}");
    }
    s.push('\n');
    let mut line = vec![0.0; data.n_features()];
    for &r in rows {
        let r = r as usize;
        push_label(&mut s, &data.class_names[data.labels[r] as usize]);
        match &data.features {
            Features::Binary(m) => {
                line.iter_mut().for_each(|v| *v = 0.0);
                for &j in m.row(r) {
                    line[j as usize] = 1.0;
                }
            }
            Features::Dense(x) => line.copy_from_slice(&x.view().row(r).to_vec()),
        }
        for &c in columns {
            let _ = write!(s, ",{}", line[c]);
        }
        s.push('\n');
    }
    s
}

/// A label as a CSV field: quoted (RFC 4180) only when it holds a comma, quote or line break.
fn push_label(s: &mut String, label: &str) {
    if label.contains([',', '"', '\n', '\r']) {
        s.push('"');
        s.push_str(&label.replace('"', "\"\""));
        s.push('"');
    } else {
        s.push_str(label);
    }
}

/// The predictions an external program reported, by row.
struct ExternalModel {
    by_row: HashMap<u32, u16>,
}

impl ExternalModel {
    /// Checks the reply against the cell: one prediction per test row (and per training row,
    /// if given), each a known label.
    fn from_reply(program: &Program, reply: &Reply, input: &FitInput) -> Result<Self> {
        let classes = &input.data.class_names;
        let Some(test) = &reply.predictions else {
            return Err(program.error("the reply has no `predictions`", ""));
        };
        let mut by_row = HashMap::new();
        let sets = [
            ("predictions", Some(test), input.test),
            (
                "train_predictions",
                reply.train_predictions.as_ref(),
                input.train,
            ),
        ];
        for (what, labels, rows) in sets {
            let Some(labels) = labels else { continue };
            if labels.len() != rows.len() {
                return Err(program.error(
                    format!(
                        "`{what}` has {} labels for {} rows",
                        labels.len(),
                        rows.len()
                    ),
                    "",
                ));
            }
            let idx = external::class_indices(program, what, labels, classes)?;
            by_row.extend(rows.iter().copied().zip(idx));
        }
        Ok(ExternalModel { by_row })
    }
}

impl Classifier for ExternalModel {
    fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Vec<u16>> {
        rows.iter()
            .map(|r| {
                self.by_row
                    .get(r)
                    .copied()
                    .ok_or_else(|| crate::error::Error::Data {
                        dataset: data.name.clone(),
                        reason: format!("the external program gave no prediction for row {r}"),
                    })
            })
            .collect()
    }

    fn covers(&self, rows: &[u32]) -> bool {
        rows.iter().all(|r| self.by_row.contains_key(r))
    }
}

/// The exact answer a release's `truth` is computed as, on the column clamped to its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Truth {
    Sum,
    Mean,
    Median,
}

external_kind!(
    /// `release = "external"`.
    ExternalRelease {
        /// Public bounds [lo, hi], sent in the request and used for `truth`.
        bounds: Option<[f64; 2]>,
        /// The query the program answers, so that epsilab records `truth` and `abs_error`.
        truth: Option<Truth>,
    }
);

impl Described for ExternalRelease {
    const NAME: &'static str = "external";
    const ABOUT: &'static str = "a scalar release run as an external program (docs/external.md): epsilab sends the column as CSV and records its `release` (and truth and abs_error for a declared `truth` query); its ledger is recorded as declared, not audited";
    const FIELDS: &'static [&'static str] =
        &["command", "params", "timeout_s", "delta", "bounds", "truth"];
}

impl ExternalRelease {
    /// The public bounds, checked.
    fn bounds(&self) -> Option<Result<Bounds>> {
        self.bounds.map(|b| Bounds::new(b[0], b[1]))
    }

    /// One run on `values` at `epsilon`: the program's reply, checked to hold a release.
    pub fn call(&self, values: &[f64], epsilon: Option<f64>, log: &mut TrialLog) -> Result<f64> {
        let command = self.command();
        let program = command.program(log);
        let dir = external::workdir()?;
        let mut csv = String::from("x1\n");
        for v in values {
            let _ = writeln!(csv, "{v}");
        }
        external::write_file(dir.path(), "train.csv", &csv)?;
        let params = external::params_json(self.params.as_ref());
        let mut request = command.request(epsilon, log, &params);
        request.bounds = self.bounds.map(|b| serde_json::json!(b));
        let (reply, _) = program.call(dir.path(), &request.to_bytes())?;
        let Some(value) = reply.release.filter(|v| v.is_finite()) else {
            return Err(program.error("the reply has no finite `release`", ""));
        };
        log.metrics.extend(reply.metrics);
        external::record_declared(&program, &reply.ledger, &mut log.ledger)?;
        Ok(value)
    }
}

impl ReleaseKind for ExternalRelease {
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        self.command().validate()?;
        if let Some(Err(_)) = self.bounds() {
            return Err(refuse("bounds", "need finite lo < hi"));
        }
        if self.truth.is_some() && self.bounds.is_none() {
            return Err(refuse(
                "truth",
                "needs `bounds` (the truth is computed on the clamped column)",
            ));
        }
        Ok(())
    }

    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let value = self.call(input.values, input.epsilon, log)?;
        log.metrics.insert("release".into(), value);
        if let (Some(truth), Some(bounds)) = (self.truth, self.bounds().transpose()?) {
            let data = Clamped::new(input.values, bounds)?;
            let query = match truth {
                Truth::Sum => Query::Sum,
                Truth::Mean => Query::Mean { n: data.len() },
                Truth::Median => Query::Quantile(0.5),
            };
            let t = query.answer(&data)?;
            log.metrics.insert("truth".into(), t);
            log.metrics.insert("error".into(), value - t);
            log.metrics.insert("abs_error".into(), (value - t).abs());
            log.metrics.insert("clamped".into(), data.clamped as f64);
        }
        Ok(ReleaseOutput::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{BinaryMatrix, SplitRule};

    fn kind<T: serde::de::DeserializeOwned>(text: &str) -> T {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn the_csv_holds_the_label_as_written_and_the_kept_columns() {
        let mut m = BinaryMatrix::new(3);
        m.push_row(&[0, 2]);
        m.push_row(&[1]);
        let data = Dataset::new(
            "d".into(),
            "d".into(),
            Features::Binary(m),
            vec![1, 0],
            vec!["no".into(), "yes, \"really\"".into()],
            SplitRule::Fixed { n_train: 2 },
        );
        assert_eq!(
            rows_csv(&data, &[1, 0], &[0, 2]),
            "label,x1,x2\nno,0,0\n\"yes, \"\"really\"\"\",1,1\n"
        );
    }

    #[test]
    fn bad_fields_are_refused_by_name() {
        let refused = |text: &str| {
            let k: ExternalRelease = kind(text);
            k.validate(&[]).unwrap_err().field
        };
        assert_eq!(refused("command = []"), "command");
        assert_eq!(refused("command = [\"x\"]\ntimeout_s = 0"), "timeout_s");
        // 1e300 s panicked converting to a Duration in every worker; nan and inf as well.
        for t in ["1e300", "nan", "inf", "31536001"] {
            assert_eq!(
                refused(&format!("command = [\"x\"]\ntimeout_s = {t}")),
                "timeout_s"
            );
        }
        let year: ExternalRelease = kind("command = [\"x\"]\ntimeout_s = 31536000");
        assert!(year.validate(&[]).is_ok());
        assert_eq!(refused("command = [\"x\"]\ndelta = 1"), "delta");
        assert_eq!(refused("command = [\"x\"]\ntruth = \"mean\""), "truth");
        assert_eq!(refused("command = [\"x\"]\nbounds = [1, 0]"), "bounds");
        let ok: ExternalLearner =
            kind("command = [\"x\"]\nparams = { a = [1, 2] }\nprivate = false");
        assert!(ok.validate(&[]).is_ok());
        assert!(!ok.private());
    }
}
