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
    /// Read the explained experiment's stored trials for every series this spec does not run
    /// itself (same datasets, seed and pipeline names, so the same data): the spec then runs
    /// only its hypotheses' new series, and `replaces` may name the explained experiment's.
    #[serde(default)]
    pub reuse: bool,
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
    /// The series that tests it; absent: the faithful series itself, read another way
    /// (`metric`, `largest_n`, `target`, `from_thesis`).
    pub pipeline: Option<String>,
    /// The faithful series it stands in for in the verdicts (one name or a list).
    #[serde(deserialize_with = "one_or_many", serialize_with = "as_list")]
    pub replaces: Vec<String>,
    /// The verdict read on this metric instead (e.g. `train_accuracy`: the training split).
    pub metric: Option<String>,
    /// Sample-complexity verdicts: the search stops at this N per dataset (the paper's largest
    /// N): the target is the reference at that N, and a series not within tolerance by then is
    /// reported at it, as a search capped by its data would report it.
    #[serde(default)]
    pub largest_n: BTreeMap<String, u64>,
    /// Sample-complexity verdicts: the target accuracy per dataset (e.g. the paper's own
    /// reference accuracy) instead of the reference at the largest N.
    #[serde(default)]
    pub target: BTreeMap<String, f64>,
    /// Sample-complexity verdicts, computed from the paper's own numbers (each cell's `n_train`
    /// and `accuracy`): the published multiplier marks where the paper stopped, not
    /// convergence, when its accuracy there is below `target` minus the report's tolerance.
    #[serde(default)]
    pub from_thesis: bool,
    /// Grid values selecting the series (e.g. `{ features = 5 }`), over the verdict's own.
    #[serde(default)]
    pub params: BTreeMap<String, Value>,
    /// The series at the verdict's epsilon times this factor (e.g. 0.5: the noise of the
    /// replace-one calibration, or half the budget).
    pub epsilon_scale: Option<f64>,
    /// The whole verdict (both series of a claim) on this dataset of the spec instead.
    pub dataset: Option<String>,
    /// The verdict read over x >= this only (a claim's or a scaling law's range): e.g. a law
    /// fitted past the small N where a mechanism saturates.
    pub x_min: Option<f64>,
    /// Apply `params` and `epsilon_scale` to both series of a claim (a setting of the whole
    /// verdict, e.g. both models at another epsilon), not only to the replacing one.
    #[serde(default)]
    pub both: bool,
    /// How strong an explanation by this hypothesis is (the summary counts each grade).
    pub grade: Grade,
    /// The grade on particular datasets, over `grade`: a λ fixed at the paper's reported value
    /// is a faithful reading on the dataset the paper reports it for and a fitted parameter on
    /// the others.
    #[serde(default)]
    pub grade_on: BTreeMap<String, Grade>,
}

/// The strength of an explanation, strongest first: a faithful ε-DP reading of the paper; a
/// variant that is not ε-DP (e.g. noise N times too small) or not what the paper did (another
/// relation, twice the budget, a non-private step); or post hoc, a parameter or reading chosen
/// to fit the published number (e.g. the published numbers used as search caps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grade {
    Faithful,
    Variant,
    PostHoc,
}

impl Grade {
    pub const ALL: [Grade; 3] = [Grade::Faithful, Grade::Variant, Grade::PostHoc];

    /// The words the report shows.
    pub fn label(self) -> &'static str {
        match self {
            Grade::Faithful => "faithful ε-DP reading",
            Grade::Variant => "non-private or non-faithful variant",
            Grade::PostHoc => "post hoc reading (a parameter or reading chosen to fit)",
        }
    }

    /// A short form for table cells.
    pub fn short(self) -> &'static str {
        match self {
            Grade::Faithful => "faithful",
            Grade::Variant => "variant",
            Grade::PostHoc => "post hoc",
        }
    }
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(
        untagged,
        expecting = "expected a series name or a list of series names"
    )]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

fn as_list<S: serde::Serializer>(v: &[String], s: S) -> Result<S::Ok, S::Error> {
    v.serialize(s)
}

impl Hypothesis {
    /// Whether the hypothesis stands in for `series` in a verdict.
    pub fn replaces(&self, series: &str) -> bool {
        self.replaces.iter().any(|r| r == series)
    }

    /// The series that tests it in place of the faithful `series`.
    pub fn series<'a>(&'a self, series: &'a str) -> &'a str {
        self.pipeline.as_deref().unwrap_or(series)
    }

    /// Whether it changes how a sample-complexity verdict is read.
    pub fn reads_differently(&self) -> bool {
        !self.largest_n.is_empty() || !self.target.is_empty() || self.from_thesis
    }

    /// Its grade for a verdict on `dataset`.
    pub fn grade_for(&self, dataset: &str) -> Grade {
        self.grade_on.get(dataset).copied().unwrap_or(self.grade)
    }

    /// Why its declared grade is too strong, given whether its series is ε-DP as claimed
    /// (`weakened`: a variant whose real ε exceeds the claim): a reading against the paper's
    /// own numbers is post hoc, and a weakened series is never a faithful reading.
    pub fn overgraded(&self, weakened: bool) -> Option<String> {
        let grades = std::iter::once(self.grade).chain(self.grade_on.values().copied());
        let best = grades.min().unwrap_or(self.grade);
        if self.reads_differently() && best != Grade::PostHoc {
            return Some(
                "a reading against the paper's own numbers (largest_n, target, from_thesis) \
                 is graded \"post_hoc\""
                    .into(),
            );
        }
        if weakened && best == Grade::Faithful {
            return Some("its series is not ε-DP as claimed: it cannot be \"faithful\"".into());
        }
        None
    }
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
            if h.replaces.is_empty() {
                return Some((
                    format!("ablation.hypothesis[{i}].replaces"),
                    "name the faithful series it stands in for".into(),
                ));
            }
            if h.from_thesis && h.target.is_empty() {
                return Some((
                    format!("ablation.hypothesis[{i}].target"),
                    "from_thesis compares the paper's accuracies with a target per dataset".into(),
                ));
            }
            let names = h.pipeline.iter().map(|p| ("pipeline", p));
            // With `reuse`, the faithful series may be the explained experiment's (checked
            // when the report reads its trials).
            let faithful = h.replaces.iter().filter(|_| !self.reuse);
            for (field, name) in names.chain(faithful.map(|r| ("replaces", r))) {
                if !pipelines.contains(&name.as_str()) {
                    return Some((
                        format!("ablation.hypothesis[{i}].{field}"),
                        format!("no pipeline is named `{name}`"),
                    ));
                }
            }
            let mut keys = (h.largest_n.keys().map(|k| ("largest_n", k)))
                .chain(h.target.keys().map(|k| ("target", k)));
            if let Some((field, d)) = keys.find(|(_, d)| !self.reuse && !datasets.contains(d)) {
                return Some((
                    format!("ablation.hypothesis[{i}].{field}"),
                    format!("`{d}` is not in [experiment] datasets"),
                ));
            }
            if let Some(d) = h.dataset.as_ref().filter(|d| !datasets.contains(d)) {
                return Some((
                    format!("ablation.hypothesis[{i}].dataset"),
                    format!("`{d}` is not in [experiment] datasets"),
                ));
            }
            if let Some(m) = h.x_min.filter(|m| !m.is_finite()) {
                return Some((
                    format!("ablation.hypothesis[{i}].x_min"),
                    format!("must be finite, got {m}"),
                ));
            }
            if let Some(d) = h
                .grade_on
                .keys()
                .find(|d| !self.reuse && !datasets.contains(d))
            {
                return Some((
                    format!("ablation.hypothesis[{i}].grade_on"),
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
