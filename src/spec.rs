//! Experiment specs: the TOML a researcher writes, parsed strictly and validated once.
//!
//! Unknown keys, wrong types and impossible values are refused with the file, the field and the
//! reason. A validated [`Spec`] is what the planner expands into trials.

use crate::data::{Catalog, DatasetDef};
use crate::error::{Error, Result};
use crate::learners::logistic::{FmSensitivity, LambdaRule, Scaling};
use crate::learners::{Release, Threshold, learner_info};
use crate::selection::SELECTORS;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `[experiment]` table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentDef {
    /// Folder name of the results (letters, digits, `_`, `-`, `.`).
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// Repetitions per (dataset, pipeline, grid point).
    pub trials: u32,
    pub seed: u64,
    /// Catalog names (or names defined in `[dataset.NAME]`).
    pub datasets: Vec<String>,
}

/// Grid axes; every combination of the given values is run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridDef {
    /// Total privacy budget of a pipeline.
    pub epsilon: Option<Vec<f64>>,
    /// Algorithm 1's threshold t.
    pub threshold: Option<Vec<Threshold>>,
    /// Number of features T a selection step keeps.
    pub features: Option<Vec<usize>>,
    /// Logistic regression's lambda (thesis scale: lambda = N Lambda of Chaudhuri et al.).
    pub lambda: Option<Vec<f64>>,
    /// Training-set size: a seeded random subset of the trial's training rows.
    pub n_train: Option<Vec<usize>>,
}

/// How a pipeline's epsilon is split between its steps (fractions summing to 1).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BudgetDef {
    #[serde(default)]
    pub selection: f64,
    pub train: f64,
    /// Share of private lambda selection (`lambda = "private"`).
    #[serde(default)]
    pub lambda: f64,
}

impl Default for BudgetDef {
    fn default() -> Self {
        BudgetDef {
            selection: 0.0,
            train: 1.0,
            lambda: 0.0,
        }
    }
}

/// One `[[pipeline]]`: a learner with its parameters and budget split.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineDef {
    /// Series name in tables and figures.
    pub name: String,
    /// One of [`crate::learners::LEARNERS`] (or give a `probe`).
    pub learner: Option<String>,
    /// An analysis probe instead of a learner: one of [`crate::analysis::PROBES`].
    pub probe: Option<String>,
    /// Smoothing pseudo-count (nb, private_nb); default 1.
    pub alpha: Option<f64>,
    /// Algorithm 1's threshold (private_nb); default `q65`.
    pub threshold: Option<Threshold>,
    /// Which counts Algorithm 1 releases (private_nb); default `on_off`.
    pub release: Option<Release>,
    /// Feature selection step before training: one of [`SELECTORS`].
    pub selection: Option<String>,
    /// Score the selector ranks by: `mi` (mutual information, default) or `count` (two classes).
    pub score: Option<ScoreName>,
    /// Public threshold of the `sparse` selector, in score units.
    pub sparse_threshold: Option<f64>,
    /// Number of features T to keep (or use the `features` grid axis).
    pub features: Option<usize>,
    /// Logistic regression's lambda: a number, `"cv"` (5-fold cross-validation, non-private) or
    /// `"private"` (exponential mechanism, spends `budget.lambda`).
    pub lambda: Option<LambdaRule>,
    /// How LR rows are scaled into the unit ball: `thesis` (data-derived, non-private),
    /// `public` (default) or `own_norm`.
    pub scaling: Option<Scaling>,
    /// Functional mechanism bound: `sens1` (D^2/4 + 3D) or `sens2` (D/4 + 3 sqrt D).
    pub fm_sensitivity: Option<FmSensitivity>,
    pub budget: Option<BudgetDef>,
}

/// The score a selector ranks features by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScoreName {
    Mi,
    Count,
}

/// What `epsilab report` draws.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportDef {
    /// `figure` (metrics over a grid axis), `dataset_summary` (sizes and baselines), `scatter`
    /// or `curve` (vectors recorded by probes), `top_features` (a probe's top-feature table).
    #[serde(default)]
    pub kind: ReportKind,
    /// Vectors drawn by `scatter` and `curve` reports.
    #[serde(default)]
    pub series: Vec<VectorSeries>,
    #[serde(default)]
    pub log_y: bool,
    /// Sample complexity: the pipeline whose accuracy on the most data is the target.
    pub reference: Option<String>,
    /// Sample complexity: how close (accuracy, absolute) counts as reaching the target.
    pub tolerance: Option<f64>,
    /// Scatter/curve: one panel per series instead of one per dataset.
    #[serde(default)]
    pub panel_per_series: bool,
    pub x_label: Option<String>,
    /// Grid axis on the horizontal axis.
    pub x: Option<String>,
    #[serde(default)]
    pub log_x: bool,
    /// Per-trial quantities plotted: `test_accuracy`, `train_accuracy` or a named metric.
    #[serde(default = "default_metrics")]
    pub metrics: Vec<String>,
    pub y_label: Option<String>,
}

impl Default for ReportDef {
    fn default() -> Self {
        ReportDef {
            kind: ReportKind::Figure,
            series: Vec::new(),
            log_y: false,
            panel_per_series: false,
            reference: None,
            tolerance: None,
            x_label: None,
            x: None,
            log_x: false,
            metrics: default_metrics(),
            y_label: None,
        }
    }
}

fn default_metrics() -> Vec<String> {
    vec!["test_accuracy".into()]
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    #[default]
    Figure,
    DatasetSummary,
    Scatter,
    Curve,
    TopFeatures,
    /// Every recorded vector as a column, one table per (dataset, pipeline, grid point).
    VectorsTable,
    /// Appendix B: the smallest `n_train` at which each pipeline comes within `tolerance` of
    /// the `reference` pipeline's accuracy on the most data (best over the other grid axes).
    SampleComplexity,
}

/// One drawn series of recorded vectors: `y` against `x` (or against the index 1..n).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorSeries {
    pub y: String,
    pub x: Option<String>,
    pub label: Option<String>,
    /// A 0/1 vector: points where it is 1 are drawn as crosses in a second series.
    pub split_by: Option<String>,
}

/// Published values to compare against (`[paper]`): numbers with tolerances, and qualitative
/// claims about the order of two series.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperDef {
    /// Where the numbers come from (e.g. "Table 4.2").
    pub source: Option<String>,
    #[serde(default)]
    pub cell: Vec<PaperCell>,
    #[serde(default)]
    pub claim: Vec<PaperClaim>,
}

/// One published number: the mean of `metric` for (dataset, pipeline[, x]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperCell {
    pub dataset: String,
    pub pipeline: String,
    #[serde(default = "default_metric")]
    pub metric: String,
    /// Value on the report's x axis (absent for pipelines that do not vary along it).
    pub x: Option<serde_json::Value>,
    /// Other grid values identifying the cell (e.g. `{ epsilon = 0.1 }`).
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
    pub value: f64,
    /// Allowed |ours - published| before the verdict is "differs".
    pub tolerance: f64,
    pub note: Option<String>,
}

fn default_metric() -> String {
    "test_accuracy".into()
}

/// A qualitative claim: series `above` beats series `below` (by at least `margin`) on `dataset`
/// for every x in [x_min, x_max] where both exist (a reference line counts at every x).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperClaim {
    pub text: String,
    pub dataset: String,
    pub above: String,
    pub below: String,
    #[serde(default = "default_metric")]
    pub metric: String,
    #[serde(default)]
    pub margin: f64,
    /// Other grid values selecting the series (e.g. `{ epsilon = 1 }`); a series without the key
    /// (a reference line) matches any value.
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
    /// Take the `above` series at this one x value only (compares two points of an axis, e.g.
    /// a large threshold against threshold 0).
    pub above_x: Option<serde_json::Value>,
    /// Take the `below` series at this one x value only.
    pub below_x: Option<serde_json::Value>,
    pub x_min: Option<f64>,
    pub x_max: Option<f64>,
    /// Why the harness may differ, when it is known to (shown with the verdict).
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    experiment: ExperimentDef,
    #[serde(default)]
    grid: GridDef,
    pipeline: Vec<PipelineDef>,
    #[serde(default)]
    report: ReportDef,
    #[serde(default)]
    paper: PaperDef,
    /// Inline dataset definitions (same fields as `datasets/catalog.toml`).
    #[serde(default, skip_serializing)]
    dataset: BTreeMap<String, DatasetDef>,
}

/// A validated spec.
#[derive(Debug, Clone)]
pub struct Spec {
    pub path: PathBuf,
    pub experiment: ExperimentDef,
    pub grid: GridDef,
    pub pipelines: Vec<PipelineDef>,
    pub report: ReportDef,
    /// Published values to compare against.
    pub paper: PaperDef,
    /// The built-in catalog plus the spec's inline datasets.
    pub catalog: Catalog,
    /// SHA-256 of everything that determines the trials (not the report settings).
    pub hash: String,
    /// SHA-256 of what determines the *existing* cells: [`Spec::hash`] without the trial
    /// count, the dataset list, the grid and the inline dataset definitions. Specs that differ
    /// only there share their common cells (the store checks the rest per record and dataset).
    pub cells_hash: String,
    /// SHA-256 of each inline `[dataset.NAME]` definition (canonical JSON of the TOML table).
    pub definitions: BTreeMap<String, String>,
}

impl Spec {
    /// Reads, parses and validates a spec file.
    pub fn load(path: &Path) -> Result<Spec> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Spec::parse(&text, path)
    }

    /// Parses and validates spec text; `path` names the file in errors and anchors inline paths.
    pub fn parse(text: &str, path: &Path) -> Result<Spec> {
        let raw: RawSpec = toml::from_str(text).map_err(|e| {
            let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
            Error::Spec {
                file: path.into(),
                field: format!("line {line}, column {col}"),
                reason: e.message().to_string(),
            }
        })?;
        let mut catalog = Catalog::builtin();
        let base = path.parent().map(Path::to_path_buf);
        for (name, def) in &raw.dataset {
            catalog.insert(name, def.clone(), base.clone());
        }
        let hash = spec_hash(text);
        let (cells_hash, definitions) = cells_hash(text);
        let spec = Spec {
            path: path.into(),
            experiment: raw.experiment,
            grid: raw.grid,
            pipelines: raw.pipeline,
            report: raw.report,
            paper: raw.paper,
            catalog,
            hash,
            cells_hash,
            definitions,
        };
        spec.validate()?;
        Ok(spec)
    }

    fn err(&self, field: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::Spec {
            file: self.path.clone(),
            field: field.into(),
            reason: reason.into(),
        }
    }

    fn validate(&self) -> Result<()> {
        let e = &self.experiment;
        if e.name.is_empty()
            || !e
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            || e.name.starts_with('.')
        {
            return Err(self.err(
                "experiment.name",
                format!(
                    "`{}` must be non-empty letters, digits, `_`, `-` or `.`",
                    e.name
                ),
            ));
        }
        if e.trials == 0 {
            return Err(self.err("experiment.trials", "must be at least 1"));
        }
        if e.datasets.is_empty() {
            return Err(self.err("experiment.datasets", "list at least one dataset"));
        }
        for (i, d) in e.datasets.iter().enumerate() {
            if self.catalog.get(d).is_none() {
                let known: Vec<&str> = self.catalog.names().collect();
                return Err(self.err(
                    format!("experiment.datasets[{i}]"),
                    format!(
                        "unknown dataset `{d}`; known: {} (or define [dataset.{d}])",
                        known.join(", ")
                    ),
                ));
            }
            let mut chain = vec![d.as_str()];
            while let Some(DatasetDef::NbProxy(p)) = self.catalog.get(chain[chain.len() - 1]) {
                if chain.contains(&p.of.as_str()) {
                    return Err(self.err(
                        format!("dataset.{}.of", chain[chain.len() - 1]),
                        format!(
                            "`{}` makes a cycle of nb_proxy sources: {} -> {}",
                            p.of,
                            chain.join(" -> "),
                            p.of
                        ),
                    ));
                }
                chain.push(&p.of);
            }
            if e.datasets[..i].contains(d) {
                return Err(self.err(
                    format!("experiment.datasets[{i}]"),
                    format!("`{d}` is listed twice"),
                ));
            }
        }
        if let Some(eps) = &self.grid.epsilon {
            if eps.is_empty() {
                return Err(self.err("grid.epsilon", "give at least one value"));
            }
            for (i, &v) in eps.iter().enumerate() {
                if !(v.is_finite() && v > 0.0) {
                    return Err(self.err(
                        format!("grid.epsilon[{i}]"),
                        format!("epsilon must be finite and > 0, got {v}"),
                    ));
                }
            }
        }
        if let Some(ts) = &self.grid.threshold {
            if ts.is_empty() {
                return Err(self.err("grid.threshold", "give at least one value"));
            }
            for (i, t) in ts.iter().enumerate() {
                check_threshold(t).map_err(|r| self.err(format!("grid.threshold[{i}]"), r))?;
            }
        }
        if let Some(fs) = &self.grid.features {
            if fs.is_empty() {
                return Err(self.err("grid.features", "give at least one value"));
            }
            if let Some(i) = fs.iter().position(|&t| t == 0) {
                return Err(self.err(format!("grid.features[{i}]"), "must be at least 1"));
            }
        }
        if let Some(ls) = &self.grid.lambda
            && let Some(i) = ls.iter().position(|l| !(l.is_finite() && *l > 0.0))
        {
            return Err(self.err(format!("grid.lambda[{i}]"), "must be finite and > 0"));
        }
        if let Some(ns) = &self.grid.n_train
            && let Some(i) = ns.iter().position(|&n| n < 2)
        {
            return Err(self.err(format!("grid.n_train[{i}]"), "must be at least 2"));
        }
        let g = &self.grid;
        let axes: [(&str, Option<Vec<String>>); 5] = [
            ("epsilon", g.epsilon.as_deref().map(spellings)),
            ("threshold", g.threshold.as_deref().map(spellings)),
            ("features", g.features.as_deref().map(spellings)),
            ("lambda", g.lambda.as_deref().map(spellings)),
            ("n_train", g.n_train.as_deref().map(spellings)),
        ];
        for (axis, values) in axes {
            let values = values.unwrap_or_default();
            for (i, v) in values.iter().enumerate() {
                if let Some(j) = values[..i].iter().position(|w| w == v) {
                    return Err(self.err(
                        format!("grid.{axis}[{i}]"),
                        format!("{v} repeats grid.{axis}[{j}]; each grid value is run once, give it once (raise experiment.trials for more repetitions)"),
                    ));
                }
            }
        }
        if self.pipelines.is_empty() {
            return Err(self.err("pipeline", "define at least one [[pipeline]]"));
        }
        for (i, p) in self.pipelines.iter().enumerate() {
            self.validate_pipeline(i, p)?;
        }
        self.validate_report()
    }

    fn validate_pipeline(&self, i: usize, p: &PipelineDef) -> Result<()> {
        let f = |field: &str| format!("pipeline[{i}].{field}");
        if p.name.trim().is_empty() {
            return Err(self.err(f("name"), "must not be empty"));
        }
        if self.pipelines[..i].iter().any(|q| q.name == p.name) {
            return Err(self.err(
                f("name"),
                format!("`{}` is used by an earlier pipeline", p.name),
            ));
        }
        if let Some(probe) = &p.probe {
            return self.validate_probe(i, p, probe);
        }
        let Some(learner) = &p.learner else {
            return Err(self.err(f("learner"), "give a `learner` (or a `probe`)"));
        };
        let Some(info) = learner_info(learner) else {
            let known: Vec<&str> = crate::learners::LEARNERS.iter().map(|l| l.name).collect();
            return Err(self.err(
                f("learner"),
                format!("unknown learner `{learner}`; known: {}", known.join(", ")),
            ));
        };
        for (field, set) in [
            ("alpha", p.alpha.is_some()),
            ("threshold", p.threshold.is_some()),
            ("release", p.release.is_some()),
            ("lambda", p.lambda.is_some()),
            ("scaling", p.scaling.is_some()),
            ("fm_sensitivity", p.fm_sensitivity.is_some()),
        ] {
            if set && !info.params.contains(&field) {
                return Err(self.err(f(field), format!("does not apply to learner `{learner}`")));
            }
        }
        if let Some(a) = p.alpha
            && !(a.is_finite() && a >= 0.0)
        {
            return Err(self.err(f("alpha"), format!("must be finite and >= 0, got {a}")));
        }
        if let Some(t) = &p.threshold {
            check_threshold(t).map_err(|r| self.err(f("threshold"), r))?;
            if self.grid.threshold.is_some() {
                return Err(self.err(f("threshold"), "is also a grid axis; set it in one place"));
            }
        }
        match p.lambda {
            Some(LambdaRule::Fixed(l)) if !(l.is_finite() && l > 0.0) => {
                return Err(self.err(f("lambda"), format!("must be finite and > 0, got {l}")));
            }
            Some(_) if self.grid.lambda.is_some() => {
                return Err(self.err(f("lambda"), "is also a grid axis; set it in one place"));
            }
            None if info.params.contains(&"lambda") && self.grid.lambda.is_none() => {
                return Err(self.err(
                    f("lambda"),
                    "logistic regression needs lambda: a number, \"cv\", \"private\" or a grid axis",
                ));
            }
            _ => {}
        }
        let selection_private = self.validate_selection(i, p)?;
        let budget = p.budget.unwrap_or_default();
        let private_lambda = p.lambda == Some(LambdaRule::Private);
        if private_lambda != (budget.lambda > 0.0) {
            return Err(self.err(
                f("budget.lambda"),
                "give a positive share exactly when lambda = \"private\"",
            ));
        }
        if private_lambda && !info.uses_epsilon {
            return Err(self.err(
                f("lambda"),
                "private lambda selection needs a private learner",
            ));
        }
        for (field, v) in [
            ("budget.selection", budget.selection),
            ("budget.train", budget.train),
            ("budget.lambda", budget.lambda),
        ] {
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                return Err(self.err(f(field), format!("a share must be in [0, 1], got {v}")));
            }
        }
        let total = budget.selection + budget.train + budget.lambda;
        if (total - 1.0).abs() > 1e-9 {
            return Err(self.err(
                f("budget"),
                format!(
                    "shares must sum to 1 (they split the grid's epsilon), got {} + {} + {} = {total}",
                    budget.selection, budget.train, budget.lambda
                ),
            ));
        }
        match (selection_private, budget.selection > 0.0) {
            (Some(true), false) => {
                return Err(self.err(
                    f("budget.selection"),
                    "a private selection step needs a positive share",
                ));
            }
            (Some(false), true) => {
                return Err(self.err(
                    f("budget.selection"),
                    "the non-private selector spends no budget; give it share 0",
                ));
            }
            (None, true) => {
                return Err(self.err(
                    f("budget.selection"),
                    "this pipeline has no selection step to spend it",
                ));
            }
            _ => {}
        }
        if info.uses_epsilon && budget.train == 0.0 {
            return Err(self.err(
                f("budget.train"),
                "a private learner needs a positive share",
            ));
        }
        if !info.uses_epsilon && budget.train > 0.0 && selection_private == Some(true) {
            return Err(self.err(
                f("budget.train"),
                format!(
                    "learner `{}` spends no budget; give the selection the whole share",
                    learner
                ),
            ));
        }
        if (info.uses_epsilon || selection_private == Some(true)) && self.grid.epsilon.is_none() {
            return Err(self.err(
                "grid.epsilon",
                format!("pipeline `{}` is private and needs an epsilon axis", p.name),
            ));
        }
        Ok(())
    }

    /// A probe pipeline: known probe, no learner or selection fields, epsilon axis if it spends.
    fn validate_probe(&self, i: usize, p: &PipelineDef, probe: &str) -> Result<()> {
        let f = |field: &str| format!("pipeline[{i}].{field}");
        if !crate::analysis::PROBES.iter().any(|(n, _)| *n == probe) {
            let known: Vec<&str> = crate::analysis::PROBES.iter().map(|(n, _)| *n).collect();
            return Err(self.err(
                f("probe"),
                format!("unknown probe `{probe}`; known: {}", known.join(", ")),
            ));
        }
        for (field, set) in [
            ("learner", p.learner.is_some()),
            ("alpha", p.alpha.is_some()),
            ("threshold", p.threshold.is_some()),
            ("release", p.release.is_some()),
            ("selection", p.selection.is_some()),
            ("score", p.score.is_some()),
            ("sparse_threshold", p.sparse_threshold.is_some()),
            ("budget", p.budget.is_some()),
            ("lambda", p.lambda.is_some()),
            ("scaling", p.scaling.is_some()),
            ("fm_sensitivity", p.fm_sensitivity.is_some()),
        ] {
            if set {
                return Err(self.err(f(field), format!("does not apply to probe `{probe}`")));
            }
        }
        if crate::analysis::probe_uses_epsilon(probe) && self.grid.epsilon.is_none() {
            return Err(self.err(
                "grid.epsilon",
                format!("probe `{probe}` runs a mechanism and needs an epsilon axis"),
            ));
        }
        Ok(())
    }

    /// Checks the selection fields; returns whether the selector is private (None: no selection).
    fn validate_selection(&self, i: usize, p: &PipelineDef) -> Result<Option<bool>> {
        let f = |field: &str| format!("pipeline[{i}].{field}");
        let Some(sel) = &p.selection else {
            for (field, set) in [
                ("score", p.score.is_some()),
                ("sparse_threshold", p.sparse_threshold.is_some()),
                ("features", p.features.is_some()),
            ] {
                if set {
                    return Err(self.err(f(field), "applies only with a `selection` step"));
                }
            }
            return Ok(None);
        };
        if !SELECTORS.iter().any(|(n, _)| n == sel) {
            let known: Vec<&str> = SELECTORS.iter().map(|(n, _)| *n).collect();
            return Err(self.err(
                f("selection"),
                format!("unknown selector `{sel}`; known: {}", known.join(", ")),
            ));
        }
        if sel == "noisy_nb_mi" && p.score == Some(ScoreName::Count) {
            return Err(self.err(
                f("score"),
                "Algorithm 2 ranks by the MI of the noisy model only",
            ));
        }
        match (sel == "sparse", p.sparse_threshold) {
            (true, None) => {
                return Err(self.err(
                    f("sparse_threshold"),
                    "the sparse selector needs a public threshold",
                ));
            }
            (true, Some(t)) if !t.is_finite() => {
                return Err(self.err(f("sparse_threshold"), format!("must be finite, got {t}")));
            }
            (false, Some(_)) => {
                return Err(self.err(
                    f("sparse_threshold"),
                    "applies only to `selection = \"sparse\"`",
                ));
            }
            _ => {}
        }
        match (p.features, &self.grid.features) {
            (Some(_), Some(_)) => {
                return Err(self.err(f("features"), "is also a grid axis; set it in one place"));
            }
            (None, None) => {
                return Err(self.err(
                    f("features"),
                    "a selection step needs T: set `features` or a `features` grid axis",
                ));
            }
            (Some(0), None) => return Err(self.err(f("features"), "must be at least 1")),
            _ => {}
        }
        Ok(Some(sel != "nonprivate"))
    }

    fn validate_report(&self) -> Result<()> {
        let r = &self.report;
        if let Some(x) = &r.x {
            let present = match x.as_str() {
                "epsilon" => self.grid.epsilon.is_some(),
                "threshold" => self.grid.threshold.is_some(),
                "features" => self.grid.features.is_some(),
                "lambda" => self.grid.lambda.is_some(),
                "n_train" => self.grid.n_train.is_some(),
                _ => false,
            };
            if !present {
                return Err(self.err("report.x", format!("`{x}` is not a grid axis of this spec")));
            }
        }
        if matches!(r.kind, ReportKind::Scatter | ReportKind::Curve) && r.series.is_empty() {
            return Err(self.err(
                "report.series",
                "a scatter or curve report needs at least one series",
            ));
        }
        if !matches!(r.kind, ReportKind::Scatter | ReportKind::Curve) && !r.series.is_empty() {
            return Err(self.err("report.series", "applies only to scatter and curve reports"));
        }
        if r.kind == ReportKind::SampleComplexity {
            if self.grid.n_train.is_none() {
                return Err(self.err(
                    "grid.n_train",
                    "a sample-complexity report needs an n_train axis",
                ));
            }
            match &r.reference {
                Some(name) if self.pipelines.iter().any(|p| p.name == *name) => {}
                Some(name) => {
                    return Err(
                        self.err("report.reference", format!("no pipeline is named `{name}`"))
                    );
                }
                None => return Err(self.err("report.reference", "name the reference pipeline")),
            }
        }
        if r.kind == ReportKind::Figure && r.x.is_none() {
            return Err(self.err(
                "report.x",
                "a figure needs a grid axis for its horizontal axis",
            ));
        }
        if r.metrics.is_empty() {
            return Err(self.err("report.metrics", "name at least one metric"));
        }
        Ok(())
    }

    /// The experiment's title, else its name.
    pub fn title(&self) -> &str {
        self.experiment
            .title
            .as_deref()
            .unwrap_or(&self.experiment.name)
    }

    /// Budget split of a pipeline.
    pub fn budget(&self, pipeline: usize) -> BudgetDef {
        self.pipelines[pipeline].budget.unwrap_or_default()
    }
}

/// SHA-256 of what determines the trials: the TOML document as written, minus `[report]` and
/// `[paper]`, as canonical JSON (sorted keys). It depends on the user's text only, never on
/// the code's structs, so new optional spec fields do not invalidate stored results; comments
/// and formatting do not count either.
pub fn spec_hash(text: &str) -> String {
    let mut doc: toml::Table = toml::from_str(text).unwrap_or_default();
    doc.remove("report");
    doc.remove("paper");
    let canon = serde_json::to_value(&doc).expect("TOML values serialise as JSON");
    crate::data::catalog::hex(&crate::rng::digest(&[&canon.to_string()]))
}

/// [`Spec::cells_hash`] and [`Spec::definitions`] of spec text.
fn cells_hash(text: &str) -> (String, BTreeMap<String, String>) {
    let mut doc: toml::Table = toml::from_str(text).unwrap_or_default();
    for key in ["report", "paper", "grid"] {
        doc.remove(key);
    }
    if let Some(toml::Value::Table(e)) = doc.get_mut("experiment") {
        for key in ["trials", "datasets", "title", "description"] {
            e.remove(key);
        }
    }
    let definitions = match doc.remove("dataset") {
        Some(toml::Value::Table(t)) => t.iter().map(|(k, v)| (k.clone(), canon_hash(v))).collect(),
        _ => BTreeMap::new(),
    };
    (canon_hash(&doc), definitions)
}

/// How each grid value is spelled in a cell's key (1 and 1.0 are the same value).
fn spellings<T: Serialize>(values: &[T]) -> Vec<String> {
    values
        .iter()
        .map(|v| serde_json::to_value(v).map_or_else(|e| e.to_string(), |v| v.to_string()))
        .collect()
}

/// SHA-256 of the canonical JSON (sorted keys) of a TOML value.
fn canon_hash(v: &impl Serialize) -> String {
    let canon = serde_json::to_value(v).expect("TOML values serialise as JSON");
    crate::data::catalog::hex(&crate::rng::digest(&[&canon.to_string()]))
}

fn check_threshold(t: &Threshold) -> std::result::Result<(), String> {
    t.problem().map_or(Ok(()), Err)
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |p| p + 1) + 1;
    (line, col)
}
