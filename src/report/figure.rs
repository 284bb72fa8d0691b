//! Figures with plotters: one panel per dataset, one series per pipeline with standard-error
//! bars, reference pipelines and the majority baseline as horizontal lines. Text is drawn with
//! an embedded TTF (no system font libraries).

use super::{Summary, is_accuracy, x_position};
use crate::error::{Error, Result};
use crate::spec::{ReportKind, Spec};
use crate::store::TrialRecord;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Once;

const FONT: &str = "sans-serif";
const PANEL_W: u32 = 520;
const PANEL_H: u32 = 400;
const LEGEND_ROW: u32 = 24;

/// How a legend entry is drawn: a line with markers (a series over x) or a reference line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LegendStyle {
    Dot,
    Cross,
    Marker,
    DashedMarker,
    Dashed,
    Dotted,
}

/// Colour of the n-th pipeline of a spec (colour-blind-safe Okabe–Ito palette).
pub fn pipeline_colour(i: usize) -> RGBColor {
    const P: [RGBColor; 8] = [
        RGBColor(0, 114, 178),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
        RGBColor(204, 121, 167),
        RGBColor(230, 159, 0),
        RGBColor(86, 180, 233),
        RGBColor(0, 0, 0),
        RGBColor(240, 228, 66),
    ];
    P[i % P.len()]
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, epaint_default_fonts::UBUNTU_LIGHT)
            .map_err(|_| ())
            .expect("embedded font is valid");
    });
}

/// A line or error-bar series of one panel.
#[derive(Debug, Clone)]
struct Series {
    label: String,
    colour: usize,
    /// (x, mean, se); empty for a reference line.
    points: Vec<(f64, f64, f64)>,
    /// Horizontal reference value (pipelines that do not vary along x).
    level: Option<f64>,
    dashed: bool,
    marks: Marks,
}

/// How a series' points are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marks {
    /// Joined by lines, with error bars.
    Line,
    /// Separate dots (scatter plots).
    Dots,
    /// Separate crosses (the marked half of a split scatter).
    Crosses,
}

#[derive(Debug, Clone)]
struct Panel {
    title: String,
    series: Vec<Series>,
    baseline: Option<f64>,
}

/// Everything a figure shows, already aggregated.
#[derive(Debug, Clone)]
pub struct Figure {
    panels: Vec<Panel>,
    x_label: String,
    y_label: String,
    log_x: bool,
    /// Values are plotted as log10 (ticks read 10^k).
    log_y: bool,
    percent: bool,
    /// Tick labels of a categorical x axis.
    categories: Option<Vec<String>>,
}

impl Figure {
    /// The figure of `metrics` (all accuracies, or one other quantity).
    pub fn build(
        spec: &Spec,
        metrics: &[String],
        summaries: &[Summary],
        baselines: &BTreeMap<String, f64>,
        titles: &BTreeMap<String, String>,
    ) -> Figure {
        let percent = metrics.iter().all(|m| is_accuracy(m));
        let scale = if percent { 100.0 } else { 1.0 };
        let multi = metrics.len() > 1;
        let mut panels = Vec::new();
        for d in &spec.experiment.datasets {
            let mut series: Vec<Series> = Vec::new();
            for s in summaries
                .iter()
                .filter(|s| s.dataset == *d && metrics.contains(&s.metric))
            {
                let label = if multi {
                    format!("{} — {}", s.label(), s.metric.replace('_', " "))
                } else {
                    s.label()
                };
                let mi = metrics.iter().position(|m| *m == s.metric).unwrap_or(0);
                let idx = match series.iter().position(|x| x.label == label) {
                    Some(i) => i,
                    None => {
                        series.push(Series {
                            label,
                            colour: s.pipeline_index + spec.pipelines.len() * s.variant_index,
                            points: Vec::new(),
                            level: None,
                            dashed: mi > 0,
                            marks: Marks::Line,
                        });
                        series.len() - 1
                    }
                };
                match &s.x {
                    Some(x) => {
                        series[idx]
                            .points
                            .push((x_position(spec, x), scale * s.mean, scale * s.se))
                    }
                    None => series[idx].level = Some(scale * s.mean),
                }
            }
            for s in &mut series {
                s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            panels.push(Panel {
                title: titles.get(d).cloned().unwrap_or_else(|| d.clone()),
                series,
                baseline: if percent {
                    baselines.get(d).map(|b| scale * b)
                } else {
                    None
                },
            });
        }
        let x_label = spec.report.x.clone().unwrap_or_default();
        let categories = match x_label.as_str() {
            "threshold" => spec
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
        Figure {
            panels,
            x_label: if x_label == "epsilon" {
                "ε".into()
            } else {
                x_label
            },
            y_label,
            log_x: spec.report.log_x,
            log_y: false,
            percent,
            categories,
        }
    }

    fn size(&self) -> (u32, u32) {
        let n = self.panels.len().max(1) as u32;
        let cols = n.min(3);
        let rows = n.div_ceil(cols);
        (cols * PANEL_W, rows * PANEL_H + self.legend_height(cols))
    }

    /// Legend entries across all panels, in first-seen order: (label, colour, style).
    fn legend_entries(&self) -> Vec<(String, RGBColor, LegendStyle)> {
        let mut out: Vec<(String, RGBColor, LegendStyle)> = Vec::new();
        for panel in &self.panels {
            for s in &panel.series {
                if !out.iter().any(|(l, _, _)| *l == s.label) {
                    let style = match (s.marks, s.level.is_some(), s.dashed) {
                        (Marks::Dots, _, _) => LegendStyle::Dot,
                        (Marks::Crosses, _, _) => LegendStyle::Cross,
                        (_, true, false) => LegendStyle::Dashed,
                        (_, true, true) => LegendStyle::Dotted,
                        (_, false, true) => LegendStyle::DashedMarker,
                        (_, false, false) => LegendStyle::Marker,
                    };
                    out.push((s.label.clone(), pipeline_colour(s.colour), style));
                }
            }
        }
        if self.panels.iter().any(|p| p.baseline.is_some()) {
            out.push((
                "majority baseline".into(),
                RGBColor(120, 120, 120),
                LegendStyle::Dashed,
            ));
        }
        out
    }

    fn legend_height(&self, cols: u32) -> u32 {
        let n = self.legend_entries().len() as u32;
        let per_row = if cols >= 2 { 2 } else { 1 };
        12 + LEGEND_ROW * n.div_ceil(per_row)
    }

    /// The shared legend strip under the panels.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        cols: u32,
    ) -> std::result::Result<(), String> {
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
        let (w, _) = area.dim_in_pixel();
        let per_row = if cols >= 2 { 2 } else { 1 };
        let col_w = (w as i32 - 40) / per_row;
        for (i, (label, colour, style)) in self.legend_entries().into_iter().enumerate() {
            let x = 30 + (i as i32 % per_row) * col_w;
            let y = 8 + (i as i32 / per_row) * LEGEND_ROW as i32 + LEGEND_ROW as i32 / 2;
            let line = ShapeStyle::from(&colour).stroke_width(2);
            let segments: &[(i32, i32)] = match style {
                LegendStyle::Dot | LegendStyle::Cross => &[],
                LegendStyle::Marker => &[(0, 30)],
                LegendStyle::Dashed | LegendStyle::DashedMarker => &[(0, 8), (12, 20), (24, 30)],
                LegendStyle::Dotted => &[(0, 3), (7, 10), (14, 17), (21, 24), (27, 30)],
            };
            for &(a, b) in segments {
                area.draw(&PathElement::new(vec![(x + a, y), (x + b, y)], line))
                    .map_err(e)?;
            }
            if style == LegendStyle::Cross {
                area.draw(&Cross::new((x + 15, y), 4, line)).map_err(e)?;
            }
            if matches!(
                style,
                LegendStyle::Marker | LegendStyle::DashedMarker | LegendStyle::Dot
            ) {
                area.draw(&Circle::new((x + 15, y), 3, colour.filled()))
                    .map_err(e)?;
            }
            area.draw(&Text::new(label, (x + 40, y - 8), (FONT, 15)))
                .map_err(e)?;
        }
        Ok(())
    }

    /// Writes `<stem>.svg` and `<stem>.png` into `dir`.
    pub fn save(&self, dir: &Path, stem: &str) -> Result<Vec<PathBuf>> {
        register_font();
        let size = self.size();
        let svg = dir.join(format!("{stem}.svg"));
        let png = dir.join(format!("{stem}.png"));
        let fail = |p: &Path, e: String| Error::Store {
            path: p.into(),
            reason: format!("cannot draw the figure: {e}"),
        };
        self.draw(SVGBackend::new(&svg, size).into_drawing_area())
            .map_err(|e| fail(&svg, e))?;
        self.draw(BitMapBackend::new(&png, size).into_drawing_area())
            .map_err(|e| fail(&png, e))?;
        Ok(vec![svg, png])
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String> {
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
        root.fill(&WHITE).map_err(e)?;
        let n = self.panels.len().max(1);
        let cols = n.min(3);
        let (_, h) = root.dim_in_pixel();
        let (plots, legend) = root.split_vertically(h - self.legend_height(cols as u32));
        let areas = plots.split_evenly((n.div_ceil(cols), cols));
        for (panel, area) in self.panels.iter().zip(areas) {
            self.draw_panel(panel, &area)?;
        }
        self.draw_legend(&legend, cols as u32)?;
        root.present().map_err(e)
    }

    fn y_tick(&self, v: f64) -> String {
        if self.log_y {
            format_tick(10f64.powf(v))
        } else {
            format_tick(v)
        }
    }

    /// A figure of vectors recorded by analysis probes (`scatter` and `curve` reports).
    pub fn from_vectors(
        spec: &Spec,
        records: &[TrialRecord],
        titles: &BTreeMap<String, String>,
    ) -> Figure {
        let curve = spec.report.kind == ReportKind::Curve;
        let log_y = spec.report.log_y;
        let ty = |v: f64| {
            if log_y {
                v.max(f64::MIN_POSITIVE).log10()
            } else {
                v
            }
        };
        let mut panels = Vec::new();
        for d in &spec.experiment.datasets {
            let mut series = Vec::new();
            for (pi, p) in spec.pipelines.iter().enumerate() {
                let rs: Vec<&TrialRecord> = records
                    .iter()
                    .filter(|r| r.dataset == *d && r.pipeline == p.name)
                    .collect();
                if rs.is_empty() {
                    continue;
                }
                for (si, vs) in spec.report.series.iter().enumerate() {
                    let label = vs.label.clone().unwrap_or_else(|| vs.y.replace('_', " "));
                    let label = if spec.pipelines.len() > 1 {
                        format!("{} — {label}", p.name)
                    } else {
                        label
                    };
                    let colour = pi + spec.pipelines.len() * si;
                    let xy = |r: &TrialRecord| -> Vec<(f64, f64, bool)> {
                        let Some(y) = r.vectors.get(&vs.y) else {
                            return Vec::new();
                        };
                        let x = vs.x.as_ref().and_then(|x| r.vectors.get(x));
                        let split = vs.split_by.as_ref().and_then(|k| r.vectors.get(k));
                        (0..y.len())
                            .map(|i| {
                                let xi = x.map_or(i as f64 + 1.0, |x| x[i]);
                                (xi, ty(y[i]), split.is_some_and(|s| s[i] == 1.0))
                            })
                            .collect()
                    };
                    let points: Vec<(f64, f64, f64)> = if curve {
                        let all: Vec<Vec<(f64, f64, bool)>> = rs.iter().map(|r| xy(r)).collect();
                        let n = all.iter().map(Vec::len).min().unwrap_or(0);
                        (0..n)
                            .map(|i| {
                                let ys: Vec<f64> = all.iter().map(|v| v[i].1).collect();
                                let (m, se) = crate::stats::mean_se(&ys);
                                (all[0][i].0, m, se)
                            })
                            .collect()
                    } else {
                        Vec::new()
                    };
                    if curve {
                        series.push(Series {
                            label,
                            colour,
                            points,
                            level: None,
                            dashed: false,
                            marks: Marks::Line,
                        });
                        continue;
                    }
                    let all: Vec<(f64, f64, bool)> = rs.iter().flat_map(|r| xy(r)).collect();
                    let plain: Vec<(f64, f64, f64)> = all
                        .iter()
                        .filter(|p| !p.2)
                        .map(|p| (p.0, p.1, 0.0))
                        .collect();
                    let marked: Vec<(f64, f64, f64)> = all
                        .iter()
                        .filter(|p| p.2)
                        .map(|p| (p.0, p.1, 0.0))
                        .collect();
                    if let Some(k) = &vs.split_by {
                        series.push(Series {
                            label: format!("{label} ({} = 1)", k.replace('_', " ")),
                            colour: colour + 1,
                            points: marked,
                            level: None,
                            dashed: false,
                            marks: Marks::Crosses,
                        });
                    }
                    series.push(Series {
                        label,
                        colour,
                        points: plain,
                        level: None,
                        dashed: false,
                        marks: Marks::Dots,
                    });
                }
            }
            let title = titles.get(d).cloned().unwrap_or_else(|| d.clone());
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
                        }),
                    }
                }
                panels.extend(groups);
            } else {
                panels.push(Panel {
                    title,
                    series,
                    baseline: None,
                });
            }
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
            panels,
            x_label: spec
                .report
                .x_label
                .clone()
                .unwrap_or_else(|| x_default.replace('_', " ")),
            y_label: spec.report.y_label.clone().unwrap_or_else(|| names(&ys)),
            log_x: spec.report.log_x,
            log_y,
            percent: false,
            categories: None,
        }
    }

    fn y_range(&self, panel: &Panel) -> (f64, f64) {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for s in &panel.series {
            for &(_, m, se) in &s.points {
                lo = lo.min(m - se);
                hi = hi.max(m + se);
            }
            if let Some(l) = s.level {
                lo = lo.min(l);
                hi = hi.max(l);
            }
        }
        if let Some(b) = panel.baseline {
            lo = lo.min(b);
            hi = hi.max(b);
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

    fn x_range(&self, panel: &Panel) -> (f64, f64) {
        let xs = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0));
        let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
        if !lo.is_finite() {
            return (0.0, 1.0);
        }
        if self.log_x {
            (lo / 1.5, hi * 1.5)
        } else {
            let pad = if hi > lo { (hi - lo) * 0.05 } else { 0.5 };
            (lo - pad, hi + pad)
        }
    }

    fn draw_panel<DB: DrawingBackend>(
        &self,
        panel: &Panel,
        area: &DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String> {
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
        let (x0, x1) = self.x_range(panel);
        let (y0, y1) = self.y_range(panel);
        let mut builder = ChartBuilder::on(area);
        builder
            .caption(&panel.title, (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(52);
        let cats = self.categories.clone();
        if self.log_x {
            let mut chart = builder
                .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                .map_err(e)?;
            chart
                .configure_mesh()
                .x_desc(&self.x_label)
                .y_desc(&self.y_label)
                .label_style((FONT, 13))
                .x_label_formatter(&|v| format_tick(*v))
                .y_label_formatter(&|v| self.y_tick(*v))
                .draw()
                .map_err(e)?;
            self.draw_series(&mut chart, panel, x0, x1)
        } else {
            let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1).map_err(e)?;
            let fmt = move |v: &f64| match &cats {
                Some(c) => {
                    let i = v.round();
                    if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < c.len() {
                        c[i as usize].clone()
                    } else {
                        String::new()
                    }
                }
                None => format_tick(*v),
            };
            let y_fmt = |v: &f64| self.y_tick(*v);
            let mut mesh = chart.configure_mesh();
            mesh.x_desc(&self.x_label)
                .y_desc(&self.y_label)
                .label_style((FONT, 13))
                .x_label_formatter(&fmt)
                .y_label_formatter(&y_fmt);
            if let Some(c) = &self.categories {
                mesh.x_labels(c.len() + 1);
            }
            mesh.draw().map_err(e)?;
            self.draw_series(&mut chart, panel, x0, x1)
        }
    }

    fn draw_series<'a, DB: DrawingBackend + 'a, X>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
        panel: &Panel,
        x0: f64,
        x1: f64,
    ) -> std::result::Result<(), String>
    where
        X: Ranged<ValueType = f64>,
    {
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
        for s in &panel.series {
            let colour = pipeline_colour(s.colour);
            let style = ShapeStyle::from(&colour).stroke_width(2);
            if let Some(level) = s.level {
                let (dash, gap) = if s.dashed { (2, 4) } else { (8, 5) };
                chart
                    .draw_series(DashedLineSeries::new(
                        vec![(x0, level), (x1, level)],
                        dash,
                        gap,
                        style,
                    ))
                    .map_err(e)?;
                continue;
            }
            let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.0, p.1)).collect();
            match s.marks {
                Marks::Dots => {
                    chart
                        .draw_series(
                            pts.iter()
                                .map(|&p| Circle::new(p, 2, colour.mix(0.7).filled())),
                        )
                        .map_err(e)?;
                    continue;
                }
                Marks::Crosses => {
                    chart
                        .draw_series(pts.iter().map(|&p| Cross::new(p, 4, style)))
                        .map_err(e)?;
                    continue;
                }
                Marks::Line => {}
            }
            if s.dashed {
                chart
                    .draw_series(DashedLineSeries::new(pts.clone(), 6, 4, style))
                    .map_err(e)?;
            } else {
                chart
                    .draw_series(LineSeries::new(pts.clone(), style))
                    .map_err(e)?;
            }
            chart
                .draw_series(
                    s.points
                        .iter()
                        .map(|&(x, m, se)| ErrorBar::new_vertical(x, m - se, m, m + se, style, 8)),
                )
                .map_err(e)?;
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                .map_err(e)?;
        }
        if let Some(b) = panel.baseline {
            let grey = ShapeStyle::from(&RGBColor(120, 120, 120)).stroke_width(1);
            chart
                .draw_series(DashedLineSeries::new(vec![(x0, b), (x1, b)], 4, 4, grey))
                .map_err(e)?;
        }
        Ok(())
    }
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
