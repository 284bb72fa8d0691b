//! One cell of the plan, end to end: (selection →) learner → evaluation → record.

use crate::counts::ClassCounts;
use crate::data::{Dataset, Split};
use crate::error::Result;
use crate::evaluate::accuracy;
use crate::learners::{BernoulliNbParams, FitInput, Learner, PrivateNbParams, TrialLog};
use crate::plan::Cell;
use crate::spec::Spec;
use crate::store::TrialRecord;
use std::time::Instant;

/// What one (dataset, trial) group shares: the split, the counts and the baseline.
pub struct TrialData<'a> {
    pub data: &'a Dataset,
    pub split: &'a Split,
    pub counts: Option<&'a ClassCounts>,
    pub baseline_accuracy: f64,
}

/// The learner a cell runs, with the grid values applied.
pub fn learner_for(spec: &Spec, cell: &Cell) -> Learner {
    let p = &spec.pipelines[cell.pipeline];
    let alpha = p.alpha.unwrap_or(1.0);
    match p.learner.as_str() {
        "majority" => Learner::Majority,
        "nb" => Learner::Nb(BernoulliNbParams::new().alpha(alpha)),
        "private_nb" => {
            let eps = cell
                .epsilon
                .expect("planner gives private cells an epsilon");
            let mut params = PrivateNbParams::new(eps * spec.budget(cell.pipeline).train)
                .alpha(alpha)
                .release(p.release.unwrap_or_default());
            if let Some(t) = cell.threshold {
                params = params.threshold(t);
            }
            Learner::PrivateNb(params)
        }
        other => unreachable!("spec validation admits only known learners, got {other}"),
    }
}

/// Runs one cell and returns its record.
pub fn run_cell(spec: &Spec, cell: &Cell, td: &TrialData) -> Result<TrialRecord> {
    let learner = learner_for(spec, cell);
    let mut log = TrialLog::new(cell.seed);
    let train_epsilon = cell.epsilon.map(|e| e * spec.budget(cell.pipeline).train);
    let input = FitInput {
        data: td.data,
        train: &td.split.train,
        counts: td.counts,
        features: None,
        epsilon: train_epsilon,
    };
    let start = Instant::now();
    let model = learner.fit(&input, &mut log)?;
    let fit_seconds = start.elapsed().as_secs_f64();
    if matches!(learner, Learner::Majority) {
        let largest = td
            .data
            .class_sizes(&td.split.train)
            .into_iter()
            .zip(td.data.class_sizes(&td.split.test));
        let largest = largest.map(|(a, b)| a + b).max().unwrap_or(0);
        log.metrics.insert(
            "majority_fraction".into(),
            largest as f64 / td.data.n_rows() as f64,
        );
    }
    let test_accuracy = accuracy(&*model, td.data, &td.split.test)?;
    let train_accuracy = accuracy(&*model, td.data, &td.split.train)?;
    Ok(TrialRecord {
        key: cell.key.clone(),
        dataset: td.data.name.clone(),
        pipeline: spec.pipelines[cell.pipeline].name.clone(),
        epsilon: cell.epsilon,
        trial: cell.trial,
        seed: cell.seed,
        params: cell.point.clone(),
        test_accuracy,
        train_accuracy,
        baseline_accuracy: td.baseline_accuracy,
        n_train: td.split.train.len(),
        n_test: td.split.test.len(),
        n_features: td.data.n_features(),
        fit_seconds,
        private: log.ledger.is_private_within(cell.epsilon),
        ledger: log.ledger,
        metrics: log.metrics,
    })
}
