//! Figures: one panel per dataset, one series per pipeline (mean ± standard error), reference
//! pipelines and the majority baseline as horizontal lines, published values as hollow diamonds
//! coloured by verdict. One model ([`Figure`]) is drawn by plotters (SVG, PNG), converted to a
//! vector PDF (svg2pdf, the font embedded) and exported to pgfplots ([`super::pgf`]).
//!
//! Sizes are in points so a figure set at `width_in` inches has `font_pt` text when placed at
//! 100% in a paper. Each series differs by colour (Okabe–Ito), marker and dash, so figures stay
//! readable in greyscale. Text is drawn with an embedded TTF (no system font libraries).

use super::summary::{Summary, is_accuracy, privacy_tag, x_position};
use super::verdict::Verdicts;
use crate::error::{Error, Result};
use crate::spec::{FigureKind, Format, ReportDef, ReportKind, Spec, Target, VectorSeries};
use crate::store::TrialRecord;
use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

const FONT: &str = "sans-serif";
/// SVG user units (CSS px) per point.
const SVG_PX_PER_PT: f64 = 96.0 / 72.0;
/// PNG resolution.
const PNG_DPI: f64 = 200.0;

/// A panel's chart: x on a linear or a log scale, y linear.
type Chart<'a, DB, X> =
    ChartContext<'a, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>;

/// What a drawing step returns: plotters' error as text (the caller names the file).
type Drawn = std::result::Result<(), String>;

/// A backend's drawing error as text.
fn draw_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> String {
    e.to_string()
}

/// Colour-blind-safe Okabe–Ito palette (yellow last: weakest on white).
pub const PALETTE: [(u8, u8, u8); 8] = [
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (204, 121, 167),
    (230, 159, 0),
    (86, 180, 233),
    (0, 0, 0),
    (240, 228, 66),
];
/// Grey of the majority baseline.
pub const GREY: (u8, u8, u8) = (110, 110, 110);

/// Marker of a series (or of the published values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Circle,
    Square,
    Triangle,
    Cross,
    OpenCircle,
    OpenSquare,
    /// Published targets only.
    Diamond,
    /// Derived targets only.
    FilledDiamond,
    /// Assumed targets only (an asterisk).
    Star,
    /// Small translucent dot (scatter plots of many points).
    Dot,
}

const SHAPES: [Shape; 6] = [
    Shape::Circle,
    Shape::Square,
    Shape::Triangle,
    Shape::Cross,
    Shape::OpenCircle,
    Shape::OpenSquare,
];

/// Line pattern of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
    Long,
}

const DASHES: [Dash; 4] = [Dash::Solid, Dash::Dashed, Dash::Dotted, Dash::Long];

impl Dash {
    /// (on, off) lengths in points; `None` for a solid line.
    pub fn pattern(self) -> Option<(f64, f64)> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some((4.0, 2.5)),
            Dash::Dotted => Some((1.0, 2.0)),
            Dash::Long => Some((8.0, 3.0)),
        }
    }
}

/// How a series or legend entry looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    pub colour: (u8, u8, u8),
    pub marker: Option<Shape>,
    /// The line joining the points (or the reference line); `None` for marks only.
    pub dash: Option<Dash>,
    /// Histogram outline.
    pub steps: bool,
}

impl Look {
    /// The look of the `i`-th series: colour, marker and dash all vary with `i`.
    pub fn nth(i: usize, line: bool) -> Look {
        Look {
            colour: PALETTE[i % PALETTE.len()],
            marker: Some(SHAPES[i % SHAPES.len()]),
            dash: line.then_some(DASHES[i % DASHES.len()]),
            steps: false,
        }
    }
}

fn rgb(c: (u8, u8, u8)) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// Colour of a published value by its verdict.
pub fn verdict_colour(verdict: &str) -> (u8, u8, u8) {
    match verdict {
        "reproduced" => (0, 90, 40),
        "differs" => (200, 30, 30),
        _ => (150, 150, 150),
    }
}

/// Registers the embedded font with plotters once per process (a constant table: the same
/// font whatever was drawn before).
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, epaint_default_fonts::UBUNTU_LIGHT)
            .map_err(|_| ())
            .expect("embedded font is valid");
    });
}

/// Size and type of a figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Style {
    pub width_in: f64,
    /// `None`: from the width and the number of panels.
    pub height_in: Option<f64>,
    pub font_pt: f64,
    pub share_y: bool,
    /// Set in one column of a paper (`size = "one-column"`, or a width under 5 in): the
    /// pgfplots figure is `\columnwidth` wide, else `\textwidth`.
    pub one_column: bool,
}

impl Style {
    pub fn from_report(r: &ReportDef) -> Style {
        let width_in = r.width_in.or(r.size.map(|s| s.width_in())).unwrap_or(7.0);
        Style {
            width_in,
            height_in: r.height_in,
            font_pt: r.font_pt.unwrap_or(9.0),
            share_y: r.share_y,
            one_column: width_in < 5.0,
        }
    }
}

/// A drawn series of one panel.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub look: Look,
    /// (x, y, se); empty for a reference line. Histograms: (bin start, count, bin end).
    pub points: Vec<(f64, f64, f64)>,
    /// Horizontal reference value and its s.e. (pipelines that do not vary along x).
    pub level: Option<(f64, f64)>,
    /// Error bars drawn.
    pub error_bars: bool,
}

/// A published value drawn on a panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// `None`: a reference pipeline's value, drawn at the middle of the x range.
    pub x: Option<f64>,
    pub y: f64,
    pub verdict: &'static str,
    /// Published, derived or assumed: drawn with its own marker and legend entry.
    pub target: Target,
}

/// The marker of a target of this kind: published values open diamonds, derived ones filled
/// diamonds, assumed ones asterisks (no series uses these), so that a figure with several kinds
/// tells them apart.
pub fn target_shape(target: Target) -> Shape {
    match target {
        Target::Published => Shape::Diamond,
        Target::Derived => Shape::FilledDiamond,
        Target::Assumed => Shape::Star,
    }
}

impl Shape {
    /// Whether it marks a target (drawn larger than a series' markers).
    pub fn is_target(self) -> bool {
        matches!(self, Shape::Diamond | Shape::FilledDiamond | Shape::Star)
    }
}

/// The legend entry of a target of this kind with its verdict.
pub fn target_legend(target: Target, verdict: &str) -> String {
    match target {
        Target::Published => format!("published ({verdict})"),
        other => format!("{} target ({verdict})", other.word()),
    }
}

#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    pub series: Vec<Series>,
    pub baseline: Option<f64>,
    pub published: Vec<Published>,
}

/// Everything a figure shows, already aggregated.
#[derive(Debug, Clone)]
pub struct Figure {
    pub panels: Vec<Panel>,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    /// Values are plotted as log10 (ticks read 10^k).
    pub log_y: bool,
    pub percent: bool,
    /// Tick labels of a categorical x axis (thresholds).
    pub categories: Option<Vec<String>>,
    /// A dot plot: x positions 0..n are the series, numbered on the axis and in the legend.
    pub dots: bool,
    pub style: Style,
    /// What the error bars (or the histogram counts, or the points) are and over how many
    /// trials, from the results: printed under the legend.
    pub note: String,
}

/// "N trials" or "N–M trials" over the counts of the plotted cells.
pub fn trials_text(counts: impl Iterator<Item = usize>) -> String {
    let (lo, hi) = counts.fold((usize::MAX, 0), |(a, b), n| (a.min(n), b.max(n)));
    match (lo, hi) {
        (usize::MAX, _) => "no trials".into(),
        (1, 1) => "1 trial".into(),
        (a, b) if a == b => format!("{a} trials"),
        (a, b) => format!("{a}–{b} trials"),
    }
}

/// The figure kind a spec asks for, with `auto` resolved.
pub fn kind_of(spec: &Spec) -> FigureKind {
    match spec.report.figure {
        FigureKind::Auto => {
            let n = match spec.report.x.as_deref() {
                Some("epsilon") => spec.grid.epsilon.as_ref().map(Vec::len),
                Some("threshold") => spec.grid.threshold.as_ref().map(Vec::len),
                Some("features") => spec.grid.features.as_ref().map(Vec::len),
                Some("lambda") => spec.grid.lambda.as_ref().map(Vec::len),
                Some("n_train") => spec.grid.n_train.as_ref().map(Vec::len),
                _ => None,
            };
            if spec.report.kind == ReportKind::Figure && n == Some(1) {
                FigureKind::Dot
            } else {
                FigureKind::Line
            }
        }
        k => k,
    }
}

/// Least-squares slope of log10 y on log10 x (`y` already log10); `None` below two points.
pub fn loglog_slope(points: &[(f64, f64, f64)]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.0 > 0.0 && p.1.is_finite())
        .map(|p| (p.0.log10(), p.1))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// A scatter's series from its points (x, y, marked): the marked points (`split_by` = 1) as
/// crosses, when the series splits, and the others as dots.
fn scatter_series(
    label: &str,
    tag: &str,
    i: usize,
    all: &[(f64, f64, bool)],
    split_by: Option<&str>,
) -> Vec<Series> {
    let mut series = Vec::new();
    let pick = |marked: bool| -> Vec<(f64, f64, f64)> {
        all.iter()
            .filter(|p| p.2 == marked)
            .map(|p| (p.0, p.1, 0.0))
            .collect()
    };
    if let Some(k) = split_by {
        series.push(Series {
            label: format!("{label} ({} = 1) {tag}", k.replace('_', " ")),
            look: Look {
                marker: Some(Shape::Cross),
                dash: None,
                ..Look::nth(i + 1, false)
            },
            points: pick(true),
            level: None,
            error_bars: false,
        });
    }
    series.push(Series {
        label: format!("{label} {tag}"),
        look: Look {
            marker: Some(Shape::Dot),
            dash: None,
            ..Look::nth(i, false)
        },
        points: pick(false),
        level: None,
        error_bars: false,
    });
    series
}

/// A vector series' label: its name, the pipeline's when there are several, and the grid
/// point (grid points are never averaged together: each is its own series).
fn vector_label(spec: &Spec, vs: &VectorSeries, pipeline: &str, point: &str) -> String {
    let label = vs.label.clone().unwrap_or_else(|| vs.y.replace('_', " "));
    let label = if spec.pipelines.len() > 1 {
        format!("{pipeline} — {label}")
    } else {
        label
    };
    if point.is_empty() {
        label
    } else {
        format!("{label} ({point})")
    }
}

/// A record's points of `vs`: (x, y, marked), y in log10 when `log_y`, x the index from 1
/// when the series names no x vector; none when the record lacks the y vector.
fn vector_points(r: &TrialRecord, vs: &VectorSeries, log_y: bool) -> Vec<(f64, f64, bool)> {
    let Some(y) = r.vectors.get(&vs.y) else {
        return Vec::new();
    };
    let ty = |v: f64| {
        if log_y {
            v.max(f64::MIN_POSITIVE).log10()
        } else {
            v
        }
    };
    let x = vs.x.as_ref().and_then(|x| r.vectors.get(x));
    let split = vs.split_by.as_ref().and_then(|k| r.vectors.get(k));
    (0..y.len())
        .map(|i| {
            let xi = x.map_or(i as f64 + 1.0, |x| x[i]);
            (xi, ty(y[i]), split.is_some_and(|s| s[i] == 1.0))
        })
        .collect()
}

/// How a figure's values are plotted: scaled (to percent), on log-log axes, or as dots.
struct PlotAxes {
    scale: f64,
    loglog: bool,
    dots: bool,
}

/// A published value before its x is placed: its series' label, its x, y and verdict word.
type Unplaced = (String, Option<f64>, f64, &'static str, Target);

impl PlotAxes {
    /// A mean and its standard error as plotted (log10 on log-log axes).
    fn plotted(&self, v: f64, se: f64) -> (f64, f64) {
        if self.loglog {
            let m = (self.scale * v).max(f64::MIN_POSITIVE);
            (m.log10(), se / (m * std::f64::consts::LN_10) * self.scale)
        } else {
            (self.scale * v, self.scale * se)
        }
    }

    /// Dataset `d`'s series of `metrics` (points sorted by x) and its published values;
    /// each new label is appended to `order`.
    fn dataset_series(
        &self,
        spec: &Spec,
        d: &str,
        metrics: &[String],
        summaries: &[Summary],
        verdicts: Option<&Verdicts>,
        order: &mut Vec<String>,
    ) -> (Vec<Series>, Vec<Unplaced>) {
        let multi = metrics.len() > 1;
        let mut series: Vec<Series> = Vec::new();
        let mut published = Vec::new();
        for s in summaries
            .iter()
            .filter(|s| s.dataset == d && metrics.contains(&s.metric))
        {
            let label = if multi {
                format!("{} — {}", s.label(), s.metric.replace('_', " "))
            } else {
                s.label()
            };
            let mi = metrics.iter().position(|m| *m == s.metric).unwrap_or(0);
            let nth = s.pipeline_index + spec.pipelines.len() * (s.variant_index + mi * 3);
            let idx = series_slot(&mut series, &label, nth, !self.dots);
            if !order.contains(&label) {
                order.push(label.clone());
            }
            let (m, se) = self.plotted(s.mean, s.se);
            let x = s.x.as_ref().map(|x| x_position(spec, x));
            match x {
                Some(x) => series[idx].points.push((x, m, se)),
                None => series[idx].level = Some((m, se)),
            }
            if let Some((cell, verdict, target)) = verdicts.and_then(|v| published_cell(spec, v, s))
            {
                published.push((label, x, self.plotted(cell, 0.0).0, verdict, target));
            }
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        (series, published)
    }
}

/// The index of the series labelled `label`, added (the `nth` look) if new.
fn series_slot(series: &mut Vec<Series>, label: &str, nth: usize, lines: bool) -> usize {
    if let Some(i) = series.iter().position(|x| x.label == label) {
        return i;
    }
    series.push(Series {
        label: label.to_string(),
        look: Look::nth(nth, lines),
        points: Vec::new(),
        level: None,
        error_bars: true,
    });
    series.len() - 1
}

/// Published values placed: on a dot figure at their series' category (its place in `order`).
fn placed(published: Vec<Unplaced>, order: &[String], dots: bool) -> Vec<Published> {
    published
        .into_iter()
        .map(|(label, x, y, verdict, target)| Published {
            x: if dots {
                order.iter().position(|l| *l == label).map(|i| i as f64)
            } else {
                x
            },
            y,
            verdict,
            target,
        })
        .collect()
}

impl Figure {
    /// The figure of `metrics` (all accuracies, or one other quantity) in the spec's kind
    /// (histograms: see [`Figure::histogram`]).
    pub fn build(
        spec: &Spec,
        metrics: &[String],
        summaries: &[Summary],
        baselines: &BTreeMap<String, f64>,
        titles: &BTreeMap<String, String>,
        verdicts: Option<&Verdicts>,
    ) -> Figure {
        let kind = kind_of(spec);
        let (loglog, dots) = (kind == FigureKind::Loglog, kind == FigureKind::Dot);
        let percent = metrics.iter().all(|m| is_accuracy(m));
        let axes = PlotAxes {
            scale: if percent { 100.0 } else { 1.0 },
            loglog,
            dots,
        };
        // A majority pipeline is the baseline already: no second "majority baseline" entry.
        let has_majority = spec.pipelines.iter().any(|p| p.is_baseline());
        let mut panels = Vec::new();
        let mut order: Vec<String> = Vec::new();
        for d in &spec.experiment.datasets {
            let (series, published) =
                axes.dataset_series(spec, d, metrics, summaries, verdicts, &mut order);
            panels.push(Panel {
                title: titles.get(d).cloned().unwrap_or_else(|| d.clone()),
                series,
                baseline: if percent && !has_majority && !loglog {
                    baselines.get(d).map(|b| axes.scale * b)
                } else {
                    None
                },
                published: placed(published, &order, dots),
            });
        }
        let categories_of_dots = dots.then(|| place_dots(&mut panels, &order));
        if loglog {
            label_slopes(&mut panels);
        }
        let (x_label, y_label, categories) = axis_labels(spec, metrics, percent, dots);
        let categories = categories.or(categories_of_dots);
        let plotted = summaries.iter().filter(|s| metrics.contains(&s.metric));
        let note = format!(
            "Points and error bars: mean ± s.e. over {}.",
            trials_text(plotted.map(|s| s.n))
        );
        Figure {
            panels,
            x_label,
            y_label,
            log_x: (spec.report.log_x || loglog) && !dots,
            log_y: loglog,
            percent: percent && !loglog,
            categories,
            dots,
            style: Style::from_report(&spec.report),
            note,
        }
    }

    /// Histogram of the per-trial values of `metric`, one outline per series (pipeline and
    /// grid point), one panel per dataset. Each series has 20 bins over its own range and is
    /// drawn as a density (count / (trials × bin width)), so a narrow series is not squashed
    /// into one bin of a wide one; series more than 20 times narrower than the widest of their
    /// dataset get a panel of their own scale. Each series has its own colour, marker and dash.
    pub fn histogram(
        spec: &Spec,
        metric: &str,
        records: &[TrialRecord],
        titles: &BTreeMap<String, String>,
    ) -> Figure {
        let scale = if is_accuracy(metric) { 100.0 } else { 1.0 };
        let mut panels = Vec::new();
        let mut counts = Vec::new();
        let mut looks = 0;
        for d in &spec.experiment.datasets {
            let mut groups = histogram_groups(spec, metric, records, d, scale);
            // Spec order of the pipelines, then first-seen order of their grid points.
            groups.sort_by_key(|g| g.1);
            let spread = |v: &[f64]| {
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                hi - lo
            };
            let widest = groups.iter().map(|g| spread(&g.2)).fold(0.0, f64::max);
            let mut wide = Vec::new();
            let mut narrow = Vec::new();
            for (gi, (label, _, vals)) in groups.into_iter().enumerate() {
                counts.push(vals.len());
                let series = Series {
                    label,
                    look: Look {
                        steps: true,
                        marker: None,
                        ..Look::nth(gi, true)
                    },
                    points: density_bins(&vals),
                    level: None,
                    error_bars: false,
                };
                looks = looks.max(gi + 1);
                if spread(&vals) * 20.0 < widest {
                    narrow.push(series);
                } else {
                    wide.push(series);
                }
            }
            let title = titles.get(d).cloned().unwrap_or_else(|| d.clone());
            let split = !narrow.is_empty();
            for (series, suffix) in [(wide, ""), (narrow, ": narrower series")] {
                if series.is_empty() {
                    continue;
                }
                panels.push(Panel {
                    title: if split {
                        format!("{title}{suffix}")
                    } else {
                        title.clone()
                    },
                    series,
                    baseline: None,
                    published: Vec::new(),
                });
            }
        }
        Figure {
            panels,
            x_label: if scale == 100.0 {
                format!("{} (%)", metric.replace('_', " "))
            } else {
                metric.replace('_', " ")
            },
            y_label: "density".into(),
            log_x: false,
            log_y: false,
            percent: false,
            categories: None,
            dots: false,
            style: Style::from_report(&spec.report),
            note: format!(
                "Histograms of {} per series, 20 bins over each series' own range, as densities.",
                trials_text(counts.into_iter())
            ),
        }
    }

    /// A figure of vectors recorded by analysis probes (`scatter` and `curve` reports).
    pub fn from_vectors(
        spec: &Spec,
        records: &[TrialRecord],
        titles: &BTreeMap<String, String>,
    ) -> Figure {
        let curve = spec.report.kind == ReportKind::Curve;
        let loglog = kind_of(spec) == FigureKind::Loglog;
        let log_y = spec.report.log_y || loglog;
        let mut panels = Vec::new();
        let mut counts = Vec::new();
        for d in &spec.experiment.datasets {
            let mut series = Vec::new();
            let groups = vector_groups(spec, records, d);
            let n_groups = groups.len();
            for (gi, (pi, point, rs)) in groups.into_iter().enumerate() {
                let p = &spec.pipelines[pi];
                counts.push(rs.len());
                let tag = privacy_tag(rs.iter().all(|r| r.private));
                for (si, vs) in spec.report.series.iter().enumerate() {
                    let label = vector_label(spec, vs, &p.name, &point);
                    let i = gi + n_groups * si;
                    let xy = |r: &TrialRecord| vector_points(r, vs, log_y);
                    if curve {
                        let all: Vec<Vec<(f64, f64, bool)>> = rs.iter().map(|r| xy(r)).collect();
                        // A pipeline that records no such vector (a release beside an attack).
                        if all.iter().all(Vec::is_empty) {
                            continue;
                        }
                        series.push(curve_series(&label, tag, i, &all, loglog));
                        continue;
                    }
                    let all: Vec<(f64, f64, bool)> = rs.iter().flat_map(|r| xy(r)).collect();
                    let split_by = vs.split_by.as_deref();
                    series.extend(scatter_series(&label, tag, i, &all, split_by));
                }
            }
            let title = titles.get(d).cloned().unwrap_or_else(|| d.clone());
            panels.extend(vector_panels(spec, title, series));
        }
        let names = |v: &[String]| v.join(", ").replace('_', " ");
        let ys: Vec<String> = spec.report.series.iter().map(|s| s.y.clone()).collect();
        let x_default = spec
            .report
            .series
            .first()
            .and_then(|s| s.x.clone())
            .unwrap_or_else(|| "index".into());
        Figure {
            note: vector_note(curve, counts),
            panels,
            x_label: spec
                .report
                .x_label
                .clone()
                .unwrap_or_else(|| x_default.replace('_', " ")),
            y_label: spec.report.y_label.clone().unwrap_or_else(|| names(&ys)),
            log_x: spec.report.log_x || loglog,
            log_y,
            percent: false,
            categories: None,
            dots: false,
            style: Style::from_report(&spec.report),
        }
    }

    /// Panel grid: (columns, rows).
    pub fn grid(&self) -> (usize, usize) {
        let n = self.panels.len().max(1);
        let max_cols = if self.style.width_in < 5.0 { 2 } else { 3 };
        let cols = n.min(max_cols);
        (cols, n.div_ceil(cols))
    }

    /// Legend entries across all panels, in first-seen order, each label once.
    pub fn legend_entries(&self) -> Vec<(String, Look)> {
        let mut out: Vec<(String, Look)> = Vec::new();
        let mut add = |label: String, look: Look| {
            if !out.iter().any(|(l, _)| *l == label) {
                out.push((label, look));
            }
        };
        for panel in &self.panels {
            for s in &panel.series {
                add(s.label.clone(), s.look);
            }
        }
        if self.panels.iter().any(|p| p.baseline.is_some()) {
            add(
                format!("majority baseline {}", super::summary::NON_PRIVATE),
                Look {
                    colour: GREY,
                    marker: None,
                    dash: Some(Dash::Dashed),
                    steps: false,
                },
            );
        }
        for target in Target::ALL {
            for verdict in ["reproduced", "differs", "missing"] {
                if self.panels.iter().any(|p| {
                    p.published
                        .iter()
                        .any(|q| q.verdict == verdict && q.target == target)
                }) {
                    add(
                        target_legend(target, verdict),
                        Look {
                            colour: verdict_colour(verdict),
                            marker: Some(target_shape(target)),
                            dash: None,
                            steps: false,
                        },
                    );
                }
            }
        }
        out
    }

    /// Legend layout in points: (entries per row, rows, row height).
    fn legend_layout(&self) -> (usize, usize, f64) {
        let f = self.style.font_pt;
        let entries = self.legend_entries();
        let widest = entries
            .iter()
            .map(|(l, _)| l.chars().count())
            .max()
            .unwrap_or(0) as f64;
        let entry_w = 2.6 * f + 0.5 * f * widest;
        let per_row = ((self.style.width_in * 72.0 - f) / entry_w)
            .floor()
            .max(1.0) as usize;
        let per_row = per_row.min(entries.len().max(1));
        // One more row for the note on the error bars and trials.
        (per_row, entries.len().div_ceil(per_row) + 1, 1.45 * f)
    }

    /// Figure size in points.
    pub fn size_pt(&self) -> (f64, f64) {
        let (cols, rows) = self.grid();
        let w = self.style.width_in * 72.0;
        let (_, lrows, lh) = self.legend_layout();
        let legend = lrows as f64 * lh + 0.6 * self.style.font_pt;
        let h = match self.style.height_in {
            Some(h) => h * 72.0,
            None => rows as f64 * (w / cols as f64) * 0.78 + legend,
        };
        (w, h)
    }

    /// The figure as SVG text (CSS px, 96 per inch).
    pub fn svg(&self) -> std::result::Result<String, String> {
        register_font();
        let (w, h) = self.size_pt();
        let size = (
            (w * SVG_PX_PER_PT).round() as u32,
            (h * SVG_PX_PER_PT).round() as u32,
        );
        let mut out = String::new();
        self.draw(
            SVGBackend::with_string(&mut out, size).into_drawing_area(),
            SVG_PX_PER_PT,
        )?;
        Ok(out)
    }

    /// Writes `<stem>.svg`, `.png` and `.pdf` into `dir`, as `formats` asks (the pgfplots
    /// files are [`super::pgf::save`]'s).
    pub fn save(&self, dir: &Path, stem: &str, formats: &[Format]) -> Result<Vec<PathBuf>> {
        register_font();
        let fail = |p: &Path, e: String| Error::Store {
            path: p.into(),
            reason: format!("cannot draw the figure: {e}"),
        };
        let mut files = Vec::new();
        let put = |name: String, bytes: &[u8]| -> Result<PathBuf> {
            let p = dir.join(name);
            std::fs::write(&p, bytes).map_err(|e| Error::io(&p, e))?;
            Ok(p)
        };
        if formats.contains(&Format::Svg) || formats.contains(&Format::Pdf) {
            let svg_path = dir.join(format!("{stem}.svg"));
            let svg = self.svg().map_err(|e| fail(&svg_path, e))?;
            if formats.contains(&Format::Svg) {
                files.push(put(format!("{stem}.svg"), svg.as_bytes())?);
            }
            if formats.contains(&Format::Pdf) {
                let pdf_path = dir.join(format!("{stem}.pdf"));
                let pdf = svg_to_pdf(&svg).map_err(|e| fail(&pdf_path, e))?;
                files.push(put(format!("{stem}.pdf"), &pdf)?);
            }
        }
        if formats.contains(&Format::Png) {
            let png = dir.join(format!("{stem}.png"));
            let k = PNG_DPI / 72.0;
            let (w, h) = self.size_pt();
            let size = ((w * k).round() as u32, (h * k).round() as u32);
            self.draw(BitMapBackend::new(&png, size).into_drawing_area(), k)
                .map_err(|e| fail(&png, e))?;
            files.push(png);
        }
        Ok(files)
    }

    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>, k: f64) -> Drawn {
        root.fill(&WHITE).map_err(draw_error)?;
        let (cols, rows) = self.grid();
        let (_, h) = root.dim_in_pixel();
        let (_, lrows, lh) = self.legend_layout();
        let legend_h = ((lrows as f64 * lh + 0.6 * self.style.font_pt) * k).round() as u32;
        let (plots, legend) = root.split_vertically(h.saturating_sub(legend_h));
        let areas = plots.split_evenly((rows, cols));
        let shared = self.style.share_y.then(|| self.shared_y_range());
        for (panel, area) in self.panels.iter().zip(areas) {
            self.draw_panel(panel, &area, k, shared)?;
        }
        self.draw_legend(&legend, k)?;
        root.present().map_err(draw_error)
    }

    fn y_tick(&self, v: f64) -> String {
        if self.log_y {
            format_tick(10f64.powf(v))
        } else {
            format_tick(v)
        }
    }

    fn shared_y_range(&self) -> (f64, f64) {
        self.panels
            .iter()
            .map(|p| self.y_range(p))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (lo, hi)| {
                (a.min(lo), b.max(hi))
            })
    }

    /// The y range of a panel, padded.
    pub fn y_range(&self, panel: &Panel) -> (f64, f64) {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for s in &panel.series {
            for &(_, m, se) in &s.points {
                if s.look.steps {
                    lo = lo.min(0.0);
                    hi = hi.max(m);
                } else if m.is_finite() {
                    lo = lo.min(m - se);
                    hi = hi.max(m + se);
                }
            }
            if let Some((l, _)) = s.level {
                lo = lo.min(l);
                hi = hi.max(l);
            }
        }
        for b in panel
            .baseline
            .iter()
            .chain(panel.published.iter().map(|p| &p.y))
        {
            lo = lo.min(*b);
            hi = hi.max(*b);
        }
        if !lo.is_finite() {
            return (0.0, 1.0);
        }
        let pad = ((hi - lo) * 0.08).max(if self.percent { 2.0 } else { 1e-6 });
        let (mut lo, mut hi) = (lo - pad, hi + pad);
        if self.percent {
            lo = lo.max(0.0);
            hi = hi.min(100.0);
        }
        (lo, hi)
    }

    /// The x range of a panel, padded.
    pub fn x_range(&self, panel: &Panel) -> (f64, f64) {
        let xs = panel.series.iter().flat_map(|s| {
            s.points.iter().flat_map(move |p| {
                if s.look.steps {
                    vec![p.0, p.2]
                } else {
                    vec![p.0]
                }
            })
        });
        let (lo, hi) = xs
            .chain(panel.published.iter().filter_map(|p| p.x))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                (a.min(x), b.max(x))
            });
        if !lo.is_finite() {
            return (0.0, 1.0);
        }
        if self.log_x {
            (lo / 1.5, hi * 1.5)
        } else {
            let pad = if hi > lo { (hi - lo) * 0.05 } else { 0.5 };
            let pad = if self.dots { 0.6 } else { pad };
            (lo - pad, hi + pad)
        }
    }

    fn draw_panel<DB: DrawingBackend>(
        &self,
        panel: &Panel,
        area: &DrawingArea<DB, Shift>,
        k: f64,
        shared_y: Option<(f64, f64)>,
    ) -> Drawn {
        let f = self.style.font_pt;
        let px = |pt: f64| (pt * k).round().max(1.0) as i32;
        let (x0, x1) = self.x_range(panel);
        let (y0, y1) = shared_y.unwrap_or_else(|| self.y_range(panel));
        let mut builder = ChartBuilder::on(area);
        builder
            .caption(&panel.title, (FONT, f * k))
            .margin(px(0.35 * f))
            .x_label_area_size(px(2.4 * f))
            .y_label_area_size(px(3.4 * f));
        if self.log_x {
            let mut chart = builder
                .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                .map_err(draw_error)?;
            self.draw_mesh(&mut chart, k, &|v| format_tick(*v))?;
            self.draw_series(&mut chart, panel, x0, x1, k)
        } else {
            let mut chart = builder
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(draw_error)?;
            let cats = self.categories.clone();
            let dots = self.dots;
            let fmt = move |v: &f64| match &cats {
                Some(c) => {
                    let i = v.round();
                    if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < c.len() {
                        c[i as usize].clone()
                    } else {
                        String::new()
                    }
                }
                None if dots => String::new(),
                None => format_tick(*v),
            };
            self.draw_mesh(&mut chart, k, &fmt)?;
            self.draw_series(&mut chart, panel, x0, x1, k)
        }
    }

    /// A panel's axes, labels and grid, the x ticks written by `x_fmt`; on a linear x axis,
    /// one tick per category and no vertical grid lines under a dot plot.
    fn draw_mesh<'a, DB, X>(
        &self,
        chart: &mut Chart<'a, DB, X>,
        k: f64,
        x_fmt: &dyn Fn(&f64) -> String,
    ) -> Drawn
    where
        DB: DrawingBackend + 'a,
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let f = self.style.font_pt;
        let y_fmt = |v: &f64| self.y_tick(*v);
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .label_style((FONT, 0.85 * f * k))
            .axis_desc_style((FONT, f * k))
            .x_labels(5)
            .y_labels(6)
            .light_line_style(WHITE)
            .x_label_formatter(x_fmt)
            .y_label_formatter(&y_fmt);
        if !self.log_x {
            if let Some(c) = &self.categories {
                mesh.x_labels(c.len() + 1);
            }
            if self.dots {
                mesh.disable_x_mesh();
            }
        }
        mesh.draw().map_err(draw_error)
    }

    fn draw_series<'a, DB: DrawingBackend + 'a, X: Ranged<ValueType = f64>>(
        &self,
        chart: &mut Chart<'a, DB, X>,
        panel: &Panel,
        x0: f64,
        x1: f64,
        k: f64,
    ) -> Drawn {
        let lw = (1.0 * k).round().max(1.0) as u32;
        let r = (2.2 * k).round().max(2.0) as i32;
        let mid = if self.log_x {
            (x0 * x1).sqrt()
        } else {
            (x0 + x1) / 2.0
        };
        if let Some(b) = panel.baseline {
            let grey = ShapeStyle::from(&rgb(GREY)).stroke_width(lw);
            dashed(chart, vec![(x0, b), (x1, b)], Dash::Dashed, grey, k)?;
        }
        for s in &panel.series {
            let colour = rgb(s.look.colour);
            let style = ShapeStyle::from(&colour).stroke_width(lw);
            let dash = s.look.dash.unwrap_or(Dash::Solid);
            if let Some((level, _)) = s.level {
                dashed(chart, vec![(x0, level), (x1, level)], dash, style, k)?;
                continue;
            }
            if s.look.steps {
                let mut path = Vec::new();
                for &(a, c, b) in &s.points {
                    path.push((a, c));
                    path.push((b, c));
                }
                dashed(chart, path, dash, style, k)?;
                continue;
            }
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|p| p.1.is_finite())
                .map(|p| (p.0, p.1))
                .collect();
            if s.look.dash.is_some() && pts.len() > 1 {
                dashed(chart, pts.clone(), dash, style, k)?;
            }
            if s.error_bars {
                chart
                    .draw_series(s.points.iter().filter(|p| p.2 > 0.0).map(|&(x, m, se)| {
                        ErrorBar::new_vertical(x, m - se, m, m + se, style, (3.0 * k) as u32)
                    }))
                    .map_err(draw_error)?;
            }
            if let Some(shape) = s.look.marker {
                draw_markers(chart, &pts, shape, r, colour, lw)?;
            }
        }
        let rd = (3.4 * k).round() as i32;
        let lw2 = (1.4 * k).round().max(1.0) as u32;
        for p in &panel.published {
            let at = [(p.x.unwrap_or(mid), p.y)];
            let c = rgb(verdict_colour(p.verdict));
            draw_markers(chart, &at, target_shape(p.target), rd, c, lw2)?;
        }
        Ok(())
    }

    /// The shared legend strip under the panels.
    fn draw_legend<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, k: f64) -> Drawn {
        let f = self.style.font_pt;
        let (w, _) = area.dim_in_pixel();
        let (per_row, _, lh) = self.legend_layout();
        let left = 0.5 * f * k;
        let col_w = (w as f64 - 2.0 * left) / per_row as f64;
        let lw = (1.0 * k).round().max(1.0) as u32;
        let sample = 2.0 * f * k;
        for (i, (label, look)) in self.legend_entries().into_iter().enumerate() {
            let x = (left + (i % per_row) as f64 * col_w) as i32;
            let y = ((0.3 * f + (i / per_row) as f64 * lh + lh / 2.0) * k) as i32;
            let colour = rgb(look.colour);
            let line = ShapeStyle::from(&colour).stroke_width(lw);
            if let Some(d) = look.dash {
                for (a, b) in dash_segments(sample, d, k) {
                    area.draw(&PathElement::new(
                        vec![(x + a as i32, y), (x + b as i32, y)],
                        line,
                    ))
                    .map_err(draw_error)?;
                }
            }
            if let Some(m) = look.marker {
                let (r, lw) = if m.is_target() {
                    ((3.4 * k) as i32, (1.4 * k).max(1.0) as u32)
                } else {
                    ((2.2 * k).max(2.0) as i32, lw)
                };
                let at = (x + (sample / 2.0) as i32, y);
                let (path, filled) = marker_path(m, r);
                let path: Vec<(i32, i32)> =
                    path.into_iter().map(|p| (at.0 + p.0, at.1 + p.1)).collect();
                if filled {
                    area.draw(&Polygon::new(path, colour.filled()))
                        .map_err(draw_error)?;
                } else {
                    let stroke = ShapeStyle::from(&colour).stroke_width(lw);
                    area.draw(&PathElement::new(path, stroke))
                        .map_err(draw_error)?;
                }
            }
            let text = TextStyle::from((FONT, 0.9 * f * k).into_font()).pos(
                plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Left,
                    plotters::style::text_anchor::VPos::Center,
                ),
            );
            area.draw(&Text::new(
                label,
                (x + (sample + 0.5 * f * k) as i32, y),
                text,
            ))
            .map_err(draw_error)?;
        }
        let rows = self.legend_entries().len().div_ceil(per_row);
        let y = ((0.3 * f + rows as f64 * lh + lh / 2.0) * k) as i32;
        let text = TextStyle::from((FONT, 0.85 * f * k).into_font()).pos(
            plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Left,
                plotters::style::text_anchor::VPos::Center,
            ),
        );
        area.draw(&Text::new(self.note.clone(), (left as i32, y), text))
            .map_err(draw_error)?;
        Ok(())
    }
}

/// The outline of a marker of radius `r` around (0, 0), and whether it is filled.
fn marker_path(shape: Shape, r: i32) -> (Vec<(i32, i32)>, bool) {
    let ring = |r: i32| -> Vec<(i32, i32)> {
        (0..=16)
            .map(|i| {
                let a = std::f64::consts::TAU * i as f64 / 16.0;
                (
                    (r as f64 * a.cos()).round() as i32,
                    (r as f64 * a.sin()).round() as i32,
                )
            })
            .collect()
    };
    let square = vec![(-r, -r), (r, -r), (r, r), (-r, r), (-r, -r)];
    let t = (r as f64 * 1.25) as i32;
    match shape {
        Shape::Circle => (ring(r), true),
        Shape::OpenCircle => (ring(r), false),
        Shape::Square => (square, true),
        Shape::OpenSquare => (square, false),
        Shape::Triangle => (
            vec![(0, -t), (t, t * 3 / 4), (-t, t * 3 / 4), (0, -t)],
            true,
        ),
        Shape::Cross => (vec![(-r, -r), (r, r), (0, 0), (-r, r), (r, -r)], false),
        Shape::Diamond => (vec![(0, -r), (r, 0), (0, r), (-r, 0), (0, -r)], false),
        Shape::FilledDiamond => (vec![(0, -r), (r, 0), (0, r), (-r, 0), (0, -r)], true),
        Shape::Star => {
            let k = r * 7 / 10;
            let spokes = [
                (-r, 0),
                (r, 0),
                (0, 0),
                (0, -r),
                (0, r),
                (0, 0),
                (-k, -k),
                (k, k),
            ];
            let tail = [(0, 0), (-k, k), (k, -k)];
            (spokes.into_iter().chain(tail).collect(), false)
        }
        Shape::Dot => (ring((r / 2).max(1)), true),
    }
}

/// Draws markers at `pts` in chart coordinates.
fn draw_markers<'a, DB: DrawingBackend + 'a, X: Ranged<ValueType = f64>>(
    chart: &mut Chart<'a, DB, X>,
    pts: &[(f64, f64)],
    shape: Shape,
    r: i32,
    colour: RGBColor,
    lw: u32,
) -> Drawn {
    let (path, filled) = marker_path(shape, r);
    if filled {
        let fill = if shape == Shape::Dot {
            colour.mix(0.7).filled()
        } else {
            colour.filled()
        };
        chart
            .draw_series(
                pts.iter()
                    .map(|&p| EmptyElement::at(p) + Polygon::new(path.clone(), fill)),
            )
            .map_err(draw_error)?;
    } else {
        let stroke = ShapeStyle::from(&colour).stroke_width(lw);
        chart
            .draw_series(
                pts.iter()
                    .map(|&p| EmptyElement::at(p) + PathElement::new(path.clone(), stroke)),
            )
            .map_err(draw_error)?;
    }
    Ok(())
}

/// (start, end) of the drawn pieces of a `len`-pixel line in pattern `d`.
fn dash_segments(len: f64, d: Dash, k: f64) -> Vec<(f64, f64)> {
    match d.pattern() {
        None => vec![(0.0, len)],
        Some((on, off)) => {
            let (on, off) = (on * k, off * k);
            let mut out = Vec::new();
            let mut a = 0.0;
            while a < len {
                out.push((a, (a + on).min(len)));
                a += on + off;
            }
            out
        }
    }
}

fn dashed<'a, DB: DrawingBackend + 'a, X: Ranged<ValueType = f64>>(
    chart: &mut Chart<'a, DB, X>,
    pts: Vec<(f64, f64)>,
    d: Dash,
    style: ShapeStyle,
    k: f64,
) -> Drawn {
    match d.pattern() {
        None => chart.draw_series(LineSeries::new(pts, style)).map(|_| ()),
        Some((on, off)) => chart
            .draw_series(DashedLineSeries::new(
                pts,
                (on * k).round().max(1.0) as u32,
                (off * k).round().max(1.0) as u32,
                style,
            ))
            .map(|_| ()),
    }
    .map_err(draw_error)
}

/// The published cell behind a summary and its verdict word.
fn published_cell(spec: &Spec, v: &Verdicts, s: &Summary) -> Option<(f64, &'static str, Target)> {
    let cell = super::summary::published_cell(spec, s)?;
    v.cells
        .iter()
        .find(|(c, _)| std::ptr::eq(*c, cell))
        .map(|(c, verdict)| (c.value, verdict.word(), c.target))
}

fn slope_text(k: f64) -> String {
    format!("{k:.2}").replace('-', "−")
}

/// Converts plotters' SVG to PDF with the embedded font (the only font the SVG names).
pub fn svg_to_pdf(svg: &str) -> std::result::Result<Vec<u8>, String> {
    let mut db = usvg::fontdb::Database::new();
    db.load_font_data(epaint_default_fonts::UBUNTU_LIGHT.to_vec());
    let family = db
        .faces()
        .next()
        .and_then(|f| f.families.first().map(|(n, _)| n.clone()))
        .ok_or("the embedded font has no family name")?;
    db.set_sans_serif_family(family);
    let opt = usvg::Options {
        fontdb: Arc::new(db),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| e.to_string())?;
    svg2pdf::to_pdf(
        &tree,
        svg2pdf::ConversionOptions::default(),
        svg2pdf::PageOptions { dpi: 96.0 },
    )
    .map(canonical_resources)
    .map_err(|e| e.to_string())
}

/// svg2pdf writes the entries of a resource dictionary (`/xo3 12 0 R` lines) in hash-map
/// order; sorting each run of such lines makes the PDF byte-identical across runs. Every line
/// keeps its length, so the cross-reference offsets stay valid. Stream data is left alone.
fn canonical_resources(pdf: Vec<u8>) -> Vec<u8> {
    fn is_entry(line: &[u8]) -> bool {
        let t = line.trim_ascii_start();
        line.len() > t.len()
            && t.first() == Some(&b'/')
            && t.ends_with(b" 0 R")
            && t.iter().filter(|&&b| b == b' ').count() == 3
    }
    let mut out = Vec::with_capacity(pdf.len());
    let mut run: Vec<&[u8]> = Vec::new();
    let mut in_stream = false;
    let flush = |run: &mut Vec<&[u8]>, out: &mut Vec<u8>| {
        run.sort();
        for l in run.drain(..) {
            out.extend_from_slice(l);
            out.push(b'\n');
        }
    };
    let mut lines = pdf.split(|&b| b == b'\n').peekable();
    while let Some(line) = lines.next() {
        let last = lines.peek().is_none();
        if !in_stream && is_entry(line) && !last {
            run.push(line);
            continue;
        }
        flush(&mut run, &mut out);
        out.extend_from_slice(line);
        if !last {
            out.push(b'\n');
        }
        if line == b"stream" || line.ends_with(b">>stream") {
            in_stream = true;
        } else if line.starts_with(b"endstream") {
            in_stream = false;
        }
    }
    out
}

fn format_tick(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e4 || v.abs() < 1e-3 {
        format!("{v:.0e}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Dot figures: one x position per series, the same in every panel, numbered on the x axis
/// and in the series' legend label. Returns the tick labels ("1", "2", …).
fn place_dots(panels: &mut [Panel], order: &[String]) -> Vec<String> {
    for p in panels.iter_mut() {
        for s in &mut p.series {
            let i = order.iter().position(|l| *l == s.label).unwrap_or(0);
            let (m, se) = s
                .level
                .take()
                .or_else(|| s.points.first().map(|p| (p.1, p.2)))
                .unwrap_or((f64::NAN, 0.0));
            s.points = vec![(i as f64, m, se)];
            s.label = format!("{}: {}", i + 1, s.label);
        }
    }
    (1..=order.len()).map(|i| i.to_string()).collect()
}

/// Log-log figures: each series' fitted slope in its label.
fn label_slopes(panels: &mut [Panel]) {
    for p in panels.iter_mut() {
        for s in &mut p.series {
            if let Some(k) = loglog_slope(&s.points) {
                s.label = format!("{}, slope {}", s.label, slope_text(k));
            }
        }
    }
}

/// The x label, the y label and the category names of a metric figure.
fn axis_labels(
    spec: &Spec,
    metrics: &[String],
    percent: bool,
    dots: bool,
) -> (String, String, Option<Vec<String>>) {
    let x_label = spec.report.x.clone().unwrap_or_default();
    let categories = match x_label.as_str() {
        "threshold" if !dots => spec
            .grid
            .threshold
            .as_ref()
            .map(|ts| ts.iter().map(|t| t.to_string()).collect()),
        _ => None,
    };
    let y_label = spec.report.y_label.clone().unwrap_or_else(|| {
        if percent {
            "accuracy (%)".into()
        } else {
            metrics.join(", ").replace('_', " ")
        }
    });
    let x_label = if dots {
        "series (numbered in the legend)".into()
    } else if let Some(label) = &spec.report.x_label {
        label.clone()
    } else if x_label == "epsilon" {
        "ε".into()
    } else {
        x_label
    };
    (x_label, y_label, categories)
}

/// The panels of a scatter or curve figure for one dataset: one, or one per series (and its
/// split twin) named after it.
fn vector_panels(spec: &Spec, title: String, series: Vec<Series>) -> Vec<Panel> {
    if spec.report.panel_per_series {
        // Each series (and its split twin) on a panel of its own, named after it.
        let mut groups: Vec<Panel> = Vec::new();
        for s in series {
            let name = s.label.split(" (").next().unwrap_or(&s.label);
            let base = if spec.experiment.datasets.len() > 1 {
                format!("{title}: {name}")
            } else {
                name.to_string()
            };
            match groups.iter_mut().find(|p| p.title == base) {
                Some(p) => p.series.push(s),
                None => groups.push(Panel {
                    title: base,
                    series: vec![s],
                    baseline: None,
                    published: Vec::new(),
                }),
            }
        }
        groups
    } else {
        vec![Panel {
            title,
            series,
            baseline: None,
            published: Vec::new(),
        }]
    }
}

/// A curve: the mean (± s.e.) over trials of each point, its fitted slope on log-log axes.
fn curve_series(
    label: &str,
    tag: &str,
    i: usize,
    all: &[Vec<(f64, f64, bool)>],
    loglog: bool,
) -> Series {
    let n = all.iter().map(Vec::len).min().unwrap_or(0);
    let points: Vec<(f64, f64, f64)> = (0..n)
        .map(|i| {
            let ys: Vec<f64> = all.iter().map(|v| v[i].1).collect();
            let (m, se) = crate::stats::mean_se(&ys);
            (all[0][i].0, m, se)
        })
        .collect();
    let slope = if loglog {
        loglog_slope(&points).map_or(String::new(), |k| format!(", slope {}", slope_text(k)))
    } else {
        String::new()
    };
    let many = points.len() > 40;
    Series {
        label: format!("{label}{slope} {tag}"),
        look: Look {
            marker: if many { None } else { Some(SHAPES[i % 6]) },
            ..Look::nth(i, true)
        },
        points,
        level: None,
        error_bars: all.len() > 1,
    }
}

/// What a vector figure's points and bars are, over the trials of each series (`counts`).
fn vector_note(curve: bool, counts: Vec<usize>) -> String {
    let many = counts.iter().any(|&n| n > 1);
    let trials = trials_text(counts.into_iter());
    match (curve, many) {
        (true, true) => format!("Curves and error bars: mean ± s.e. over {trials}."),
        (true, false) => format!("Each curve: one trial, no error bars ({trials})."),
        (false, _) => format!("Every recorded point of {trials} per series; no averaging."),
    }
}

/// The records of dataset `d` by series: (pipeline index, its grid point as text, e.g.
/// `ε = 0.01`, empty when the spec has no grid), in spec order, then grid order.
fn vector_groups<'a>(
    spec: &Spec,
    records: &'a [TrialRecord],
    d: &str,
) -> Vec<(usize, String, Vec<&'a TrialRecord>)> {
    let mut groups: Vec<(usize, String, Vec<&TrialRecord>)> = Vec::new();
    for r in records.iter().filter(|r| r.dataset == d) {
        let Some(pi) = spec.pipelines.iter().position(|p| p.name == r.pipeline) else {
            continue;
        };
        let point = r
            .params
            .iter()
            .map(|(k, v)| super::summary::param_text(k, v))
            .collect::<Vec<_>>()
            .join(", ");
        match groups.iter_mut().find(|g| g.0 == pi && g.1 == point) {
            Some(g) => g.2.push(r),
            None => groups.push((pi, point, vec![r])),
        }
    }
    groups.sort_by_key(|g| g.0);
    groups
}

/// The per-trial values of `metric` on dataset `d`, grouped by series (pipeline and grid
/// point): (label with its privacy tag, spec index of the pipeline, values × `scale`).
fn histogram_groups(
    spec: &Spec,
    metric: &str,
    records: &[TrialRecord],
    d: &str,
    scale: f64,
) -> Vec<(String, usize, Vec<f64>)> {
    let mut groups: Vec<(String, usize, Vec<f64>)> = Vec::new();
    for r in records.iter().filter(|r| r.dataset == d) {
        let Some(v) = super::summary::metric_value(r, metric) else {
            continue;
        };
        let Some(pi) = spec.pipelines.iter().position(|p| p.name == r.pipeline) else {
            continue;
        };
        let params: Vec<String> = r
            .params
            .iter()
            .map(|(k, v)| super::summary::param_text(k, v))
            .collect();
        let name = if params.is_empty() {
            r.pipeline.clone()
        } else {
            format!("{} ({})", r.pipeline, params.join(", "))
        };
        match groups.iter_mut().find(|g| g.0 == name) {
            Some(g) => g.2.push(scale * v),
            None => groups.push((name, pi, vec![scale * v])),
        }
    }
    groups
        .into_iter()
        .map(|(name, pi, vals)| {
            let p = &spec.pipelines[pi];
            let private = records
                .iter()
                .filter(|r| r.pipeline == p.name)
                .all(|r| r.private);
            let label = super::summary::with_privacy(
                &super::summary::tagged(name, p.variant_tag(spec.paper.neighbours)),
                private,
            );
            (label, pi, vals)
        })
        .collect()
}

/// 20 bins over the values' own range: (bin start, density, bin end), the density being
/// count / (values × bin width), so that series of different widths compare.
fn density_bins(vals: &[f64]) -> Vec<(f64, f64, f64)> {
    const BINS: usize = 20;
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return Vec::new();
    }
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 0.5, lo + 0.5)
    };
    let w = (hi - lo) / BINS as f64;
    let mut counts = [0usize; BINS];
    for v in vals {
        counts[(((v - lo) / w) as usize).min(BINS - 1)] += 1;
    }
    let n = vals.len() as f64;
    (0..BINS)
        .map(|b| {
            let a = lo + w * b as f64;
            (a, counts[b] as f64 / (n * w), a + w)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Published, derived and assumed targets are told apart in legends, markers and tables.
    #[test]
    fn target_kinds_have_their_own_legend_marker_and_table_text() {
        assert_eq!(
            target_legend(Target::Published, "reproduced"),
            "published (reproduced)"
        );
        assert_eq!(
            target_legend(Target::Derived, "differs"),
            "derived target (differs)"
        );
        assert_eq!(
            target_legend(Target::Assumed, "missing"),
            "assumed target (missing)"
        );
        let shapes: Vec<Shape> = Target::ALL.into_iter().map(target_shape).collect();
        assert!(shapes[0] != shapes[1] && shapes[1] != shapes[2] && shapes[0] != shapes[2]);
        // No series marker is a target marker.
        assert!(SHAPES.iter().all(|s| !s.is_target()));
        assert!(shapes.iter().all(|s| s.is_target()));
        use super::super::table::target_text;
        assert_eq!(
            target_text("test_accuracy", (80.0, Target::Published)),
            "80.0"
        );
        assert_eq!(
            target_text("abs_error", (0.02, Target::Derived)),
            "derived 0.0200"
        );
        assert_eq!(
            target_text("abs_error", (0.02, Target::Assumed)),
            "assumed 0.0200"
        );
    }

    #[test]
    fn density_bins_integrate_to_one_over_the_series_own_range() {
        let narrow: Vec<f64> = (0..100).map(|i| f64::from(i) * 0.01).collect();
        let bins = density_bins(&narrow);
        assert_eq!(bins.len(), 20);
        assert!((bins[0].0 - 0.0).abs() < 1e-12 && (bins[19].2 - 0.99).abs() < 1e-12);
        let area: f64 = bins.iter().map(|b| b.1 * (b.2 - b.0)).sum();
        assert!((area - 1.0).abs() < 1e-9, "{area}");
        // Not one bin: the values spread over all twenty.
        assert!(bins.iter().all(|b| b.1 > 0.0));
    }

    #[test]
    fn trials_text_names_the_count_or_its_range() {
        assert_eq!(trials_text([10, 10].into_iter()), "10 trials");
        assert_eq!(trials_text([10, 100].into_iter()), "10–100 trials");
        assert_eq!(trials_text([1].into_iter()), "1 trial");
    }

    #[test]
    fn loglog_slope_recovers_a_power_law() {
        let pts: Vec<(f64, f64, f64)> = [10.0f64, 100.0, 1000.0, 10000.0]
            .iter()
            .map(|&x| (x, (3.0 * x.powf(-0.5)).log10(), 0.0))
            .collect();
        let k = loglog_slope(&pts).unwrap();
        assert!((k + 0.5).abs() < 1e-12, "{k}");
        assert_eq!(loglog_slope(&pts[..1]), None);
    }

    #[test]
    fn series_looks_differ_in_colour_marker_and_dash() {
        for i in 0..8 {
            for j in 0..i {
                let (a, b) = (Look::nth(i, true), Look::nth(j, true));
                assert_ne!(a.colour, b.colour);
                // Greyscale: two series of the first 12 never share both marker and dash.
                assert!(a.marker != b.marker || a.dash != b.dash, "{i} {j}");
            }
        }
    }

    /// `[report] x_label` names a metric figure's x axis, as `y_label` names its y axis.
    #[test]
    fn a_metric_figure_takes_the_report_axis_labels() {
        let text = |labels: &str| {
            format!(
                "[experiment]\nname = \"l\"\ntrials = 1\nseed = 1\ndatasets = [\"xwindows\"]\n\
                 [grid]\nepsilon = [1]\n[[pipeline]]\nname = \"p\"\nlearner = \"nb\"\n\
                 [report]\nx = \"epsilon\"\n{labels}"
            )
        };
        let labels = |t: String| {
            let spec = Spec::parse(&t, std::path::Path::new("l.toml")).unwrap();
            let (x, y, _) = axis_labels(&spec, &["test_accuracy".into()], true, false);
            (x, y)
        };
        assert_eq!(labels(text("")), ("ε".into(), "accuracy (%)".into()));
        assert_eq!(
            labels(text("x_label = \"privacy budget\"\ny_label = \"acc\"")),
            ("privacy budget".into(), "acc".into())
        );
    }

    #[test]
    fn dash_segments_follow_the_pattern() {
        assert_eq!(dash_segments(10.0, Dash::Solid, 1.0), vec![(0.0, 10.0)]);
        let s = dash_segments(10.0, Dash::Dashed, 1.0);
        assert_eq!(s[0], (0.0, 4.0));
        assert_eq!(s[1], (6.5, 10.0));
    }
}
