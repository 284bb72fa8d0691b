//! How the runner orders and batches one dataset's cells: the hook through which a learner
//! family shares work between cells (each cell's result unchanged: every cell has its own
//! streams, so neither the order nor the company changes a record).
//!
//! A kind names its family's [`Scheduler`] through [`crate::kinds::LearnerKind::schedule`];
//! the runner asks the first such scheduler of a spec's pipelines, else [`ALONE`], which runs
//! each cell by itself in its trial. For each dataset the runner takes the scheduler's
//! [`Workspace`] first and drops it when the dataset's cells are done, so whatever the family
//! holds for later cells of that dataset lives exactly as long as the runner's loop over it.

use crate::data::Dataset;
use crate::error::Result;
use crate::plan::{Cell, Combo};
use crate::spec::Spec;
use crate::store::TrialRecord;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs one cell on the calling thread, in the workspace given: the dataset's, or a view of it
/// that a scheduler made for the cell's batch, carrying how the cell's fit may split its work
/// ([`Scheduler::in_task`], [`Scheduler::run_batch`]) as an explicit argument, never as
/// thread state.
pub type RunCell<'a> = dyn Fn(&Cell, &dyn Workspace) -> Result<TrialRecord> + Sync + 'a;

/// What a family holds for a dataset's later cells; dropping it lets go of everything held.
/// Each cell's learner receives it ([`crate::learners::FitInput::workspace`]) and finds its
/// family's own by type.
pub trait Workspace: Sync {
    fn as_any(&self) -> &dyn std::any::Any;
}

/// Nothing held.
impl Workspace for () {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The cells a scheduler may take before the trials: the dataset's combos (in the order the
/// trials run them) whose cells are `pending`.
pub struct Candidates<'a> {
    pub spec: &'a Spec,
    pub data: &'a Dataset,
    pub combos: &'a [&'a Combo],
    pub pending: &'a dyn Fn(&Cell) -> bool,
}

/// Orders and batches a dataset's cells. Every method has the default of [`ALONE`].
pub trait Scheduler: Sync {
    /// Cells of several trials to run first, as one batch over the whole pool (the pool runs
    /// nothing else meanwhile). `trials` is read lazily (a plan may have 10^9 trials).
    fn across_trials(&self, _of: &Candidates, _trials: &mut dyn Iterator<Item = u32>) -> Vec<Cell> {
        Vec::new()
    }

    /// Then one trial's cells to run before the trials: tasks run side by side on the pool,
    /// each task's batches one after another (see [`Scheduler::in_task`]).
    fn first_trial(
        &self,
        _of: &Candidates,
        _trials: &mut dyn Iterator<Item = u32>,
    ) -> Option<(u32, Vec<Vec<Vec<Cell>>>)> {
        None
    }

    /// Runs one of [`Scheduler::first_trial`]'s tasks (the pool runs only those tasks), its
    /// batches in the workspace `task` is given: the dataset's `workspace`, or a view of it
    /// for this phase.
    fn in_task(
        &self,
        workspace: &dyn Workspace,
        task: &mut dyn FnMut(&dyn Workspace) -> Result<()>,
    ) -> Result<()> {
        task(workspace)
    }

    /// A trial's pending cells, in the order they run, as batches (each run by
    /// [`Scheduler::run_batch`]).
    fn batches<'c>(&self, _spec: &Spec, _data: &Dataset, cells: &'c [Cell]) -> Vec<Vec<&'c Cell>> {
        cells.iter().map(|c| vec![c]).collect()
    }

    /// Runs a batch in the dataset's `workspace` (this scheduler's), its records in the
    /// batch's order. `pool` is given when the batch has the whole pool to itself.
    fn run_batch(
        &self,
        batch: &[&Cell],
        run: &RunCell,
        workspace: &dyn Workspace,
        _pool: Option<&Arc<rayon::ThreadPool>>,
    ) -> Vec<Result<TrialRecord>> {
        batch.iter().map(|c| run(c, workspace)).collect()
    }

    /// What the family holds for the dataset's later cells, dropped when they are done;
    /// `pool` is the run's (none: a cell run outside a run's pool).
    fn workspace(&self, _pool: Option<&Arc<rayon::ThreadPool>>) -> Box<dyn Workspace> {
        Box::new(())
    }
}

/// Each cell alone, in its trial.
pub struct Alone;

impl Scheduler for Alone {}

/// The scheduler of families that share no work (a unit value: it holds nothing).
pub static ALONE: Alone = Alone;

/// The scheduler of `spec`'s cells: the first one a pipeline's kind names, else [`ALONE`].
pub fn of(spec: &Spec) -> &'static dyn Scheduler {
    spec.pipelines
        .iter()
        .find_map(|p| p.learner()?.schedule())
        .map_or(&ALONE, |s| s.scheduler)
}

/// Runs `tasks` on `pool`'s threads, each thread taking the next task in order and running its
/// cells one after another; after a failure no thread starts another task, and the first
/// failure is returned.
pub(crate) fn run_tasks<T: Sync>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

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
}
