//! Reports rebuilt from the stored results alone: `table.md` (wide paper table), `table.csv`
//! (long form), and as `[report] formats` / `--format` ask: `figure.{png,svg,pdf}`, the
//! pgfplots `figure.tex` + `figure_data.csv`, the LaTeX `table.tex` and `index.html`.
//! Every series states whether it is private: "(private)" or "(non-private)".

/// `word()` of a verdict enum: the word a report prints for each variant (declared before the
/// modules so `verdict` and `slope` use it without naming each other).
macro_rules! verdict_words {
    ($ty:ident { $($variant:ident => $word:literal),* $(,)? }) => {
        impl $ty {
            /// The word a report prints for this verdict.
            pub fn word(&self) -> &'static str {
                match self {
                    $($ty::$variant { .. } => $word,)*
                }
            }
        }
    };
}

pub mod ablation;
pub mod figure;
pub mod html;
pub mod markdown;
pub mod pgf;
pub mod ratio;
pub mod reproduction;
pub mod sample_complexity;
pub mod slope;
pub mod stale;
pub mod summary;
pub mod table;
pub mod table_tex;
pub mod verdict;
pub mod view;

pub use summary::{
    NON_PRIVATE, Summary, axis_symbol, baselines, dataset_title, is_accuracy, is_modal, mode,
    summarise, tagged, x_position, x_text,
};

use crate::error::{Error, Result};
use crate::spec::{FigureKind, Format, ReportKind, Spec};
use crate::store::{TrialRecord, read_dir_records};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Files written by [`write()`].
#[derive(Debug, Clone)]
pub struct Written {
    pub files: Vec<PathBuf>,
    pub records: usize,
    /// `[report] metrics` and `histograms` that no trial records (a misspelt name draws an
    /// empty table or histogram), as (field, metric).
    pub unrecorded: Vec<(&'static str, String)>,
}

/// The `[report] metrics` and `histograms` of `spec` that no record holds, for a report that
/// draws them (the default `figure` kind; the others draw vectors or sizes and leave `metrics`
/// at its default). Metric names are whatever the pipelines record (an external program's
/// included), so only the records can tell a misspelt one.
fn unrecorded(spec: &Spec, records: &[TrialRecord]) -> Vec<(&'static str, String)> {
    if spec.report.kind != crate::spec::ReportKind::Figure {
        return Vec::new();
    }
    let metrics = (spec.report.metrics.iter())
        .filter(|m| records.iter().all(|r| r.metric(m).is_none()))
        .map(|m| ("report.metrics", m.clone()));
    let histograms = (spec.report.histograms.iter())
        .filter(|m| {
            records
                .iter()
                .all(|r| summary::metric_value(r, m).is_none())
        })
        .map(|m| ("report.histograms", m.clone()));
    metrics.chain(histograms).collect()
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
            at.iter()
                .all(|(k, v)| (r.params.get(k)).is_some_and(|p| crate::spec::same_grid_value(p, v)))
        })
        .cloned()
        .collect();
    for m in &spec.report.histograms {
        let fig = figure::Figure::histogram(spec, m, &chosen, titles);
        figures.push((fig, format!("figure_histogram_{m}")));
    }
    figures
}

/// Writes the report kind's tables through `put` and returns its figures with their stems.
fn tables(
    spec: &Spec,
    records: &[TrialRecord],
    titles: &BTreeMap<String, String>,
    formats: &[Format],
    put: &mut dyn FnMut(&str, String) -> Result<()>,
) -> Result<Vec<(figure::Figure, String)>> {
    let mut figures: Vec<(figure::Figure, String)> = Vec::new();
    let t = table::Trials {
        spec,
        records,
        titles,
    };
    match spec.report.kind {
        ReportKind::DatasetSummary => {
            let (md, csv) = table::dataset_summary(&t);
            put("table.md", md)?;
            put("table.csv", csv)?;
        }
        ReportKind::Scatter | ReportKind::Curve => {
            put("table.csv", table::vectors_csv(spec, records))?;
            put("table.md", table::vectors_markdown(&t))?;
            figures.push((
                figure::Figure::from_vectors(spec, records, titles),
                "figure".into(),
            ));
        }
        ReportKind::SampleComplexity => {
            let (md, csv) = table::sample_complexity(&t);
            put("table.md", md)?;
            put("table.csv", csv)?;
        }
        ReportKind::VectorsTable => {
            put("table.md", table::vectors_columns(&t))?;
            put("table.csv", table::vectors_csv(spec, records))?;
        }
        ReportKind::TopFeatures => {
            let (md, csv) = table::top_features(&t);
            put("table.md", md)?;
            put("table.csv", csv)?;
        }
        ReportKind::Figure => {
            let summaries = summarise(spec, records);
            let base = baselines(records);
            let verdicts = verdict::evaluate(spec, records);
            let wide = table::wide(spec, &summaries, titles);
            put("table.md", table::wide_markdown(spec, &wide, &base, titles))?;
            put("table.csv", table::csv(spec, &summaries))?;
            if formats.contains(&Format::Tex) {
                put("table.tex", table_tex::wide_latex(spec, &wide))?;
            }
            figures = metric_figures(spec, records, &summaries, &base, titles, &verdicts);
        }
    }
    Ok(figures)
}

/// The experiment's own `index.html`, naming `spec_path` (else `<name>.toml`).
fn html_page(
    spec: &Spec,
    dir: &Path,
    records: &[TrialRecord],
    spec_path: Option<&Path>,
) -> Result<PathBuf> {
    let path = spec_path.map_or_else(
        || PathBuf::from(format!("{}.toml", spec.experiment.name)),
        Path::to_path_buf,
    );
    let progress = reproduction::Progress::of(spec, records);
    let s = reproduction::section(spec, &path, dir, records, "", progress)?;
    let page = html::page(spec.title(), reproduction::INTRO, &[s], false);
    let p = dir.join("index.html");
    std::fs::write(&p, page).map_err(|e| Error::io(&p, e))?;
    Ok(p)
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
    let mut figures = tables(spec, &records, &titles, formats, &mut put)?;
    figures.extend(view::figures(spec, &records, &titles));
    for (fig, stem) in &figures {
        files.extend(fig.save(dir, stem, formats)?);
        if formats.contains(&Format::Pgf) {
            files.extend(pgf::save(fig, dir, stem)?);
        }
    }
    if formats.contains(&Format::Html) {
        files.push(html_page(spec, dir, &records, spec_path)?);
    }
    Ok(Written {
        files,
        records: records.len(),
        unrecorded: unrecorded(spec, &records),
    })
}
