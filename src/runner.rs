//! Runs a plan on rayon, appending each finished cell to the results store.
//!
//! Cells are grouped by (dataset, trial): a group draws its split, counts the training data and
//! fits the majority baseline once, then runs all its pipelines and grid points on that shared
//! state. Groups run in parallel; each cell's randomness comes from its own seed.

use crate::counts::ClassCounts;
use crate::data::{DataDir, Dataset};
use crate::error::{Error, Result};
use crate::evaluate::accuracy;
use crate::learners::Majority;
use crate::pipeline::{TrialData, learner_for, run_cell};
use crate::plan::{Cell, plan};
use crate::rng::rng_from;
use crate::spec::Spec;
use crate::store::Store;
use indicatif::{ProgressBar, ProgressStyle};
use rand::seq::SliceRandom;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// How to run a spec.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Worker threads; 0 = one per core.
    pub threads: usize,
    pub data_dir: DataDir,
    pub out_dir: PathBuf,
    pub smoke: bool,
    pub force: bool,
    pub progress: bool,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub results_dir: PathBuf,
    pub total: usize,
    pub skipped: usize,
    pub ran: usize,
    pub seconds: f64,
}

/// The folder holding a spec's results (smoke runs get their own).
pub fn results_dir(spec: &Spec, out: &std::path::Path, smoke: bool) -> PathBuf {
    let name = &spec.experiment.name;
    if smoke {
        out.join(format!("{name}.smoke"))
    } else {
        out.join(name)
    }
}

/// Runs every pending cell of the spec.
pub fn run(spec: &Spec, opts: &RunOptions) -> Result<RunSummary> {
    let start = Instant::now();
    let dir = results_dir(spec, &opts.out_dir, opts.smoke);
    let store = Store::open(&dir, &spec.experiment.name, &spec.hash, opts.force)?;
    let plan = plan(spec, opts.smoke);
    let pending: Vec<&Cell> = plan
        .cells
        .iter()
        .filter(|c| !store.is_done(&c.key))
        .collect();
    let mut summary = RunSummary {
        results_dir: dir,
        total: plan.cells.len(),
        skipped: plan.cells.len() - pending.len(),
        ran: 0,
        seconds: 0.0,
    };
    if pending.is_empty() {
        summary.seconds = start.elapsed().as_secs_f64();
        return Ok(summary);
    }
    let dir = summary.results_dir.clone();

    let mut datasets: BTreeMap<usize, Arc<Dataset>> = BTreeMap::new();
    for c in &pending {
        if let std::collections::btree_map::Entry::Vacant(v) = datasets.entry(c.dataset) {
            let name = &spec.experiment.datasets[c.dataset];
            let data = crate::profile::time("load", || spec.catalog.load(name, &opts.data_dir))?;
            v.insert(Arc::new(data));
        }
    }
    preflight(spec, &pending, &datasets)?;

    let mut groups: BTreeMap<(usize, u32), Vec<&Cell>> = BTreeMap::new();
    for c in pending {
        groups.entry((c.dataset, c.trial)).or_default().push(c);
    }
    let groups: Vec<_> = groups.into_iter().collect();
    let bar = progress_bar(opts.progress, summary.total - summary.skipped);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads)
        .build()
        .map_err(|e| Error::param("threads", e.to_string()))?;
    let seed = spec.experiment.seed.to_string();
    pool.install(|| {
        groups
            .par_iter()
            .try_for_each(|((di, trial), cells)| -> Result<()> {
                let data = &datasets[di];
                let split_start = crate::profile::enabled().then(std::time::Instant::now);
                let mut rng = rng_from(&["split", &seed, &data.name, &trial.to_string()]);
                let split = data.split(&mut rng);
                let counts = data.features.as_binary().map(|x| {
                    ClassCounts::from_rows(x, &data.labels, &split.train, data.n_classes())
                });
                let baseline =
                    accuracy(&Majority::fit_rows(data, &split.train), data, &split.test)?;
                let shuffled = spec.grid.n_train.as_ref().map(|_| {
                    let mut rows = split.train.clone();
                    rows.shuffle(&mut rng_from(&[
                        "n_train",
                        &seed,
                        &data.name,
                        &trial.to_string(),
                    ]));
                    rows
                });
                if let Some(t) = split_start {
                    crate::profile::record("split", t.elapsed(), std::time::Duration::ZERO);
                }
                let td = TrialData {
                    data,
                    split: &split,
                    counts: counts.as_ref(),
                    baseline_accuracy: baseline,
                    shuffled_train: shuffled.as_deref(),
                };
                for cell in cells {
                    let name = &spec.pipelines[cell.pipeline].name;
                    let record = crate::profile::in_pipeline(name, || run_cell(spec, cell, &td))?;
                    crate::profile::time("write", || store.append(&record))?;
                    bar.inc(1);
                }
                Ok(())
            })
    })?;
    bar.finish_and_clear();
    summary.ran = summary.total - summary.skipped;
    summary.seconds = start.elapsed().as_secs_f64();
    let threads = pool.current_num_threads();
    crate::provenance::write(spec, &dir, threads, summary.seconds, opts.smoke)?;
    Ok(summary)
}

/// Checks every (learner, dataset) pair before the first trial runs.
fn preflight(spec: &Spec, cells: &[&Cell], datasets: &BTreeMap<usize, Arc<Dataset>>) -> Result<()> {
    for c in cells {
        let data = &datasets[&c.dataset];
        let learner = learner_for(spec, c);
        let selects = spec.pipelines[c.pipeline].selection.is_some();
        if let Some(n) = c.n_train
            && n > data.n_rows()
        {
            return Err(Error::Spec {
                file: spec.path.clone(),
                field: "grid.n_train".into(),
                reason: format!(
                    "n_train = {n} exceeds dataset `{}`'s {} rows",
                    data.name,
                    data.n_rows()
                ),
            });
        }
        if let Some(t) = c.features
            && t > data.n_features()
        {
            return Err(Error::Spec {
                file: spec.path.clone(),
                field: format!("pipeline `{}`: features", spec.pipelines[c.pipeline].name),
                reason: format!(
                    "T = {t} exceeds dataset `{}`'s {} features",
                    data.name,
                    data.n_features()
                ),
            });
        }
        let needs_binary = learner.as_ref().is_none_or(|l| l.needs_binary()) || selects;
        if needs_binary && data.features.as_binary().is_none() {
            return Err(Error::Spec {
                file: spec.path.clone(),
                field: format!("pipeline `{}`", spec.pipelines[c.pipeline].name),
                reason: format!(
                    "pipeline `{}` needs binary features; dataset `{}` is real-valued",
                    spec.pipelines[c.pipeline].name, data.name
                ),
            });
        }
    }
    Ok(())
}

fn progress_bar(show: bool, len: usize) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} trials, ETA {eta}",
        )
        .expect("template")
        .progress_chars("=> "),
    );
    bar
}
