//! Reports rebuilt from the stored results alone: `table.md` (wide paper table), `table.csv`
//! (long form), and as `[report] formats` / `--format` ask: `figure.{png,svg,pdf}`, the
//! pgfplots `figure.tex` + `figure_data.csv`, the LaTeX `table.tex` and `index.html`.
//! Every series states whether it is private: "(private)" or "(non-private)".

pub mod ablation;
pub mod figure;
pub mod html;
pub mod markdown;
pub mod pgf;
pub mod ratio;
pub mod reproduction;
pub mod slope;
pub mod stale;
pub mod table;
pub mod table_tex;
pub mod verdict;
pub mod view;

use crate::error::{Error, Result};
use crate::spec::{FigureKind, Format, ReportKind, Spec};
use crate::stats::mean_se;
use crate::store::{TrialRecord, read_dir_records};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Label appended to every non-private series.
pub const NON_PRIVATE: &str = "(non-private)";

/// One aggregated cell: mean and standard error over trials.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub dataset: String,
    pub pipeline: String,
    /// Spec order of the pipeline (fixes its colour).
    pub pipeline_index: usize,
    /// The x-axis value, `None` for pipelines that do not vary along it (reference lines).
    pub x: Option<Value>,
    /// The other grid values of the series (e.g. `ε = 0.01`), empty when there are none.
    pub variant: String,
    /// Index of `variant` among the pipeline's variants (varies the colour).
    pub variant_index: usize,
    pub metric: String,
    pub mean: f64,
    pub se: f64,
    /// Most frequent value (ties: the smallest), for discrete metrics like `log10_lambda`.
    pub mode: f64,
    pub n: usize,
    /// True when every trial in the cell was end-to-end private.
    pub private: bool,
    /// The label of its ablation variant: not-ε-DP for a weakening one (empty without one).
    pub variant_tag: &'static str,
}

impl Summary {
    /// Series label: the pipeline name (and other grid values), then "(private)" or
    /// "(non-private)".
    pub fn label(&self) -> String {
        format!("{} {}", self.name(), figure::privacy_tag(self.private))
    }

    /// The label without the privacy tag: the pipeline, its other grid values and its
    /// ablation variant's label (not-ε-DP for a weakening one).
    pub fn name(&self) -> String {
        let name = if self.variant.is_empty() {
            self.pipeline.clone()
        } else {
            format!("{} ({})", self.pipeline, self.variant)
        };
        tagged(name, self.variant_tag)
    }
}

/// Aggregates records per (dataset, pipeline, other grid values, x value, metric), in spec
/// order. Grid axes other than `x` are never averaged together: they split the series.
pub fn summarise(spec: &Spec, records: &[TrialRecord]) -> Vec<Summary> {
    let x_axis = spec.report.x.as_deref();
    /// (dataset, pipeline, variant, x sort key, metric) -> (x value, values, all private).
    type Key = (usize, usize, String, String, usize);
    let mut groups: BTreeMap<Key, (Option<Value>, Vec<f64>, bool)> = BTreeMap::new();
    for r in records {
        let Some(di) = spec
            .experiment
            .datasets
            .iter()
            .position(|d| *d == r.dataset)
        else {
            continue;
        };
        let Some(pi) = spec.pipelines.iter().position(|p| p.name == r.pipeline) else {
            continue;
        };
        let x = x_axis.and_then(|a| r.params.get(a).cloned());
        let variant = r
            .params
            .iter()
            .filter(|(k, _)| Some(k.as_str()) != x_axis)
            .map(|(k, v)| format!("{} = {}", axis_symbol(k), x_text(v)))
            .collect::<Vec<_>>()
            .join(", ");
        let xkey = x.as_ref().map_or(String::new(), |v| {
            format!("{:020.10}|{v}", x_position(spec, v))
        });
        for (mi, m) in spec.report.metrics.iter().enumerate() {
            if let Some(v) = r.metric(m) {
                let e = groups
                    .entry((di, pi, variant.clone(), xkey.clone(), mi))
                    .or_insert((x.clone(), Vec::new(), true));
                e.1.push(v);
                e.2 &= r.private;
            }
        }
    }
    let mut variants: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (_, pi, v, _, _) in groups.keys() {
        let vs = variants.entry(*pi).or_default();
        if !vs.contains(v) {
            vs.push(v.clone());
        }
    }
    groups
        .into_iter()
        .map(|((di, pi, variant, _, mi), (x, vals, private))| {
            let (mean, se) = mean_se(&vals);
            let mode = mode(&vals);
            Summary {
                dataset: spec.experiment.datasets[di].clone(),
                pipeline: spec.pipelines[pi].name.clone(),
                pipeline_index: pi,
                variant_index: variants[&pi]
                    .iter()
                    .position(|v| *v == variant)
                    .unwrap_or(0),
                variant,
                x,
                metric: spec.report.metrics[mi].clone(),
                mean,
                se,
                mode,
                n: vals.len(),
                private,
                variant_tag: spec.pipelines[pi].variant_tag(),
            }
        })
        .collect()
}

/// `name` followed by its ablation variant's label in brackets (unchanged when empty).
pub fn tagged(name: String, label: &str) -> String {
    if label.is_empty() {
        name
    } else {
        format!("{name} [{label}]")
    }
}

/// Most frequent value (ties: the smallest); NaN for no values.
pub fn mode(xs: &[f64]) -> f64 {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (mut best, mut best_n, mut i) = (f64::NAN, 0, 0);
    while i < sorted.len() {
        let j = sorted[i..].iter().take_while(|&&v| v == sorted[i]).count();
        if j > best_n {
            (best, best_n) = (sorted[i], j);
        }
        i += j;
    }
    best
}

/// Whether a metric is reported by its mode (discrete choices such as log10 lambda).
pub fn is_modal(metric: &str) -> bool {
    metric.starts_with("log10_")
}

/// How an axis is written in labels.
pub fn axis_symbol(axis: &str) -> &str {
    match axis {
        "epsilon" => "ε",
        "features" => "T",
        other => other,
    }
}

/// Numeric position of an x value: the number itself, except on the threshold axis, whose
/// values (numbers and quantiles like `q65`) sit at their index in the grid's order.
pub fn x_position(spec: &Spec, v: &Value) -> f64 {
    if spec.report.x.as_deref() == Some("threshold") {
        let thresholds = spec.grid.threshold.as_deref().unwrap_or(&[]);
        return serde_json::from_value::<crate::learners::Threshold>(v.clone())
            .ok()
            .and_then(|t| thresholds.iter().position(|g| *g == t))
            .map_or(f64::NAN, |i| i as f64);
    }
    v.as_f64().unwrap_or(f64::NAN)
}

/// Display text of an x value.
pub fn x_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// Mean majority baseline (test accuracy of the training majority class) per dataset.
pub fn baselines(records: &[TrialRecord]) -> BTreeMap<String, f64> {
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in records {
        if let Some(b) = r.baseline_accuracy {
            by.entry(r.dataset.clone()).or_default().push(b);
        }
    }
    by.into_iter().map(|(k, v)| (k, mean_se(&v).0)).collect()
}

/// Files written by [`write()`].
#[derive(Debug, Clone)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub records: usize,
}

/// Rebuilds the report of a results folder from its `trials.jsonl`, in the spec's formats.
pub fn write(spec: &Spec, dir: &Path) -> Result<Written> {
    write_formats(spec, dir, &formats_of(spec), None)
}

/// The formats `[report] formats` asks for, else [`Format::DEFAULT`].
pub fn formats_of(spec: &Spec) -> Vec<Format> {
    spec.report
        .formats
        .clone()
        .unwrap_or_else(|| Format::DEFAULT.to_vec())
}

/// The figures of a `figure` report: histograms per metric, or accuracies in one figure and
/// each other metric in its own.
fn metric_figures(
    spec: &Spec,
    records: &[TrialRecord],
    summaries: &[Summary],
    base: &BTreeMap<String, f64>,
    titles: &BTreeMap<String, String>,
    verdicts: &verdict::Verdicts,
) -> Vec<(figure::Figure, String)> {
    let mut figures = Vec::new();
    if figure::kind_of(spec) == FigureKind::Histogram {
        for (i, m) in spec.report.metrics.iter().enumerate() {
            let stem = if i == 0 {
                "figure".to_string()
            } else {
                format!("figure_{m}")
            };
            figures.push((figure::Figure::histogram(spec, m, records, titles), stem));
        }
    } else {
        let (acc, other): (Vec<String>, Vec<String>) = spec
            .report
            .metrics
            .iter()
            .cloned()
            .partition(|m| is_accuracy(m));
        if !acc.is_empty() {
            let fig = figure::Figure::build(spec, &acc, summaries, base, titles, Some(verdicts));
            figures.push((fig, "figure".into()));
        }
        for m in other {
            let fig = figure::Figure::build(
                spec,
                std::slice::from_ref(&m),
                summaries,
                base,
                titles,
                Some(verdicts),
            );
            figures.push((fig, format!("figure_{m}")));
        }
    }
    let at = &spec.report.histograms_at;
    let chosen: Vec<TrialRecord> = records
        .iter()
        .filter(|r| {
            at.iter().all(|(k, v)| {
                r.params
                    .get(k)
                    .is_some_and(|p| p.as_f64().zip(v.as_f64()).map_or(p == v, |(a, b)| a == b))
            })
        })
        .cloned()
        .collect();
    for m in &spec.report.histograms {
        let fig = figure::Figure::histogram(spec, m, &chosen, titles);
        figures.push((fig, format!("figure_histogram_{m}")));
    }
    figures
}

/// [`write()`] in the given formats; `spec_path` names the spec on the HTML page.
pub fn write_formats(
    spec: &Spec,
    dir: &Path,
    formats: &[Format],
    spec_path: Option<&Path>,
) -> Result<Written> {
    let records = read_dir_records(dir)?;
    if records.is_empty() {
        return Err(Error::Store {
            path: dir.into(),
            reason: "no finished trials to report on; run the spec first (`epsilab run`)".into(),
        });
    }
    let titles: BTreeMap<String, String> = spec
        .experiment
        .datasets
        .iter()
        .map(|d| (d.clone(), dataset_title(spec, d)))
        .collect();
    let mut files = Vec::new();
    let mut put = |name: &str, text: String| -> Result<()> {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| Error::io(&p, e))?;
        files.push(p);
        Ok(())
    };
    let mut figures: Vec<(figure::Figure, String)> = Vec::new();
    match spec.report.kind {
        ReportKind::DatasetSummary => {
            let (md, csv) = table::dataset_summary(spec, &records, &titles);
            put("table.md", md)?;
            put("table.csv", csv)?;
        }
        ReportKind::Scatter | ReportKind::Curve => {
            put("table.csv", table::vectors_csv(spec, &records))?;
            put("table.md", table::vectors_markdown(spec, &records, &titles))?;
            figures.push((
                figure::Figure::from_vectors(spec, &records, &titles),
                "figure".into(),
            ));
        }
        ReportKind::SampleComplexity => {
            let (md, csv) = table::sample_complexity(spec, &records, &titles);
            put("table.md", md)?;
            put("table.csv", csv)?;
        }
        ReportKind::VectorsTable => {
            put("table.md", table::vectors_columns(spec, &records, &titles))?;
            put("table.csv", table::vectors_csv(spec, &records))?;
        }
        ReportKind::TopFeatures => {
            let (md, csv) = table::top_features(spec, &records, &titles);
            put("table.md", md)?;
            put("table.csv", csv)?;
        }
        ReportKind::Figure => {
            let summaries = summarise(spec, &records);
            let base = baselines(&records);
            let verdicts = verdict::evaluate(spec, &records);
            let wide = table::wide(spec, &summaries, &titles);
            put(
                "table.md",
                table::wide_markdown(spec, &wide, &base, &titles),
            )?;
            put("table.csv", table::csv(spec, &summaries))?;
            if formats.contains(&Format::Tex) {
                put("table.tex", table_tex::wide_latex(spec, &wide))?;
            }
            figures = metric_figures(spec, &records, &summaries, &base, &titles, &verdicts);
        }
    }
    figures.extend(view::figures(spec, &records, &titles));
    for (fig, stem) in &figures {
        files.extend(fig.save(dir, stem, formats)?);
    }
    if formats.contains(&Format::Html) {
        let path = spec_path.map_or_else(
            || PathBuf::from(format!("{}.toml", spec.experiment.name)),
            Path::to_path_buf,
        );
        let progress = reproduction::Progress::of(spec, &records);
        let s = reproduction::section(spec, &path, dir, &records, "", progress)?;
        let page = html::page(spec.title(), reproduction::INTRO, &[s], false);
        let p = dir.join("index.html");
        std::fs::write(&p, page).map_err(|e| Error::io(&p, e))?;
        files.push(p);
    }
    Ok(Written {
        files,
        records: records.len(),
    })
}

/// The display title of a dataset (catalog title, else its name).
pub fn dataset_title(spec: &Spec, name: &str) -> String {
    spec.catalog
        .get(name)
        .and_then(|d| d.title())
        .map_or_else(|| name.to_string(), str::to_string)
}

/// Whether a metric is an accuracy (plotted in percent, with the majority baseline).
pub fn is_accuracy(metric: &str) -> bool {
    metric.ends_with("accuracy")
}
