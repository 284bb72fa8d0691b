//! Tables: markdown for reading, CSV for other tools.

use super::markdown::{head, row as md_row};
use super::sample_complexity::sample_complexity_rows;
use super::summary::{NON_PRIVATE, Summary, is_accuracy, x_text};
use crate::spec::{Spec, Target};
use crate::stats::mean_se;
use crate::store::TrialRecord;
use std::collections::BTreeMap;
use std::fmt::Write;

/// CSV with one line per summary; `series` names its column in `table.md` (the pipeline, its
/// other grid values and its variant's tag, without the privacy tag).
pub fn csv(spec: &Spec, summaries: &[Summary]) -> String {
    let x = spec.report.x.clone().unwrap_or_else(|| "x".into());
    let mut out = format!("dataset,pipeline,private,{x},metric,mean,se,trials,series\n");
    for s in summaries {
        let xs = s.x.as_ref().map_or(String::new(), x_text);
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{}",
            series_fields(&s.dataset, &s.pipeline, s.private),
            csv_field(&xs),
            s.metric,
            s.mean,
            s.se,
            s.n,
            csv_field(&s.name())
        );
    }
    out
}

/// The leading fields of a series' CSV line: dataset, pipeline and whether it is private.
fn series_fields(dataset: &str, pipeline: &str, private: bool) -> String {
    format!("{},{},{private}", csv_field(dataset), csv_field(pipeline))
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// What the tables of a report kind read: the spec, its finished trials and each dataset's
/// display title.
#[derive(Clone, Copy)]
pub struct Trials<'a> {
    pub spec: &'a Spec,
    pub records: &'a [TrialRecord],
    pub titles: &'a BTreeMap<String, String>,
}

impl<'a> Trials<'a> {
    /// A dataset's display title (its name when the titles have none).
    fn title_of(&self, dataset: &'a str) -> &'a str {
        self.titles.get(dataset).map_or(dataset, String::as_str)
    }
}

/// Table 3.1 style: sizes, dimension and majority fraction per dataset.
pub fn dataset_summary(t: &Trials) -> (String, String) {
    let title = t.spec.title();
    let mut md = format!("# {title}\n\n");
    md.push_str(&head(&[
        "name",
        "train set size",
        "test set size",
        "number of features",
        "majority baseline",
    ]));
    let mut csv = String::from(
        "dataset,n_train,n_test,n_features,majority_fraction,baseline_test_accuracy\n",
    );
    for d in &t.spec.experiment.datasets {
        let rs: Vec<&TrialRecord> = t.records.iter().filter(|r| r.dataset == *d).collect();
        let Some(first) = rs.first() else { continue };
        let majority: Vec<f64> = rs
            .iter()
            .filter_map(|r| r.metrics.get("majority_fraction").copied())
            .collect();
        let baseline: Vec<f64> = rs.iter().filter_map(|r| r.baseline_accuracy).collect();
        let (maj, _) = mean_se(&majority);
        let (base, _) = mean_se(&baseline);
        let _ = writeln!(
            md,
            "{}",
            md_row(&[
                t.title_of(d).to_string(),
                first.n_train.to_string(),
                first.n_test.to_string(),
                first.n_features.to_string(),
                format!("{:.0}%", 100.0 * maj),
            ])
        );
        let _ = writeln!(
            csv,
            "{d},{},{},{},{maj},{base}",
            first.n_train, first.n_test, first.n_features
        );
    }
    md.push_str(
        "\nMajority baseline: the size of the bigger class over the size of the whole dataset.\n",
    );
    (md, csv)
}

/// Every recorded vector as long-format CSV: one line per (record, vector, index).
pub fn vectors_csv(spec: &Spec, records: &[TrialRecord]) -> String {
    let mut out = String::from("dataset,pipeline,private,epsilon,trial,vector,index,value\n");
    let wanted: Vec<&String> = spec
        .report
        .series
        .iter()
        .flat_map(|s| {
            std::iter::once(&s.y)
                .chain(s.x.iter())
                .chain(s.split_by.iter())
        })
        .collect();
    for r in records {
        let all = wanted.is_empty();
        for (name, v) in r.vectors.iter().filter(|(k, _)| all || wanted.contains(k)) {
            for (i, x) in v.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{},{},{},{name},{},{x}",
                    series_fields(&r.dataset, &r.pipeline, r.private),
                    r.epsilon.map_or(String::new(), |e| e.to_string()),
                    r.trial,
                    i + 1
                );
            }
        }
    }
    out
}

/// Summary of a vector report: per dataset and pipeline, the trials and each vector's range.
pub fn vectors_markdown(t: &Trials) -> String {
    let title = t.spec.title();
    let mut out = format!(
        "# {title}\n\nThe figure draws vectors recorded per trial; `table.csv` lists every value. \
         Pipelines marked {NON_PRIVATE} show exact statistics of the data.\n\n{}",
        head(&[
            "dataset", "pipeline", "vector", "trials", "length", "min", "mean", "max"
        ])
    );
    for d in &t.spec.experiment.datasets {
        for p in &t.spec.pipelines {
            let rs: Vec<&TrialRecord> = t
                .records
                .iter()
                .filter(|r| r.dataset == *d && r.pipeline == p.name)
                .collect();
            let Some(first) = rs.first() else { continue };
            let label = if rs.iter().all(|r| r.private) {
                p.name.clone()
            } else {
                format!("{} {NON_PRIVATE}", p.name)
            };
            for name in first.vectors.keys() {
                let all: Vec<f64> = rs
                    .iter()
                    .filter_map(|r| r.vectors.get(name))
                    .flatten()
                    .copied()
                    .collect();
                let (mean, _) = mean_se(&all);
                let min = all.iter().copied().fold(f64::INFINITY, f64::min);
                let max = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let _ = writeln!(
                    out,
                    "{}",
                    md_row(&[
                        t.title_of(d).to_string(),
                        label.clone(),
                        name.clone(),
                        rs.len().to_string(),
                        first.vectors[name].len().to_string(),
                        format!("{min:.4}"),
                        format!("{mean:.4}"),
                        format!("{max:.4}"),
                    ])
                );
            }
        }
    }
    out
}

/// Tables A.2/A.3: the top features by MI with their per-class on-counts (first trial).
pub fn top_features(t: &Trials) -> (String, String) {
    let title = t.spec.title();
    let mut md = format!("# {title}\n\nExact statistics of the training data {NON_PRIVATE}.\n");
    let mut csv = String::from("dataset,rank,feature,name,mi_bits,on_counts\n");
    for d in &t.spec.experiment.datasets {
        let Some(r) = t
            .records
            .iter()
            .filter(|r| r.dataset == *d)
            .min_by_key(|r| r.trial)
        else {
            continue;
        };
        let (Some(features), Some(mi)) = (r.vectors.get("feature"), r.vectors.get("mi")) else {
            continue;
        };
        let classes: Vec<&Vec<f64>> = (1..)
            .map_while(|k| r.vectors.get(&format!("on_class{k}")))
            .collect();
        let _ = write!(
            md,
            "\n## {}\n\n{}",
            t.title_of(d),
            head(&[
                "rank",
                "feature",
                "name",
                "MI (bits)",
                "on-counts per class"
            ])
        );
        for (i, (&f, &m)) in features.iter().zip(mi).enumerate() {
            let name = r
                .feature_names
                .as_ref()
                .and_then(|n| n.get(i))
                .map_or("", String::as_str);
            let counts: Vec<String> = classes.iter().map(|c| format!("{}", c[i])).collect();
            let _ = writeln!(
                md,
                "{}",
                md_row(&[
                    (i + 1).to_string(),
                    format!("{f}"),
                    name.to_string(),
                    format!("{m:.3}"),
                    counts.join(" / "),
                ])
            );
            let _ = writeln!(
                csv,
                "{d},{},{f},{},{m},{}",
                i + 1,
                csv_field(name),
                counts.join("/")
            );
        }
    }
    (md, csv)
}

/// Each record's vectors side by side (first trial of each dataset, pipeline and grid point).
pub fn vectors_columns(t: &Trials) -> String {
    let title = t.spec.title();
    let mut out = format!("# {title}\n");
    let mut seen = std::collections::BTreeSet::new();
    for r in t.records {
        let point = serde_json::to_string(&r.params).unwrap_or_default();
        if !seen.insert((r.dataset.clone(), r.pipeline.clone(), point)) {
            continue;
        }
        let names: Vec<&String> = r.vectors.keys().collect();
        let params: Vec<String> = r
            .params
            .iter()
            .map(|(k, v)| super::summary::param_text(k, v))
            .collect();
        let _ = write!(
            out,
            "\n## {} — {} ({})\n\n{}",
            t.title_of(&r.dataset),
            r.pipeline,
            params.join(", "),
            head(&names)
        );
        let len = r.vectors.values().map(Vec::len).max().unwrap_or(0);
        for i in 0..len {
            let cells: Vec<String> = names
                .iter()
                .map(|n| {
                    r.vectors[*n]
                        .get(i)
                        .map_or(String::new(), |v| format!("{v:.6}"))
                })
                .collect();
            let _ = writeln!(out, "{}", md_row(&cells));
        }
    }
    out
}

impl super::sample_complexity::SampleComplexityRow {
    /// N, or "> N" when the target was not reached by the largest N.
    fn reached_text(&self) -> String {
        match self.reached {
            Some(n) => format!("{n}"),
            None => format!("> {}", self.n),
        }
    }

    fn multiplier_text(&self) -> String {
        self.multiplier.map_or("—".to_string(), |m| format!("{m}"))
    }

    /// The row's Markdown cells, `publ` the published multiplier's text.
    fn markdown_cells(&self, publ: &str) -> [String; 6] {
        let best = if self.params.is_empty() {
            "—".to_string()
        } else {
            self.params.clone()
        };
        [
            self.pipeline.clone(),
            self.reached_text(),
            format!("{:.1} ± {:.1}", 100.0 * self.accuracy, 100.0 * self.se),
            best,
            self.multiplier_text(),
            publ.to_string(),
        ]
    }
}

/// The appendix B tables (markdown, CSV), with the published multiplier beside ours where the
/// spec's `[paper]` gives one (`metric = "multiplier"`).
pub fn sample_complexity(t: &Trials) -> (String, String) {
    let reference = t.spec.report.reference.clone().unwrap_or_default();
    let tol = t.spec.report.tolerance.unwrap_or(0.02);
    let title = t.spec.title();
    let mut md = format!(
        "# {title}\n\nSmallest training size N (a power of 2 from the grid) whose mean test accuracy \
         over trials comes within {:.0} points of `{reference}` trained on the largest N; accuracy and \
         standard error at that N; the other grid values (e.g. λ) are the best for each N, chosen on \
         test accuracy (optimistic and non-private: the choice reads the test labels). Multiplier: N over the reference's own N; the \
         published multiplier is the thesis's.\n",
        100.0 * tol
    );
    if let Some(a) = &t.spec.ablation {
        let largest = (t.records.iter())
            .filter(|r| r.pipeline == reference)
            .map(|r| r.n_train)
            .max()
            .unwrap_or(0);
        let _ = write!(
            md,
            "\nThis ablation's own table reads its own trials: its targets come from its own \
             `{reference}` series, whose largest N here is {largest}. The verdicts of its \
             Ablation sub-section (in the section of `{of}`) take their targets from `{of}`'s \
             `{reference}` at that spec's largest N, so they may differ from these.\n",
            of = a.of
        );
    }
    let mut csv = String::from(
        "dataset,pipeline,n,accuracy,se,best_params,multiplier,published_multiplier,target\n",
    );
    let published = |d: &str, p: &str| {
        t.spec
            .paper
            .cell
            .iter()
            .find(|c| c.metric == "multiplier" && c.dataset == d && c.pipeline == p)
            .map(|c| c.value)
    };
    let mut current = String::new();
    for r in sample_complexity_rows(t.spec, t.records) {
        if r.dataset != current {
            current = r.dataset.clone();
            let _ = write!(
                md,
                "\n## {} (target {:.1}%)\n\n{}",
                t.title_of(&r.dataset),
                100.0 * r.target,
                head(&[
                    "pipeline",
                    "N",
                    "accuracy",
                    "best",
                    "multiplier",
                    "published multiplier",
                ])
            );
        }
        let publ = published(&r.dataset, &r.pipeline).map_or("—".to_string(), |v| format!("{v}"));
        let [n, mult] = [r.reached_text(), r.multiplier_text()];
        let _ = writeln!(md, "{}", md_row(&r.markdown_cells(&publ)));
        let _ = writeln!(
            csv,
            "{},{},{n},{},{},{},{mult},{publ},{}",
            r.dataset,
            csv_field(&r.pipeline),
            r.accuracy,
            r.se,
            csv_field(&r.params),
            r.target
        );
    }
    (md, csv)
}

/// One wide table of one metric: rows are datasets (single x value) or (dataset, x) pairs,
/// columns are series; cells mean ± s.e. with the published value where `[paper]` gives one.
#[derive(Debug, Clone)]
pub struct Wide {
    pub metric: String,
    /// Header of the x column (`None`: rows are datasets only).
    pub x_head: Option<String>,
    /// (label without the privacy tag, private).
    pub columns: Vec<(String, bool)>,
    /// Whether any cell of a column has a published value.
    pub has_published: Vec<bool>,
    pub rows: Vec<WideRow>,
}

/// A target value with its kind (published, derived or assumed), scaled like its cell.
pub type TargetValue = (f64, Target);

/// One row of a [`Wide`] table.
#[derive(Debug, Clone)]
pub struct WideRow {
    pub dataset: String,
    /// Text of the x value (empty when rows are datasets).
    pub x: String,
    /// (mean, se, target) per column, already scaled (accuracies in %).
    pub cells: Vec<Option<(f64, f64, Option<TargetValue>)>>,
    /// Column of the best private cell (highest accuracy), if any.
    pub best: Option<usize>,
    /// (answered, trials) per column where a release refused some of its trials.
    pub refused: Vec<Option<(usize, usize)>>,
}

/// The wide tables of a figure report, one per metric.
pub fn wide(spec: &Spec, summaries: &[Summary], titles: &BTreeMap<String, String>) -> Vec<Wide> {
    let xs: Vec<String> = {
        let mut v: Vec<(f64, String)> = summaries
            .iter()
            .filter_map(|s| s.x.as_ref())
            .map(|x| (super::summary::x_position(spec, x), x_text(x)))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        v.dedup_by(|a, b| a.1 == b.1);
        v.into_iter().map(|p| p.1).collect()
    };
    let by_x = xs.len() > 1;
    let mut out = Vec::new();
    for m in &spec.report.metrics {
        let scale = if is_accuracy(m) { 100.0 } else { 1.0 };
        let ss: Vec<&Summary> = summaries.iter().filter(|s| s.metric == *m).collect();
        let columns = wide_columns(&ss);
        let name = |s: &Summary| s.name();
        let mut rows = Vec::new();
        let mut has_published = vec![false; columns.len()];
        for d in &spec.experiment.datasets {
            let row_xs: Vec<Option<&String>> = if by_x {
                xs.iter().map(Some).collect()
            } else {
                vec![None]
            };
            for x in row_xs {
                let mut cells = vec![None; columns.len()];
                let mut refused = vec![None; columns.len()];
                for s in ss.iter().filter(|s| s.dataset == *d) {
                    let sx = s.x.as_ref().map(x_text);
                    if by_x && sx.is_some() && sx.as_ref() != x {
                        continue;
                    }
                    let Some(ci) = columns.iter().position(|c| c.0 == name(s)) else {
                        continue;
                    };
                    let value = if super::summary::is_modal(m) {
                        s.mode
                    } else {
                        s.mean
                    };
                    let published = super::summary::published_cell(spec, s)
                        .map(|c| (scale * c.value, c.target));
                    has_published[ci] |= published.is_some();
                    cells[ci] = Some((scale * value, scale * s.se, published));
                    refused[ci] = s.answered.filter(|&a| a < s.n).map(|a| (a, s.n));
                }
                if cells.iter().all(Option::is_none) {
                    continue;
                }
                let best = is_accuracy(m)
                    .then(|| best_private(&cells, &columns))
                    .flatten();
                rows.push(WideRow {
                    dataset: titles.get(d).cloned().unwrap_or_else(|| d.clone()),
                    x: x.cloned().unwrap_or_default(),
                    cells,
                    best,
                    refused,
                });
            }
        }
        out.push(Wide {
            metric: m.clone(),
            x_head: by_x.then(|| {
                super::summary::axis_symbol(spec.report.x.as_deref().unwrap_or("x")).into()
            }),
            columns,
            has_published,
            rows,
        });
    }
    out
}

/// A wide table's columns: each series (by pipeline, then variant) with whether all its
/// cells are private.
fn wide_columns(ss: &[&Summary]) -> Vec<(String, bool)> {
    let mut order: Vec<(usize, usize, String)> = ss
        .iter()
        .map(|s| (s.pipeline_index, s.variant_index, s.name()))
        .collect();
    order.sort();
    order.dedup();
    order
        .into_iter()
        .map(|(_, _, n)| {
            let private = ss.iter().filter(|s| s.name() == n).all(|s| s.private);
            (n, private)
        })
        .collect()
}

/// The column of the row's highest private value, if any.
fn best_private(
    cells: &[Option<(f64, f64, Option<TargetValue>)>],
    columns: &[(String, bool)],
) -> Option<usize> {
    cells
        .iter()
        .enumerate()
        .filter(|(i, c)| columns[*i].1 && c.is_some())
        .max_by(|a, b| {
            let (a, b) = (a.1.expect("some").0, b.1.expect("some").0);
            a.total_cmp(&b)
        })
        .map(|(i, _)| i)
}

pub(super) fn wide_value(metric: &str, v: f64) -> String {
    if super::summary::is_modal(metric) {
        format!("{v}")
    } else if is_accuracy(metric) {
        format!("{v:.1}")
    } else {
        format!("{v:.4}")
    }
}

/// A target value as a wide table shows it: the number, prefixed by its kind unless published.
pub(super) fn target_text(metric: &str, (value, target): TargetValue) -> String {
    match target {
        Target::Published => wide_value(metric, value),
        other => format!("{} {}", other.word(), wide_value(metric, value)),
    }
}

pub(super) fn metric_caption(metric: &str) -> String {
    if super::summary::is_modal(metric) {
        format!("{} (mode over trials)", metric.replace('_', " "))
    } else if is_accuracy(metric) {
        format!("{} (%, mean ± s.e.)", metric.replace('_', " "))
    } else {
        format!("{} (mean ± s.e.)", metric.replace('_', " "))
    }
}

/// The wide tables in Markdown (the figure report's `table.md`).
pub fn wide_markdown(
    spec: &Spec,
    tables: &[Wide],
    baselines: &BTreeMap<String, f64>,
    titles: &BTreeMap<String, String>,
) -> String {
    let mut out = format!(
        "# {}\n\nMean ± standard error over trials; **bold**: the best private cell of a row; \
         (in parentheses): the target value, published unless marked derived (from the \
         source's own formula) or assumed. Columns marked {NON_PRIVATE} are not end-to-end \
         differentially private. Every cell is in `table.csv` (long form).\n",
        spec.title()
    );
    if tables
        .iter()
        .any(|t| t.rows.iter().any(|r| r.refused.iter().any(Option::is_some)))
    {
        out.push_str(
            "\n[answered k of n]: a release that may refuse (PTR) answered k of the cell's n \
             trials; a refused trial's error is that of its fallback output, so such a cell \
             does not measure the release's accuracy.\n",
        );
    }
    for t in tables {
        let _ = writeln!(out, "\n## {}\n", metric_caption(&t.metric));
        let mut header = vec!["dataset".to_string()];
        header.extend(t.x_head.clone());
        for (c, private) in &t.columns {
            header.push(super::summary::with_privacy(c, *private));
        }
        out.push_str(&head(&header));
        for r in &t.rows {
            let mut cells = vec![r.dataset.clone()];
            if t.x_head.is_some() {
                cells.push(r.x.clone());
            }
            cells.extend((0..r.cells.len()).map(|i| markdown_cell(t, r, i)));
            let _ = writeln!(out, "{}", md_row(&cells));
        }
    }
    if !baselines.is_empty() {
        let _ = writeln!(
            out,
            "\nMajority baseline {NON_PRIVATE} (test accuracy of the training majority class):\n"
        );
        for d in &spec.experiment.datasets {
            if let Some(b) = baselines.get(d) {
                let _ = writeln!(out, "- {}: {:.1}%", titles.get(d).unwrap_or(d), 100.0 * b);
            }
        }
    }
    out
}

/// Cell `i` of row `r`: mean ± s.e. (bold when the row's best private), how many trials
/// answered where a release refused some, and the target in parentheses.
fn markdown_cell(t: &Wide, r: &WideRow, i: usize) -> String {
    let Some((m, se, p)) = r.cells[i] else {
        return "—".to_string();
    };
    let mut v = if super::summary::is_modal(&t.metric) {
        wide_value(&t.metric, m)
    } else {
        format!(
            "{} ± {}",
            wide_value(&t.metric, m),
            wide_value(&t.metric, se)
        )
    };
    if r.best == Some(i) {
        v = format!("**{v}**");
    }
    if let Some((a, n)) = r.refused[i] {
        v = format!("{v} [answered {a} of {n}]");
    }
    match p {
        Some(p) => format!("{v} ({})", target_text(&t.metric, p)),
        None => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"
experiment = { name = "t", trials = 2, seed = 1, datasets = ["d"], neighbours = "replace_one" }
dataset = { d = { source = "student_t", n = 1000, df = 2, center = 0.5, scale = 0.01, seed = 1 } }
grid = { epsilon = [0.1] }
pipeline = [
    { name = "mean", release = "laplace", query = "mean", bounds = [0, 1] },
    { name = "ptr", release = "trimmed_mean_ptr", bounds = [0, 1], alpha = 0.1, propose = 0.1, delta = 1e-6 },
]
report = { x = "epsilon", metrics = ["abs_error"] }
"#;

    /// A trial of `pipeline` with its error and, for PTR, whether it answered.
    fn rec(pipeline: &str, trial: u32, error: f64, answered: Option<bool>) -> TrialRecord {
        let line = r#"{"key":"k","dataset":"d","pipeline":"","epsilon":0.1,"trial":0,"seed":0,"params":{"epsilon":0.1},"test_accuracy":null,"train_accuracy":null,"n_train":1000,"n_test":0,"n_features":1,"fit_seconds":0.0,"ledger":[],"private":true,"metrics":{}}"#;
        let mut r: TrialRecord = serde_json::from_str(line).unwrap();
        r.key = format!("{pipeline}|{trial}");
        r.pipeline = pipeline.into();
        r.trial = trial;
        r.metrics.insert("abs_error".into(), error);
        if let Some(a) = answered {
            r.metrics.insert("answered".into(), f64::from(u8::from(a)));
        }
        r
    }

    /// A PTR cell whose release refused a trial says how many answered, and the caption says
    /// why; a release that always answers, and a PTR cell that always answered, say nothing.
    #[test]
    fn a_cell_with_refused_trials_says_how_many_answered() {
        let spec = Spec::parse(SPEC, std::path::Path::new("t.toml")).unwrap();
        let records = [
            rec("mean", 0, 0.01, None),
            rec("mean", 1, 0.02, None),
            rec("ptr", 0, 0.0, Some(false)),
            rec("ptr", 1, 0.004, Some(true)),
        ];
        let summaries = super::super::summary::summarise(&spec, &records);
        let tables = wide(&spec, &summaries, &BTreeMap::new());
        let md = wide_markdown(&spec, &tables, &BTreeMap::new(), &BTreeMap::new());
        assert!(md.contains("0.0020 ± 0.0020 [answered 1 of 2]"), "{md}");
        assert!(
            md.contains("[answered k of n]: a release that may refuse"),
            "{md}"
        );
        assert!(!md.contains("0.0150 ± 0.0050 [answered"), "{md}");
        let answered = [
            rec("ptr", 0, 0.0, Some(true)),
            rec("ptr", 1, 0.004, Some(true)),
        ];
        let summaries = super::super::summary::summarise(&spec, &answered);
        let tables = wide(&spec, &summaries, &BTreeMap::new());
        let md = wide_markdown(&spec, &tables, &BTreeMap::new(), &BTreeMap::new());
        assert!(!md.contains("answered"), "{md}");
    }
}
