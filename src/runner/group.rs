//! A trial's group: the split of one dataset in one trial and what every cell of that trial
//! reads from it (class counts, the majority baseline, the nested `n_train` order).

use crate::counts::ClassCounts;
use crate::data::{Dataset, Split};
use crate::error::Result;
use crate::evaluate::accuracy;
use crate::learners::Majority;
use crate::pipeline::TrialData;
use crate::plan::Plan;
use crate::schedule::Workspace;
use crate::spec::Spec;

/// Per (dataset, trial): the split and what every cell of the trial shares. Public so that a
/// bench can run a trial's cells as a run does (`benches/scale.rs`).
pub struct Group {
    split: Split,
    counts: Option<ClassCounts>,
    baseline: Option<f64>,
    shuffled: Option<Vec<u32>>,
}

impl Group {
    /// The group of dataset `d` in trial `trial`; its streams come from the plan's seed tree.
    pub fn new(spec: &Spec, plan: &Plan, d: usize, data: &Dataset, trial: u32) -> Result<Group> {
        crate::profile::time("split", || {
            let split = data.split(&mut plan.split_rng(d, trial));
            let counts = data
                .features
                .as_binary()
                .map(|x| ClassCounts::from_rows(x, &data.labels, &split.train, data.n_classes()));
            // A scalar source or a regression target has no classes to take the majority of.
            let baseline = if data.is_scalar() || data.targets.is_some() {
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

    /// What the trial's cells on `data` read, in `workspace`.
    pub fn data<'a>(&'a self, data: &'a Dataset, workspace: &'a dyn Workspace) -> TrialData<'a> {
        TrialData {
            data,
            split: &self.split,
            counts: self.counts.as_ref(),
            baseline_accuracy: self.baseline,
            shuffled_train: self.shuffled.as_deref(),
            workspace,
        }
    }
}
