//! `[ablation]`: a spec that tests candidate explanations of published numbers we do not
//! reproduce. Its `[paper]` repeats the differing verdicts of the experiment it explains (`of`),
//! stated for the faithful pipelines; each hypothesis names the series that tests it and the
//! faithful series it stands in for, so the report re-evaluates every verdict with it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The `[ablation]` table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AblationDef {
    /// `[experiment] name` of the experiment whose differing verdicts this spec tests.
    pub of: String,
    /// What the outcome means, in one or two sentences (shown under the verdicts).
    pub meaning: String,
    pub hypothesis: Vec<Hypothesis>,
}

/// One candidate explanation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hypothesis {
    /// Short label (`H1`, ...).
    pub id: String,
    /// The candidate explanation, one sentence.
    pub text: String,
    /// The series that tests it.
    pub pipeline: String,
    /// The faithful series it stands in for in the verdicts.
    pub replaces: String,
    /// Grid values selecting the series (e.g. `{ features = 5 }`), over the verdict's own.
    #[serde(default)]
    pub params: BTreeMap<String, Value>,
    /// The series at the verdict's epsilon times this factor (e.g. 0.5: the noise of the
    /// replace-one calibration, or half the budget).
    pub epsilon_scale: Option<f64>,
    /// The whole verdict (both series of a claim) on this dataset of the spec instead.
    pub dataset: Option<String>,
    /// Apply `params` and `epsilon_scale` to both series of a claim (a setting of the whole
    /// verdict, e.g. both models at another epsilon), not only to the replacing one.
    #[serde(default)]
    pub both: bool,
}

impl AblationDef {
    /// Why the table is invalid for a spec with these pipeline names, as (field, reason).
    pub fn problem(&self, pipelines: &[&str], datasets: &[String]) -> Option<(String, String)> {
        if self.of.trim().is_empty() {
            return Some((
                "ablation.of".into(),
                "name the experiment it explains".into(),
            ));
        }
        if self.hypothesis.len() < 2 {
            return Some((
                "ablation.hypothesis".into(),
                "test at least two candidate explanations".into(),
            ));
        }
        for (i, h) in self.hypothesis.iter().enumerate() {
            for (field, name) in [("pipeline", &h.pipeline), ("replaces", &h.replaces)] {
                if !pipelines.contains(&name.as_str()) {
                    return Some((
                        format!("ablation.hypothesis[{i}].{field}"),
                        format!("no pipeline is named `{name}`"),
                    ));
                }
            }
            if let Some(d) = h.dataset.as_ref().filter(|d| !datasets.contains(d)) {
                return Some((
                    format!("ablation.hypothesis[{i}].dataset"),
                    format!("`{d}` is not in [experiment] datasets"),
                ));
            }
            if let Some(f) = h.epsilon_scale.filter(|f| !(f.is_finite() && *f > 0.0)) {
                return Some((
                    format!("ablation.hypothesis[{i}].epsilon_scale"),
                    format!("must be finite and > 0, got {f}"),
                ));
            }
        }
        None
    }
}
