//! One cell of the plan, end to end: (selection →) learner → evaluation → record.

use crate::analysis::{ProbeInput, run_probe};
use crate::counts::ClassCounts;
use crate::data::{Dataset, Split};
use crate::error::Result;
use crate::evaluate::accuracy;
use crate::learners::logistic::solver::DEFAULT_TOL;
use crate::learners::logistic::{LambdaRule, LrConfig, LrKind, PrivateLrMethod, SolverSettings};
use crate::learners::{
    BernoulliNbParams, FitInput, Learner, PartitionedNbParams, PrivateNbParams, TrialLog,
    VaidyaNbParams,
};
use crate::plan::Cell;
use crate::selection::{Score, Selector};
use crate::spec::Spec;
use crate::spec::{PipelineDef, ScoreName};
use crate::store::TrialRecord;
use std::collections::BTreeMap;
use std::time::Instant;

/// What one (dataset, trial) group shares: the split, the counts and the baseline.
pub struct TrialData<'a> {
    pub data: &'a Dataset,
    pub split: &'a Split,
    pub counts: Option<&'a ClassCounts>,
    pub baseline_accuracy: f64,
    /// The training rows in a seeded random order, shared by the group, when the spec has an
    /// `n_train` axis: a cell with n_train = n trains on the first n (nested subsets).
    pub shuffled_train: Option<&'a [u32]>,
}

/// The learner a cell runs, with the grid values applied (`None` for an analysis probe).
pub fn learner_for(spec: &Spec, cell: &Cell) -> Option<Learner> {
    let p = &spec.pipelines[cell.pipeline];
    let alpha = p.alpha.unwrap_or(1.0);
    Some(match p.learner.as_deref()? {
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
        "partitioned_nb" => {
            let eps = cell
                .epsilon
                .expect("planner gives private cells an epsilon");
            let mut params =
                PartitionedNbParams::new(eps * spec.budget(cell.pipeline).train).alpha(alpha);
            if let Some(t) = cell.threshold {
                params = params.threshold(t);
            }
            Learner::PartitionedNb(params)
        }
        name @ ("lr" | "lr_output" | "lr_objective" | "lr_functional") => {
            let budget = spec.budget(cell.pipeline);
            let kind = match name {
                "lr" => LrKind::NonPrivate,
                "lr_output" => LrKind::Private(PrivateLrMethod::Output),
                "lr_objective" => LrKind::Private(PrivateLrMethod::Objective),
                _ => LrKind::Private(PrivateLrMethod::Functional(
                    p.fm_sensitivity.unwrap_or_default(),
                )),
            };
            let lambda = match (cell.lambda, p.lambda) {
                (Some(l), _) => LambdaRule::Fixed(l),
                (None, Some(rule)) => rule,
                // The functional mechanism has no lambda.
                (None, None) => LambdaRule::Fixed(1.0),
            };
            Learner::Logistic(LrConfig {
                kind,
                lambda,
                scaling: p.scaling.unwrap_or_default(),
                epsilon: cell.epsilon.map(|e| e * budget.train),
                lambda_epsilon: cell.epsilon.map(|e| e * budget.lambda).filter(|e| *e > 0.0),
                settings: SolverSettings {
                    solver: p.solver.unwrap_or_default(),
                    tol: p.tolerance.unwrap_or(DEFAULT_TOL),
                    ..SolverSettings::default()
                },
            })
        }
        "vaidya_nb" => {
            let eps = cell
                .epsilon
                .expect("planner gives private cells an epsilon");
            Learner::VaidyaNb(
                VaidyaNbParams::new(eps * spec.budget(cell.pipeline).train).alpha(alpha),
            )
        }
        other => unreachable!("spec validation admits only known learners, got {other}"),
    })
}

/// The selection step of a pipeline, if it has one.
pub fn selector_for(p: &PipelineDef) -> Option<Selector> {
    let score = match p.score.unwrap_or(ScoreName::Mi) {
        ScoreName::Mi => Score::MutualInformation,
        ScoreName::Count => Score::Count,
    };
    Some(match p.selection.as_deref()? {
        "nonprivate" => Selector::NonPrivate { score },
        "noisy_nb_mi" => Selector::NoisyNbMi,
        "laplace" => Selector::LaplaceScores { score },
        "iterative" => Selector::IterativeSampling { score },
        "mask" => Selector::MaskSampling { score },
        "sparse" => Selector::Sparse {
            score,
            threshold: p
                .sparse_threshold
                .expect("validated: sparse has a threshold"),
        },
        "gumbel" => Selector::GumbelTopK { score },
        other => unreachable!("spec validation admits only known selectors, got {other}"),
    })
}

/// Runs one cell and returns its record.
pub fn run_cell(spec: &Spec, cell: &Cell, td: &TrialData) -> Result<TrialRecord> {
    let Some(n) = cell.n_train else {
        return run_cell_on(spec, cell, td);
    };
    let order = td
        .shuffled_train
        .expect("the runner shuffles when the spec has n_train");
    let train = &order[..n.min(order.len())];
    let counts = td
        .data
        .features
        .as_binary()
        .map(|x| ClassCounts::from_rows(x, &td.data.labels, train, td.data.n_classes()));
    let split = Split {
        train: train.to_vec(),
        test: td.split.test.clone(),
    };
    let sub = TrialData {
        data: td.data,
        split: &split,
        counts: counts.as_ref(),
        baseline_accuracy: td.baseline_accuracy,
        shuffled_train: None,
    };
    run_cell_on(spec, cell, &sub)
}

fn run_cell_on(spec: &Spec, cell: &Cell, td: &TrialData) -> Result<TrialRecord> {
    let mut log = TrialLog::with_relation(cell.seed, spec.experiment.neighbours);
    let pipeline = &spec.pipelines[cell.pipeline];
    let start = Instant::now();
    let mut vectors = BTreeMap::new();
    let (mut test_accuracy, mut train_accuracy, mut selected) = (None, None, None);
    let mut feature_names = None;
    match learner_for(spec, cell) {
        None => {
            let probe = pipeline
                .probe
                .as_deref()
                .expect("validated: a probe or a learner");
            let input = ProbeInput {
                counts: binary_counts(td)?,
                feature_names: td.data.feature_names.as_deref(),
                epsilon: cell.epsilon,
                features: cell.features,
            };
            let out = run_probe(probe, &input, &mut log)?;
            vectors = out.vectors;
            feature_names = out.feature_names;
        }
        Some(learner) => {
            if let Some(b) = &td.data.bounds
                && !matches!(learner, Learner::Majority)
            {
                log.ledger.public(
                    "clipping",
                    "each feature value clipped to the declared public bounds",
                    "per-example map with public constants: spends no budget",
                );
                log.metrics.insert(
                    "clipped_values".into(),
                    b.clipped_in(&td.split.train) as f64,
                );
            }
            let budget = spec.budget(cell.pipeline);
            if let Some(selector) = selector_for(pipeline) {
                let t = cell.features.expect("validated: selection has T");
                let eps = cell.epsilon.map(|e| e * budget.selection);
                let counts = binary_counts(td)?;
                let sel = crate::profile::time("select", || {
                    selector.select(counts, t, eps, &mut log.streams, &mut log.ledger)
                })?;
                for (k, v) in sel.metrics {
                    log.metrics.insert(format!("selection_{k}"), v);
                }
                selected = Some(sel.features);
            }
            let input = FitInput {
                data: td.data,
                train: &td.split.train,
                counts: td.counts,
                features: selected.as_deref(),
                epsilon: cell.epsilon.map(|e| e * budget.train),
            };
            let model = crate::profile::time("fit", || learner.fit(&input, &mut log))?;
            if matches!(learner, Learner::Majority) {
                let sizes = td
                    .data
                    .class_sizes(&td.split.train)
                    .into_iter()
                    .zip(td.data.class_sizes(&td.split.test));
                let largest = sizes.map(|(a, b)| a + b).max().unwrap_or(0);
                log.metrics.insert(
                    "majority_fraction".into(),
                    largest as f64 / td.data.n_rows() as f64,
                );
            }
            let (test, train) = crate::profile::time("evaluate", || -> Result<_> {
                Ok((
                    accuracy(&*model, td.data, &td.split.test)?,
                    accuracy(&*model, td.data, &td.split.train)?,
                ))
            })?;
            test_accuracy = Some(test);
            train_accuracy = Some(train);
        }
    }
    let fit_seconds = start.elapsed().as_secs_f64();
    Ok(TrialRecord {
        key: cell.key.clone(),
        dataset: td.data.name.clone(),
        pipeline: pipeline.name.clone(),
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
        selected_features: selected,
        vectors,
        feature_names,
        shared: log.shared,
    })
}

fn binary_counts<'a>(td: &TrialData<'a>) -> Result<&'a ClassCounts> {
    td.counts.ok_or_else(|| crate::error::Error::Data {
        dataset: td.data.name.clone(),
        reason: "feature selection and analysis probes need binary features".into(),
    })
}
