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

/// Runs one cell on the calling thread.
pub type RunCell<'a> = dyn Fn(&Cell) -> Result<TrialRecord> + Sync + 'a;

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

    /// Runs one of [`Scheduler::first_trial`]'s tasks (the pool runs only those tasks).
    fn in_task(&self, task: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        task()
    }

    /// A trial's pending cells, in the order they run, as batches (each run by
    /// [`Scheduler::run_batch`]).
    fn batches<'c>(&self, _spec: &Spec, _data: &Dataset, cells: &'c [Cell]) -> Vec<Vec<&'c Cell>> {
        cells.iter().map(|c| vec![c]).collect()
    }

    /// Runs a batch, its records in the batch's order. `pool` is given when the batch has the
    /// whole pool to itself.
    fn run_batch(
        &self,
        batch: &[&Cell],
        run: &RunCell,
        _pool: Option<&Arc<rayon::ThreadPool>>,
    ) -> Vec<Result<TrialRecord>> {
        batch.iter().map(|c| run(c)).collect()
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

/// The scheduler of families that share no work.
pub static ALONE: Alone = Alone;

/// The scheduler of `spec`'s cells: the first one a pipeline's kind names, else [`ALONE`].
pub fn of(spec: &Spec) -> &'static dyn Scheduler {
    spec.pipelines
        .iter()
        .find_map(|p| p.learner()?.schedule())
        .map_or(&ALONE, |s| s.scheduler)
}
