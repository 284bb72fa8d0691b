//! Runs a plan on rayon, appending each finished cell to the results store.
//!
//! [`prepare`] does everything that can fail before anything is written (inputs hashed, store
//! checked, every dataset loaded and checked); [`Prepared::execute`] then runs. Cells are
//! grouped by (dataset, trial): a group draws its split, counts the training data and fits the
//! majority baseline once, then runs all its pipelines and grid points on that shared state.
//! Trials run in parallel, made on demand from the streamed plan; each cell's randomness comes
//! from its own seed.

use crate::data::{DataDir, Dataset};
use crate::error::{Error, Result};
use crate::pipeline::{TrialData, run_cell};
use crate::plan::{Cell, Combo, Plan, plan};
use crate::schedule::{Candidates, Scheduler, Workspace, run_tasks};
use crate::shard::{Partition, Shard, group_of, partition, shard_cells, sizes};
use crate::spec::Spec;
use crate::status::progress_bar;
use crate::store::{DEFINITION, Manifest, Store, Stored, TRIALS_FILE};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

mod group;
mod held;
mod standing;
pub use group::Group;
pub use held::HOLD_BYTES;
use held::{Held, load_checked};
pub use standing::{Standing, standing};

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

impl RunOptions {
    /// A run of `threads` workers (0: one per core) writing under `out`, its data files in
    /// `data`: not smoke, not forced, one process, no progress bar (tests, benches, the speed
    /// gate).
    pub fn quiet(out: &std::path::Path, data: DataDir, threads: usize) -> Self {
        RunOptions {
            threads,
            data_dir: data,
            out_dir: out.into(),
            smoke: false,
            force: false,
            progress: false,
            shard: None,
        }
    }
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
    datasets: Vec<Held>,
    /// With `--shard`: this run's shard and the partition that deals groups to shards.
    sharding: Option<(Shard, Partition)>,
    total: u64,
    pending: u64,
    start: Instant,
    /// With `--rerun`: the pipelines whose stored cells this run recomputes.
    rerun: &'a [String],
}

/// Does everything that can fail before the store is touched: plans the spec (streamed),
/// hashes the inputs, reads the store (refusing results of another spec or other data, or
/// records the spec no longer plans), loads and checks every dataset and every (pipeline,
/// dataset) pair.
pub fn prepare<'a>(spec: &'a Spec, opts: &'a RunOptions) -> Result<Prepared<'a>> {
    prepare_holding(spec, opts, HOLD_BYTES)
}

/// [`prepare`], holding from the checks to the cells only datasets of fewer than `hold_bytes`
/// bytes of feature values ([`Held`]; 0 draws every dataset again when its cells run).
pub fn prepare_holding<'a>(
    spec: &'a Spec,
    opts: &'a RunOptions,
    hold_bytes: usize,
) -> Result<Prepared<'a>> {
    prepare_run(spec, opts, hold_bytes, &[])
}

/// [`prepare`] for a run that recomputes the stored cells of the pipelines in `rerun` (`run
/// --rerun`) and keeps every other stored cell, refusing where the rest of the spec or the
/// data changed since they were stored.
pub fn prepare_rerun<'a>(
    spec: &'a Spec,
    opts: &'a RunOptions,
    rerun: &'a [String],
) -> Result<Prepared<'a>> {
    if let Some(name) = rerun
        .iter()
        .find(|n| spec.pipelines.iter().all(|p| &p.name != *n))
    {
        let names: Vec<_> = spec.pipelines.iter().map(|p| p.name.as_str()).collect();
        return Err(Error::param(
            "rerun",
            format!(
                "the spec has no pipeline `{name}`; its pipelines: {}",
                names.join(", ")
            ),
        ));
    }
    if !rerun.is_empty() && (opts.force || opts.shard.is_some()) {
        return Err(Error::param(
            "rerun",
            "--rerun recomputes some pipelines of a whole results folder: not with --force (which recomputes all of them) or --shard",
        ));
    }
    prepare_run(spec, opts, HOLD_BYTES, rerun)
}

fn prepare_run<'a>(
    spec: &'a Spec,
    opts: &'a RunOptions,
    hold_bytes: usize,
    rerun: &'a [String],
) -> Result<Prepared<'a>> {
    let start = Instant::now();
    let dir = results_dir(spec, &opts.out_dir, opts.smoke);
    let plan = plan(spec, opts.smoke);
    let manifest = manifest(spec, &opts.data_dir)?;
    let stored = crate::store::inspect_rerun(&dir, &manifest, opts.force, rerun)?;
    if let Some(reason) = unplanned(&plan, &stored) {
        return Err(Error::Store { path: dir, reason });
    }
    if opts.shard.is_some() && opts.force {
        return Err(Error::param(
            "shard",
            "--force replaces a whole results folder and cannot be combined with --shard; run the array into a new --out instead",
        ));
    }
    let (sizes, loaded) = sizes(spec, &plan, &opts.data_dir)?;
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
        let needed = needed(spec, &plan, &stored, &sharding, opts.force, sizes.len());
        datasets = load_checked(spec, &plan, opts, &needed, loaded, hold_bytes)?;
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
        rerun,
    })
}

/// Which datasets the run has cells left on: only those are read or generated (a finished
/// D = 1000 toy dataset is 8.5 GB); the others get empty stand-ins the run never reads.
fn needed(
    spec: &Spec,
    plan: &Plan,
    stored: &Stored,
    sharding: &Option<(Shard, Partition)>,
    force: bool,
    n_datasets: usize,
) -> Vec<bool> {
    let planned = plan.keys();
    let mut stored_in = vec![0u64; n_datasets];
    for k in stored.keys.iter().filter(|k| planned.contains(k)) {
        if let Some((d, _)) = group_of(spec, k).filter(|&(d, t)| runs(sharding, d, t)) {
            stored_in[d] += 1;
        }
    }
    (0..n_datasets)
        .map(|d| {
            let groups = match sharding {
                Some((shard, p)) => p.groups_in(d, plan.trials, shard.index),
                None => u64::from(plan.trials),
            };
            force || stored_in[d] < groups * plan.combos_of(d).count() as u64
        })
        .collect()
}

/// A pool of `threads` workers (0: one per core).
fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::param("jobs", e.to_string()))
}

/// Whether a run with `sharding` (none: the whole plan) runs the group (dataset, trial).
fn runs(sharding: &Option<(Shard, Partition)>, dataset: usize, trial: u32) -> bool {
    sharding
        .as_ref()
        .is_none_or(|(s, p)| p.shard_of(dataset, trial) == s.index)
}

/// Why `stored` cannot stand for `plan`: it holds records of cells the spec no longer plans.
fn unplanned(plan: &Plan, stored: &Stored) -> Option<String> {
    let planned = plan.keys();
    let mut foreign = stored.keys.iter().filter(|k| !planned.contains(k));
    let example = foreign.next()?;
    let n = 1 + foreign.count();
    Some(format!(
        "holds {n} trial(s) this spec no longer plans (e.g. `{example}`): a dataset, pipeline, grid value or trial was removed or a grid axis changed. Only adding trials, grid values, datasets or pipelines keeps stored results; rerun with --force to replace them, or choose another --out"
    ))
}

/// What a run of `spec` computes its cells from: the spec's hashes and every input's SHA-256
/// (each dataset file and definition, each file an external program's `command` names).
pub fn manifest(spec: &Spec, data_dir: &DataDir) -> Result<Manifest> {
    Ok(manifest_of(spec, data_dir, false)?.0)
}

/// [`manifest`]; with `lenient`, a dataset whose files cannot be hashed (not found) is left
/// out of the inputs, why named in the second value, instead of failing.
fn manifest_of(spec: &Spec, data_dir: &DataDir, lenient: bool) -> Result<(Manifest, Vec<String>)> {
    let mut inputs = BTreeMap::new();
    let mut missing = Vec::new();
    for name in &spec.experiment.datasets {
        let mut h = match spec.catalog.input_hashes(name, data_dir) {
            Ok(h) => h,
            Err(e) if lenient => {
                missing.push(format!("dataset `{name}`: {e}"));
                continue;
            }
            Err(e) => return Err(e),
        };
        if let Some(d) = spec.definitions.get(name) {
            h.insert(DEFINITION.into(), d.clone());
        }
        inputs.insert(name.clone(), h);
    }
    let spec_dir = spec.path.parent().unwrap_or(std::path::Path::new(""));
    let mut programs = BTreeMap::new();
    for (name, command) in &spec.commands {
        programs.insert(
            name.clone(),
            crate::external::Program::files(command, spec_dir)?,
        );
    }
    let manifest = Manifest::new(&spec.experiment.name, &spec.hash, &spec.cells_hash, inputs)
        .with_pipelines(&spec.base_hash, spec.pipeline_hashes.clone())
        .with_programs(programs);
    Ok((manifest, missing))
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

    /// Datasets checked and dropped, to be drawn again when their cells run ([`Held::Later`]).
    pub fn held_for_later(&self) -> usize {
        self.datasets
            .iter()
            .filter(|h| matches!(h, Held::Later))
            .count()
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
        let d = cell.dataset;
        let data = &self.datasets[d].get(self.spec, &self.plan, self.opts, d)?;
        let t = Instant::now();
        let group = Group::new(self.spec, &self.plan, cell.dataset, data, cell.trial)?;
        let workspace = crate::schedule::of(self.spec).workspace(None);
        run_cell(self.spec, &cell, &group.data(data, &*workspace))?;
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
        // A forced or partial rerun writes staging files, swapped in by `finish`.
        let staging = self.opts.force || !self.rerun.is_empty();
        if self.pending == 0 && !staging {
            if self.stored.upgrades_manifest {
                // Opening the store (under the folder's lock) writes the current manifest.
                Store::open(&self.dir, &self.manifest, false, self.stored, &records)?.finish()?;
            }
            summary.seconds = self.start.elapsed().as_secs_f64();
            return Ok(summary);
        }
        let pool = Arc::new(pool(self.opts.threads)?);
        let store = Store::open(&self.dir, &self.manifest, staging, self.stored, &records)?;
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
        let scheduler = crate::schedule::of(spec);
        for (di, held) in std::mem::take(&mut self.datasets).into_iter().enumerate() {
            let owned = held.get(spec, &self.plan, self.opts, di)?;
            drop(held);
            // What the scheduler holds for the dataset's later cells lives as long as this.
            let workspace = scheduler.workspace(Some(&pool));
            let cells = DatasetCells {
                workspace: &*workspace,
                spec,
                plan: &self.plan,
                sharding: &self.sharding,
                di,
                data: &owned,
                scheduler,
            };
            cells.run(&pool, &|c| store.is_done(&c.key), &keep)?;
        }
        store.finish()?;
        bar.finish_and_clear();
        summary.ran = ran.into_inner();
        summary.skipped = summary.total - summary.ran;
        summary.seconds = self.start.elapsed().as_secs_f64();
        let threads = pool.current_num_threads();
        write_provenance(spec, &self.manifest, self.opts, &summary, threads)?;
        Ok(summary)
    }
}

/// The run's provenance file (a shard's own), beside its records.
fn write_provenance(
    spec: &Spec,
    manifest: &Manifest,
    opts: &RunOptions,
    summary: &RunSummary,
    threads: usize,
) -> Result<()> {
    let provenance = opts.shard.map_or_else(
        || crate::provenance::PROVENANCE_FILE.to_string(),
        |s| s.provenance_file(),
    );
    crate::provenance::write(
        spec,
        &manifest.inputs,
        &summary.results_dir,
        &provenance,
        threads,
        summary.seconds,
        opts.smoke,
    )
}

/// One dataset's cells in a run: what [`DatasetCells::run`] needs.
struct DatasetCells<'a> {
    /// What the scheduler holds for the dataset's later cells (dropped after them).
    workspace: &'a dyn Workspace,
    spec: &'a Spec,
    plan: &'a Plan,
    sharding: &'a Option<(Shard, Partition)>,
    di: usize,
    data: &'a Dataset,
    scheduler: &'static dyn Scheduler,
}

/// Stores a batch's records (its finished cells are kept even if one of them failed).
type Keep<'k> = dyn Fn(Vec<Result<crate::store::TrialRecord>>) -> Result<()> + Sync + 'k;

impl DatasetCells<'_> {
    /// The dataset's `combos` whose cells are `pending`, for the scheduler.
    fn candidates<'c>(
        &'c self,
        combos: &'c [&'c Combo],
        pending: &'c dyn Fn(&Cell) -> bool,
    ) -> Candidates<'c> {
        Candidates {
            spec: self.spec,
            data: self.data,
            combos,
            pending,
        }
    }

    /// Runs the dataset's cells that are not `done`, handing each batch's records to `keep`:
    /// first those the scheduler runs across trials, then one trial's it runs first, then
    /// every trial's remaining cells, trials in parallel.
    fn run(
        &self,
        pool: &Arc<rayon::ThreadPool>,
        done: &(dyn Fn(&Cell) -> bool + Sync),
        keep: &Keep,
    ) -> Result<()> {
        let (spec, data, di) = (self.spec, self.data, self.di);
        // A trial's cells by ascending N (stable: the spec's order within one N), so the
        // cells that read the same rows run one after another while their noise-free work
        // (a scaled copy, X^T X) is held: at appendix B's D = 1500 one such copy is 12.6
        // GB. Each cell has its own streams, so the order changes no result.
        let mut combos: Vec<&Combo> = self.plan.combos_of(di).collect();
        combos.sort_by_key(|c| c.at.n_train.unwrap_or(0));
        // This run's trials of the dataset, streamed, never collected (a plan may have 10^9).
        let sharding = self.sharding;
        let trials = || (0..self.plan.trials).filter(move |&t| runs(sharding, di, t));
        // The cells run before the trials, which then leave them out.
        let mut ran_first = std::collections::HashSet::new();
        let across = {
            let pending = |c: &Cell| !done(c) && !ran_first.contains(&c.key);
            let of = self.candidates(&combos, &pending);
            self.scheduler.across_trials(&of, &mut trials())
        };
        if !across.is_empty() {
            let mut groups = BTreeMap::new();
            for c in &across {
                if let std::collections::btree_map::Entry::Vacant(e) = groups.entry(c.trial) {
                    e.insert(Group::new(spec, self.plan, di, data, c.trial)?);
                }
            }
            let batch: Vec<&Cell> = across.iter().collect();
            let run =
                |c: &Cell, ws: &dyn Workspace| run_one(spec, c, &groups[&c.trial].data(data, ws));
            keep(
                self.scheduler
                    .run_batch(&batch, &run, self.workspace, Some(pool)),
            )?;
            ran_first.extend(across.into_iter().map(|c| c.key));
        }
        let first = {
            let pending = |c: &Cell| !done(c) && !ran_first.contains(&c.key);
            let of = self.candidates(&combos, &pending);
            self.scheduler.first_trial(&of, &mut trials())
        };
        if let Some((trial, tasks)) = first {
            let group = Group::new(spec, self.plan, di, data, trial)?;
            let td = group.data(data, self.workspace);
            let run = |c: &Cell, ws: &dyn Workspace| run_one(spec, c, &td.in_workspace(ws));
            run_tasks(pool, &tasks, |batch: &Vec<Cell>| {
                let batch: Vec<&Cell> = batch.iter().collect();
                self.scheduler.in_task(self.workspace, &mut |ws| {
                    keep(self.scheduler.run_batch(&batch, &run, ws, None))
                })
            })?;
            ran_first.extend(tasks.into_iter().flatten().flatten().map(|c| c.key));
        }
        let pending = |c: &Cell| !done(c) && !ran_first.contains(&c.key);
        pool.install(|| {
            (0..self.plan.trials)
                .into_par_iter()
                .filter(|&trial| runs(sharding, di, trial))
                .try_for_each(|trial| -> Result<()> {
                    let cells: Vec<Cell> = combos
                        .iter()
                        .map(|c| c.cell(trial))
                        .filter(|c| pending(c))
                        .collect();
                    if cells.is_empty() {
                        return Ok(());
                    }
                    let group = Group::new(spec, self.plan, di, data, trial)?;
                    let td = group.data(data, self.workspace);
                    let run = |c: &Cell, ws: &dyn Workspace| run_one(spec, c, &td.in_workspace(ws));
                    for batch in self.scheduler.batches(spec, data, &cells) {
                        keep(self.scheduler.run_batch(&batch, &run, self.workspace, None))?;
                    }
                    Ok(())
                })
        })
    }
}

/// Runs one cell on this thread, its time profiled under its pipeline's name.
fn run_one(spec: &Spec, cell: &Cell, td: &TrialData) -> Result<crate::store::TrialRecord> {
    let name = &spec.pipelines[cell.pipeline].name;
    crate::profile::in_pipeline(name, || run_cell(spec, cell, td))
}
