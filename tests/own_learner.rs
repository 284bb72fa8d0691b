//! A learner defined outside epsilab: one struct, its traits and one registry line. It runs a
//! spec like a built-in one, and the built-in registry does not know it.

mod common;

use common::{run_options, write_spec};
use epsilab::data::Dataset;
use epsilab::error::Result;
use epsilab::kinds::{CellBudget, Described, GridValues, LearnerKind, Registry};
use epsilab::learners::{Classifier, FitInput, Learner, TrialLog};
use epsilab::spec::Spec;
use serde::Deserialize;

/// `learner = "feature_vote"`: predicts, for each value of one binary feature, the majority
/// class of the training rows with that value (a one-feature decision stump, non-private).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FeatureVote {
    /// The feature to split on (index from 0).
    feature: u32,
}

impl Described for FeatureVote {
    const NAME: &'static str = "feature_vote";
    const ABOUT: &'static str = "majority class on each side of one feature (non-private)";
    const FIELDS: &'static [&'static str] = &["feature"];
}

impl LearnerKind for FeatureVote {
    fn private(&self) -> bool {
        false
    }

    fn needs_binary(&self) -> bool {
        true
    }

    fn learner(&self, _: &GridValues, _: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(self.clone()))
    }
}

impl Learner for FeatureVote {
    fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
        log.ledger
            .non_private("train", "none (exact counts)", "a test's own stump");
        let x = input
            .data
            .features
            .as_binary()
            .expect("binary (needs_binary)");
        // votes[value][class]
        let mut votes = [[0usize; 2]; 2];
        for &r in input.train {
            let on = usize::from(x.row(r as usize).contains(&self.feature));
            votes[on][input.data.labels[r as usize] as usize] += 1;
        }
        let side = |v: [usize; 2]| u16::from(v[1] > v[0]);
        Ok(Box::new(Stump {
            feature: self.feature,
            class: [side(votes[0]), side(votes[1])],
        }))
    }
}

struct Stump {
    feature: u32,
    class: [u16; 2],
}

impl Classifier for Stump {
    fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Vec<u16>> {
        let x = data.features.as_binary().expect("binary");
        Ok(rows
            .iter()
            .map(|&r| self.class[usize::from(x.row(r as usize).contains(&self.feature))])
            .collect())
    }
}

/// Label = feature 1 exactly; feature 2 is unrelated to it.
fn write_data(dir: &std::path::Path) {
    let mut csv = String::from("y,a,b\n");
    for i in 0..400u32 {
        let a = (i * 7 + 3) % 5 < 2;
        let b = (i / 3) % 2 == 0;
        csv.push_str(&format!(
            "{},{},{}\n",
            u8::from(a),
            u8::from(a),
            u8::from(b)
        ));
    }
    std::fs::write(dir.join("votes.csv"), csv).unwrap();
}

const SPEC: &str = r#"
[experiment]
name = "own_learner"
trials = 3
seed = 7
datasets = ["votes"]

[dataset.votes]
source = "csv"
train = "votes.csv"
train_fraction = 0.7
label = "y"
classes = [{ label = "1", name = "one" }, { label = "0", name = "zero" }]

[[pipeline]]
name = "vote on a"
learner = "feature_vote"
feature = 0

[[pipeline]]
name = "vote on b"
learner = "feature_vote"
feature = 1

[[pipeline]]
name = "majority"
learner = "majority"

[grid]
n_train = [100, 250]

[report]
x = "n_train"
metrics = ["test_accuracy"]
"#;

#[test]
fn a_learner_defined_outside_epsilab_runs_a_spec_once_registered() {
    let dir = tempfile::tempdir().unwrap();
    write_data(dir.path());
    let path = write_spec(dir.path(), "own.toml", SPEC);

    let builtin = Spec::load(&path).unwrap_err().to_string();
    assert!(
        builtin.contains("unknown learner `feature_vote`"),
        "{builtin}"
    );

    let kinds = Registry::builtin().with_learner::<FeatureVote>();
    let wrong = SPEC.replace("feature = 1", "feature = 1\nthreshold = 3");
    let refused = Spec::parse_with(&wrong, &path, &kinds)
        .unwrap_err()
        .to_string();
    assert!(refused.contains("threshold"), "{refused}");
    assert!(
        refused.contains("does not apply to learner `feature_vote`"),
        "{refused}"
    );

    let spec = Spec::load_with(&path, &kinds).unwrap();
    let out = dir.path().join("results");
    let summary = epsilab::runner::run(&spec, &run_options(&out, 2)).unwrap();
    assert_eq!(summary.ran, 18);
    let records = epsilab::store::read_dir_records(&summary.results_dir).unwrap();
    assert_eq!(records.len(), 18);
    for r in &records {
        let acc = r.test_accuracy.unwrap();
        match r.pipeline.as_str() {
            // The label is feature a: the stump on it is exact.
            "vote on a" => assert_eq!(acc, 1.0),
            "vote on b" => assert!(acc < 0.8, "feature b is noise, got {acc}"),
            _ => assert!(acc > 0.5 && acc < 0.7, "majority {acc}"),
        }
        assert!(!r.private);
        assert_eq!(r.ledger.entries.len(), 1, "{:?}", r.ledger);
    }
}
