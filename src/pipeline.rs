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
use crate::privacy::{Ledger, PublicSize, Relation};
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

impl<'a> TrialData<'a> {
    /// The same trial's data with the cell run in `workspace` (the dataset's, or the view of
    /// it the scheduler made for the cell's batch, [`crate::schedule::RunCell`]).
    pub fn in_workspace(&self, workspace: &'a dyn crate::schedule::Workspace) -> TrialData<'a> {
        TrialData { workspace, ..*self }
    }
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
    // The prefix's indices go into the thread's reused buffer (issue 52: no allocation of n
    // indices per trial once it has grown), returned to it after the cell.
    let mut indices = TRAIN.with(|b| std::mem::take(&mut *b.borrow_mut()));
    indices.clear();
    indices.extend_from_slice(train);
    let split = Split {
        train: indices,
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
    let record = run_cell_on(spec, cell, &sub, size);
    TRAIN.with(|b| *b.borrow_mut() = split.train);
    record
}

/// The cell's training-set size N if the run makes it public ([`PublicSize`]): the cell's
/// `n_train` (declared in the grid), a generated dataset's size (part of its definition), a
/// file dataset's `public_n` (which must equal its training split's size), or under
/// replace-one the split's size (the same for both neighbours). `None`: N is private.
fn public_size(spec: &Spec, cell: &Cell, td: &TrialData) -> Result<Option<PublicSize>> {
    cell_public_size(spec, cell, &td.data.name, td.split.train.len())
}

/// [`public_size`] of `cell` on dataset `name` whose training split has `rows` rows (the
/// preflight's, before any split is drawn).
pub(crate) fn cell_public_size(
    spec: &Spec,
    cell: &Cell,
    name: &str,
    rows: usize,
) -> Result<Option<PublicSize>> {
    if let Some(n) = cell.at.n_train {
        return Ok(Some(PublicSize::new(n, "declared in grid.n_train")));
    }
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
            None if relation_of(spec, cell) == Relation::ReplaceOne => Some(PublicSize::new(
                rows,
                "replace-one: N is the same on both neighbours",
            )),
            None => None,
        },
    )
}

/// The relation the cell runs under: its pipeline's own, else the experiment's.
pub(crate) fn relation_of(spec: &Spec, cell: &Cell) -> Relation {
    spec.pipelines[cell.pipeline].relation(spec.experiment.neighbours)
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
    let mut log = TrialLog::with_relation(cell.seed, relation_of(spec, cell));
    log.ledger.set_public_size(size);
    log.reference_fit = REFERENCE_METRICS.iter().any(|m| spec.shows_metric(m));
    log.spec_dir = spec.path.parent().map(std::path::Path::to_path_buf);
    let pipeline = &spec.pipelines[cell.pipeline];
    let start = Instant::now();
    let out =
        run_step(pipeline, cell, td, &mut log).map_err(|e| e.in_cell(&pipeline.name, &cell.key))?;
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
        private: is_private(pipeline, cell, &log.ledger),
        ledger: log.ledger,
        metrics: log.metrics,
        selected_features: out.selected,
        vectors: out.vectors,
        feature_names: out.feature_names,
        shared: log.shared,
    })
}

/// The pipeline's step on the cell: a probe, a release or (selection →) fit → evaluate.
fn run_step(
    pipeline: &Pipeline,
    cell: &Cell,
    td: &TrialData,
    log: &mut TrialLog,
) -> Result<Outcome> {
    Ok(match &pipeline.step {
        Step::Probe(probe) => {
            let input = ProbeInput {
                counts: binary_counts(td)?,
                feature_names: td.data.feature_names.as_deref(),
                epsilon: cell.budget.total,
                features: cell.at.features,
            };
            let out = probe.params.run(&input, log)?;
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
            let vectors = with_rows(column, &td.split.train, |values| {
                let input = ReleaseInput {
                    values,
                    epsilon: cell.budget.total,
                };
                release.params.run(&input, log)
            })?
            .vectors;
            if release.params.estimates_location() {
                record_location_error(td.data, log);
            }
            Outcome {
                vectors,
                ..Outcome::default()
            }
        }
        Step::Learner(_) => train_and_evaluate(pipeline, cell, td, log)?,
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
        test: &td.split.test,
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
        let train = &td.split.train;
        Ok((
            accuracy(&*model, td.data, &td.split.test)?,
            model
                .covers(train)
                .then(|| accuracy(&*model, td.data, train))
                .transpose()?,
        ))
    })?;
    Ok(Outcome {
        test_accuracy: Some(test),
        train_accuracy: train,
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

/// |release - the population location| as `abs_error_location`, when a scalar source states
/// its location (a contaminated source's inlier centre, `data::scalar::StudentTDef`): the
/// error a robust estimator bounds under gross outliers, beside `abs_error` (against the
/// sample's own statistic).
fn record_location_error(data: &Dataset, log: &mut TrialLog) {
    if let (Some([location]), Some(&release)) = (data.truth.as_deref(), log.metrics.get("release"))
    {
        let e = (release - location).abs();
        log.metrics.insert("abs_error_location".into(), e);
    }
}

/// Whether a trial is private: every step private under one relation, within the cell's
/// budget ([`spent_within`]), or within the (ε, δ) a release states by its own parameters.
fn is_private(pipeline: &Pipeline, cell: &Cell, ledger: &Ledger) -> bool {
    let own = match &pipeline.step {
        Step::Release(r) => r.params.own_budget(),
        _ => None,
    };
    match own {
        Some(b) => {
            ledger.is_private_within(Some(b.epsilon))
                && ledger.total_delta() <= b.delta * (1.0 + 1e-9)
        }
        None => ledger.is_private_within(spent_within(pipeline, cell)),
    }
}

/// The total a trial's ledger must stay within to be private: the cell's ε, times the number
/// of queries a release answers at that ε each (the differencing attack's two counts).
fn spent_within(pipeline: &Pipeline, cell: &Cell) -> Option<f64> {
    match &pipeline.step {
        Step::Release(r) => cell.budget.total.map(|e| e * f64::from(r.params.queries())),
        _ => cell.budget.total,
    }
}

// Reusable allocations, not cross-trial state: each is taken out of its slot, cleared before
// it is written, and put back (empty of meaning) after the cell, so only its capacity outlives
// a call and no result depends on what an earlier cell left in it.
thread_local! {
    /// Each worker thread's buffer for a nested subset's row indices (see [`run_cell`]).
    static TRAIN: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Each worker thread's buffer for a release's rows (issue 52), so a release cell
    /// allocates nothing proportional to n once the buffer has grown.
    static ROWS: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Calls `f` on the values of `column` at `rows`, in that order: the column's own slice when
/// the rows are consecutive (a split that reads every row in order), else a gather into the
/// thread's reused buffer.
fn with_rows<T>(column: &[f64], rows: &[u32], f: impl FnOnce(&[f64]) -> T) -> T {
    let start = rows.first().map_or(0, |&i| i as usize);
    let consecutive = rows
        .iter()
        .enumerate()
        .all(|(k, &i)| i as usize == start + k);
    if consecutive && start + rows.len() <= column.len() {
        return f(&column[start..start + rows.len()]);
    }
    let mut buf = ROWS.with(|b| std::mem::take(&mut *b.borrow_mut()));
    buf.clear();
    buf.extend(rows.iter().map(|&i| column[i as usize]));
    let out = f(&buf);
    ROWS.with(|b| *b.borrow_mut() = buf);
    out
}
