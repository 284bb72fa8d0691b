//! The plan: a spec expanded into cells, one per (dataset, pipeline, grid point, trial).
//!
//! A pipeline only varies along the axes it uses (a non-private learner ignores `epsilon`), so
//! reference models are run once per trial and drawn as reference lines. Each cell's seed is
//! derived from what the cell *is*, so results do not depend on thread count or order, and a
//! stored record stays valid when a spec only gains trials or grid values.
//!
//! The plan is streamed: it holds one [`Combo`] per (dataset, pipeline, grid point) and makes
//! the cells of a trial on demand, so its memory does not depend on the number of trials.

use crate::analysis::probe_uses_epsilon;
use crate::learners::{Threshold, learner_info};
use crate::rng::derive_seed;
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
    pub epsilon: Option<f64>,
    pub threshold: Option<Threshold>,
    /// Number of features T the selection step keeps.
    pub features: Option<usize>,
    /// Logistic regression's lambda from the grid.
    pub lambda: Option<f64>,
    /// Size of the random training subset.
    pub n_train: Option<usize>,
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
    pub epsilon: Option<f64>,
    pub threshold: Option<Threshold>,
    pub features: Option<usize>,
    pub lambda: Option<f64>,
    pub n_train: Option<usize>,
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
            epsilon: self.epsilon,
            threshold: self.threshold,
            features: self.features,
            lambda: self.lambda,
            n_train: self.n_train,
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

    /// A membership test for stored keys, without listing the cells.
    pub fn keys(&self) -> KeySet {
        KeySet {
            prefixes: self.combos.iter().map(|c| c.prefix.clone()).collect(),
            trials: self.trials,
        }
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

/// Value lists in smoke mode: the first and last of each axis.
fn shrink<T: Clone>(v: &[T], smoke: bool) -> Vec<T> {
    if smoke && v.len() > 2 {
        vec![v[0].clone(), v[v.len() - 1].clone()]
    } else {
        v.to_vec()
    }
}

/// Expands the spec; `smoke` keeps at most two trials and two values per axis.
pub fn plan(spec: &Spec, smoke: bool) -> Plan {
    let trials = if smoke {
        spec.experiment.trials.min(2)
    } else {
        spec.experiment.trials
    };
    let seed = spec.experiment.seed.to_string();
    let mut out = Vec::new();
    for (di, dataset) in spec.experiment.datasets.iter().enumerate() {
        for (pi, p) in spec.pipelines.iter().enumerate() {
            let info = p.learner.as_deref().and_then(learner_info);
            let private_selection = p.selection.as_deref().is_some_and(|s| s != "nonprivate");
            let uses_epsilon = info.is_some_and(|i| i.uses_epsilon)
                || private_selection
                || p.probe.as_deref().is_some_and(probe_uses_epsilon);
            let epsilons: Vec<Option<f64>> = match &spec.grid.epsilon {
                Some(e) if uses_epsilon => shrink(e, smoke).into_iter().map(Some).collect(),
                _ => vec![None],
            };
            let thresholds: Vec<Option<Threshold>> = match &spec.grid.threshold {
                Some(t) if info.is_some_and(|i| i.params.contains(&"threshold")) => {
                    shrink(t, smoke).into_iter().map(Some).collect()
                }
                _ => vec![p.threshold],
            };
            let takes_t = p.selection.is_some() || p.probe.is_some();
            let features: Vec<Option<usize>> = match (&spec.grid.features, takes_t) {
                (Some(f), true) => shrink(f, smoke).into_iter().map(Some).collect(),
                (None, true) => vec![p.features],
                _ => vec![None],
            };
            let lambdas: Vec<Option<f64>> = match &spec.grid.lambda {
                Some(l) if info.is_some_and(|i| i.params.contains(&"lambda")) => {
                    shrink(l, smoke).into_iter().map(Some).collect()
                }
                _ => vec![None],
            };
            let sizes: Vec<Option<usize>> = match &spec.grid.n_train {
                Some(n) => shrink(n, smoke).into_iter().map(Some).collect(),
                None => vec![None],
            };
            let mut combos = Vec::new();
            for &e in &epsilons {
                for &th in &thresholds {
                    for &t in &features {
                        for &l in &lambdas {
                            for &n in &sizes {
                                combos.push((e, th, t, l, n));
                            }
                        }
                    }
                }
            }
            for (eps, thr, t, lambda, n_train) in combos {
                let mut point = BTreeMap::new();
                if let Some(e) = eps {
                    point.insert("epsilon".to_string(), Value::from(e));
                }
                if let (Some(v), Some(_)) = (thr, &spec.grid.threshold) {
                    point.insert(
                        "threshold".to_string(),
                        serde_json::to_value(v).expect("threshold"),
                    );
                }
                if let (Some(v), Some(_)) = (t, &spec.grid.features) {
                    point.insert("features".to_string(), Value::from(v));
                }
                if let Some(v) = lambda {
                    point.insert("lambda".to_string(), Value::from(v));
                }
                if let Some(v) = n_train {
                    point.insert("n_train".to_string(), Value::from(v));
                }
                let point_json = serde_json::to_string(&point).expect("point");
                out.push(Combo {
                    dataset: di,
                    pipeline: pi,
                    prefix: format!("{dataset}|{}|{point_json}|", p.name),
                    seed_parts: [seed.clone(), dataset.clone(), p.name.clone(), point_json],
                    point,
                    epsilon: eps,
                    threshold: thr,
                    features: t,
                    lambda,
                    n_train,
                });
            }
        }
    }
    Plan {
        combos: out,
        trials,
        n_datasets: spec.experiment.datasets.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const SPEC: &str = r#"
[experiment]
name = "t"
trials = 3
seed = 1
datasets = ["xwindows"]
[grid]
epsilon = [0.1, 1, 10]
[[pipeline]]
name = "private"
learner = "private_nb"
[[pipeline]]
name = "reference"
learner = "nb"
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
        assert_eq!(smoke.n_cells(), 2 * 2 + 2);
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
}
