//! Logistic regression's scheduling policy ([`crate::schedule::Scheduler`]): which cells of a
//! dataset fit together in [`super::lockstep`] groups, sharing their passes over the rows, and
//! which run before the trials so that their noise-free work (memoised minimisers, X^T X) is
//! computed once while the pool has nothing else to do. Each cell has its own streams, so
//! neither the order nor the company changes a record.

use super::design::Splitting;
use super::lockstep::Lockstep;
use super::row_caches::{DatasetCaches, SharedWork};
use crate::data::Dataset;
use crate::error::Result;
use crate::kinds::{LearnerKind, Schedule};
use crate::plan::{Cell, Combo};
use crate::schedule::{Candidates, RunCell, Scheduler, Workspace};
use crate::spec::Spec;
use crate::store::TrialRecord;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Which cells of a learner kind fit side by side, sharing their passes over the rows
/// ([`super::lockstep`]); ordered, each level including the one before. A kind gives it as its
/// [`Schedule`]'s `reach`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reach {
    /// Each cell fits alone.
    Never,
    /// A trial's cells that differ only in lambda: noise-free fits, each computed once per
    /// design and lambda by the memo, so on rows every trial shares there is one fit to do.
    Siblings,
    /// Those, and the cells of every trial that fit one design: each fit has its own noise
    /// (objective perturbation), so every trial's fit is work of its own.
    AcrossTrials,
}

impl Reach {
    /// The scheduling hook of an LR-family kind of this reach.
    pub fn schedule(self) -> Schedule {
        Schedule {
            scheduler: &LOCKSTEP,
            reach: self as u8,
        }
    }

    /// The reach of `kind` (a kind of no family: [`Reach::Never`]).
    fn of(kind: &dyn LearnerKind) -> Reach {
        match kind.schedule().map_or(0, |s| s.reach) {
            0 => Reach::Never,
            1 => Reach::Siblings,
            _ => Reach::AcrossTrials,
        }
    }
}

/// LR's scheduler: lockstep groups, and the whole training set's cells first.
pub struct LockstepScheduler;

/// The scheduler every LR-family kind names (a unit value: it holds nothing; what it keeps
/// for a dataset lives in the workspace it makes, [`HeldWork`]).
pub static LOCKSTEP: LockstepScheduler = LockstepScheduler;

impl Scheduler for LockstepScheduler {
    /// The cells that fit one design in every trial ([`across_trials`]), when there are
    /// several: all trials as one lockstep group whose rounds split across the pool.
    fn across_trials(&self, of: &Candidates, trials: &mut dyn Iterator<Item = u32>) -> Vec<Cell> {
        let cells = across_trials(of, trials, LOCKSTEP_MIN_VALUES);
        if cells.len() > 1 { cells } else { Vec::new() }
    }

    /// One trial's whole-set cells side by side ([`whole_set_first`]), each task's lambda
    /// siblings batched.
    fn first_trial(
        &self,
        of: &Candidates,
        trials: &mut dyn Iterator<Item = u32>,
    ) -> Option<(u32, Vec<Vec<Vec<Cell>>>)> {
        let (trial, tasks) = whole_set_first(of, trials, LOCKSTEP_MIN_VALUES)?;
        if tasks.len() < 2 && tasks.iter().all(|t| t.len() < 2) {
            return None;
        }
        let shape = dense_shape(of.data);
        let batched = tasks
            .iter()
            .map(|task| {
                lockstep_batches(of.spec, task, shape, None, LOCKSTEP_MIN_VALUES)
                    .into_iter()
                    .map(|b| b.into_iter().cloned().collect())
                    .collect()
            })
            .collect();
        Some((trial, batched))
    }

    /// The pool runs only these tasks, so the X^T X there may split across it
    /// ([`Splitting::gram`]): the thread done with its tasks takes half of each block instead
    /// of idling. The task's cells run in a view of the dataset's workspace that says so.
    fn in_task(
        &self,
        workspace: &dyn Workspace,
        task: &mut dyn FnMut(&dyn Workspace) -> Result<()>,
    ) -> Result<()> {
        let Some(held) = held_of(workspace) else {
            return task(workspace);
        };
        task(&held.splitting(Splitting {
            gram: true,
            ..held.splitting
        }))
    }

    fn batches<'c>(&self, spec: &Spec, data: &Dataset, cells: &'c [Cell]) -> Vec<Vec<&'c Cell>> {
        let (shape, whole) = (dense_shape(data), whole_training_set(data));
        lockstep_batches(spec, cells, shape, whole, LOCKSTEP_MIN_VALUES)
    }

    fn run_batch(
        &self,
        batch: &[&Cell],
        run: &RunCell,
        workspace: &dyn Workspace,
        pool: Option<&Arc<rayon::ThreadPool>>,
    ) -> Vec<Result<TrialRecord>> {
        let held = held_of(workspace).expect("LR's scheduler runs cells in LR's workspace");
        run_batch(batch, run, held, pool)
    }

    fn workspace(&self, _pool: Option<&Arc<rayon::ThreadPool>>) -> Box<dyn Workspace> {
        let caches = Arc::new(DatasetCaches::default());
        #[cfg(test)]
        tests::MADE.with_borrow_mut(|m| m.push(Arc::downgrade(&caches.work)));
        Box::new(HeldWork {
            caches,
            splitting: Splitting::default(),
        })
    }
}

/// LR's workspace for one dataset: the dataset's row digests and known column bounds, and
/// everything the fits hold for later cells (scaled rows, each thread's last read rows, exact
/// fits, X^T X: [`super::row_caches::SharedWork`]), all in [`DatasetCaches`]. Dropped when the
/// runner is done with the dataset, it lets go of them all (their keys name the dataset's
/// rows, so no later cell asks for them; appendix B's D = 1500 needs their 3 GiB for its
/// 12.7 GB of rows).
///
/// It also says how the cells run in it may split their work ([`Splitting`]): the dataset's
/// own workspace splits nothing; the scheduler hands a phase or a batch a view of it (the same
/// caches) that says otherwise, dropped when the phase or batch is done.
pub struct HeldWork {
    pub caches: Arc<DatasetCaches>,
    pub splitting: Splitting,
}

impl HeldWork {
    /// A view of this workspace (the same caches) whose cells split as `splitting` says.
    fn splitting(&self, splitting: Splitting) -> HeldWork {
        HeldWork {
            caches: Arc::clone(&self.caches),
            splitting,
        }
    }
}

impl Workspace for HeldWork {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A cell's `workspace`, when it is LR's.
fn held_of(workspace: &dyn Workspace) -> Option<&HeldWork> {
    workspace.as_any().downcast_ref::<HeldWork>()
}

/// The caches of the dataset a cell's `workspace` belongs to, when it is LR's.
pub fn caches_of(workspace: &dyn Workspace) -> Option<&DatasetCaches> {
    held_of(workspace).map(|h| &*h.caches)
}

/// How the fit of a cell run in `workspace` may split its work (nothing, outside LR's).
pub fn splitting_of(workspace: &dyn Workspace) -> Splitting {
    held_of(workspace).map_or_else(Splitting::default, |h| h.splitting)
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
            Reach::AcrossTrials,
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
            Reach::Siblings,
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
    scope: Reach,
) -> bool {
    at.lambda.is_some()
        && values >= min_values
        && spec.pipelines[pipeline]
            .learner()
            .is_some_and(|k| Reach::of(k) >= scope)
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
    of: &Candidates,
    trials: impl Iterator<Item = u32>,
    min_values: usize,
) -> Vec<Cell> {
    let (spec, data) = (of.spec, of.data);
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
            Reach::AcrossTrials,
        ) && on_whole_set(c, whole)
            && spec.pipelines[c.pipeline].selection.is_none()
    };
    let same: Vec<&&Combo> = of.combos.iter().filter(|c| same(c)).collect();
    if same.is_empty() {
        return Vec::new();
    }
    trials
        .flat_map(|t| same.iter().map(move |c| c.cell(t)))
        .filter(|c| (of.pending)(c))
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
    of: &Candidates,
    trials: impl IntoIterator<Item = u32>,
    min_values: usize,
) -> Option<(u32, Vec<Vec<Cell>>)> {
    let whole = whole_training_set(of.data)?;
    let on_whole: Vec<&&Combo> = of
        .combos
        .iter()
        .filter(|c| on_whole_set(c, whole))
        .collect();
    let shape = dense_shape(of.data);
    let siblings = |c: &Cell| siblings_in_lockstep(of.spec, c, shape, min_values);
    trials.into_iter().find_map(|trial| {
        // Lambda-less first, then by pipeline the lockstep siblings, then by lambda's bits
        // (the bits of positive floats sort as their values).
        let mut tasks: BTreeMap<(u8, u64), Vec<Cell>> = BTreeMap::new();
        for cell in on_whole
            .iter()
            .map(|c| c.cell(trial))
            .filter(|c| (of.pending)(c))
        {
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

/// Runs one batch: a lone cell on this thread; a lockstep batch one thread per cell, its fits
/// sharing their passes over the rows (each round split across `pool`'s threads, if given,
/// which then run nothing else). Records in the batch's order.
fn run_batch(
    batch: &[&Cell],
    run: &RunCell,
    held: &HeldWork,
    pool: Option<&Arc<rayon::ThreadPool>>,
) -> Vec<Result<TrialRecord>> {
    if let [cell] = batch {
        return vec![run(cell, held)];
    }
    let work: &SharedWork = &held.caches.work;
    let group = match pool {
        Some(pool) => Lockstep::on_pool(batch.len(), Arc::clone(pool)),
        None => Lockstep::new(batch.len()),
    };
    // Each member runs on a thread of its own, which ends with it: the rows this worker read
    // last go with the members (each lets go of them once it reads others), and the rows the
    // members read come back for the trial's next cells (see `row_caches::LastRead`).
    let last = work.last_read.take();
    // Nested subsets read their rows through their maps: a round reads the longest's once.
    let nested = batch.iter().any(|c| c.at.n_train != batch[0].at.n_train);
    let view = nested.then(|| {
        held.splitting(Splitting {
            through_map: true,
            ..held.splitting
        })
    });
    let held = view.as_ref().unwrap_or(held);
    let run = |cell: &Cell| run(cell, held);
    std::thread::scope(|s| {
        let members: Vec<_> = batch
            .iter()
            .map(|&cell| {
                let group = group.clone();
                let last = last.clone();
                s.spawn(move || {
                    if let Some(rows) = last {
                        work.last_read.hold(rows);
                    }
                    (group.member(|| run(cell)), work.last_read.take())
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
                    work.last_read.hold(rows);
                }
                record
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Plan, plan};
    use std::cell::RefCell;
    use std::sync::Weak;

    thread_local! {
        /// The workspaces this thread's runs made (a test's probe, test builds only).
        pub(super) static MADE: RefCell<Vec<Weak<SharedWork>>> = const { RefCell::new(Vec::new()) };
    }

    /// A spec of LR, output perturbation and the functional mechanism (exact fits, scaled
    /// rows and X^T X memoised) on `datasets` toy sets of dimension `d`.
    fn memoised_spec(name: &str, d: usize, datasets: usize) -> String {
        let names: Vec<String> = (0..datasets).map(|i| format!("\"toy{i}\"")).collect();
        let mut text = format!(
            "[experiment]\nname = \"{name}\"\ntrials = 2\nseed = 3\ndatasets = [{}]\n",
            names.join(", ")
        );
        for i in 0..datasets {
            text += &format!(
                "[dataset.toy{i}]\nsource = \"toy_gaussian\"\ndimension = {d}\ntrain = 200\ntest = 50\n"
            );
        }
        text += "[grid]\nepsilon = [1]\nlambda = [0.01, 1]\n";
        for (p, learner) in [("lr", "lr"), ("out", "lr_output"), ("fm", "lr_functional")] {
            text += &format!("[[pipeline]]\nname = \"{p}\"\nlearner = \"{learner}\"\n");
        }
        text + "[report]\nx = \"epsilon\"\n"
    }

    /// Two specs run one after the other in one process: each dataset's cells get a workspace
    /// of their own, and once `run` returns nothing of any of them is held (every weak
    /// reference to them is dead), so no memo outlives the runner's loop over its dataset.
    #[test]
    fn a_run_holds_nothing_of_its_workspaces_once_it_returns() {
        let out = tempfile::tempdir().unwrap();
        let data = crate::data::DataDir(out.path().into());
        let opts = crate::runner::RunOptions::quiet(out.path(), data, 2);
        MADE.with_borrow_mut(Vec::clear);
        for (name, d, datasets) in [("first", 3, 2), ("second", 5, 1)] {
            let text = memoised_spec(name, d, datasets);
            let spec = Spec::parse(&text, std::path::Path::new("m.toml")).unwrap();
            let summary = crate::runner::run(&spec, &opts).unwrap();
            assert_eq!(summary.ran, summary.total);
            let records = crate::store::read_records(&summary.results_dir.join("trials.jsonl"));
            let shared = records
                .unwrap()
                .iter()
                .filter(|r| r.shared.contains_key("fit"))
                .count();
            assert!(shared > 0, "{name}: some fit was shareable");
        }
        let made = MADE.with_borrow_mut(std::mem::take);
        assert_eq!(made.len(), 3, "one workspace per dataset and run");
        assert!(
            made.iter().all(|w| w.upgrade().is_none()),
            "nothing held after the runs"
        );
    }

    /// How a cell's fit may split its work reaches the cell as an argument, the workspace it
    /// is handed: the dataset's own splits nothing; the whole-training-set phase's tasks get a
    /// view with `gram`; the members of a batch of nested subsets get one with `through_map`;
    /// every view shares the dataset's caches and is gone once its call returns (nothing of
    /// it is thread state, so a later cell on the same thread sees none of it).
    #[test]
    fn a_cell_gets_how_it_splits_from_the_workspace_it_is_handed() {
        let (_, cells) = trial_cells(&toy_text(
            1,
            "dimension = 3\ntrain = 100\ntest = 10",
            "epsilon = [1]\nlambda = [1]\nn_train = [50, 100]",
            "[[pipeline]]\nname = \"op\"\nlearner = \"lr_objective\"",
        ));
        assert_ne!(cells[0].at.n_train, cells[1].at.n_train);
        let held = LOCKSTEP.workspace(None);
        let seen = std::sync::Mutex::new(Vec::new());
        let run = |_: &Cell, ws: &dyn Workspace| -> Result<TrialRecord> {
            let caches = caches_of(ws).expect("LR's workspace") as *const DatasetCaches;
            seen.lock()
                .unwrap()
                .push((splitting_of(ws), caches as usize));
            Err(crate::error::Error::param("cell", "a probe"))
        };
        let own = caches_of(&*held).unwrap() as *const DatasetCaches as usize;
        let lone = LOCKSTEP.run_batch(&[&cells[0]], &run, &*held, None);
        let nested = LOCKSTEP.run_batch(&[&cells[0], &cells[1]], &run, &*held, None);
        LOCKSTEP
            .in_task(&*held, &mut |ws| {
                let _ = LOCKSTEP.run_batch(&[&cells[0]], &run, ws, None);
                Ok(())
            })
            .unwrap();
        assert_eq!(lone.len() + nested.len(), 3);
        let seen = seen.into_inner().unwrap();
        let (none, map, gram) = (
            Splitting::default(),
            Splitting {
                through_map: true,
                ..Splitting::default()
            },
            Splitting {
                gram: true,
                ..Splitting::default()
            },
        );
        assert_eq!(
            seen.iter().map(|s| s.0).collect::<Vec<_>>(),
            [none, map, map, gram]
        );
        assert!(seen.iter().all(|s| s.1 == own), "one dataset's caches");
        assert_eq!(splitting_of(&*held), none, "the dataset's own is unchanged");
        let caches = held.as_any().downcast_ref::<HeldWork>().unwrap();
        assert_eq!(Arc::strong_count(&caches.caches), 1, "every view is gone");
    }

    /// Objective perturbation ("op") and LR ("lr"), as a spec's pipelines.
    const OP_AND_LR: &str = "[[pipeline]]\nname = \"op\"\nlearner = \"lr_objective\"\n\
        [[pipeline]]\nname = \"lr\"\nlearner = \"lr\"";

    /// A spec's text: `trials` trials on the toy Gaussian `toy` (`dataset`'s lines), over
    /// `grid`'s lines, with `pipelines`, reported by N.
    fn toy_text(trials: u32, dataset: &str, grid: &str, pipelines: &str) -> String {
        format!(
            "[experiment]\nname = \"b\"\ntrials = {trials}\nseed = 1\ndatasets = [\"toy\"]\n\
             [dataset.toy]\nsource = \"toy_gaussian\"\n{dataset}\n[grid]\n{grid}\n\
             {pipelines}\n[report]\nx = \"n_train\"\n"
        )
    }

    /// A spec's text parsed, and its trial 0's cells, by N.
    fn trial_cells(text: &str) -> (Spec, Vec<Cell>) {
        let spec = Spec::parse(text, std::path::Path::new("b.toml")).unwrap();
        let mut cells: Vec<Cell> = plan(&spec, false).combos_of(0).map(|c| c.cell(0)).collect();
        cells.sort_by_key(|c| c.at.n_train);
        (spec, cells)
    }

    /// The candidates of `spec`'s `combos` on `data` whose cells are `pending`.
    fn cands<'a>(
        spec: &'a Spec,
        data: &'a Dataset,
        combos: &'a [&'a Combo],
        pending: &'a dyn Fn(&Cell) -> bool,
    ) -> Candidates<'a> {
        Candidates {
            spec,
            data,
            combos,
            pending,
        }
    }

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
        let (spec, cells) = trial_cells(&toy_text(
            1,
            "dimension = 100\ntrain = 1000\ntest = 100",
            "epsilon = [0.1, 1]\nn_train = [100, 1000]\nlambda = [0.01, 1, 100]",
            OP_AND_LR,
        ));
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
        let (spec, cells) = trial_cells(&toy_text(
            1,
            "dimension = 1000\ntrain = 1048576\nfirst_train = 65536\ntest = 100",
            "epsilon = [0.1]\nn_train = [65536, 131072, 262144, 1048576]\nlambda = [0.01, 1]",
            OP_AND_LR,
        ));
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
            let dataset = format!("dimension = 100\ntrain = 1000\n{first_train}\ntest = 100");
            let grid = "epsilon = [0.1]\nn_train = [100, 1000]\nlambda = [0.01, 1]";
            toy_text(3, &dataset, grid, OP_AND_LR)
        };
        let (spec, grown, data) = planned_toy(&text("first_train = 500"));
        let combos: Vec<&Combo> = grown.combos_of(0).collect();
        let cells = across_trials(
            &cands(&spec, &data, &combos, &|_| true),
            [0, 2].into_iter(),
            50_000,
        );
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
        let cells = across_trials(
            &cands(&spec, &data, &combos, &pending),
            0..1_000_000,
            50_000,
        );
        assert_eq!(cells.len(), ACROSS_TRIALS_MAX);
        let trials: Vec<u32> = cells.iter().map(|c| c.trial).collect();
        let want: Vec<u32> = (1..).flat_map(|t| [t, t]).take(ACROSS_TRIALS_MAX).collect();
        assert_eq!(trials, want);
        assert!(
            across_trials(
                &cands(&spec, &data, &combos, &|_| true),
                [0, 2].into_iter(),
                200_000
            )
            .is_empty()
        );
        // The same grown split over binary rows: one pass per vector, so no group.
        let mut binary = data.clone();
        let mut m = crate::data::BinaryMatrix::new(data.n_features());
        for _ in 0..data.n_rows() {
            m.push_row(&[0, 3]);
        }
        binary.features = crate::data::Features::Binary(m);
        assert!(
            across_trials(
                &cands(&spec, &binary, &combos, &|_| true),
                [0, 2].into_iter(),
                0
            )
            .is_empty()
        );
        let (spec, drawn, data) = planned_toy(&text(""));
        let combos: Vec<&Combo> = drawn.combos_of(0).collect();
        assert!(across_trials(&cands(&spec, &data, &combos, &|_| true), 0..3, 0).is_empty());
    }

    #[test]
    fn whole_set_first_takes_the_first_pending_trials_whole_set_cells_one_task_per_lambda() {
        let text = |first_train: &str| {
            let dataset = format!("dimension = 3\ntrain = 400\n{first_train}\ntest = 50");
            let grid = "epsilon = [0.1]\nn_train = [100, 400]\nlambda = [100, 0.01, 1]";
            let pipelines = "[[pipeline]]\nname = \"lr\"\nlearner = \"lr\"\n\
                [[pipeline]]\nname = \"fm1\"\nlearner = \"lr_functional\"\n\
                [[pipeline]]\nname = \"fm2\"\nlearner = \"lr_functional\"\n\
                fm_sensitivity = \"sens2\"";
            toy_text(3, &dataset, grid, pipelines)
        };
        let (spec, grown, data) = planned_toy(&text("first_train = 100"));
        let combos: Vec<&Combo> = grown.combos_of(0).collect();
        let min = LOCKSTEP_MIN_VALUES;
        let (trial, tasks) =
            whole_set_first(&cands(&spec, &data, &combos, &|_| true), 1..3, min).unwrap();
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
        let (trial, tasks) =
            whole_set_first(&cands(&spec, &data, &combos, &pending), 0..3, min).unwrap();
        assert_eq!(trial, 1);
        let named: Vec<_> = tasks.iter().map(names).collect();
        assert_eq!(
            named,
            [vec![("fm1".to_string(), None)], lr(0.01), lr(100.0)]
        );
        // On a design large enough for lockstep, LR's lambdas are one task (one batch).
        let (_, tasks) =
            whole_set_first(&cands(&spec, &data, &combos, &|_| true), 1..3, 1).unwrap();
        let named: Vec<_> = tasks.iter().map(names).collect();
        let fm = vec![("fm1".to_string(), None), ("fm2".to_string(), None)];
        assert_eq!(named, [fm, [lr(0.01), lr(1.0), lr(100.0)].concat()]);
        let batches = lockstep_batches(&spec, &tasks[1], dense_shape(&data), None, 1);
        assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), [3]);
        assert!(whole_set_first(&cands(&spec, &data, &combos, &|_| false), 0..3, min).is_none());
        // Without a grown split every trial draws its own training rows: nothing is shared.
        let (_, drawn, data) = planned_toy(&text(""));
        let combos: Vec<&Combo> = drawn.combos_of(0).collect();
        assert!(whole_set_first(&cands(&spec, &data, &combos, &|_| true), 0..3, min).is_none());
    }
}
