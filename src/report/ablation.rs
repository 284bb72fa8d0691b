//! Ablation sections: every differing verdict an ablation spec repeats, re-evaluated with each
//! hypothesis's series in place of the faithful one, beside the published value.
//!
//! An ablation spec's `[paper]` states the differing verdicts of the experiment it explains
//! (`[ablation] of`) for its faithful pipelines; a hypothesis replaces one of them by its own
//! series (with its own grid values). A verdict is *explained* when some hypothesis
//! reproduces it (within the cell's tolerance, or the claim holds), *unexplained* otherwise:
//! the report then says which hypotheses were ruled out.

use super::sample_complexity::Reading;
use super::slope::SlopeVerdict;
use super::verdict::{self, CellVerdict, ClaimVerdict, show, show_diff};
use crate::spec::{AblationDef, Grade, Hypothesis, PaperCell, PaperClaim, PaperSlope, Spec};
use crate::store::TrialRecord;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Our number for one verdict under one series, and whether it reproduces the published one.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub text: String,
    pub ok: bool,
    /// False where the series has no trials for the verdict (not run there): not ruled out.
    pub tested: bool,
}

impl Outcome {
    fn missing() -> Self {
        Outcome {
            text: "not run".into(),
            ok: false,
            tested: false,
        }
    }
}

/// One differing verdict re-evaluated under each hypothesis.
#[derive(Debug, Clone)]
pub struct Row {
    /// Identifies the verdict across specs ([`cell_key`], [`claim_key`]).
    pub key: VerdictKey,
    /// The verdict's dataset (a hypothesis's grade may depend on it).
    pub dataset: String,
    /// The published statement.
    pub verdict: String,
    pub published: String,
    pub faithful: Outcome,
    /// Per hypothesis; `None` where it does not replace a series of this verdict.
    pub tested: Vec<Option<Outcome>>,
}

impl Row {
    /// The ids of the hypotheses that reproduce the published value.
    pub fn explained_by<'h>(&self, hs: &'h [Hypothesis]) -> Vec<&'h str> {
        hs.iter()
            .zip(&self.tested)
            .filter(|(_, o)| o.as_ref().is_some_and(|o| o.ok))
            .map(|(h, _)| h.id.as_str())
            .collect()
    }

    /// The strongest grade among the hypotheses that reproduce it (`None`: unexplained).
    pub fn best_grade(&self, hs: &[Hypothesis]) -> Option<Grade> {
        hs.iter()
            .zip(&self.tested)
            .filter(|(_, o)| o.as_ref().is_some_and(|o| o.ok))
            .map(|(h, _)| h.grade_for(h.dataset.as_deref().unwrap_or(&self.dataset)))
            .min()
    }
}

/// An ablation spec's hypotheses and rows.
#[derive(Debug, Clone)]
pub struct Ablation<'a> {
    pub spec: &'a Spec,
    pub def: &'a AblationDef,
    pub rows: Vec<Row>,
    pub trials: usize,
}

/// Identifies a published verdict across specs: dataset, series, metric and x (or a claim's
/// text), and the grid values that select it.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictKey {
    pub base: String,
    pub params: BTreeMap<String, serde_json::Value>,
}

impl VerdictKey {
    /// Whether this (an ablation's) verdict stands for `of` (the explained experiment's): the
    /// same cell, with the same grid values or more (`{ epsilon = 0.1 }` where the experiment
    /// runs one epsilon and names none).
    pub fn covers(&self, of: &VerdictKey) -> bool {
        self.base == of.base
            && of.params.iter().all(|(k, v)| {
                self.params
                    .get(k)
                    .is_some_and(|w| super::summary::value_eq(v, w))
            })
    }
}

/// The key of a published number.
pub fn cell_key(c: &PaperCell) -> VerdictKey {
    VerdictKey {
        base: format!("cell|{}|{}|{}|{:?}", c.dataset, c.pipeline, c.metric, c.x),
        params: c.params.clone(),
    }
}

/// The key of a scaling law: its text.
pub fn slope_key(c: &PaperSlope) -> VerdictKey {
    VerdictKey {
        base: format!("slope|{}", c.text),
        params: c.params.clone(),
    }
}

/// A scaling law's fitted slope, and whether it is within the law's tolerance.
fn slope_outcome(spec: &Spec, records: &[TrialRecord], c: &PaperSlope) -> Outcome {
    let v = super::slope::slope_verdict(spec, records, c);
    let Some((fit, _)) = v.measured() else {
        return Outcome::missing();
    };
    Outcome {
        text: format!(
            "slope {:+.3} ± {:.3} ({})",
            fit.slope,
            fit.half_width,
            v.word()
        ),
        ok: matches!(v, SlopeVerdict::Holds { .. }),
        tested: true,
    }
}

/// The key of a qualitative claim: its text.
pub fn claim_key(c: &PaperClaim) -> VerdictKey {
    VerdictKey {
        base: format!("claim|{}", c.text),
        params: c.params.clone(),
    }
}

fn cell_outcome(spec: &Spec, records: &[TrialRecord], c: &PaperCell) -> Outcome {
    match verdict::cell_verdict(spec, records, c) {
        v @ (CellVerdict::Reproduced { ours, .. } | CellVerdict::Differs { ours, .. }) => Outcome {
            text: format!("{} ({})", show(&c.metric, ours.mean), v.word()),
            ok: matches!(v, CellVerdict::Reproduced { .. }),
            tested: true,
        },
        CellVerdict::Missing => Outcome::missing(),
    }
}

/// A multiplier recomputed from the trials with the search read as `h` says (the report's own
/// reading for the faithful series), with the N, accuracy and target behind it.
fn multiplier_outcome(
    spec: &Spec,
    records: &[TrialRecord],
    c: &PaperCell,
    h: Option<&Hypothesis>,
) -> Outcome {
    let reading = |d: &str| Reading {
        largest_n: h.and_then(|h| h.largest_n.get(d)).map(|&n| n as usize),
        target: h.and_then(|h| h.target.get(d)).copied(),
    };
    match verdict::multiplier_verdict(spec, records, c, reading) {
        (CellVerdict::Missing, _) | (_, None) => Outcome::missing(),
        (v, Some(row)) => {
            let ours = match &v {
                CellVerdict::Reproduced { ours, .. } | CellVerdict::Differs { ours, .. } => {
                    ours.mean
                }
                CellVerdict::Missing => f64::NAN,
            };
            Outcome {
                text: format!(
                    "{} ({}; N = {}: {} vs target {})",
                    show(&c.metric, ours),
                    v.word(),
                    row.n,
                    show("accuracy", row.accuracy),
                    show("accuracy", row.target)
                ),
                ok: matches!(v, CellVerdict::Reproduced { .. }),
                tested: true,
            }
        }
    }
}

/// The paper's own numbers behind a multiplier: does its accuracy at the N it printed come
/// within the report's tolerance of the target (convergence), or not (the N marks where the
/// search stopped)? Our accuracy at that N is shown beside it.
fn thesis_outcome(spec: &Spec, records: &[TrialRecord], c: &PaperCell, h: &Hypothesis) -> Outcome {
    let (Some(n), Some(acc), Some(&target)) = (c.n_train, c.accuracy, h.target.get(&c.dataset))
    else {
        return Outcome::missing();
    };
    let tol = spec.report.tolerance.unwrap_or(0.02);
    let stopped = acc < target - tol;
    let largest = match h.largest_n.get(&c.dataset) {
        Some(&l) if l == n => " (its largest N)".to_string(),
        Some(&l) => format!(" (its largest N {l})"),
        None => String::new(),
    };
    let ours = ours_at(records, c, n).map_or(String::new(), |o| {
        format!("; ours there {}", show("accuracy", o))
    });
    Outcome {
        text: format!(
            "{} at N = {n}{largest} vs target {}: {}{ours}",
            show("accuracy", acc),
            show("accuracy", target),
            if stopped {
                "not within tolerance, so a cap"
            } else {
                "within tolerance, so convergence"
            }
        ),
        ok: stopped,
        tested: true,
    }
}

/// Our best mean accuracy (over the other grid values) of the cell's series at `n` trainees.
fn ours_at(records: &[TrialRecord], c: &PaperCell, n: u64) -> Option<f64> {
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in records.iter().filter(|r| {
        r.dataset == c.dataset
            && r.pipeline == c.pipeline
            && super::summary::params_match(r, &c.params)
            && r.params.get("n_train").and_then(|v| v.as_u64()) == Some(n)
    }) {
        if let Some(a) = r.test_accuracy {
            by.entry(format!("{:?}", r.params)).or_default().push(a);
        }
    }
    by.values()
        .map(|v| v.iter().sum::<f64>() / v.len() as f64)
        .max_by(f64::total_cmp)
}

fn claim_outcome(
    spec: &Spec,
    records: &[TrialRecord],
    c: &PaperClaim,
    params: [&BTreeMap<String, serde_json::Value>; 2],
) -> Outcome {
    let v = verdict::claim_verdict_with(spec, records, c, params);
    let axis = super::summary::axis_symbol(spec.report.x.as_deref().unwrap_or("x"));
    match v.measured() {
        Some((worst, _, gap)) => Outcome {
            text: format!(
                "{} ({}{})",
                show_diff(&c.metric, worst),
                v.word(),
                verdict::spread(&c.metric, &gap)
                    .replace(" at x = ", &format!(" at {axis} = "))
                    .replace(" over ", " over the ")
            ),
            ok: matches!(v, ClaimVerdict::Holds { .. }),
            tested: true,
        },
        None => Outcome::missing(),
    }
}

/// The hypothesis's grid values over the verdict's own (its epsilon scaled if it says so).
/// The series, dataset, metric and grid values hypothesis `h` reads in place of a verdict's
/// (a published cell's or a scaling law's).
fn retarget(
    h: &Hypothesis,
    pipeline: &str,
    dataset: &str,
    metric: &str,
    params: &BTreeMap<String, serde_json::Value>,
) -> (String, String, String, BTreeMap<String, serde_json::Value>) {
    (
        h.series(pipeline).to_string(),
        h.dataset.clone().unwrap_or_else(|| dataset.to_string()),
        h.metric.clone().unwrap_or_else(|| metric.to_string()),
        merged(params, h),
    )
}

fn merged(
    base: &BTreeMap<String, serde_json::Value>,
    h: &Hypothesis,
) -> BTreeMap<String, serde_json::Value> {
    let mut p = base.clone();
    p.extend(h.params.clone());
    if let Some(e) = p.get_mut("epsilon") {
        *e = scaled(e, h.epsilon_scale);
    }
    p
}

/// An epsilon value times the hypothesis's scale, rounded like a grid value written in a spec
/// (0.1 × 0.5 = 0.05, not 0.05000000000000001).
fn scaled(e: &serde_json::Value, scale: Option<f64>) -> serde_json::Value {
    match (e.as_f64(), scale) {
        (Some(v), Some(f)) => {
            let s = format!("{:.12}", v * f).parse::<f64>().unwrap_or(v * f);
            serde_json::json!(s)
        }
        _ => e.clone(),
    }
}

fn x_is_epsilon(spec: &Spec) -> bool {
    spec.report.x.as_deref() == Some("epsilon")
}

/// The spec and trials the verdicts are read from: the ablation's own, plus (with `reuse`)
/// the explained experiment's pipelines, datasets and every trial it did not rerun.
pub fn with_reused(
    spec: &Spec,
    records: &[TrialRecord],
    of: Option<(&Spec, &[TrialRecord])>,
) -> (Spec, Vec<TrialRecord>) {
    let mut spec = spec.clone();
    let mut all = records.to_vec();
    if let (Some((of_spec, of_records)), true) =
        (of, spec.ablation.as_ref().is_some_and(|a| a.reuse))
    {
        let own: Vec<String> = spec.pipelines.iter().map(|p| p.name.clone()).collect();
        for p in of_spec.pipelines.iter().filter(|p| !own.contains(&p.name)) {
            spec.pipelines.push(p.clone());
        }
        for d in &of_spec.experiment.datasets {
            if !spec.experiment.datasets.contains(d) {
                spec.experiment.datasets.push(d.clone());
                if let (None, Some(def)) = (spec.catalog.get(d), of_spec.catalog.get(d)) {
                    // Only its title is read here.
                    spec.catalog.insert(d, def.clone(), None);
                }
            }
        }
        // A trial's key names its dataset, series, grid point and trial: a rerun of the same
        // trial (same seed) is the same record, kept once.
        let ran: std::collections::BTreeSet<&str> =
            records.iter().map(|r| r.key.as_str()).collect();
        all.extend(
            of_records
                .iter()
                .filter(|r| !ran.contains(r.key.as_str()))
                .cloned(),
        );
    }
    (spec, all)
}

/// The outcome of claim `c` under hypothesis `h` (`None`: the hypothesis does not touch the
/// claim's series, or has no counterpart of its scaled epsilon), read from `read`'s records.
fn claim_under(
    spec: &Spec,
    read: &Spec,
    records: &[TrialRecord],
    c: &PaperClaim,
    h: &Hypothesis,
) -> Option<Outcome> {
    let (a, b) = (h.replaces(&c.above), h.replaces(&c.below));
    // A claim over the epsilon axis compares the series at each epsilon: a scaled
    // epsilon has a counterpart only in a claim at one epsilon, where the replaced
    // series is taken at the scaled one.
    let scaled_x = match (h.epsilon_scale, c.x_min, c.x_max) {
        (Some(f), Some(lo), Some(hi)) if lo == hi && x_is_epsilon(spec) => {
            Some(Some(scaled(&serde_json::json!(lo), Some(f))))
        }
        (Some(_), ..) if x_is_epsilon(spec) => None,
        _ => Some(None),
    };
    scaled_x.filter(|_| a || b).map(|at| {
        let mut sub = c.clone();
        if at.is_some() {
            if a {
                sub.above_x = at.clone();
            }
            if b {
                sub.below_x = at;
            }
        }
        sub.dataset = h.dataset.clone().unwrap_or(sub.dataset);
        sub.metric = h.metric.clone().unwrap_or(sub.metric);
        sub.x_min = h.x_min.or(sub.x_min);
        let mut ps = [c.params.clone(), c.params.clone()];
        if h.both {
            ps = [merged(&c.params, h), merged(&c.params, h)];
        }
        if a {
            sub.above = h.series(&c.above).to_string();
            ps[0] = merged(&c.params, h);
        }
        if b {
            sub.below = h.series(&c.below).to_string();
            ps[1] = merged(&c.params, h);
        }
        claim_outcome(read, records, &sub, [&ps[0], &ps[1]])
    })
}

/// A published cell's value with its tolerance (a multiplier's in doublings).
pub(super) fn published_text(c: &PaperCell) -> String {
    if c.metric == "multiplier" {
        format!("{} (±{} doublings)", show(&c.metric, c.value), c.tolerance)
    } else {
        format!(
            "{} ± {}",
            show(&c.metric, c.value),
            show_diff(&c.metric, c.tolerance).trim_start_matches('+')
        )
    }
}

/// Evaluates an ablation spec's verdicts under every hypothesis (`None` for other specs);
/// `of` is the explained experiment with its trials, read where the spec says `reuse`.
pub fn evaluate<'a>(
    spec: &'a Spec,
    records: &[TrialRecord],
    of: Option<(&Spec, &[TrialRecord])>,
) -> Option<Ablation<'a>> {
    let def = spec.ablation.as_ref()?;
    let (read, records) = with_reused(spec, records, of);
    let (read, records) = (&read, &records[..]);
    let outcome = |c: &PaperCell, h: Option<&Hypothesis>| match (c.metric.as_str(), h) {
        (_, Some(h)) if h.from_thesis => thesis_outcome(read, records, c, h),
        ("multiplier", _) => multiplier_outcome(read, records, c, h),
        _ => cell_outcome(read, records, c),
    };
    let mut rows = Vec::new();
    for c in &spec.paper.cell {
        let tested = per_hypothesis(def, &c.pipeline, |h| {
            let mut sub = c.clone();
            (sub.pipeline, sub.dataset, sub.metric, sub.params) =
                retarget(h, &c.pipeline, &c.dataset, &c.metric, &c.params);
            if x_is_epsilon(spec) {
                sub.x = sub.x.map(|x| scaled(&x, h.epsilon_scale));
            }
            outcome(&sub, Some(h))
        });
        rows.push(Row {
            key: cell_key(c),
            dataset: c.dataset.clone(),
            verdict: format!(
                "{}, {}{}",
                super::summary::dataset_title(read, &c.dataset),
                c.pipeline,
                cell_where(spec, c)
            ),
            published: published_text(c),
            faithful: outcome(c, None),
            tested,
        });
    }
    for c in &spec.paper.claim {
        let tested = def
            .hypothesis
            .iter()
            .map(|h| claim_under(spec, read, records, c, h))
            .collect();
        rows.push(Row {
            key: claim_key(c),
            dataset: c.dataset.clone(),
            verdict: c.text.clone(),
            published: format!("margin ≥ {}", show_diff(&c.metric, c.margin)),
            faithful: claim_outcome(read, records, c, [&c.params, &c.params]),
            tested,
        });
    }
    for c in &spec.paper.slope {
        let tested = per_hypothesis(def, &c.pipeline, |h| {
            let mut sub = c.clone();
            (sub.pipeline, sub.dataset, sub.metric, sub.params) =
                retarget(h, &c.pipeline, &c.dataset, &c.metric, &c.params);
            sub.x_min = h.x_min.or(sub.x_min);
            slope_outcome(read, records, &sub)
        });
        rows.push(Row {
            key: slope_key(c),
            dataset: c.dataset.clone(),
            verdict: c.text.clone(),
            published: format!("slope {:+} ± {}", c.expected, c.tolerance),
            faithful: slope_outcome(read, records, c),
            tested,
        });
    }
    Some(Ablation {
        spec,
        def,
        rows,
        trials: records.len(),
    })
}

/// Each hypothesis's outcome for a verdict on the faithful `series` (`None` where the
/// hypothesis replaces another series).
fn per_hypothesis(
    def: &AblationDef,
    series: &str,
    outcome: impl Fn(&Hypothesis) -> Outcome,
) -> Vec<Option<Outcome>> {
    def.hypothesis
        .iter()
        .map(|h| h.replaces(series).then(|| outcome(h)))
        .collect()
}

/// A hypothesis's grade as the report states it, with its per-dataset exceptions.
fn grade_text(h: &Hypothesis) -> String {
    let mut out = h.grade.label().to_string();
    for (d, g) in &h.grade_on {
        let _ = write!(out, "; on {d}: {}", g.label());
    }
    out
}

/// [`super::summary::cell_where`] in brackets, or nothing.
fn cell_where(spec: &Spec, c: &PaperCell) -> String {
    let parts = super::summary::cell_where(spec, c);
    if parts.is_empty() {
        parts
    } else {
        format!(" ({parts})")
    }
}

impl Ablation<'_> {
    /// Whether some hypothesis reproduces the verdict with this key (`None`: not tested here).
    pub fn explains(&self, key: &VerdictKey) -> Option<bool> {
        self.explanation(key).map(|g| g.is_some())
    }

    /// The strongest grade of an explanation of the verdict with this key: `None` when no row
    /// tests it here, `Some(None)` when none of its hypotheses reproduces it.
    pub fn explanation(&self, key: &VerdictKey) -> Option<Option<Grade>> {
        let rows: Vec<&Row> = self.rows.iter().filter(|r| r.key.covers(key)).collect();
        if rows.is_empty() {
            return None;
        }
        Some(
            rows.iter()
                .filter_map(|r| r.best_grade(&self.def.hypothesis))
                .min(),
        )
    }

    /// One hypothesis's line: what it says, where and how it is tested, and its grade.
    fn hypothesis_line(&self, h: &Hypothesis) -> String {
        let weak = self
            .spec
            .pipelines
            .iter()
            .find(|p| Some(&p.name) == h.pipeline.as_ref())
            .map_or("", |p| p.variant_tag(self.spec.paper.neighbours));
        let weak = if weak.is_empty() {
            String::new()
        } else {
            format!(" **[{weak}]**")
        };
        let mut params: Vec<String> = h
            .params
            .iter()
            .map(|(k, v)| super::summary::param_text(k, v))
            .collect();
        if let Some(f) = h.epsilon_scale {
            params.push(format!("{f} × the verdict's ε"));
        }
        if h.both {
            params.push("for both series".into());
        }
        if let Some(m) = h.x_min {
            let axis = self.spec.report.x.as_deref().unwrap_or("x");
            params.push(format!("{} ≥ {}", super::summary::axis_symbol(axis), m));
        }

        let mut at = if params.is_empty() {
            String::new()
        } else {
            format!(" at {}", params.join(", "))
        };
        if let Some(d) = &h.dataset {
            at.push_str(&format!(
                " on {}",
                super::summary::dataset_title(self.spec, d)
            ));
        }
        let replaced = h.replaces.join("”, “");
        let how = match &h.pipeline {
            Some(p) => format!("series “{p}”{at} in place of “{replaced}”"),
            None => format!("“{replaced}” itself{at}, read this way"),
        };
        format!(
            "- **{}**: {} ({how}){weak}. Grade: {}.",
            h.id,
            h.text,
            grade_text(h)
        )
    }

    /// One row of the ablation table: the published verdict, each hypothesis's outcome and
    /// which hypotheses reproduce it.
    fn row_cells(&self, r: &Row) -> Vec<String> {
        let cells: Vec<String> = r
            .tested
            .iter()
            .map(|o| match o {
                None => "—".into(),
                Some(o) if o.ok => format!("**{}**", o.text),
                Some(o) => o.text.clone(),
            })
            .collect();
        let by = r.explained_by(&self.def.hypothesis);
        let by = if by.is_empty() {
            let tried: Vec<&str> = self
                .def
                .hypothesis
                .iter()
                .zip(&r.tested)
                .filter(|(_, o)| o.as_ref().is_some_and(|o| o.tested))
                .map(|(h, _)| h.id.as_str())
                .collect();
            format!("none (ruled out: {})", tried.join(", "))
        } else {
            let graded: Vec<String> = (self.def.hypothesis.iter())
                .filter(|h| by.contains(&h.id.as_str()))
                .map(|h| {
                    let g = h.grade_for(h.dataset.as_deref().unwrap_or(&r.dataset));
                    format!("**{}** ({})", h.id, g.short())
                })
                .collect();
            graded.join(", ")
        };
        let mut row = vec![
            r.verdict.clone(),
            r.published.clone(),
            r.faithful.text.clone(),
        ];
        row.extend(cells);
        row.push(by);
        row
    }

    /// The "Ablation" sub-section; links are relative to `prefix` (the results root).
    pub fn markdown(&self, prefix: &str) -> String {
        let name = &self.spec.experiment.name;
        let mut out = format!(
            "### Ablation: {}\n\nSpec: `{}`; results: [`{name}/`]({prefix}{name}/) ({} trials{}; \
             [its section](#{})). Each hypothesis is a series run beside the faithful one \
             (the same splits; a series of another name draws its own noise) or another \
             reading of the faithful trials or of the paper's own numbers:\n\n",
            self.spec.title(),
            self.spec.path.display(),
            self.trials,
            if self.def.reuse {
                format!(", with those of `{}` reused", self.def.of)
            } else {
                String::new()
            },
            super::summary::anchor(name)
        );
        for h in &self.def.hypothesis {
            let _ = writeln!(out, "{}", self.hypothesis_line(h));
        }
        let ids: Vec<&str> = self.def.hypothesis.iter().map(|h| h.id.as_str()).collect();
        let mut header = vec!["published verdict", "published", "faithful"];
        header.extend(&ids);
        header.push("reproduced by");
        let _ = write!(out, "\n{}", super::markdown::head(&header));
        for r in &self.rows {
            let _ = writeln!(out, "{}", super::markdown::row(&self.row_cells(r)));
        }
        let _ = writeln!(out, "\n{}", self.conclusion());
        let _ = writeln!(out, "**What it means:** {}\n", self.def.meaning.trim());
        out
    }

    /// The verdicts by the strongest grade that explains them, generated from the rows (the
    /// hand-written `meaning` carries no number of its own). A verdict whose faithful run now
    /// reproduces the published one has nothing left to explain and is counted apart.
    pub fn conclusion(&self) -> String {
        let hs = &self.def.hypothesis;
        let names = |rows: &[&Row]| {
            (rows.iter().map(|r| r.verdict.as_str()))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let (agree, differ): (Vec<&Row>, Vec<&Row>) = self.rows.iter().partition(|r| r.faithful.ok);
        let mut parts = Vec::new();
        if !agree.is_empty() {
            parts.push(format!(
                "{} reproduced by the faithful run itself, so no longer differing ({})",
                agree.len(),
                names(&agree)
            ));
        }
        for g in Grade::ALL {
            let rows: Vec<&Row> = (differ.iter().copied())
                .filter(|r| r.best_grade(hs) == Some(g))
                .collect();
            if !rows.is_empty() {
                parts.push(format!(
                    "{} explained by a {} ({})",
                    rows.len(),
                    g.label(),
                    names(&rows)
                ));
            }
        }
        let unexplained: Vec<&Row> = (differ.iter().copied())
            .filter(|r| r.best_grade(hs).is_none())
            .collect();
        if !unexplained.is_empty() {
            parts.push(format!(
                "{} unexplained ({})",
                unexplained.len(),
                names(&unexplained)
            ));
        }
        format!(
            "**Conclusion** (generated from the rows above, by the strongest explanation of \
             each): of {} verdicts, {}.\n",
            self.rows.len(),
            parts.join(", ")
        )
    }
}

#[cfg(test)]
mod tests;
