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
    /// Grid values selecting the series (e.g. `{ epsilon = 0.2 }`), over the verdict's own.
    #[serde(default)]
    pub params: BTreeMap<String, Value>,
}

impl AblationDef {
    /// Why the table is invalid for a spec with these pipeline names, as (field, reason).
    pub fn problem(&self, pipelines: &[&str]) -> Option<(String, String)> {
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
        }
        None
    }
}
