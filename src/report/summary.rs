//! What every report module reads: the per-cell summaries of a results folder's records and
//! how axes, metrics and labels are written. A leaf: it uses no other report module, so the
//! modules that draw, tabulate and judge all build on it without importing one another.

use crate::spec::{PaperCell, Spec};
use crate::stats::mean_se;
use crate::store::TrialRecord;
use serde_json::Value;
use std::collections::BTreeMap;

/// An experiment's anchor in REPORT.md and the HTML report (`<a id="...">`, `#...` links):
/// its name without dots.
pub fn anchor(name: &str) -> String {
    name.replace('.', "")
}

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
    /// How many of the `n` trials answered, for a release that may refuse (its records carry
    /// the metric `answered`, as PTR's do); `None` for kinds that always answer. A refused
    /// trial's error is that of its fallback output, so a table says how many answered.
    pub answered: Option<usize>,
}

impl Summary {
    /// Series label: the pipeline name (and other grid values), then "(private)" or
    /// "(non-private)".
    pub fn label(&self) -> String {
        format!("{} {}", self.name(), privacy_tag(self.private))
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
    /// (dataset, pipeline, variant, x sort key, metric) -> (x value, values, all private,
    /// answered trials).
    type Key = (usize, usize, String, String, usize);
    type Group = (Option<Value>, Vec<f64>, bool, Option<usize>);
    let mut groups: BTreeMap<Key, Group> = BTreeMap::new();
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
            .map(|(k, v)| param_text(k, v))
            .collect::<Vec<_>>()
            .join(", ");
        let xkey = x.as_ref().map_or(String::new(), |v| {
            format!("{:020.10}|{v}", x_position(spec, v))
        });
        for (mi, m) in spec.report.metrics.iter().enumerate() {
            if let Some(v) = r.metric(m) {
                let e = groups
                    .entry((di, pi, variant.clone(), xkey.clone(), mi))
                    .or_insert((x.clone(), Vec::new(), true, None));
                e.1.push(v);
                e.2 &= r.private;
                if let Some(a) = r.metric("answered") {
                    *e.3.get_or_insert(0) += usize::from(a == 1.0);
                }
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
        .map(|((di, pi, variant, _, mi), (x, vals, private, answered))| {
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
                variant_tag: spec.pipelines[pi].variant_tag(spec.paper.neighbours),
                answered,
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
    // Only where something is scored on accuracy: a k-means, PCA or regression spec has a
    // majority class but nothing to compare it with.
    for r in records.iter().filter(|r| r.test_accuracy.is_some()) {
        if let Some(b) = r.baseline_accuracy {
            by.entry(r.dataset.clone()).or_default().push(b);
        }
    }
    by.into_iter().map(|(k, v)| (k, mean_se(&v).0)).collect()
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

/// A per-trial quantity: [`TrialRecord::metric`], the sizes `n_train`/`n_test`/`n_features`,
/// or one entry of a recorded vector written `name[i]` (0-based).
pub fn metric_value(r: &TrialRecord, metric: &str) -> Option<f64> {
    if let Some(v) = r.metric(metric) {
        return Some(v);
    }
    match metric {
        "n_train" => return Some(r.n_train as f64),
        "n_test" => return Some(r.n_test as f64),
        "n_features" => return Some(r.n_features as f64),
        _ => {}
    }
    let (name, rest) = metric.split_once('[')?;
    let i: usize = rest.strip_suffix(']')?.parse().ok()?;
    r.vectors.get(name)?.get(i).copied()
}

/// Grid values are equal (numbers compared as floats: TOML `0.1` and JSON `0.1`, `100` and
/// `100.0`).
pub fn value_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

/// Whether a record's grid values agree with `params` (a key the record lacks agrees: the
/// pipeline does not vary along it).
pub fn params_match(r: &TrialRecord, params: &BTreeMap<String, Value>) -> bool {
    params
        .iter()
        .all(|(k, v)| r.params.get(k).is_none_or(|rv| value_eq(rv, v)))
}

/// The published value of a summary's cell, if `[paper]` gives one.
pub fn published_for(spec: &Spec, s: &Summary) -> Option<f64> {
    published_cell(spec, s).map(|c| c.value)
}

/// The `[paper]` cell matching a summary, if any.
pub fn published_cell<'a>(spec: &'a Spec, s: &Summary) -> Option<&'a PaperCell> {
    spec.paper.cell.iter().find(|c| {
        c.dataset == s.dataset
            && c.pipeline == s.pipeline
            && c.metric == s.metric
            && match (&c.x, &s.x) {
                (Some(a), Some(b)) => value_eq(a, b),
                (None, None) => true,
                _ => false,
            }
            && c.params.iter().all(|(k, v)| {
                let want = param_text(k, v);
                s.variant.is_empty() || s.variant.split(", ").any(|p| p == want)
            })
    })
}

/// Escapes text for LaTeX (Greek and dashes as math/ligatures).
pub fn tex_escape(s: &str) -> String {
    let mut out = String::new();
    for ch in s.chars() {
        match ch {
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                out.push('\\');
                out.push(ch);
            }
            'ε' => out.push_str("$\\varepsilon$"),
            'Δ' => out.push_str("$\\Delta$"),
            'λ' => out.push_str("$\\lambda$"),
            'Λ' => out.push_str("$\\Lambda$"),
            'θ' => out.push_str("$\\theta$"),
            'α' => out.push_str("$\\alpha$"),
            'β' => out.push_str("$\\beta$"),
            'δ' => out.push_str("$\\delta$"),
            'σ' => out.push_str("$\\sigma$"),
            '≈' => out.push_str("$\\approx$"),
            '₀'..='₉' => {
                let d = ch as u32 - '₀' as u32;
                out.push_str(&format!("$_{d}$"));
            }
            // ¹, ² and ³ sit apart from the other superscript digits in Unicode.
            '⁰' | '¹' | '²' | '³' | '⁴'..='⁹' => {
                let d = "⁰¹²³⁴⁵⁶⁷⁸⁹".chars().position(|c| c == ch).unwrap_or(0);
                out.push_str(&format!("$^{d}$"));
            }
            '⁻' => out.push_str("$^-$"),
            '′' => out.push_str("$'$"),
            '″' => out.push_str("$''$"),
            '√' => out.push_str("$\\surd$"),
            'μ' => out.push_str("$\\mu$"),
            '≤' => out.push_str("$\\le$"),
            '≥' => out.push_str("$\\ge$"),
            '×' => out.push_str("$\\times$"),
            '−' => out.push_str("$-$"),
            '·' => out.push_str("$\\cdot$"),
            '±' => out.push_str("$\\pm$"),
            '—' => out.push_str("---"),
            '–' => out.push_str("--"),
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '\\' => out.push_str("\\textbackslash{}"),
            c => out.push(c),
        }
    }
    out
}

/// The privacy part of a series label.
pub fn privacy_tag(private: bool) -> &'static str {
    if private { "(private)" } else { NON_PRIVATE }
}

/// `label` followed by its privacy tag, unless the pipeline's own name already ends with that
/// tag (a spec may name a series "linear SVM (non-private)").
pub fn with_privacy(label: &str, private: bool) -> String {
    let tag = privacy_tag(private);
    if label.ends_with(tag) {
        label.to_string()
    } else {
        format!("{label} {tag}")
    }
}

/// A grid value as labels show it: `ε = 0.1`.
pub fn param_text(axis: &str, v: &Value) -> String {
    format!("{} = {}", axis_symbol(axis), x_text(v))
}

/// Where a published cell sits: its x and its other grid values (`ε = 1, λ = 0.01`).
pub fn cell_where(spec: &Spec, c: &PaperCell) -> String {
    let axis = spec.report.x.as_deref().unwrap_or("x");
    let x = c.x.iter().map(|x| param_text(axis, x));
    x.chain(c.params.iter().map(|(k, v)| param_text(k, v)))
        .collect::<Vec<_>>()
        .join(", ")
}
