//! One cell of the plan, end to end: (selection →) learner → evaluation → record.

use crate::analysis::ProbeInput;
use crate::counts::ClassCounts;
use crate::data::catalog::{DatasetDef, PublicTrain};
use crate::data::{Dataset, Split};
use crate::error::{Error, Result};
use crate::evaluate::accuracy;
use crate::kinds::ReleaseInput;
use crate::learners::{FitInput, TrialLog};
use crate::plan::Cell;
use crate::privacy::{PublicSize, Relation};
use crate::spec::{Pipeline, Spec, Step};
use crate::store::TrialRecord;
use std::collections::BTreeMap;
use std::time::Instant;

/// What one (dataset, trial) group shares: the split, the counts and the baseline.
#[derive(Clone, Copy)]
pub struct TrialData<'a> {
    pub data: &'a Dataset,
    pub split: &'a Split,
    pub counts: Option<&'a ClassCounts>,
    /// The majority baseline's accuracy; `None` for a scalar source (no classes).
    pub baseline_accuracy: Option<f64>,
    /// The training rows in a seeded random order, shared by the group, when the spec has an
    /// `n_train` axis: a cell with n_train = n trains on the first n (nested subsets).
    pub shuffled_train: Option<&'a [u32]>,
    /// The dataset's workspace, from the run's scheduler ([`crate::schedule`]).
    pub workspace: &'a dyn crate::schedule::Workspace,
}

/// Runs one cell and returns its record.
pub fn run_cell(spec: &Spec, cell: &Cell, td: &TrialData) -> Result<TrialRecord> {
    let size = public_size(spec, cell, td)?;
    let (Some(n), Some(order)) = (cell.at.n_train, td.shuffled_train) else {
        return run_cell_on(spec, cell, td, size);
    };
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
        workspace: td.workspace,
    };
    run_cell_on(spec, cell, &sub, size)
}

/// The cell's training-set size N if the run makes it public ([`PublicSize`]): the cell's
/// `n_train` (declared in the grid), a generated dataset's size (part of its definition), a
/// file dataset's `public_n` (which must equal its training split's size), or under
/// replace-one the split's size (the same for both neighbours). `None`: N is private.
fn public_size(spec: &Spec, cell: &Cell, td: &TrialData) -> Result<Option<PublicSize>> {
    if let Some(n) = cell.at.n_train {
        return Ok(Some(PublicSize::new(n, "declared in grid.n_train")));
    }
    let (name, rows) = (&td.data.name, td.split.train.len());
    check_public_n(spec, name, rows)?;
    Ok(
        match spec.catalog.get(name).and_then(DatasetDef::public_train) {
            Some(PublicTrain::Generated) => Some(PublicSize::new(
                rows,
                format!("generated dataset `{name}`: its size is part of its definition"),
            )),
            Some(PublicTrain::Declared(n)) => Some(PublicSize::new(
                n,
                format!("declared in dataset.{name}.public_n"),
            )),
            None if spec.experiment.neighbours == Relation::ReplaceOne => Some(PublicSize::new(
                rows,
                "replace-one: N is the same on both neighbours",
            )),
            None => None,
        },
    )
}

/// Refuses a dataset whose declared `public_n` is not its training split's size `rows`,
/// naming the file that declares it and the field.
pub fn check_public_n(spec: &Spec, name: &str, rows: usize) -> Result<()> {
    let Some(PublicTrain::Declared(n)) = spec.catalog.get(name).and_then(DatasetDef::public_train)
    else {
        return Ok(());
    };
    if n == rows {
        return Ok(());
    }
    Err(Error::Spec {
        file: if spec.definitions.contains_key(name) {
            spec.path.clone()
        } else {
            "datasets/catalog.toml".into()
        },
        field: format!("dataset.{name}.public_n"),
        reason: format!(
            "declares a training set of N = {n} rows, but the data's training split has {rows}"
        ),
    })
}

/// What a cell produced besides its ledger and metrics.
#[derive(Default)]
struct Outcome {
    test_accuracy: Option<f64>,
    train_accuracy: Option<f64>,
    selected: Option<Vec<usize>>,
    vectors: BTreeMap<String, Vec<f64>>,
    feature_names: Option<Vec<String>>,
}

/// Metrics that cost a non-private reference fit per private trial (see
/// [`TrialLog::reference_fit`]).
const REFERENCE_METRICS: [&str; 2] = ["w_distance", "sampling_error"];

fn run_cell_on(
    spec: &Spec,
    cell: &Cell,
    td: &TrialData,
    size: Option<PublicSize>,
) -> Result<TrialRecord> {
    let mut log = TrialLog::with_relation(cell.seed, spec.experiment.neighbours);
    log.ledger.set_public_size(size);
    log.reference_fit = REFERENCE_METRICS.iter().any(|m| spec.shows_metric(m));
    let pipeline = &spec.pipelines[cell.pipeline];
    let start = Instant::now();
    let out = match &pipeline.step {
        Step::Probe(probe) => {
            let input = ProbeInput {
                counts: binary_counts(td)?,
                feature_names: td.data.feature_names.as_deref(),
                epsilon: cell.budget.total,
                features: cell.at.features,
            };
            let out = probe.params.run(&input, &mut log)?;
            Outcome {
                vectors: out.vectors,
                feature_names: out.feature_names,
                ..Outcome::default()
            }
        }
        Step::Release(release) => {
            let column = td.data.column().ok_or_else(|| crate::error::Error::Data {
                dataset: td.data.name.clone(),
                reason: "release pipelines read a scalar source".into(),
            })?;
            let values: Vec<f64> = td.split.train.iter().map(|&i| column[i as usize]).collect();
            let input = ReleaseInput {
                values: &values,
                epsilon: cell.budget.total,
            };
            Outcome {
                vectors: release.params.run(&input, &mut log)?.vectors,
                ..Outcome::default()
            }
        }
        Step::Learner(_) => train_and_evaluate(pipeline, cell, td, &mut log)?,
    };
    let fit_seconds = start.elapsed().as_secs_f64();
    Ok(TrialRecord {
        key: cell.key.clone(),
        dataset: td.data.name.clone(),
        pipeline: pipeline.name.clone(),
        epsilon: cell.budget.total,
        trial: cell.trial,
        seed: cell.seed,
        params: cell.point.clone(),
        test_accuracy: out.test_accuracy,
        train_accuracy: out.train_accuracy,
        baseline_accuracy: td.baseline_accuracy,
        n_train: td.split.train.len(),
        n_test: td.split.test.len(),
        n_features: td.data.n_features(),
        fit_seconds,
        private: log.ledger.is_private_within(spent_within(pipeline, cell)),
        ledger: log.ledger,
        metrics: log.metrics,
        selected_features: out.selected,
        vectors: out.vectors,
        feature_names: out.feature_names,
        shared: log.shared,
    })
}

/// (Selection →) fit → accuracy on the test and training rows.
fn train_and_evaluate(
    pipeline: &Pipeline,
    cell: &Cell,
    td: &TrialData,
    log: &mut TrialLog,
) -> Result<Outcome> {
    let Some(kind) = pipeline.learner() else {
        return Ok(Outcome::default());
    };
    let learner = kind.learner(&cell.at, &cell.budget)?;
    let baseline = kind.is_baseline();
    if let Some(b) = &td.data.bounds
        && !baseline
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
    let selected = select(pipeline, cell, td, log)?;
    let input = FitInput {
        data: td.data,
        train: &td.split.train,
        counts: td.counts,
        features: selected.as_deref(),
        workspace: td.workspace,
    };
    let model = crate::profile::time("fit", || learner.fit(&input, log))?;
    if baseline {
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
    if let Some(scores) = model.scores(td.data, &td.split.test) {
        log.metrics.extend(scores?);
        return Ok(Outcome {
            selected,
            ..Outcome::default()
        });
    }
    let (test, train) = crate::profile::time("evaluate", || -> Result<_> {
        Ok((
            accuracy(&*model, td.data, &td.split.test)?,
            accuracy(&*model, td.data, &td.split.train)?,
        ))
    })?;
    Ok(Outcome {
        test_accuracy: Some(test),
        train_accuracy: Some(train),
        selected,
        ..Outcome::default()
    })
}

/// The selection step, if the pipeline has one: the kept features.
fn select(
    pipeline: &Pipeline,
    cell: &Cell,
    td: &TrialData,
    log: &mut TrialLog,
) -> Result<Option<Vec<usize>>> {
    let Some(selection) = &pipeline.selection else {
        return Ok(None);
    };
    let selector = selection.params.selector();
    let t = cell
        .at
        .features
        .ok_or_else(|| crate::error::Error::param("features", "a selection step needs T"))?;
    let counts = binary_counts(td)?;
    let sel = crate::profile::time("select", || {
        selector.select(
            counts,
            t,
            cell.budget.selection,
            &mut log.streams,
            &mut log.ledger,
        )
    })?;
    for (k, v) in sel.metrics {
        log.metrics.insert(format!("selection_{k}"), v);
    }
    Ok(Some(sel.features))
}

fn binary_counts<'a>(td: &TrialData<'a>) -> Result<&'a ClassCounts> {
    td.counts.ok_or_else(|| crate::error::Error::Data {
        dataset: td.data.name.clone(),
        reason: "feature selection and analysis probes need binary features".into(),
    })
}

/// The total a trial's ledger must stay within to be private: the cell's ε, times the number
/// of queries a release answers at that ε each (the differencing attack's two counts).
fn spent_within(pipeline: &Pipeline, cell: &Cell) -> Option<f64> {
    match &pipeline.step {
        Step::Release(r) => cell.budget.total.map(|e| e * f64::from(r.params.queries())),
        _ => cell.budget.total,
    }
}
