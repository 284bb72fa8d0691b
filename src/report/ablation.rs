//! Ablation sections: every differing verdict an ablation spec repeats, re-evaluated with each
//! hypothesis's series in place of the faithful one, beside the published value.
//!
//! An ablation spec's `[paper]` states the differing verdicts of the experiment it explains
//! (`[ablation] of`) for its faithful pipelines; a hypothesis replaces one of them by its own
//! series (with its own grid values). A verdict is *explained* when some hypothesis
//! reproduces it (within the cell's tolerance, or the claim holds), *unexplained* otherwise:
//! the report then says which hypotheses were ruled out.

use super::verdict::{self, CellVerdict, ClaimVerdict, show, show_diff};
use crate::spec::{AblationDef, Hypothesis, PaperCell, PaperClaim, Spec};
use crate::store::TrialRecord;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Our number for one verdict under one series, and whether it reproduces the published one.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub text: String,
    pub ok: bool,
}

/// One differing verdict re-evaluated under each hypothesis.
#[derive(Debug, Clone)]
pub struct Row {
    /// Identifies the verdict across specs ([`cell_key`], [`claim_key`]).
    pub key: String,
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
}

/// An ablation spec's hypotheses and rows.
#[derive(Debug, Clone)]
pub struct Ablation<'a> {
    pub spec: &'a Spec,
    pub def: &'a AblationDef,
    pub rows: Vec<Row>,
    pub trials: usize,
}

/// The key of a published number: dataset, series, metric, x and other grid values.
pub fn cell_key(c: &PaperCell) -> String {
    format!(
        "cell|{}|{}|{}|{:?}|{:?}",
        c.dataset, c.pipeline, c.metric, c.x, c.params
    )
}

/// The key of a qualitative claim: its text.
pub fn claim_key(c: &PaperClaim) -> String {
    format!("claim|{}", c.text)
}

fn cell_outcome(spec: &Spec, records: &[TrialRecord], c: &PaperCell) -> Outcome {
    match verdict::cell_verdict(spec, records, c) {
        v @ (CellVerdict::Reproduced { ours, .. } | CellVerdict::Differs { ours, .. }) => Outcome {
            text: format!("{} ({})", show(&c.metric, ours.mean), v.word()),
            ok: matches!(v, CellVerdict::Reproduced { .. }),
        },
        CellVerdict::Missing => Outcome {
            text: "missing".into(),
            ok: false,
        },
    }
}

fn claim_outcome(
    spec: &Spec,
    records: &[TrialRecord],
    c: &PaperClaim,
    params: [&BTreeMap<String, serde_json::Value>; 2],
) -> Outcome {
    match verdict::claim_verdict_with(spec, records, c, params) {
        v @ (ClaimVerdict::Holds { worst, .. } | ClaimVerdict::Fails { worst, .. }) => Outcome {
            text: format!("{} ({})", show_diff(&c.metric, worst), v.word()),
            ok: matches!(v, ClaimVerdict::Holds { .. }),
        },
        ClaimVerdict::Missing => Outcome {
            text: "missing".into(),
            ok: false,
        },
    }
}

/// The hypothesis's grid values over the verdict's own (its epsilon scaled if it says so).
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

/// Evaluates an ablation spec's verdicts under every hypothesis (`None` for other specs).
pub fn evaluate<'a>(spec: &'a Spec, records: &[TrialRecord]) -> Option<Ablation<'a>> {
    let def = spec.ablation.as_ref()?;
    let mut rows = Vec::new();
    for c in &spec.paper.cell {
        let tested = def
            .hypothesis
            .iter()
            .map(|h| {
                (c.pipeline == h.replaces).then(|| {
                    let mut sub = c.clone();
                    sub.pipeline = h.pipeline.clone();
                    sub.dataset = h.dataset.clone().unwrap_or(sub.dataset);
                    sub.params = merged(&c.params, h);
                    if x_is_epsilon(spec) {
                        sub.x = sub.x.map(|x| scaled(&x, h.epsilon_scale));
                    }
                    cell_outcome(spec, records, &sub)
                })
            })
            .collect();
        rows.push(Row {
            key: cell_key(c),
            verdict: format!(
                "{}, {}{}",
                super::dataset_title(spec, &c.dataset),
                c.pipeline,
                cell_where(spec, c)
            ),
            published: format!(
                "{} ± {}",
                show(&c.metric, c.value),
                show_diff(&c.metric, c.tolerance).trim_start_matches('+')
            ),
            faithful: cell_outcome(spec, records, c),
            tested,
        });
    }
    for c in &spec.paper.claim {
        let tested = def
            .hypothesis
            .iter()
            .map(|h| {
                let (a, b) = (c.above == h.replaces, c.below == h.replaces);
                // A claim over the epsilon axis compares the series at each epsilon: a scaled
                // epsilon has no counterpart there.
                let applies = !(h.epsilon_scale.is_some() && x_is_epsilon(spec));
                (applies && (a || b)).then(|| {
                    let mut sub = c.clone();
                    sub.dataset = h.dataset.clone().unwrap_or(sub.dataset);
                    let mut ps = [c.params.clone(), c.params.clone()];
                    if h.both {
                        ps = [merged(&c.params, h), merged(&c.params, h)];
                    }
                    if a {
                        sub.above = h.pipeline.clone();
                        ps[0] = merged(&c.params, h);
                    }
                    if b {
                        sub.below = h.pipeline.clone();
                        ps[1] = merged(&c.params, h);
                    }
                    claim_outcome(spec, records, &sub, [&ps[0], &ps[1]])
                })
            })
            .collect();
        rows.push(Row {
            key: claim_key(c),
            verdict: c.text.clone(),
            published: format!("margin ≥ {}", show_diff(&c.metric, c.margin)),
            faithful: claim_outcome(spec, records, c, [&c.params, &c.params]),
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

fn cell_where(spec: &Spec, c: &PaperCell) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(x) = &c.x {
        let axis = spec.report.x.as_deref().unwrap_or("x");
        parts.push(format!(
            "{} = {}",
            super::axis_symbol(axis),
            super::x_text(x)
        ));
    }
    for (k, v) in &c.params {
        parts.push(format!("{} = {}", super::axis_symbol(k), super::x_text(v)));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

impl Ablation<'_> {
    /// Whether some hypothesis reproduces the verdict with this key (`None`: not tested here).
    pub fn explains(&self, key: &str) -> Option<bool> {
        let rows: Vec<&Row> = self.rows.iter().filter(|r| r.key == key).collect();
        if rows.is_empty() {
            return None;
        }
        Some(
            rows.iter()
                .any(|r| !r.explained_by(&self.def.hypothesis).is_empty()),
        )
    }

    /// The "Ablation" sub-section; links are relative to `prefix` (the results root).
    pub fn markdown(&self, prefix: &str) -> String {
        let name = &self.spec.experiment.name;
        let mut out = format!(
            "### Ablation: {}\n\nSpec: `{}`; results: [`{name}/`]({prefix}{name}/) ({} trials; \
             [its section](#{})). Each hypothesis is one series run beside the faithful \
             pipeline, with the same seeds and splits:\n\n",
            self.spec.title(),
            self.spec.path.display(),
            self.trials,
            name.replace('.', "")
        );
        for h in &self.def.hypothesis {
            let weak = self
                .spec
                .pipelines
                .iter()
                .find(|p| p.name == h.pipeline)
                .map_or("", |p| p.weakening_label());
            let weak = if weak.is_empty() {
                String::new()
            } else {
                format!(" **[{weak}]**")
            };
            let mut params: Vec<String> = h
                .params
                .iter()
                .map(|(k, v)| format!("{} = {}", super::axis_symbol(k), super::x_text(v)))
                .collect();
            if let Some(f) = h.epsilon_scale {
                params.push(format!("{f} × the verdict's ε"));
            }
            if h.both {
                params.push("for both series".into());
            }

            let mut at = if params.is_empty() {
                String::new()
            } else {
                format!(" at {}", params.join(", "))
            };
            if let Some(d) = &h.dataset {
                at.push_str(&format!(" on {}", super::dataset_title(self.spec, d)));
            }
            let _ = writeln!(
                out,
                "- **{}**: {} (series “{}”{at} in place of “{}”){weak}",
                h.id, h.text, h.pipeline, h.replaces
            );
        }
        let ids: Vec<&str> = self.def.hypothesis.iter().map(|h| h.id.as_str()).collect();
        let _ = write!(
            out,
            "\n| published verdict | published | faithful | {} | reproduced by |\n|---|---|---|{}---|\n",
            ids.join(" | "),
            "---|".repeat(ids.len())
        );
        for r in &self.rows {
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
                    .filter(|(_, o)| o.is_some())
                    .map(|(h, _)| h.id.as_str())
                    .collect();
                format!("none (ruled out: {})", tried.join(", "))
            } else {
                format!("**{}**", by.join(", "))
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {by} |",
                r.verdict,
                r.published,
                r.faithful.text,
                cells.join(" | ")
            );
        }
        let _ = writeln!(out, "\n**What it means:** {}\n", self.def.meaning.trim());
        out
    }
}
