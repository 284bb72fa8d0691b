//! The plan: a spec expanded into cells, one per (dataset, pipeline, grid point, trial).
//!
//! A pipeline only varies along the axes it uses (a non-private learner ignores `epsilon`), so
//! reference models are run once per trial and drawn as reference lines. Each cell's seed is
//! derived from what the cell *is*, so results do not depend on thread count or order, and a
//! stored record stays valid when a spec only gains trials or grid values.
//!
//! The plan is streamed: it holds one [`Combo`] per (dataset, pipeline, grid point) and makes
//! the cells of a trial on demand, so its memory does not depend on the number of trials.

use crate::kinds::{Axis, CellBudget, GridValues};
use crate::rng::{Rng, derive_seed, rng_from};
use crate::spec::Spec;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// One unit of work, and one line of `trials.jsonl` once done.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub dataset: usize,
    pub pipeline: usize,
    /// Grid values this cell uses, by axis name.
    pub point: BTreeMap<String, Value>,
    pub trial: u32,
    /// Unique, human-readable identity in the results store.
    pub key: String,
    /// Root of all the cell's random streams.
    pub seed: u64,
    /// The grid values, typed (and the pipeline's own T).
    pub at: GridValues,
    /// The epsilon of each step.
    pub budget: CellBudget,
}

/// One (dataset, pipeline, grid point): the cells of every trial share it.
#[derive(Debug, Clone, PartialEq)]
pub struct Combo {
    pub dataset: usize,
    pub pipeline: usize,
    pub point: BTreeMap<String, Value>,
    /// `dataset|pipeline|point|`: a cell's key is this prefix and the trial index.
    prefix: String,
    /// Seed parts before the trial index.
    seed_parts: [String; 4],
    pub at: GridValues,
    pub budget: CellBudget,
}

impl Combo {
    /// The cell of this combo in trial `trial`.
    pub fn cell(&self, trial: u32) -> Cell {
        let tr = trial.to_string();
        let [s, d, p, pt] = &self.seed_parts;
        Cell {
            dataset: self.dataset,
            pipeline: self.pipeline,
            point: self.point.clone(),
            trial,
            key: format!("{}{trial}", self.prefix),
            seed: derive_seed(&[s, d, p, pt, &tr]),
            at: self.at,
            budget: self.budget,
        }
    }
}

/// The combos of a spec in a fixed order, and the number of trials of each.
#[derive(Debug, Clone)]
pub struct Plan {
    pub combos: Vec<Combo>,
    pub trials: u32,
    /// Number of datasets of the spec (combos are grouped by dataset, ascending).
    pub n_datasets: usize,
    /// The spec's seed and dataset names: the roots of each (dataset, trial) group's streams.
    seed: String,
    datasets: Vec<String>,
}

impl Plan {
    /// Number of cells: combos x trials.
    pub fn n_cells(&self) -> u64 {
        self.combos.len() as u64 * u64::from(self.trials)
    }

    /// The combos of dataset `d`.
    pub fn combos_of(&self, d: usize) -> impl Iterator<Item = &Combo> {
        self.combos.iter().filter(move |c| c.dataset == d)
    }

    /// Every cell, dataset by dataset, trial by trial (made on demand).
    pub fn cells(&self) -> impl Iterator<Item = Cell> + '_ {
        (0..self.n_datasets).flat_map(move |d| {
            (0..self.trials).flat_map(move |t| self.combos_of(d).map(move |c| c.cell(t)))
        })
    }

    /// How many of `keys` (stored records') are cells of this plan: stale records of cells no
    /// longer planned do not count as done.
    pub fn count_done<'k>(&self, keys: impl IntoIterator<Item = &'k str>) -> u64 {
        let planned = self.keys();
        keys.into_iter().filter(|k| planned.contains(k)).count() as u64
    }

    /// A membership test for stored keys, without listing the cells.
    pub fn keys(&self) -> KeySet {
        KeySet {
            prefixes: self.combos.iter().map(|c| c.prefix.clone()).collect(),
            trials: self.trials,
        }
    }

    /// The largest `n_train` any cell of dataset `d` reads (`None` when one reads every
    /// training row): how much of a grown dataset must be generated.
    pub fn max_n_train(&self, d: usize) -> Option<usize> {
        self.combos_of(d)
            .map(|c| c.at.n_train)
            .try_fold(0, |m, n| n.map(|n| m.max(n)))
    }

    /// The stream of the train/test split of dataset `d` in trial `trial`, shared by the group.
    pub fn split_rng(&self, d: usize, trial: u32) -> Rng {
        rng_from(&["split", &self.seed, &self.datasets[d], &trial.to_string()])
    }

    /// The stream that orders the training rows for the nested `n_train` subsets.
    pub fn subsample_rng(&self, d: usize, trial: u32) -> Rng {
        rng_from(&["n_train", &self.seed, &self.datasets[d], &trial.to_string()])
    }

    /// The stream that orders the training rows a grown dataset adds after its first block
    /// ([`crate::data::SplitRule::Grown`]); the first block keeps [`Plan::subsample_rng`].
    pub fn grown_subsample_rng(&self, d: usize, trial: u32) -> Rng {
        let t = trial.to_string();
        rng_from(&["n_train", &self.seed, &self.datasets[d], &t, "grown"])
    }
}

/// Which keys belong to a plan.
#[derive(Debug, Clone)]
pub struct KeySet {
    prefixes: HashSet<String>,
    trials: u32,
}

impl KeySet {
    pub fn contains(&self, key: &str) -> bool {
        let Some(bar) = key.rfind('|') else {
            return false;
        };
        let (prefix, trial) = key.split_at(bar + 1);
        // Only the canonical spelling of the trial index (no sign, no leading zero).
        let canonical = trial.parse::<u32>().ok().filter(|t| t.to_string() == trial);
        canonical.is_some_and(|t| t < self.trials) && self.prefixes.contains(prefix)
    }
}

/// Indices of the values of an axis a pipeline varies along on dataset `d` (smoke mode too:
/// the exact gate checks every grid value); `[None]` when it does not. `grid.n_train_of`
/// restricts a pipeline's `n_train` values (and a dataset's, in [`dataset_runs`]); in smoke
/// mode `grid.smoke_n_train_of` restricts them too (a full-size sweep's largest sizes).
fn choices(spec: &Spec, pipeline: usize, d: usize, axis: Axis, smoke: bool) -> Vec<Option<usize>> {
    let p = &spec.pipelines[pipeline];
    let Some(n) = spec.grid.len(axis).filter(|_| p.reads(axis)) else {
        return vec![None];
    };
    (0..n)
        .filter(|&i| {
            axis != Axis::NTrain || n_train_allowed(spec, pipeline, d, i, smoke, Side::Pipeline)
        })
        .map(Some)
        .collect()
}

/// The `grid.n_train_of` key of one (pipeline, dataset) pair.
pub fn pair_name(pipeline: &str, dataset: &str) -> String {
    format!("{pipeline} @ {dataset}")
}

/// Which entries of an `n_train` restriction table a check reads.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    /// The pipeline's entry (or the pair's).
    Pipeline,
    /// The dataset's entry, after (none where the table has the pair's own entry).
    Dataset,
}

/// Whether `grid.n_train[i]` passes every restriction table in force (`grid.n_train_of`, and
/// in smoke mode `grid.smoke_n_train_of`) on `side`: in a table holding a
/// `"pipeline @ dataset"` entry for the pair, that entry alone decides; otherwise the
/// pipeline's and the dataset's entries must both list the value.
fn n_train_allowed(spec: &Spec, p: usize, d: usize, i: usize, smoke: bool, side: Side) -> bool {
    let Some(all) = &spec.grid.n_train else {
        return true;
    };
    let (pipeline, dataset) = (&spec.pipelines[p].name, &spec.experiment.datasets[d]);
    let pair = pair_name(pipeline, dataset);
    let smoke_of = spec.grid.smoke_n_train_of.as_ref().filter(|_| smoke);
    [spec.grid.n_train_of.as_ref(), smoke_of]
        .into_iter()
        .flatten()
        .all(|of| {
            let entry = match (of.get(&pair), side) {
                (Some(ns), Side::Pipeline) => Some(ns),
                (Some(_), Side::Dataset) => None,
                (None, Side::Pipeline) => of.get(pipeline),
                (None, Side::Dataset) => of.get(dataset),
            };
            entry.is_none_or(|ns| ns.contains(&all[i]))
        })
}

/// Whether dataset `d` runs the point's `n_train` for pipeline `p` (`grid.n_train_of` and, in
/// smoke mode, `grid.smoke_n_train_of` may name a dataset too).
fn dataset_runs(spec: &Spec, d: usize, p: usize, idx: &[Option<usize>; 5], smoke: bool) -> bool {
    let slot = Axis::ALL.iter().position(|&a| a == Axis::NTrain);
    match slot.and_then(|s| idx[s]) {
        Some(i) => n_train_allowed(spec, p, d, i, smoke, Side::Dataset),
        None => true,
    }
}

/// Every grid point of a pipeline on dataset `d`: the product of its axes, the last axis
/// fastest.
fn points(spec: &Spec, pipeline: usize, d: usize, smoke: bool) -> Vec<[Option<usize>; 5]> {
    Axis::ALL
        .into_iter()
        .enumerate()
        .fold(vec![[None; 5]], |acc, (slot, axis)| {
            let values = choices(spec, pipeline, d, axis, smoke);
            acc.iter()
                .flat_map(|p| {
                    values.iter().map(move |&v| {
                        let mut p = *p;
                        p[slot] = v;
                        p
                    })
                })
                .collect()
        })
}

/// The combo of one (dataset, pipeline, grid point).
fn combo(spec: &Spec, dataset: usize, pipeline: usize, idx: [Option<usize>; 5]) -> Combo {
    let p = &spec.pipelines[pipeline];
    let mut at = GridValues {
        features: p.features,
        ..GridValues::default()
    };
    let mut point = BTreeMap::new();
    for (axis, i) in Axis::ALL.into_iter().zip(idx) {
        if let Some(i) = i {
            spec.grid.apply(axis, i, &mut at);
            point.insert(axis.name().to_string(), spec.grid.json(axis, i));
        }
    }
    let point_json = Value::from(serde_json::Map::from_iter(point.clone())).to_string();
    let name = &spec.experiment.datasets[dataset];
    Combo {
        dataset,
        pipeline,
        prefix: format!("{name}|{}|{point_json}|", p.name),
        seed_parts: [
            spec.experiment.seed.to_string(),
            name.clone(),
            p.name.clone(),
            point_json,
        ],
        point,
        budget: CellBudget::resolve(at.epsilon, &p.shares),
        at,
    }
}

/// Trials per cell in smoke mode (`epsilab check`): every grid value runs, so the trial count
/// is what keeps the whole gate within its time budget (docs/ci.md).
pub const SMOKE_TRIALS: u32 = 2;

/// Expands the spec; `smoke` keeps at most [`SMOKE_TRIALS`] trials (and `n_train` to
/// `grid.smoke_n_train_of`).
pub fn plan(spec: &Spec, smoke: bool) -> Plan {
    let trials = if smoke {
        spec.experiment.trials.min(SMOKE_TRIALS)
    } else {
        spec.experiment.trials
    };
    let n_datasets = spec.experiment.datasets.len();
    let combos = (0..n_datasets)
        .flat_map(|d| (0..spec.pipelines.len()).map(move |p| (d, p)))
        .flat_map(|(d, p)| {
            points(spec, p, d, smoke)
                .into_iter()
                .filter(move |idx| dataset_runs(spec, d, p, idx, smoke))
                .map(move |idx| combo(spec, d, p, idx))
        })
        .collect();
    Plan {
        combos,
        trials,
        n_datasets,
        seed: spec.experiment.seed.to_string(),
        datasets: spec.experiment.datasets.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const SPEC: &str = r#"
[experiment]
datasets = ["xwindows"]
name = "t"
seed = 1
trials = 3

[grid]
epsilon = [0.1, 1, 10]

[[pipeline]]
learner = "private_nb"
name = "private"

[[pipeline]]
learner = "nb"
name = "reference"

[report]
x = "epsilon"
"#;

    #[test]
    fn reference_pipelines_skip_the_epsilon_axis() {
        let spec = Spec::parse(SPEC, Path::new("t.toml")).unwrap();
        let p = plan(&spec, false);
        let cells: Vec<Cell> = p.cells().collect();
        assert_eq!(cells.len() as u64, p.n_cells());
        assert_eq!(cells.iter().filter(|c| c.pipeline == 0).count(), 9);
        assert_eq!(cells.iter().filter(|c| c.pipeline == 1).count(), 3);
        let keys: HashSet<_> = cells.iter().map(|c| &c.key).collect();
        assert_eq!(keys.len(), cells.len());
        let seeds: HashSet<_> = cells.iter().map(|c| c.seed).collect();
        assert_eq!(seeds.len(), cells.len());
        let smoke = plan(&spec, true);
        assert_eq!(smoke.n_cells(), 2 * 3 + 2);
    }

    #[test]
    fn keys_and_seeds_do_not_depend_on_the_other_grid_values_or_trials() {
        let spec = Spec::parse(SPEC, Path::new("t.toml")).unwrap();
        let bigger = SPEC
            .replace("trials = 3", "trials = 5")
            .replace("[0.1, 1, 10]", "[0.1, 0.5, 1, 10]");
        let bigger = Spec::parse(&bigger, Path::new("t.toml")).unwrap();
        let small: Vec<Cell> = plan(&spec, false).cells().collect();
        let big = plan(&bigger, false);
        let big_cells: Vec<Cell> = big.cells().collect();
        let keys = big.keys();
        for c in &small {
            assert!(keys.contains(&c.key), "{}", c.key);
            let same = big_cells.iter().find(|b| b.key == c.key).unwrap();
            assert_eq!(same.seed, c.seed);
        }
        assert!(!keys.contains("xwindows|reference|{}|5"));
        assert!(!keys.contains("xwindows|reference|{}|01"));
        assert!(!keys.contains("xwindows|other|{}|0"));
        assert!(
            !plan(&spec, false)
                .keys()
                .contains(&big_cells.last().unwrap().key)
        );
    }

    #[test]
    fn a_billion_trials_plan_without_listing_cells() {
        let text = SPEC.replace("trials = 3", "trials = 1000000000");
        let spec = Spec::parse(&text, Path::new("t.toml")).unwrap();
        let p = plan(&spec, false);
        assert_eq!(p.combos.len(), 4);
        assert_eq!(p.n_cells(), 4_000_000_000);
        assert_eq!(p.cells().nth(5).unwrap().trial, 1);
    }

    #[test]
    fn axes_nest_in_order_with_the_budget_resolved_per_cell() {
        let text = SPEC
            .replace("[grid]", "[grid]\nn_train = [10, 20]")
            .replace(
                "learner = \"private_nb\"",
                "learner = \"private_nb\"\nselection = \"gumbel\"\nfeatures = 2\n\
                 budget = { selection = 0.25, train = 0.75 }",
            );
        let spec = Spec::parse(&text, Path::new("t.toml")).unwrap();
        let p = plan(&spec, false);
        let private: Vec<&Combo> = p.combos.iter().filter(|c| c.pipeline == 0).collect();
        let order: Vec<(Option<f64>, Option<usize>)> = private
            .iter()
            .map(|c| (c.at.epsilon, c.at.n_train))
            .collect();
        assert_eq!(
            order,
            [0.1, 1.0, 10.0]
                .into_iter()
                .flat_map(|e| [(Some(e), Some(10)), (Some(e), Some(20))])
                .collect::<Vec<_>>()
        );
        for c in &private {
            let e = c.at.epsilon.unwrap();
            assert_eq!(c.budget.selection, Some(e * 0.25));
            assert_eq!(c.budget.train, Some(e * 0.75));
            assert_eq!(c.at.features, Some(2), "the pipeline's own T");
            assert!(!c.point.contains_key("features"));
        }
        let reference = p.combos.iter().find(|c| c.pipeline == 1).unwrap();
        assert_eq!(reference.budget, CellBudget::default());
        assert_eq!(
            reference.point.keys().collect::<Vec<_>>(),
            ["n_train"],
            "a non-private pipeline skips epsilon"
        );
    }

    /// The group streams keep the labels the runner used before the plan derived them, so
    /// every split and n_train subset (and so every stored result) stays the same.
    #[test]
    fn group_streams_keep_their_derivation_labels() {
        use rand::RngCore;
        let spec = Spec::parse(SPEC, Path::new("t.toml")).unwrap();
        let p = plan(&spec, false);
        for trial in [0, 7] {
            let t = trial.to_string();
            let mut split = rng_from(&["split", "1", "xwindows", &t]);
            assert_eq!(p.split_rng(0, trial).next_u64(), split.next_u64());
            let mut sub = rng_from(&["n_train", "1", "xwindows", &t]);
            assert_eq!(p.subsample_rng(0, trial).next_u64(), sub.next_u64());
        }
        assert_ne!(p.split_rng(0, 0).next_u64(), p.split_rng(0, 1).next_u64());
    }
}
