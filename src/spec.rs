//! Experiment specs: the TOML a researcher writes, parsed strictly and validated once.
//!
//! Unknown keys, wrong types and impossible values are refused with the file, the field and the
//! reason. A validated [`Spec`] is what the planner expands into trials.

use crate::data::{Catalog, DatasetDef};
use crate::error::{Error, Result};
use crate::kinds::{Axis, GridValues, Registry};
use crate::learners::Threshold;
use crate::privacy::Relation;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod ablation;
mod pipeline;

pub use ablation::{AblationDef, Grade, Hypothesis};
pub use pipeline::{Pipeline, Step};

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
    /// Neighbouring relation every guarantee of the run is stated for: `"add_remove"` (default,
    /// SPEC 1) or `"replace_one"`. Every mechanism calibrates its sensitivity for it.
    #[serde(default, skip_serializing_if = "Relation::is_default")]
    pub neighbours: Relation,
    /// Why the exact gate (`epsilab check`) does not rerun this spec, e.g. it runs external
    /// programs whose libraries epsilab does not pin (docs/external.md); absent: gated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate_exempt: Option<String>,
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
    /// Per pipeline or dataset (by name), the `n_train` values it runs, when not all of them: a
    /// sample-complexity search stops doubling N for a pipeline already within tolerance (its
    /// reference needs only the sizes it is reached at plus the largest), or for a dataset too
    /// costly at the largest sizes; a cell runs a value only if both its pipeline and its
    /// dataset allow it. Only removes cells (like the rest of the grid, it does not enter the
    /// cells hash). A key `"pipeline @ dataset"` gives that one pair its own list, which then
    /// replaces the pipeline's and the dataset's (a search that must keep doubling on one
    /// dataset only).
    pub n_train_of: Option<BTreeMap<String, Vec<usize>>>,
    /// As `n_train_of`, for smoke mode only (`check`, `--smoke`): keeps CI's smoke run of a
    /// full-size sweep small (smoke runs every value each allows, at most two trials each)
    /// without touching the full run's cells.
    pub smoke_n_train_of: Option<BTreeMap<String, Vec<usize>>>,
}

impl GridDef {
    /// Number of values on `axis`, if the grid has it.
    pub fn len(&self, axis: Axis) -> Option<usize> {
        match axis {
            Axis::Epsilon => self.epsilon.as_ref().map(Vec::len),
            Axis::Threshold => self.threshold.as_ref().map(Vec::len),
            Axis::Features => self.features.as_ref().map(Vec::len),
            Axis::Lambda => self.lambda.as_ref().map(Vec::len),
            Axis::NTrain => self.n_train.as_ref().map(Vec::len),
        }
    }

    /// The axes the grid defines.
    pub fn axes(&self) -> Vec<Axis> {
        Axis::ALL
            .into_iter()
            .filter(|&a| self.len(a).is_some())
            .collect()
    }

    /// Value `i` of `axis` as a cell's key spells it (1 and 1.0 are the same value).
    pub fn json(&self, axis: Axis, i: usize) -> serde_json::Value {
        let g = self;
        match axis {
            Axis::Epsilon => g.epsilon.as_ref().map(|v| v[i].into()),
            Axis::Threshold => g
                .threshold
                .as_ref()
                .and_then(|v| serde_json::to_value(v[i]).ok()),
            Axis::Features => g.features.as_ref().map(|v| v[i].into()),
            Axis::Lambda => g.lambda.as_ref().map(|v| v[i].into()),
            Axis::NTrain => g.n_train.as_ref().map(|v| v[i].into()),
        }
        .unwrap_or_default()
    }

    /// Sets value `i` of `axis` in `at`.
    pub fn apply(&self, axis: Axis, i: usize, at: &mut GridValues) {
        let g = self;
        match axis {
            Axis::Epsilon => at.epsilon = g.epsilon.as_ref().map(|v| v[i]),
            Axis::Threshold => at.threshold = g.threshold.as_ref().map(|v| v[i]),
            Axis::Features => at.features = g.features.as_ref().map(|v| v[i]),
            Axis::Lambda => at.lambda = g.lambda.as_ref().map(|v| v[i]),
            Axis::NTrain => at.n_train = g.n_train.as_ref().map(|v| v[i]),
        }
    }
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
    /// How the figure draws its series: `auto` (a dot plot when the x axis has one value, else
    /// lines), `line`, `dot`, `histogram` (per-trial values) or `loglog` (with fitted slopes).
    #[serde(default)]
    pub figure: FigureKind,
    /// Also draw histogram panels of the per-trial values of these metrics (e.g. `release`),
    /// over the trials at the grid values `histograms_at`.
    #[serde(default)]
    pub histograms: Vec<String>,
    /// Grid values selecting the trials of the `histograms` (e.g. `{ epsilon = 0.1 }`).
    #[serde(default)]
    pub histograms_at: BTreeMap<String, serde_json::Value>,
    /// Extra outputs beside `table.md`/`table.csv`: `png`, `svg`, `pdf`, `pgf` (pgfplots
    /// `figure.tex` + CSV), `tex` (wide LaTeX table), `html` (self-contained page).
    pub formats: Option<Vec<Format>>,
    /// Figure width preset: `one-column` (3.5 in) or `two-column` (7 in, the default).
    pub size: Option<SizePreset>,
    /// Figure width in inches (overrides `size`).
    pub width_in: Option<f64>,
    /// Figure height in inches (default: from the width and the number of panels).
    pub height_in: Option<f64>,
    /// Font size in points (default 9).
    pub font_pt: Option<f64>,
    /// One y range for every panel.
    #[serde(default)]
    pub share_y: bool,
    /// More figures of the same trials along another grid axis (`[[report.view]]`).
    #[serde(default)]
    pub view: Vec<ReportView>,
}

/// Another figure of the same trials (`[[report.view]]`): `metrics` over grid axis `x`, the
/// other axes splitting the series, written as `figure_<name>` beside the main figure.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportView {
    /// File stem suffix: `figure_<name>`.
    pub name: String,
    pub x: String,
    pub metrics: Vec<String>,
    #[serde(default)]
    pub figure: FigureKind,
    pub x_label: Option<String>,
    pub y_label: Option<String>,
    #[serde(default)]
    pub log_x: bool,
    /// Only these datasets (all when absent).
    pub datasets: Option<Vec<String>>,
    /// Only these pipelines (all when absent).
    pub pipelines: Option<Vec<String>>,
}

/// How a figure draws its series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum FigureKind {
    /// `dot` when the x axis has a single value, else `line`.
    #[default]
    Auto,
    /// One line per series over the x axis, with standard-error bars.
    Line,
    /// One dot per series (mean ± s.e.) beside its published value: single-x comparisons.
    Dot,
    /// Histogram of the per-trial values of each series.
    Histogram,
    /// Log-log axes with a least-squares slope per series in its label.
    Loglog,
}

/// An output format of `epsilab report`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// Raster figure (200 dpi), used by REPORT.md.
    Png,
    /// Vector figure, inlined by the HTML report.
    Svg,
    /// Vector PDF figure with the font embedded.
    Pdf,
    /// pgfplots figure (`figure.tex`) and its data (`figure_data.csv`).
    Pgf,
    /// Wide paper table in LaTeX (booktabs + siunitx): `table.tex`.
    Tex,
    /// Self-contained HTML page of the experiment: `index.html`.
    Html,
}

impl Format {
    /// Written when neither the command line nor `[report] formats` says.
    pub const DEFAULT: [Format; 5] = [
        Format::Png,
        Format::Svg,
        Format::Pdf,
        Format::Pgf,
        Format::Tex,
    ];
}

/// Figure width presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum SizePreset {
    /// 3.5 in: one column of a two-column paper.
    OneColumn,
    /// 7 in: the full text width.
    TwoColumn,
}

impl SizePreset {
    pub fn width_in(self) -> f64 {
        match self {
            SizePreset::OneColumn => 3.5,
            SizePreset::TwoColumn => 7.0,
        }
    }
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
            figure: FigureKind::Auto,
            formats: None,
            size: None,
            width_in: None,
            height_in: None,
            font_pt: None,
            share_y: false,
            histograms: Vec::new(),
            histograms_at: BTreeMap::new(),
            view: Vec::new(),
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
    /// Scaling laws: fitted log-log slopes against the report's x axis.
    #[serde(default)]
    pub slope: Vec<PaperSlope>,
    /// Ratios of two series' error statistics (e.g. "400 times more accurate").
    #[serde(default)]
    pub ratio: Vec<PaperRatio>,
    /// The neighbouring relation of the published experiment. A pipeline that states this
    /// relation as its own runs what the paper ran and is shown untagged; one that states
    /// another is tagged as a variant. A report setting: it moves no stored cell.
    pub neighbours: Option<crate::privacy::Relation>,
}

/// A published ratio: `statistic` (mean or median over trials) of `metric` in pipeline
/// `numerator` over the same in `denominator`, on `dataset`, at each x of the report's axis.
/// The verdict is judged at `x` (|ours - value| <= tolerance); every x's ratio is shown.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperRatio {
    /// Where the target comes from (default `published`).
    #[serde(default)]
    pub target: Target,
    pub text: String,
    pub dataset: String,
    pub numerator: String,
    pub denominator: String,
    pub metric: String,
    #[serde(default)]
    pub statistic: Statistic,
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
    pub x: Option<serde_json::Value>,
    pub value: f64,
    pub tolerance: f64,
    pub note: Option<String>,
}

/// How a ratio summarises the trials of a cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    #[default]
    Mean,
    Median,
}

/// A scaling law: `metric` of `pipeline` on `dataset` falls like x^expected. The verdict fits
/// log10(metric) on log10(x) over every trial in [x_min, x_max] and `holds` when the fitted
/// slope is within `tolerance` of `expected`; the 95% interval is shown. With `crossover`
/// (another metric of the same trials) the x where the two fitted lines cross is shown too.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperSlope {
    /// Where the target comes from (default `published`).
    #[serde(default)]
    pub target: Target,
    pub text: String,
    pub dataset: String,
    pub pipeline: String,
    pub metric: String,
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
    pub expected: f64,
    pub tolerance: f64,
    pub x_min: Option<f64>,
    pub x_max: Option<f64>,
    /// The grid axis of the fit (default: the report's x).
    pub x: Option<String>,
    pub crossover: Option<String>,
    pub note: Option<String>,
}

/// Where a verdict's target comes from: a number or claim the paper prints (`published`), one
/// computed from the paper's own formula or mechanism (`derived`; the derivation belongs in the
/// spec), or a value the paper does not state that we assume (`assumed`). Reports label and
/// count them apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    #[default]
    Published,
    Derived,
    Assumed,
}

impl Target {
    pub const ALL: [Target; 3] = [Target::Published, Target::Derived, Target::Assumed];

    pub fn word(self) -> &'static str {
        match self {
            Target::Published => "published",
            Target::Derived => "derived",
            Target::Assumed => "assumed",
        }
    }
}

/// One published number: the mean of `metric` for (dataset, pipeline[, x]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperCell {
    /// Where the target comes from (default `published`).
    #[serde(default)]
    pub target: Target,
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
    /// A multiplier's own numbers in the paper: the N it printed and its accuracy there (read
    /// by an ablation's `from_thesis` hypothesis).
    pub n_train: Option<u64>,
    pub accuracy: Option<f64>,
}

fn default_metric() -> String {
    "test_accuracy".into()
}

/// A qualitative claim: series `above` beats series `below` (by at least `margin`) on `dataset`
/// for every x in [x_min, x_max] where both exist (a reference line counts at every x).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperClaim {
    /// Where the target comes from (default `published`).
    #[serde(default)]
    pub target: Target,
    pub text: String,
    pub dataset: String,
    pub above: String,
    pub below: String,
    #[serde(default = "default_metric")]
    pub metric: String,
    #[serde(default)]
    pub margin: f64,
    /// The difference must exceed `margin`, not merely reach it: "beats" and "ahead of" are not
    /// held by a tie (two series both at the majority class).
    #[serde(default)]
    pub strict: bool,
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
    /// Read in a second stage, kind by kind ([`Pipeline`]).
    pipeline: Vec<toml::Table>,
    /// Required: a spec says what its results show ([`Spec::parse_with`] says so if absent).
    report: Option<ReportDef>,
    #[serde(default)]
    paper: PaperDef,
    /// Candidate explanations of another experiment's differing verdicts (ablation specs).
    ablation: Option<AblationDef>,
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
    pub pipelines: Vec<Pipeline>,
    pub report: ReportDef,
    /// Published values to compare against.
    pub paper: PaperDef,
    /// The hypotheses of an ablation spec (`[ablation]`).
    pub ablation: Option<AblationDef>,
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
    /// [`Spec::cells_hash`] without the pipelines, which [`Spec::pipeline_hashes`] pin one by
    /// one: a spec that gains a pipeline keeps the stored cells of the others (a cell's seed
    /// and streams derive from its own pipeline's name, never from the others).
    pub base_hash: String,
    /// SHA-256 of each `[[pipeline]]` table, by pipeline name.
    pub pipeline_hashes: BTreeMap<String, String>,
    /// The `command` of each pipeline that runs an external program, by pipeline name, as the
    /// spec writes it: the files it names are inputs of its cells (`runner::manifest`).
    pub commands: BTreeMap<String, Vec<String>>,
}

impl Spec {
    /// Whether any output of the spec shows `metric`: the report's metrics, histograms or extra
    /// views, a published cell, claim, ratio or scaling law (and its crossover), or an ablation
    /// hypothesis's reading. Learners compute costly optional metrics (`w_distance`,
    /// `sampling_error`: an extra non-private reference fit per private trial) only when the
    /// spec shows them.
    pub fn shows_metric(&self, metric: &str) -> bool {
        let r = &self.report;
        let p = &self.paper;
        r.metrics.iter().chain(&r.histograms).any(|m| m == metric)
            || r.view.iter().flat_map(|v| &v.metrics).any(|m| m == metric)
            || p.cell.iter().any(|c| c.metric == metric)
            || p.claim.iter().any(|c| c.metric == metric)
            || p.ratio.iter().any(|c| c.metric == metric)
            || p.slope
                .iter()
                .any(|s| s.metric == metric || s.crossover.as_deref() == Some(metric))
            || self
                .ablation
                .iter()
                .flat_map(|a| &a.hypothesis)
                .any(|h| h.metric.as_deref() == Some(metric))
    }

    /// Reads, parses and validates a spec file.
    pub fn load(path: &Path) -> Result<Spec> {
        Spec::load_with(path, &Registry::builtin())
    }

    /// [`Self::load`] with the kinds of `kinds` (epsilab's own and any a caller registered).
    pub fn load_with(path: &Path, kinds: &Registry) -> Result<Spec> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Spec::parse_with(&text, path, kinds)
    }

    /// Parses and validates spec text; `path` names the file in errors and anchors inline paths.
    pub fn parse(text: &str, path: &Path) -> Result<Spec> {
        Spec::parse_with(text, path, &Registry::builtin())
    }

    /// [`Self::parse`] with the kinds of `kinds`.
    pub fn parse_with(text: &str, path: &Path, kinds: &Registry) -> Result<Spec> {
        let raw: RawSpec = toml::from_str(text).map_err(|e| {
            let e = dataset_field_error(text, e);
            let at = e.span().map_or(0, |s| s.start);
            let (line, col) = line_col(text, at);
            // A syntax error's position is where the parser gave up, often past the key at
            // fault, so it names a position, not a field.
            let syntax = text.parse::<toml::Table>().is_err();
            match field_at(text, at).filter(|_| !syntax) {
                Some(field) => Error::Spec {
                    file: path.into(),
                    field,
                    reason: format!("line {line}, column {col}: {}", e.message()),
                },
                // A syntax error, or outside every table (a top-level key): a position.
                None => Error::Parse {
                    path: path.into(),
                    line,
                    reason: format!("column {col}: {}", e.message()),
                },
            }
        })?;
        let mut catalog = Catalog::builtin();
        for (name, def) in &raw.dataset {
            catalog.insert_from(name, def.clone(), path);
        }
        let hash = spec_hash(text);
        let CellHashes {
            cells: cells_hash,
            definitions,
            base: base_hash,
            pipelines: pipeline_hashes,
            commands,
        } = cell_hashes(text);
        let Some(report) = raw.report else {
            return Err(Error::Spec {
                file: path.into(),
                field: "report".into(),
                reason: "the spec has no `[report]` table, which says what its results show: add \
                         one, e.g. `[report]` with `x = \"epsilon\"` (the grid axis to draw \
                         along), or with `kind = \"dataset_summary\"` (docs/specs.md)"
                    .into(),
            });
        };
        let mut spec = Spec {
            path: path.into(),
            experiment: raw.experiment,
            grid: raw.grid,
            pipelines: Vec::new(),
            report,
            paper: raw.paper,
            ablation: raw.ablation,
            catalog,
            hash,
            cells_hash,
            definitions,
            base_hash,
            pipeline_hashes,
            commands,
        };
        spec.validate_experiment()?;
        spec.validate_grid()?;
        spec.pipelines = spec.parse_pipelines(raw.pipeline, kinds)?;
        spec.validate_n_train_of()?;
        spec.validate_report()?;
        spec.validate_ablation()?;
        Ok(spec)
    }

    fn err(&self, field: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::Spec {
            file: self.path.clone(),
            field: field.into(),
            reason: reason.into(),
        }
    }

    fn validate_experiment(&self) -> Result<()> {
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
            for name in chain {
                if let Some((field, reason)) = self.catalog.get(name).and_then(DatasetDef::problem)
                {
                    return Err(Error::Spec {
                        file: if self.definitions.contains_key(name) {
                            self.path.clone()
                        } else {
                            "datasets/catalog.toml".into()
                        },
                        field: format!("dataset.{name}.{field}"),
                        reason,
                    });
                }
            }
            if e.datasets[..i].contains(d) {
                return Err(self.err(
                    format!("experiment.datasets[{i}]"),
                    format!("`{d}` is listed twice"),
                ));
            }
        }
        Ok(())
    }

    fn validate_grid(&self) -> Result<()> {
        // An empty axis makes no cell at all: the run would pass with 0 trials.
        if let Some(axis) = Axis::ALL.into_iter().find(|&a| self.grid.len(a) == Some(0)) {
            return Err(self.err(
                format!("grid.{}", axis.name()),
                "give at least one value (or leave the axis out)",
            ));
        }
        if let Some(eps) = &self.grid.epsilon {
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
            for (i, t) in ts.iter().enumerate() {
                check_threshold(t).map_err(|r| self.err(format!("grid.threshold[{i}]"), r))?;
            }
        }
        if let Some(fs) = &self.grid.features
            && let Some(i) = fs.iter().position(|&t| t == 0)
        {
            return Err(self.err(format!("grid.features[{i}]"), "must be at least 1"));
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
        for axis in Axis::ALL {
            let values: Vec<String> = (0..self.grid.len(axis).unwrap_or(0))
                .map(|i| self.grid.json(axis, i).to_string())
                .collect();
            let axis = axis.name();
            for (i, v) in values.iter().enumerate() {
                if let Some(j) = values[..i].iter().position(|w| w == v) {
                    return Err(self.err(
                        format!("grid.{axis}[{i}]"),
                        format!("{v} repeats grid.{axis}[{j}]; each grid value is run once, give it once (raise experiment.trials for more repetitions)"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `grid.n_train_of` and `grid.smoke_n_train_of`: each key a pipeline, a dataset or a
    /// `"pipeline @ dataset"` pair, each value a non-empty subset of `grid.n_train`.
    fn validate_n_train_of(&self) -> Result<()> {
        let tables = [
            ("n_train_of", &self.grid.n_train_of),
            ("smoke_n_train_of", &self.grid.smoke_n_train_of),
        ];
        for (table, of) in tables {
            let Some(of) = of else { continue };
            let Some(all) = &self.grid.n_train else {
                return Err(self.err(
                    format!("grid.{table}"),
                    "needs a grid.n_train axis to restrict",
                ));
            };
            for (name, ns) in of {
                let field = format!("grid.{table}.\"{name}\"");
                let is_pipeline = |n: &str| self.pipelines.iter().any(|p| p.name == n);
                let is_dataset = |n: &str| self.experiment.datasets.iter().any(|d| d == n);
                let known = match name.rsplit_once(" @ ") {
                    Some((p, d)) => is_pipeline(p) && is_dataset(d),
                    None => is_pipeline(name) || is_dataset(name),
                };
                if !known {
                    return Err(self.err(
                        field,
                        format!(
                            "no pipeline, dataset or `pipeline @ dataset` pair is named `{name}`"
                        ),
                    ));
                }
                if ns.is_empty() {
                    return Err(self.err(field, "give at least one value"));
                }
                if let Some((i, n)) = ns.iter().enumerate().find(|(_, n)| !all.contains(n)) {
                    return Err(self.err(
                        format!("{field}[{i}]"),
                        format!("{n} is not in grid.n_train"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The second stage of the pipelines: each table read by its kind.
    fn parse_pipelines(&self, tables: Vec<toml::Table>, kinds: &Registry) -> Result<Vec<Pipeline>> {
        if tables.is_empty() {
            return Err(self.err("pipeline", "define at least one [[pipeline]]"));
        }
        let grid = self.grid.axes();
        let mut out: Vec<Pipeline> = Vec::with_capacity(tables.len());
        for (i, t) in tables.into_iter().enumerate() {
            let p = Pipeline::parse(t, &grid, kinds)
                .map_err(|(field, reason)| self.err(format!("pipeline[{i}].{field}"), reason))?;
            if out.iter().any(|q| q.name == p.name) {
                return Err(self.err(
                    format!("pipeline[{i}].name"),
                    format!("`{}` is used by an earlier pipeline", p.name),
                ));
            }
            if p.spends() && self.grid.epsilon.is_none() {
                let what = match &p.step {
                    Step::Probe(probe) => format!("probe `{}` runs a mechanism", probe.name),
                    Step::Release(r) => format!("release `{}` runs a mechanism", r.name),
                    Step::Learner(_) => format!("pipeline `{}` is private", p.name),
                };
                return Err(self.err("grid.epsilon", format!("{what} and needs an epsilon axis")));
            }
            out.push(p);
        }
        Ok(out)
    }

    fn validate_ablation(&self) -> Result<()> {
        let Some(a) = &self.ablation else {
            return Ok(());
        };
        let names: Vec<&str> = self.pipelines.iter().map(|p| p.name.as_str()).collect();
        if let Some((field, reason)) = a.problem(&names, &self.experiment.datasets) {
            return Err(self.err(field, reason));
        }
        for (i, h) in a.hypothesis.iter().enumerate() {
            let find = |name: &str| self.pipelines.iter().find(|p| p.name == name);
            let series = h.pipeline.as_deref().and_then(find);
            // Not ε-DP as claimed, or a non-private step standing in for a private series.
            let weakened = series.is_some_and(|p| {
                !p.weakening_label().is_empty()
                    || (!p.end_to_end_private()
                        && (h.replaces.iter().filter_map(|r| find(r)))
                            .any(|r| r.end_to_end_private()))
            });
            if let Some(reason) = h.overgraded(weakened) {
                return Err(self.err(format!("ablation.hypothesis[{i}].grade"), reason));
            }
        }
        Ok(())
    }

    fn validate_report(&self) -> Result<()> {
        let r = &self.report;
        if let Some(x) = &r.x {
            let present = self.grid.axes().iter().any(|a| a.name() == x);
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
        self.validate_histograms()?;
        match style_out_of_range([r.width_in, r.height_in, r.font_pt]) {
            Some((i, why)) => Err(self.err(STYLE_RANGES[i].0, why)),
            None => Ok(()),
        }
    }

    /// `[report] histograms` and `histograms_at`, which a report would otherwise ignore in
    /// silence: histograms outside a figure report, a selection without histograms, a key that
    /// is not a grid axis, or a value not on it (an empty histogram).
    fn validate_histograms(&self) -> Result<()> {
        let r = &self.report;
        if !r.histograms.is_empty() && r.kind != ReportKind::Figure {
            return Err(self.err(
                "report.histograms",
                "applies only to figure reports (kind = \"figure\")",
            ));
        }
        if !r.histograms_at.is_empty() && r.histograms.is_empty() {
            return Err(self.err(
                "report.histograms_at",
                "selects the trials of `histograms`, which names no metric",
            ));
        }
        let axes = self.grid.axes();
        for (key, value) in &r.histograms_at {
            let field = format!("report.histograms_at.{key}");
            let Some(&axis) = axes.iter().find(|a| a.name() == key) else {
                let names: Vec<&str> = axes.iter().map(|a| a.name()).collect();
                return Err(self.err(
                    field,
                    format!(
                        "`{key}` is not a grid axis of this spec (axes: {})",
                        names.join(", ")
                    ),
                ));
            };
            let values: Vec<serde_json::Value> = (0..self.grid.len(axis).unwrap_or(0))
                .map(|i| self.grid.json(axis, i))
                .collect();
            if !values.iter().any(|v| same_grid_value(v, value)) {
                let shown: Vec<String> = values.iter().map(ToString::to_string).collect();
                return Err(self.err(
                    field,
                    format!(
                        "{value} is not a value of grid.{key} ({}): no trial would be drawn",
                        shown.join(", ")
                    ),
                ));
            }
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
}

/// Whether `a` and `b` are one grid value as `[report] histograms_at` matches a trial's
/// parameter: numbers by value (`1` and `1.0` agree), anything else as written.
pub fn same_grid_value(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    a.as_f64().zip(b.as_f64()).map_or(a == b, |(x, y)| x == y)
}

/// Accepted figure-style values: (`[report]` field, command-line flag, min, max), in the order
/// width, height, font size. The spec and the flags share one table so they cannot disagree.
pub const STYLE_RANGES: [(&str, &str, f64, f64); 3] = [
    ("report.width_in", "--width", 1.0, 20.0),
    ("report.height_in", "--height", 1.0, 20.0),
    ("report.font_pt", "--font-size", 4.0, 30.0),
];

/// The first of (width, height, font size) outside [`STYLE_RANGES`]: its index and why.
pub fn style_out_of_range(values: [Option<f64>; 3]) -> Option<(usize, String)> {
    values
        .iter()
        .zip(STYLE_RANGES)
        .enumerate()
        .find_map(|(i, (v, (_, _, lo, hi)))| {
            v.filter(|v| !(lo..=hi).contains(v))
                .map(|v| (i, format!("{v} is outside {lo}..={hi}")))
        })
}

/// SHA-256 of what determines the trials: the TOML document as written, minus `[report]`,
/// `[paper]` and `[ablation]`, as canonical JSON (sorted keys). It depends on the user's text
/// only, never on
/// the code's structs, so new optional spec fields do not invalidate stored results; comments
/// and formatting do not count either.
pub fn spec_hash(text: &str) -> String {
    let mut doc: toml::Table = toml::from_str(text).unwrap_or_default();
    doc.remove("report");
    doc.remove("paper");
    doc.remove("ablation");
    let canon = serde_json::to_value(&doc).expect("TOML values serialise as JSON");
    crate::data::catalog::hex(&crate::rng::digest(&[&canon.to_string()]))
}

/// What stored cells are pinned by, from one parse of the spec text.
struct CellHashes {
    /// [`Spec::cells_hash`].
    cells: String,
    /// [`Spec::definitions`].
    definitions: BTreeMap<String, String>,
    /// [`Spec::base_hash`]: `cells` without the pipelines.
    base: String,
    /// [`Spec::pipeline_hashes`].
    pipelines: BTreeMap<String, String>,
    /// [`Spec::commands`].
    commands: BTreeMap<String, Vec<String>>,
}

fn cell_hashes(text: &str) -> CellHashes {
    let mut doc: toml::Table = toml::from_str(text).unwrap_or_default();
    for key in ["report", "paper", "grid", "ablation"] {
        doc.remove(key);
    }
    if let Some(toml::Value::Table(e)) = doc.get_mut("experiment") {
        for key in ["trials", "datasets", "title", "description"] {
            e.remove(key);
        }
    }
    let definitions = match doc.remove("dataset") {
        Some(toml::Value::Table(t)) => t
            .iter()
            .map(|(k, v)| (k.clone(), canon_hash(&ungrown(v))))
            .collect(),
        _ => BTreeMap::new(),
    };
    let cells = canon_hash(&doc);
    let (pipelines, commands) = match doc.remove("pipeline") {
        Some(toml::Value::Array(ps)) => {
            let named = || {
                ps.iter()
                    .filter_map(|p| Some((p.get("name")?.as_str()?.to_string(), p)))
            };
            let commands = named()
                .filter_map(|(name, p)| {
                    let args = p.get("command")?.as_array()?;
                    let args = args.iter().map(|a| a.as_str().map(String::from));
                    Some((name, args.collect::<Option<Vec<String>>>()?))
                })
                .collect();
            (named().map(|(n, p)| (n, canon_hash(p))).collect(), commands)
        }
        _ => (BTreeMap::new(), BTreeMap::new()),
    };
    CellHashes {
        cells,
        definitions,
        base: canon_hash(&doc),
        pipelines,
        commands,
    }
}

/// A dataset definition as the smaller spec it grows spelt it: `first_train = F` keeps every
/// row, label and nested subset that `train = F` drew (`synthetic::toy_gaussian`), so stored
/// cells of that spec stay valid and only the new, larger `n_train` cells run.
fn ungrown(def: &toml::Value) -> toml::Value {
    let mut def = def.clone();
    if let toml::Value::Table(t) = &mut def
        && let Some(first) = t.remove("first_train")
    {
        t.insert("train".into(), first);
    }
    def
}

/// SHA-256 of the canonical JSON (sorted keys) of a TOML value.
fn canon_hash(v: &impl Serialize) -> String {
    let canon = serde_json::to_value(v).expect("TOML values serialise as JSON");
    crate::data::catalog::hex(&crate::rng::digest(&[&canon.to_string()]))
}

fn check_threshold(t: &Threshold) -> std::result::Result<(), String> {
    t.problem().map_or(Ok(()), Err)
}

/// `e` at the field it is about when the parser put it at a `[dataset.NAME]` header (a
/// `source`-tagged table is read whole, so its errors lose their place): the table's body is
/// read again as the definition its `source` names ([`crate::data::catalog::check_body`]),
/// every other line blanked so that positions stay those of `text`. Else `e` as it is.
fn dataset_field_error(text: &str, e: toml::de::Error) -> toml::de::Error {
    let at = e.span().map_or(0, |s| s.start);
    let Some(name) = field_at(text, at).and_then(|f| f.strip_prefix("dataset.").map(String::from))
    else {
        return e;
    };
    let source = toml::from_str::<toml::Table>(text).ok().and_then(|doc| {
        let def = doc.get("dataset")?.get(&name)?;
        Some(def.get("source")?.as_str()?.to_string())
    });
    let Some(source) = source.filter(|_| !name.contains('.')) else {
        return e;
    };
    // A line is a header when it alone names a table.
    let header = |l: &str| field_at(l, 0);
    let table_name = format!("dataset.{name}");
    let mut inside = false;
    let mut body = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let table = header(line);
        if let Some(t) = &table {
            inside = *t == table_name;
        }
        let key = line.split_once('=').map(|(k, _)| k.trim());
        if inside && table.is_none() && key != Some("source") {
            body.push_str(line);
        } else {
            // Blanked byte for byte, so that offsets into `body` are offsets into `text`.
            let content = line.trim_end_matches('\n');
            body.extend(std::iter::repeat_n(' ', content.len()));
            body.push_str(&line[content.len()..]);
        }
    }
    // Only a place inside the table's own lines is better than the header.
    let in_body = |at: usize| {
        body.get(at..)
            .is_some_and(|rest| rest.starts_with(|c: char| !c.is_whitespace()))
    };
    match crate::data::catalog::check_body(&source, &body) {
        Err(inner) if inner.span().is_some_and(|s| in_body(s.start)) => inner,
        _ => e,
    }
}

/// The spec field at byte `offset` of `text`, as the validation errors name it
/// (`experiment.trials`, `dataset.mine.train`, `pipeline[2].lambda`): the key starting the
/// offset's line, in the table whose header last precedes it (or is that line). `None` outside
/// every table. The TOML parser's errors give only a position; this names what is there.
fn field_at(text: &str, offset: usize) -> Option<String> {
    let end = text[offset.min(text.len())..]
        .find('\n')
        .map_or(text.len(), |i| offset + i);
    let mut table: Option<String> = None;
    let mut arrays: BTreeMap<String, usize> = BTreeMap::new();
    let mut key = None;
    // A bare or dotted key (`trials`, `dataset.mine`); a line of array values (`[0, 1],`) is not.
    let name = |k: &str| {
        let k = k.trim();
        let bare = |c: char| c.is_ascii_alphanumeric() || "_-.\"".contains(c);
        (k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '"') && k.chars().all(bare))
            .then(|| k.replace('"', ""))
    };
    for line in text[..end].lines().map(str::trim) {
        key = None;
        let header = |open: &str, close: &str| {
            let rest = line.strip_prefix(open)?;
            let (inner, after) = rest.split_once(close)?;
            let after = after.trim();
            (after.is_empty() || after.starts_with('#')).then(|| name(inner))?
        };
        if let Some(array) = header("[[", "]]") {
            let n = arrays.entry(array.clone()).or_insert(0);
            table = Some(format!("{array}[{n}]"));
            *n += 1;
        } else if let Some(t) = header("[", "]") {
            table = Some(t);
        } else if let Some((k, _)) = line.split_once('=') {
            key = name(k);
        }
    }
    let table = table?;
    Some(key.map_or(table.clone(), |k| format!("{table}.{k}")))
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |p| p + 1) + 1;
    (line, col)
}
