//! Runs a plan on rayon, appending each finished cell to the results store.
//!
//! [`prepare`] does everything that can fail before anything is written (inputs hashed, store
//! checked, every dataset loaded and checked); [`Prepared::execute`] then runs. Cells are
//! grouped by (dataset, trial): a group draws its split, counts the training data and fits the
//! majority baseline once, then runs all its pipelines and grid points on that shared state.
//! Trials run in parallel, made on demand from the streamed plan; each cell's randomness comes
//! from its own seed.

use crate::counts::ClassCounts;
use crate::data::{DataDir, Dataset, DatasetDef, Split};
use crate::error::{Error, Result};
use crate::evaluate::accuracy;
use crate::kinds::Lockstep;
use crate::learners::Majority;
use crate::learners::logistic::dense;
use crate::learners::logistic::design::with_gram_split;
use crate::pipeline::{TrialData, run_cell};
use crate::plan::{Cell, Combo, Plan, plan};
use crate::shard::{Partition, Shard};
use crate::spec::Spec;
use crate::store::{DEFINITION, Manifest, Store, Stored, TRIALS_FILE};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Plans with more cells to run than this need confirmation (`run --yes`, or a yes on a
/// terminal): at a millisecond a cell it is a quarter of an hour of one core, and a typo in
/// `trials` should not start a week-long run.
pub const CONFIRM_CELLS: u64 = 1_000_000;

/// Most worker threads `run -j` accepts.
pub const MAX_JOBS: usize = 256;

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
    /// Run only this shard's groups, appending to its own record file (`run --shard`).
    pub shard: Option<Shard>,
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

/// Runs every pending cell of the spec ([`prepare`] then [`Prepared::execute`]).
pub fn run(spec: &Spec, opts: &RunOptions) -> Result<RunSummary> {
    prepare(spec, opts)?.execute()
}

/// A run whose every early check passed, before it writes anything.
pub struct Prepared<'a> {
    spec: &'a Spec,
    opts: &'a RunOptions,
    dir: PathBuf,
    plan: Plan,
    manifest: Manifest,
    stored: Stored,
    datasets: Vec<Arc<Dataset>>,
    /// With `--shard`: this run's shard and the partition that deals groups to shards.
    sharding: Option<(Shard, Partition)>,
    total: u64,
    pending: u64,
    start: Instant,
}

/// Does everything that can fail before the store is touched: plans the spec (streamed),
/// hashes the inputs, reads the store (refusing results of another spec or other data, or
/// records the spec no longer plans), loads and checks every dataset and every (pipeline,
/// dataset) pair.
pub fn prepare<'a>(spec: &'a Spec, opts: &'a RunOptions) -> Result<Prepared<'a>> {
    let start = Instant::now();
    let dir = results_dir(spec, &opts.out_dir, opts.smoke);
    let plan = plan(spec, opts.smoke);
    let manifest = manifest(spec, &opts.data_dir)?;
    let stored = crate::store::inspect(&dir, &manifest, opts.force)?;
    let planned = plan.keys();
    let mut foreign = stored.keys.iter().filter(|k| !planned.contains(k));
    if let Some(example) = foreign.next() {
        let n = 1 + foreign.count();
        return Err(Error::Store {
            path: dir,
            reason: format!(
                "holds {n} trial(s) this spec no longer plans (e.g. `{example}`): a dataset, pipeline, grid value or trial was removed or a grid axis changed. Only adding trials, grid values, datasets or pipelines keeps stored results; rerun with --force to replace them, or choose another --out"
            ),
        });
    }
    if opts.shard.is_some() && opts.force {
        return Err(Error::param(
            "shard",
            "--force replaces a whole results folder and cannot be combined with --shard; run the array into a new --out instead",
        ));
    }
    let (sizes, mut loaded) = sizes(spec, &plan, &opts.data_dir)?;
    let sharding = opts
        .shard
        .map(|shard| (shard, partition(spec, &plan, &sizes, shard.count)));
    let (total, done) = match &sharding {
        Some((shard, p)) => (
            shard_cells(&plan, p, shard.index),
            stored
                .keys
                .iter()
                .filter(|k| group_of(spec, k).is_some_and(|(d, t)| runs(&sharding, d, t)))
                .count() as u64,
        ),
        None => (plan.n_cells(), stored.keys.len() as u64),
    };
    let pending = total - done;
    let mut datasets = Vec::new();
    if pending > 0 || opts.force {
        // Only the datasets this run has cells left on are read or generated (a finished
        // D = 1000 toy dataset is 8.5 GB); the others are empty stand-ins it never reads.
        let planned = plan.keys();
        let mut stored_in = vec![0u64; sizes.len()];
        for k in stored.keys.iter().filter(|k| planned.contains(k)) {
            if let Some((d, _)) = group_of(spec, k).filter(|&(d, t)| runs(&sharding, d, t)) {
                stored_in[d] += 1;
            }
        }
        let needed: Vec<bool> = (0..sizes.len())
            .map(|d| {
                let groups = match &sharding {
                    Some((shard, p)) => p.groups_in(d, plan.trials, shard.index),
                    None => u64::from(plan.trials),
                };
                opts.force || stored_in[d] < groups * plan.combos_of(d).count() as u64
            })
            .collect();
        // Side by side on the run's threads: each dataset is read or drawn from its own
        // stream (appendix B's D = 1000 and 1500 take 13 and 20 s of one core), and the first
        // failure in the spec's order is reported.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(opts.threads)
            .build()
            .map_err(|e| Error::param("jobs", e.to_string()))?;
        let read: Vec<Result<Arc<Dataset>>> = pool.install(|| {
            spec.experiment
                .datasets
                .par_iter()
                .zip(loaded.par_iter_mut())
                .enumerate()
                .map(|(d, (name, loaded))| match (loaded.take(), needed[d]) {
                    (Some(data), true) => Ok(data),
                    (None, true) => crate::profile::time("load", || {
                        spec.catalog
                            .load_for(name, &opts.data_dir, plan.max_n_train(d))
                    })
                    .map(Arc::new),
                    (_, false) => Ok(Arc::new(crate::data::scalar::no_data(name, name))),
                })
                .collect()
        });
        datasets = read.into_iter().collect::<Result<_>>()?;
        preflight(spec, &plan, &datasets, &needed)?;
    }
    Ok(Prepared {
        spec,
        opts,
        dir,
        plan,
        manifest,
        stored,
        datasets,
        sharding,
        total,
        pending,
        start,
    })
}

/// Whether a run with `sharding` (none: the whole plan) runs the group (dataset, trial).
fn runs(sharding: &Option<(Shard, Partition)>, dataset: usize, trial: u32) -> bool {
    sharding
        .as_ref()
        .is_none_or(|(s, p)| p.shard_of(dataset, trial) == s.index)
}

/// Each dataset's (rows, features), and the datasets read to learn them.
type Sizes = (Vec<(usize, usize)>, Vec<Option<Arc<Dataset>>>);

/// Each dataset's (rows, features) for the partition, and the datasets read to learn them: a
/// generated dataset's size comes from its definition (its full size, whatever part of it a run
/// generates), so sizing never generates one.
pub fn sizes(spec: &Spec, plan: &Plan, dir: &DataDir) -> Result<Sizes> {
    let mut sizes = Vec::new();
    let mut loaded = Vec::new();
    for (d, name) in spec.experiment.datasets.iter().enumerate() {
        match spec.catalog.get(name).and_then(DatasetDef::size) {
            Some(size) => {
                sizes.push(size);
                loaded.push(None);
            }
            None => {
                let data = crate::profile::time("load", || {
                    spec.catalog.load_for(name, dir, plan.max_n_train(d))
                })?;
                sizes.push((data.n_rows(), data.n_features()));
                loaded.push(Some(Arc::new(data)));
            }
        }
    }
    Ok((sizes, loaded))
}

/// The cost-balanced partition of the plan's (dataset, trial) groups into `count` shards: one
/// group of a dataset costs rows × features × the summed weights of its cells.
pub fn partition(spec: &Spec, plan: &Plan, sizes: &[(usize, usize)], count: usize) -> Partition {
    let costs: Vec<u64> = sizes
        .iter()
        .enumerate()
        .map(|(d, &(rows, features))| {
            let weight: u64 = plan
                .combos_of(d)
                .map(|c| spec.pipelines[c.pipeline].cost())
                .sum();
            (rows as u64).max(1) * (features as u64).max(1) * weight
        })
        .collect();
    Partition::new(&costs, plan.trials, count)
}

/// Cells of the plan in shard `index`.
pub fn shard_cells(plan: &Plan, p: &Partition, index: usize) -> u64 {
    (0..plan.n_datasets)
        .map(|d| p.groups_in(d, plan.trials, index) * plan.combos_of(d).count() as u64)
        .sum()
}

/// The (dataset index, trial) of a stored key `dataset|pipeline|point|trial`.
pub fn group_of(spec: &Spec, key: &str) -> Option<(usize, u32)> {
    let (dataset, _) = key.split_once('|')?;
    let (_, trial) = key.rsplit_once('|')?;
    let d = spec.experiment.datasets.iter().position(|n| n == dataset)?;
    Some((d, trial.parse().ok()?))
}

/// What a run of `spec` computes its cells from: the spec's hashes and every input's SHA-256.
pub fn manifest(spec: &Spec, data_dir: &DataDir) -> Result<Manifest> {
    let mut inputs = BTreeMap::new();
    for name in &spec.experiment.datasets {
        let mut h = spec.catalog.input_hashes(name, data_dir)?;
        if let Some(d) = spec.definitions.get(name) {
            h.insert(DEFINITION.into(), d.clone());
        }
        inputs.insert(name.clone(), h);
    }
    Ok(
        Manifest::new(&spec.experiment.name, &spec.hash, &spec.cells_hash, inputs)
            .with_pipelines(&spec.base_hash, spec.pipeline_hashes.clone()),
    )
}

/// Per (dataset, trial): the split and what every cell of the trial shares.
struct Group {
    split: Split,
    counts: Option<ClassCounts>,
    baseline: Option<f64>,
    shuffled: Option<Vec<u32>>,
}

impl Group {
    /// The group of dataset `d` in trial `trial`; its streams come from the plan's seed tree.
    fn new(spec: &Spec, plan: &Plan, d: usize, data: &Dataset, trial: u32) -> Result<Group> {
        crate::profile::time("split", || {
            let split = data.split(&mut plan.split_rng(d, trial));
            let counts = data
                .features
                .as_binary()
                .map(|x| ClassCounts::from_rows(x, &data.labels, &split.train, data.n_classes()));
            let baseline = if data.is_scalar() {
                None
            } else {
                Some(accuracy(
                    &Majority::fit_rows(data, &split.train),
                    data,
                    &split.test,
                )?)
            };
            let shuffled = spec.grid.n_train.as_ref().map(|_| {
                data.nested_order(
                    &split.train,
                    &mut plan.subsample_rng(d, trial),
                    &mut plan.grown_subsample_rng(d, trial),
                )
            });
            Ok(Group {
                split,
                counts,
                baseline,
                shuffled,
            })
        })
    }

    fn data<'a>(&'a self, data: &'a Dataset) -> TrialData<'a> {
        TrialData {
            data,
            split: &self.split,
            counts: self.counts.as_ref(),
            baseline_accuracy: self.baseline,
            shuffled_train: self.shuffled.as_deref(),
        }
    }
}

impl Prepared<'_> {
    /// Cells in the plan.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Cells still to run.
    pub fn pending(&self) -> u64 {
        self.pending
    }

    fn threads(&self) -> usize {
        match self.opts.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    /// Rough wall-clock seconds for the pending cells: one pending cell is run (and thrown
    /// away; it runs again for real) and its time scaled by the pending count over the threads.
    pub fn estimate_seconds(&self) -> Result<f64> {
        let Some(cell) = self
            .plan
            .cells()
            .filter(|c| runs(&self.sharding, c.dataset, c.trial))
            .find(|c| !self.stored.keys.contains(&c.key))
        else {
            return Ok(0.0);
        };
        let data = &self.datasets[cell.dataset];
        let t = Instant::now();
        let group = Group::new(self.spec, &self.plan, cell.dataset, data, cell.trial)?;
        run_cell(self.spec, &cell, &group.data(data))?;
        let per_cell = t.elapsed().as_secs_f64();
        Ok(per_cell * self.pending as f64 / self.threads() as f64)
    }

    /// Runs the pending cells, appending each record as it finishes; a forced run then swaps
    /// its results in for the previous ones.
    pub fn execute(mut self) -> Result<RunSummary> {
        let mut summary = RunSummary {
            results_dir: self.dir.clone(),
            total: self.total as usize,
            skipped: (self.total - self.pending) as usize,
            ran: 0,
            seconds: 0.0,
        };
        let records = self
            .opts
            .shard
            .map_or_else(|| TRIALS_FILE.to_string(), |s| s.records_file());
        if self.pending == 0 && !self.opts.force {
            if self.stored.upgrades_manifest {
                // Opening the store (under the folder's lock) writes the current manifest.
                Store::open(&self.dir, &self.manifest, false, self.stored, &records)?;
            }
            summary.seconds = self.start.elapsed().as_secs_f64();
            return Ok(summary);
        }
        let pool = Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(self.opts.threads)
                .build()
                .map_err(|e| Error::param("jobs", e.to_string()))?,
        );
        let store = Store::open(
            &self.dir,
            &self.manifest,
            self.opts.force,
            self.stored,
            &records,
        )?;
        let bar = progress_bar(self.opts.progress, self.pending);
        // Counted, not taken from `pending`: a run that waited for the folder's lock finds
        // more stored than it planned for.
        let ran = AtomicUsize::new(0);
        let spec = self.spec;
        // Appends a batch's records as they come; its finished cells are kept even if one of
        // them failed.
        let keep = |records: Vec<Result<crate::store::TrialRecord>>| -> Result<()> {
            let mut failed = None;
            for record in records {
                match record {
                    Ok(r) => crate::profile::time("write", || store.append(&r))?,
                    Err(e) => {
                        failed.get_or_insert(e);
                        continue;
                    }
                }
                ran.fetch_add(1, Ordering::Relaxed);
                bar.inc(1);
            }
            failed.map_or(Ok(()), Err)
        };
        // Each dataset is dropped once its trials are done: appendix B's D <= 100 hold 1.5 GB
        // and D = 1000 8.5 GB that D = 1500's phase (12.7 GB of mapped rows, read back from
        // disk when the kernel has dropped them) needs.
        for (di, owned) in std::mem::take(&mut self.datasets).into_iter().enumerate() {
            let data: &Dataset = &owned;
            // A trial's cells by ascending N (stable: the spec's order within one N), so the
            // cells that read the same rows run one after another while their noise-free work
            // (a scaled copy, X^T X) is held: at appendix B's D = 1500 one such copy is 12.6
            // GB. Each cell has its own streams, so the order changes no result.
            let mut combos: Vec<&Combo> = self.plan.combos_of(di).collect();
            combos.sort_by_key(|c| c.at.n_train.unwrap_or(0));
            // This run's trials of the dataset, streamed, never collected (a plan may have 10^9).
            let sharding = &self.sharding;
            let trials = || (0..self.plan.trials).filter(move |&t| runs(sharding, di, t));
            // The cells run before the trials, which then leave them out.
            let mut ran_first = std::collections::HashSet::new();
            let pending = |ran_first: &std::collections::HashSet<String>, c: &Cell| {
                !store.is_done(&c.key) && !ran_first.contains(&c.key)
            };
            // First the cells that fit one design in every trial, all trials as one lockstep
            // group whose rounds split across the pool's threads.
            let across = across_trials(spec, data, &combos, trials(), LOCKSTEP_MIN_VALUES, |c| {
                pending(&ran_first, c)
            });
            if across.len() > 1 {
                let mut groups = BTreeMap::new();
                for c in &across {
                    if let std::collections::btree_map::Entry::Vacant(e) = groups.entry(c.trial) {
                        e.insert(Group::new(spec, &self.plan, di, data, c.trial)?);
                    }
                }
                let batch: Vec<&Cell> = across.iter().collect();
                let td = |c: &Cell| groups[&c.trial].data(data);
                keep(run_batch(spec, &batch, td, Some(&pool)))?;
                ran_first.extend(across.into_iter().map(|c| c.key));
            }
            // Then one trial's other cells there, side by side (see `whole_set_first`).
            let whole = whole_set_first(spec, data, &combos, trials(), LOCKSTEP_MIN_VALUES, |c| {
                pending(&ran_first, c)
            });
            if let Some((trial, tasks)) = whole
                && (tasks.len() > 1 || tasks.iter().any(|t| t.len() > 1))
            {
                let group = Group::new(spec, &self.plan, di, data, trial)?;
                let td = group.data(data);
                let shape = dense_shape(data);
                let batched: Vec<Vec<Vec<&Cell>>> = tasks
                    .iter()
                    .map(|task| lockstep_batches(spec, task, shape, None, LOCKSTEP_MIN_VALUES))
                    .collect();
                // The pool runs only these tasks, so the X^T X there may split across it: the
                // thread done with its tasks takes half of each block instead of idling.
                run_tasks(&pool, &batched, |batch| {
                    with_gram_split(|| keep(run_batch(spec, batch, |_| td, None)))
                })?;
                ran_first.extend(tasks.into_iter().flatten().map(|c| c.key));
            }
            pool.install(|| {
                (0..self.plan.trials)
                    .into_par_iter()
                    .filter(|&trial| runs(sharding, di, trial))
                    .try_for_each(|trial| -> Result<()> {
                        let cells: Vec<Cell> = combos
                            .iter()
                            .map(|c| c.cell(trial))
                            .filter(|c| pending(&ran_first, c))
                            .collect();
                        if cells.is_empty() {
                            return Ok(());
                        }
                        let group = Group::new(spec, &self.plan, di, data, trial)?;
                        let td = group.data(data);
                        let (shape, whole) = (dense_shape(data), whole_training_set(data));
                        let batches =
                            lockstep_batches(spec, &cells, shape, whole, LOCKSTEP_MIN_VALUES);
                        for batch in batches {
                            keep(run_batch(spec, &batch, |_| td, None))?;
                        }
                        Ok(())
                    })
            })?;
            // Nothing read from this dataset outlives it: the rows each worker read last, the
            // scaled designs and X^T X held for later cells.
            pool.broadcast(|_| dense::take_last_read());
            dense::take_last_read();
            crate::learners::logistic::forget_shared_work();
        }
        store.finish()?;
        bar.finish_and_clear();
        summary.ran = ran.into_inner();
        summary.skipped = summary.total - summary.ran;
        summary.seconds = self.start.elapsed().as_secs_f64();
        let threads = pool.current_num_threads();
        let provenance = self.opts.shard.map_or_else(
            || crate::provenance::PROVENANCE_FILE.to_string(),
            |s| format!("provenance.shard-{}-of-{}.json", s.index, s.count),
        );
        crate::provenance::write(
            spec,
            &self.dir,
            &provenance,
            threads,
            summary.seconds,
            self.opts.smoke,
        )?;
        Ok(summary)
    }
}

/// Rows x columns from which objective perturbation's lambda siblings fit in lockstep (2^20
/// values, 8 MB). With the combined passes eight rows at a time, groups beat the cells one
/// after another at every size of appendix B measured (`-j 2`, every record equal): four
/// trials at D = 20-100, N = 2^12-2^16, 5.1 -> 4.0 s of wall time; at D = 1000 and 1500,
/// N = 2^13-2^15, 14.7 -> 9.6 s; two trials at D = 1000, N = 2^17-2^18 and D = 1500,
/// N = 2^16-2^17, 61 -> 29 s besides the datasets' generation. (At 2^28, the earlier bound,
/// groups had been measured faster only from D = 1000's 2^19 rows.)
const LOCKSTEP_MIN_VALUES: usize = 1 << 20;

/// Rows x columns from which a trial's objective-perturbation subsets of a grown split (each
/// N's rows a prefix of the next N's in the trial's order) fit in one lockstep group with
/// their lambda siblings, every round reading the longest subset's rows once for all
/// ([`crate::learners::logistic::lockstep`]); appendix B's N = 2^17-2^19 at D = 1000 and
/// 2^16-2^19 at D = 1500.
const NESTED_MIN_VALUES: usize = 1 << 26;

/// A trial's cells in the order they run, as batches: one cell, or the cells of a pipeline
/// whose kind fits in lockstep that differ only in lambda, on a design of at least
/// `min_values` rows x columns of the dataset's `(rows, columns)` (gathered at the first of
/// them; each cell has its own streams, so the order changes no result). `dense_shape` is
/// `None` for a binary dataset: only dense rows are read once for several vectors. With
/// `whole`, the size of a grown split's whole training set, the subsets of at least
/// [`NESTED_MIN_VALUES`] of a kind whose every fit is work of its own also go together
/// whatever their N (see [`nested_subset`]).
fn lockstep_batches<'c>(
    spec: &Spec,
    cells: &'c [Cell],
    dense_shape: Option<(usize, usize)>,
    whole: Option<usize>,
    min_values: usize,
) -> Vec<Vec<&'c Cell>> {
    let eligible = |c: &Cell| siblings_in_lockstep(spec, c, dense_shape, min_values);
    let nested = |c: &Cell| nested_subset(spec, c, dense_shape, whole);
    // Same pipeline and every grid value but lambda (and N, for nested subsets): so the same
    // eligibility and budget.
    let sibling = |a: &Cell, b: &Cell| {
        let lambda = |c: &Cell| crate::kinds::GridValues {
            lambda: None,
            ..c.at
        };
        let lambda_n = |c: &Cell| crate::kinds::GridValues {
            n_train: None,
            ..lambda(c)
        };
        a.pipeline == b.pipeline
            && (lambda(a) == lambda(b) || nested(a) && nested(b) && lambda_n(a) == lambda_n(b))
    };
    let mut taken = vec![false; cells.len()];
    let mut batches = Vec::new();
    for i in 0..cells.len() {
        if taken[i] {
            continue;
        }
        taken[i] = true;
        let mut batch = vec![&cells[i]];
        if eligible(&cells[i]) {
            for j in i + 1..cells.len() {
                if !taken[j] && sibling(&cells[i], &cells[j]) {
                    taken[j] = true;
                    batch.push(&cells[j]);
                }
            }
        }
        batches.push(batch);
    }
    batches
}

/// Whether `cell` fits in lockstep with the other N's subsets of its trial (their lambda
/// siblings included): a subset smaller than a grown split's `whole` training set (so a prefix
/// of the larger ones in the trial's order) of at least [`NESTED_MIN_VALUES`] dense values,
/// of a kind whose every fit is work of its own (noise-free fits are shared through the memo).
fn nested_subset(
    spec: &Spec,
    cell: &Cell,
    dense_shape: Option<(usize, usize)>,
    whole: Option<usize>,
) -> bool {
    match (dense_shape, whole, cell.at.n_train) {
        (Some((_, n_features)), Some(whole), Some(n)) if n < whole => fits_in_lockstep(
            spec,
            cell.pipeline,
            &cell.at,
            n.saturating_mul(n_features),
            NESTED_MIN_VALUES,
            Lockstep::AcrossTrials,
        ),
        _ => false,
    }
}

/// Whether `cell` fits in lockstep with its lambda siblings: on a dataset of dense
/// `(rows, columns)`, its design (its `n_train` rows, or every row) of at least `min_values`.
fn siblings_in_lockstep(
    spec: &Spec,
    cell: &Cell,
    dense_shape: Option<(usize, usize)>,
    min_values: usize,
) -> bool {
    dense_shape.is_some_and(|(n_rows, n_features)| {
        let values = cell.at.n_train.unwrap_or(n_rows).saturating_mul(n_features);
        fits_in_lockstep(
            spec,
            cell.pipeline,
            &cell.at,
            values,
            min_values,
            Lockstep::Siblings,
        )
    })
}

/// Whether cells of `pipeline` at grid values `at` fit in lockstep on a design of `values`
/// rows x columns: the lambda grid of a kind that fits in lockstep at least as widely as
/// `scope`, on at least `min_values`.
fn fits_in_lockstep(
    spec: &Spec,
    pipeline: usize,
    at: &crate::kinds::GridValues,
    values: usize,
    min_values: usize,
    scope: Lockstep,
) -> bool {
    at.lambda.is_some()
        && values >= min_values
        && spec.pipelines[pipeline]
            .learner()
            .is_some_and(|k| k.lockstep() >= scope)
}

/// A dataset's (rows, columns) when its features are dense, where lockstep pays.
fn dense_shape(data: &Dataset) -> Option<(usize, usize)> {
    data.features
        .as_binary()
        .is_none()
        .then(|| (data.n_rows(), data.n_features()))
}

/// The `pending` cells of `combos` in `trials` that fit one design in every trial, in
/// lockstep: a lockstep kind's lambda grid on a grown split's whole training set (read in
/// ascending order whatever the trial, `dense::fit_rows`), with no selection step, on at least
/// `min_values` rows x columns. Trial by trial, each in the combos' order, at most
/// [`ACROSS_TRIALS_MAX`] (`trials` is read only when a combo qualifies: a plan may have 10^9
/// trials, and each member of the group is a thread holding its own vectors of N values); the
/// later trials' cells stay in their own trials.
fn across_trials(
    spec: &Spec,
    data: &Dataset,
    combos: &[&Combo],
    trials: impl Iterator<Item = u32>,
    min_values: usize,
    pending: impl Fn(&Cell) -> bool,
) -> Vec<Cell> {
    let Some(whole) = whole_training_set(data) else {
        return Vec::new();
    };
    let Some((_, n_features)) = dense_shape(data) else {
        return Vec::new();
    };
    let same = |c: &Combo| {
        let values = whole.saturating_mul(n_features);
        fits_in_lockstep(
            spec,
            c.pipeline,
            &c.at,
            values,
            min_values,
            Lockstep::AcrossTrials,
        ) && on_whole_set(c, whole)
            && spec.pipelines[c.pipeline].selection.is_none()
    };
    let same: Vec<&&Combo> = combos.iter().filter(|c| same(c)).collect();
    if same.is_empty() {
        return Vec::new();
    }
    trials
        .flat_map(|t| same.iter().map(move |c| c.cell(t)))
        .filter(|c| pending(c))
        .take(ACROSS_TRIALS_MAX)
        .collect()
}

/// The most cells in the group of [`across_trials`]: appendix B's forty (ten trials by four
/// lambdas) and room to spare. Each member is a thread whose L-BFGS holds about ten vectors of
/// N values (its iterate, the line search's scratch, its pass buffers): some 80 MB at 2^20
/// rows, 5 GB for 64 members.
const ACROSS_TRIALS_MAX: usize = 64;

/// The size of a grown split's whole training set: read in ascending row order whatever the
/// trial (`dense::fit_rows`), so every trial's fits on it share their noise-free work.
fn whole_training_set(data: &Dataset) -> Option<usize> {
    match data.split {
        crate::data::SplitRule::Grown { test, .. } => Some(data.n_rows().saturating_sub(test)),
        _ => None,
    }
}

/// Whether `combo`'s cells train on all `whole` rows of a grown split's training set.
fn on_whole_set(combo: &Combo, whole: usize) -> bool {
    combo.at.n_train.is_none_or(|n| n == whole)
}

/// The first of `trials` with `pending` cells on a grown split's whole training set, and those
/// cells as tasks to run side by side before the trials. Their noise-free work there (LR's
/// minimisers, the functional mechanism's X^T X; 170 s of one core at appendix B's D = 1500)
/// is the same in every trial and memoised; run inside the trials, the first two trials reached
/// it together and one worker waited for the other's computation. Cells at one lambda, or with
/// none, share that work, so each lambda is one task of cells run one after another; the
/// lambda-less task (the X^T X, the largest) comes first, then each pipeline whose lambda
/// siblings fit in lockstep there (one task, its siblings by ascending lambda, run as one
/// batch by [`lockstep_batches`]), then ascending lambda (smaller lambdas take more
/// iterations). Each cell has its own streams, so the order changes no result.
fn whole_set_first(
    spec: &Spec,
    data: &Dataset,
    combos: &[&Combo],
    trials: impl IntoIterator<Item = u32>,
    min_values: usize,
    pending: impl Fn(&Cell) -> bool,
) -> Option<(u32, Vec<Vec<Cell>>)> {
    let whole = whole_training_set(data)?;
    let on_whole: Vec<&&Combo> = combos.iter().filter(|c| on_whole_set(c, whole)).collect();
    let siblings = |c: &Cell| siblings_in_lockstep(spec, c, dense_shape(data), min_values);
    trials.into_iter().find_map(|trial| {
        // Lambda-less first, then by pipeline the lockstep siblings, then by lambda's bits
        // (the bits of positive floats sort as their values).
        let mut tasks: BTreeMap<(u8, u64), Vec<Cell>> = BTreeMap::new();
        for cell in on_whole.iter().map(|c| c.cell(trial)).filter(&pending) {
            let key = match cell.at.lambda {
                None => (0, 0),
                Some(_) if siblings(&cell) => (1, cell.pipeline as u64),
                Some(l) => (2, l.to_bits()),
            };
            tasks.entry(key).or_default().push(cell);
        }
        for ((rank, _), task) in tasks.iter_mut() {
            if *rank == 1 {
                task.sort_by(|a, b| a.at.lambda.partial_cmp(&b.at.lambda).expect("lambdas"));
            }
        }
        (!tasks.is_empty()).then(|| (trial, tasks.into_values().collect()))
    })
}

/// Runs `tasks` on `pool`'s threads, each thread taking the next task in order and running its
/// cells one after another; after a failure no thread starts another task, and the first
/// failure is returned.
fn run_tasks<T: Sync>(
    pool: &rayon::ThreadPool,
    tasks: &[Vec<T>],
    run: impl Fn(&T) -> Result<()> + Sync,
) -> Result<()> {
    let next = AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(None);
    let failed_yet = || failed.lock().unwrap_or_else(|e| e.into_inner()).is_some();
    pool.scope(|s| {
        for _ in 0..pool.current_num_threads().min(tasks.len()) {
            s.spawn(|_| {
                while let Some(task) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if failed_yet() {
                        return;
                    }
                    if let Err(e) = task.iter().try_for_each(&run) {
                        let mut failed = failed.lock().unwrap_or_else(|e| e.into_inner());
                        failed.get_or_insert(e);
                        return;
                    }
                }
            });
        }
    });
    failed
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .map_or(Ok(()), Err)
}

/// Runs one batch: a lone cell on this thread; a lockstep batch one thread per cell, its fits
/// sharing their passes over the rows (each round split across `pool`'s threads, if given,
/// which then run nothing else). `td` gives each cell its trial's data. Records in the batch's
/// order.
fn run_batch<'d>(
    spec: &Spec,
    batch: &[&Cell],
    td: impl Fn(&Cell) -> TrialData<'d> + Sync,
    pool: Option<&Arc<rayon::ThreadPool>>,
) -> Vec<Result<crate::store::TrialRecord>> {
    let run = |cell: &Cell| {
        let name = &spec.pipelines[cell.pipeline].name;
        crate::profile::in_pipeline(name, || run_cell(spec, cell, &td(cell)))
    };
    if let [cell] = batch {
        return vec![run(cell)];
    }
    use crate::learners::logistic::lockstep::Lockstep;
    let group = match pool {
        Some(pool) => Lockstep::on_pool(batch.len(), Arc::clone(pool)),
        None => Lockstep::new(batch.len()),
    };
    // Each member runs on a thread of its own, which ends with it: the rows this worker read
    // last go with the members (each lets go of them once it reads others), and the rows the
    // members read come back for the trial's next cells (see `dense::take_last_read`).
    let last = dense::take_last_read();
    // Nested subsets read their rows through their maps: a round reads the longest's once.
    let nested = batch.iter().any(|c| c.at.n_train != batch[0].at.n_train);
    let run = |cell: &Cell| match nested {
        true => dense::through_map(|| run(cell)),
        false => run(cell),
    };
    std::thread::scope(|s| {
        let members: Vec<_> = batch
            .iter()
            .map(|&cell| {
                let group = group.clone();
                let last = last.clone();
                s.spawn(move || {
                    if let Some(rows) = last {
                        dense::hold_last_read(rows);
                    }
                    (group.member(|| run(cell)), dense::take_last_read())
                })
            })
            .collect();
        drop(last);
        members
            .into_iter()
            .map(|m| {
                let (record, rows) = m
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                if let Some(rows) = rows {
                    dense::hold_last_read(rows);
                }
                record
            })
            .collect()
    })
}

/// Checks every (learner, dataset) pair before the first trial runs.
fn preflight(spec: &Spec, plan: &Plan, datasets: &[Arc<Dataset>], needed: &[bool]) -> Result<()> {
    for (data, _) in datasets.iter().zip(needed).filter(|(_, n)| **n) {
        crate::pipeline::check_public_n(spec, &data.name, data.train_size())?;
    }
    for combo in plan.combos.iter().filter(|c| needed[c.dataset]) {
        let c = &combo.cell(0);
        let data = &datasets[c.dataset];
        let pipeline = &spec.pipelines[c.pipeline];
        if let Some(n) = c.at.n_train
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
        if let Some(t) = c.at.features
            && t > data.n_features()
        {
            return Err(Error::Spec {
                file: spec.path.clone(),
                field: format!("pipeline `{}`: features", pipeline.name),
                reason: format!(
                    "T = {t} exceeds dataset `{}`'s {} features",
                    data.name,
                    data.n_features()
                ),
            });
        }
        let releases = matches!(pipeline.step, crate::spec::Step::Release(_));
        if releases != data.is_scalar() {
            let reason = if releases {
                format!(
                    "{} `{}` reads a scalar source; dataset `{}` is a classification dataset",
                    pipeline.kind(),
                    pipeline.name,
                    data.name
                )
            } else {
                format!(
                    "dataset `{}` is a scalar source (one column, no classes): only `release` and `attack` pipelines read it",
                    data.name
                )
            };
            return Err(Error::Spec {
                file: spec.path.clone(),
                field: format!("pipeline `{}`", pipeline.name),
                reason,
            });
        }
        if releases {
            continue;
        }
        if let Some(kind) = pipeline.learner() {
            // Every parameter the kind derives for a cell, and whether its learner can fit
            // the dataset at all, is checked before anything runs.
            kind.learner(&c.at, &c.budget)?.check_data(data)?;
        }
        let needs_binary =
            pipeline.learner().is_none_or(|k| k.needs_binary()) || pipeline.selection.is_some();
        if needs_binary && data.features.as_binary().is_none() {
            return Err(Error::Spec {
                file: spec.path.clone(),
                field: format!("pipeline `{}`", pipeline.name),
                reason: format!(
                    "pipeline `{}` needs binary features; dataset `{}` is real-valued",
                    pipeline.name, data.name
                ),
            });
        }
    }
    Ok(())
}

/// `3 h 20 min`, `12 min`, `40 s`, or `more than a year`.
pub fn format_duration(seconds: f64) -> String {
    let s = seconds.max(0.0);
    if !s.is_finite() || s > 365.0 * 86400.0 {
        "more than a year".into()
    } else if s >= 86400.0 {
        format!(
            "{:.0} days {:.0} h",
            (s / 86400.0).floor(),
            (s % 86400.0) / 3600.0
        )
    } else if s >= 3600.0 {
        format!(
            "{:.0} h {:.0} min",
            (s / 3600.0).floor(),
            (s % 3600.0) / 60.0
        )
    } else if s >= 60.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}

fn progress_bar(show: bool, len: u64) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} trials, ETA {eta}",
        )
        .expect("template")
        .progress_chars("=> "),
    );
    bar
}

/// Progress of a results folder: per shard and in total.
#[derive(Debug, Clone)]
pub struct Status {
    pub results_dir: PathBuf,
    pub planned: u64,
    pub done: u64,
    /// Shards (`None` for an unsharded folder): (shard, done, planned).
    pub shards: Option<Vec<(Shard, u64, u64)>>,
}

/// Trials done and planned in `out/<experiment>`. The shard count comes from `shards`, else from
/// the shard record files present (an unsharded folder has none).
pub fn status(
    spec: &Spec,
    data_dir: &DataDir,
    out: &std::path::Path,
    smoke: bool,
    shards: Option<usize>,
) -> Result<Status> {
    let dir = results_dir(spec, out, smoke);
    let plan = plan(spec, smoke);
    // Stale records of cells no longer planned do not count.
    let planned_keys = plan.keys();
    let keys: Vec<String> = crate::store::read_dir_records(&dir)?
        .into_iter()
        .map(|r| r.key)
        .filter(|k| planned_keys.contains(k))
        .collect();
    let done = keys.len() as u64;
    let count = match shards {
        Some(n) => Some(n),
        None => crate::store::record_files(&dir)?
            .iter()
            .filter_map(|f| f.file_name()?.to_str().and_then(shard_count_of))
            .max(),
    };
    let shards = match count {
        None => None,
        Some(n) => {
            Shard::new(0, n)?;
            let (sizes, _) = sizes(spec, &plan, data_dir)?;
            let p = partition(spec, &plan, &sizes, n);
            let mut per = vec![0u64; n];
            for k in &keys {
                if let Some((d, t)) = group_of(spec, k) {
                    per[p.shard_of(d, t)] += 1;
                }
            }
            Some(
                (0..n)
                    .map(|i| {
                        (
                            Shard { index: i, count: n },
                            per[i],
                            shard_cells(&plan, &p, i),
                        )
                    })
                    .collect(),
            )
        }
    };
    Ok(Status {
        results_dir: dir,
        planned: plan.n_cells(),
        done,
        shards,
    })
}

/// N of a shard record file name `trials.shard-I-of-N.jsonl`.
fn shard_count_of(name: &str) -> Option<usize> {
    name.strip_prefix("trials.shard-")?
        .strip_suffix(".jsonl")?
        .split_once("-of-")?
        .1
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spec's text parsed, planned, and its dataset `toy` generated.
    fn planned_toy(text: &str) -> (Spec, Plan, Dataset) {
        let spec = Spec::parse(text, std::path::Path::new("t.toml")).unwrap();
        let planned = plan(&spec, false);
        let dir = crate::data::DataDir(std::path::PathBuf::from("."));
        let data = spec.catalog.load("toy", &dir).unwrap();
        (spec, planned, data)
    }

    /// Objective perturbation's and LR's lambda siblings at one N (and one epsilon) form a
    /// batch once the design is large enough; other N, small designs and binary data run
    /// alone, every cell once.
    #[test]
    fn lockstep_batches_gather_lambda_siblings() {
        let text = r#"
[experiment]
name = "b"
trials = 1
seed = 1
datasets = ["toy"]
[dataset.toy]
source = "toy_gaussian"
dimension = 100
train = 1000
test = 100
[grid]
epsilon = [0.1, 1]
n_train = [100, 1000]
lambda = [0.01, 1, 100]
[[pipeline]]
name = "op"
learner = "lr_objective"
[[pipeline]]
name = "lr"
learner = "lr"
[report]
x = "n_train"
"#;
        let spec = Spec::parse(text, std::path::Path::new("b.toml")).unwrap();
        let plan = plan(&spec, false);
        let mut cells: Vec<Cell> = plan.combos_of(0).map(|c| c.cell(0)).collect();
        cells.sort_by_key(|c| c.at.n_train);
        let batches = lockstep_batches(&spec, &cells, Some((1000, 100)), None, 50_000);
        assert_eq!(batches.iter().map(Vec::len).sum::<usize>(), cells.len());
        let grouped: Vec<&Vec<&Cell>> = batches.iter().filter(|b| b.len() > 1).collect();
        // N = 1000 (10^5 values): objective perturbation's three lambdas at each epsilon, and
        // LR's three (noise-free: one set, whatever the epsilon).
        let name = |b: &Vec<&Cell>| spec.pipelines[b[0].pipeline].name.clone();
        let mut names: Vec<String> = grouped.iter().map(|b| name(b)).collect();
        names.sort();
        assert_eq!(names, ["lr", "op", "op"], "{names:?}");
        for b in grouped {
            assert_eq!(b.len(), 3);
            assert!(b.iter().all(|c| c.pipeline == b[0].pipeline));
            assert!(b.iter().all(|c| c.at.n_train == Some(1000)));
            assert!(b.iter().all(|c| c.budget == b[0].budget));
        }
        for none in [
            lockstep_batches(&spec, &cells, Some((1000, 100)), None, 200_000),
            lockstep_batches(&spec, &cells, None, None, 0),
        ] {
            assert!(none.iter().all(|b| b.len() == 1));
            assert_eq!(none.len(), cells.len());
        }
    }

    /// On a grown split, objective perturbation's subsets of at least `NESTED_MIN_VALUES` go in
    /// one batch whatever their N, lambda siblings included; a smaller N, the whole training
    /// set, and LR (noise-free, shared through the memo) keep their own batches per N.
    #[test]
    fn lockstep_batches_nest_a_trials_large_subsets() {
        let text = r#"
[experiment]
name = "b"
trials = 1
seed = 1
datasets = ["toy"]
[dataset.toy]
source = "toy_gaussian"
dimension = 1000
train = 1048576
first_train = 65536
test = 100
[grid]
epsilon = [0.1]
n_train = [65536, 131072, 262144, 1048576]
lambda = [0.01, 1]
[[pipeline]]
name = "op"
learner = "lr_objective"
[[pipeline]]
name = "lr"
learner = "lr"
[report]
x = "n_train"
"#;
        let spec = Spec::parse(text, std::path::Path::new("b.toml")).unwrap();
        let plan = plan(&spec, false);
        let mut cells: Vec<Cell> = plan.combos_of(0).map(|c| c.cell(0)).collect();
        cells.sort_by_key(|c| c.at.n_train);
        let shape = Some((1048576 + 100, 1000));
        let batches = lockstep_batches(&spec, &cells, shape, Some(1048576), LOCKSTEP_MIN_VALUES);
        assert_eq!(batches.iter().map(Vec::len).sum::<usize>(), cells.len());
        let described: Vec<(String, Vec<usize>)> = batches
            .iter()
            .map(|b| {
                let name = spec.pipelines[b[0].pipeline].name.clone();
                (name, b.iter().map(|c| c.at.n_train.unwrap()).collect())
            })
            .collect();
        let expect = |name: &str, n: &[usize]| (name.to_string(), n.to_vec());
        assert_eq!(
            described,
            [
                expect("op", &[65536, 65536]),
                expect("lr", &[65536, 65536]),
                expect("op", &[131072, 131072, 262144, 262144]),
                expect("lr", &[131072, 131072]),
                expect("lr", &[262144, 262144]),
                expect("op", &[1048576, 1048576]),
                expect("lr", &[1048576, 1048576]),
            ]
        );
        // Without a grown split's whole set (a split drawn per trial), no subsets nest.
        let flat = lockstep_batches(&spec, &cells, shape, None, LOCKSTEP_MIN_VALUES);
        assert!(
            flat.iter()
                .all(|b| b.iter().all(|c| c.at.n_train == b[0].at.n_train))
        );
        assert_eq!(flat.len(), 8);
    }

    /// The cells that fit one design in every trial are objective perturbation's on a grown
    /// split's whole training set, in every trial asked for: not LR's (its fits there are one
    /// per lambda, through the memo), not at a
    /// smaller N (a per-trial subset), not on a small design, not on binary rows, not on a
    /// split drawn per trial.
    #[test]
    fn across_trials_gathers_the_whole_training_sets_lockstep_cells() {
        let text = |first_train: &str| {
            format!(
                r#"
[experiment]
name = "b"
trials = 3
seed = 1
datasets = ["toy"]
[dataset.toy]
source = "toy_gaussian"
dimension = 100
train = 1000
{first_train}
test = 100
[grid]
epsilon = [0.1]
n_train = [100, 1000]
lambda = [0.01, 1]
[[pipeline]]
name = "op"
learner = "lr_objective"
[[pipeline]]
name = "lr"
learner = "lr"
[report]
x = "n_train"
"#
            )
        };
        let (spec, grown, data) = planned_toy(&text("first_train = 500"));
        let combos: Vec<&Combo> = grown.combos_of(0).collect();
        let cells = across_trials(&spec, &data, &combos, [0, 2].into_iter(), 50_000, |_| true);
        assert_eq!(cells.len(), 4, "two lambdas in trials 0 and 2");
        assert!(
            cells
                .iter()
                .all(|c| spec.pipelines[c.pipeline].name == "op")
        );
        assert!(cells.iter().all(|c| c.at.n_train == Some(1000)));
        let trials: Vec<u32> = cells.iter().map(|c| c.trial).collect();
        assert_eq!(trials, [0, 0, 2, 2]);
        // Only pending cells, and at most ACROSS_TRIALS_MAX of a plan with many trials: the
        // first ones, the rest left to their own trials.
        let pending = |c: &Cell| c.trial != 0;
        let cells = across_trials(&spec, &data, &combos, 0..1_000_000, 50_000, pending);
        assert_eq!(cells.len(), ACROSS_TRIALS_MAX);
        let trials: Vec<u32> = cells.iter().map(|c| c.trial).collect();
        let want: Vec<u32> = (1..).flat_map(|t| [t, t]).take(ACROSS_TRIALS_MAX).collect();
        assert_eq!(trials, want);
        assert!(
            across_trials(&spec, &data, &combos, [0, 2].into_iter(), 200_000, |_| true).is_empty()
        );
        // The same grown split over binary rows: one pass per vector, so no group.
        let mut binary = data.clone();
        let mut m = crate::data::BinaryMatrix::new(data.n_features());
        for _ in 0..data.n_rows() {
            m.push_row(&[0, 3]);
        }
        binary.features = crate::data::Features::Binary(m);
        assert!(across_trials(&spec, &binary, &combos, [0, 2].into_iter(), 0, |_| true).is_empty());
        let (spec, drawn, data) = planned_toy(&text(""));
        let combos: Vec<&Combo> = drawn.combos_of(0).collect();
        assert!(across_trials(&spec, &data, &combos, 0..3, 0, |_| true).is_empty());
    }

    #[test]
    fn run_tasks_runs_each_task_once_in_order_and_stops_after_a_failure() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let tasks: Vec<Vec<u32>> = (0..6).map(|t| vec![10 * t, 10 * t + 1]).collect();
        let seen = std::sync::Mutex::new(Vec::new());
        let record = |&x: &u32| -> Result<()> {
            seen.lock().unwrap().push(x);
            Ok(())
        };
        run_tasks(&pool, &tasks, record).unwrap();
        let mut all = seen.into_inner().unwrap();
        // A task's cells run one after another on one thread.
        for t in 0..6 {
            let at = |x| all.iter().position(|&y| y == x).unwrap();
            assert!(at(10 * t) < at(10 * t + 1));
        }
        all.sort_unstable();
        assert_eq!(all, tasks.concat());
        // On one thread: the failing cell ends its task, and no later task starts.
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let seen = std::sync::Mutex::new(Vec::new());
        let failing = |&x: &u32| -> Result<()> {
            seen.lock().unwrap().push(x);
            if x == 20 {
                return Err(Error::param("cell", format!("{x} failed")));
            }
            Ok(())
        };
        let err = run_tasks(&one, &tasks, failing).unwrap_err();
        assert!(err.to_string().contains("20 failed"), "{err}");
        assert_eq!(seen.into_inner().unwrap(), [0, 1, 10, 11, 20]);
    }

    #[test]
    fn whole_set_first_takes_the_first_pending_trials_whole_set_cells_one_task_per_lambda() {
        let text = |first_train: &str| {
            format!(
                r#"
[experiment]
name = "w"
trials = 3
seed = 1
datasets = ["toy"]
[dataset.toy]
source = "toy_gaussian"
dimension = 3
train = 400
{first_train}
test = 50
[grid]
epsilon = [0.1]
n_train = [100, 400]
lambda = [100, 0.01, 1]
[[pipeline]]
name = "lr"
learner = "lr"
[[pipeline]]
name = "fm1"
learner = "lr_functional"
[[pipeline]]
name = "fm2"
learner = "lr_functional"
fm_sensitivity = "sens2"
[report]
x = "n_train"
"#
            )
        };
        let (spec, grown, data) = planned_toy(&text("first_train = 100"));
        let combos: Vec<&Combo> = grown.combos_of(0).collect();
        let min = LOCKSTEP_MIN_VALUES;
        let (trial, tasks) = whole_set_first(&spec, &data, &combos, 1..3, min, |_| true).unwrap();
        assert_eq!(trial, 1);
        let names = |task: &Vec<Cell>| -> Vec<(String, Option<f64>)> {
            task.iter()
                .map(|c| (spec.pipelines[c.pipeline].name.clone(), c.at.lambda))
                .collect()
        };
        let named: Vec<_> = tasks.iter().map(names).collect();
        let lr = |l: f64| vec![("lr".to_string(), Some(l))];
        // The lambda-less functional mechanism first (one task: both share X^T X), then LR by
        // ascending lambda, all at the whole 400 rows of trial 1.
        assert_eq!(
            named,
            [
                vec![("fm1".to_string(), None), ("fm2".to_string(), None)],
                lr(0.01),
                lr(1.0),
                lr(100.0)
            ]
        );
        assert!(tasks.iter().flatten().all(|c| c.trial == 1));
        assert!(tasks.iter().flatten().all(|c| c.at.n_train == Some(400)));
        // A resumed run: trial 0 has finished there, trial 1 has some cells left.
        let pending = |c: &Cell| {
            c.trial > 0 && spec.pipelines[c.pipeline].name != "fm2" && c.at.lambda != Some(1.0)
        };
        let (trial, tasks) = whole_set_first(&spec, &data, &combos, 0..3, min, pending).unwrap();
        assert_eq!(trial, 1);
        let named: Vec<_> = tasks.iter().map(names).collect();
        assert_eq!(
            named,
            [vec![("fm1".to_string(), None)], lr(0.01), lr(100.0)]
        );
        // On a design large enough for lockstep, LR's lambdas are one task (one batch).
        let (_, tasks) = whole_set_first(&spec, &data, &combos, 1..3, 1, |_| true).unwrap();
        let named: Vec<_> = tasks.iter().map(names).collect();
        let fm = vec![("fm1".to_string(), None), ("fm2".to_string(), None)];
        assert_eq!(named, [fm, [lr(0.01), lr(1.0), lr(100.0)].concat()]);
        let batches = lockstep_batches(&spec, &tasks[1], dense_shape(&data), None, 1);
        assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), [3]);
        assert!(whole_set_first(&spec, &data, &combos, 0..3, min, |_| false).is_none());
        // Without a grown split every trial draws its own training rows: nothing is shared.
        let (_, drawn, data) = planned_toy(&text(""));
        let combos: Vec<&Combo> = drawn.combos_of(0).collect();
        assert!(whole_set_first(&spec, &data, &combos, 0..3, min, |_| true).is_none());
    }
}
