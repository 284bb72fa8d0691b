//! The plan: a spec expanded into cells, one per (dataset, pipeline, grid point, trial).
//!
//! A pipeline only varies along the axes it uses (a non-private learner ignores `epsilon`), so
//! reference models are run once per trial and drawn as reference lines. Each cell's seed is
//! derived from what the cell *is*, so results do not depend on thread count or order.

use crate::analysis::probe_uses_epsilon;
use crate::learners::{Threshold, learner_info};
use crate::rng::derive_seed;
use crate::spec::Spec;
use serde_json::Value;
use std::collections::BTreeMap;

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

/// All cells of a spec, in a fixed order.
#[derive(Debug, Clone)]
pub struct Plan {
    pub cells: Vec<Cell>,
    pub trials: u32,
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
    let mut cells = Vec::new();
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
                {
                    {
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
                        for trial in 0..trials {
                            let tr = trial.to_string();
                            cells.push(Cell {
                                dataset: di,
                                pipeline: pi,
                                key: format!("{dataset}|{}|{point_json}|{trial}", p.name),
                                seed: derive_seed(&[&seed, dataset, &p.name, &point_json, &tr]),
                                point: point.clone(),
                                trial,
                                epsilon: eps,
                                threshold: thr,
                                features: t,
                                lambda,
                                n_train,
                            });
                        }
                    }
                }
            }
        }
    }
    Plan { cells, trials }
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
        assert_eq!(p.cells.iter().filter(|c| c.pipeline == 0).count(), 9);
        assert_eq!(p.cells.iter().filter(|c| c.pipeline == 1).count(), 3);
        let keys: std::collections::HashSet<_> = p.cells.iter().map(|c| &c.key).collect();
        assert_eq!(keys.len(), p.cells.len());
        let seeds: std::collections::HashSet<_> = p.cells.iter().map(|c| c.seed).collect();
        assert_eq!(seeds.len(), p.cells.len());
        let smoke = plan(&spec, true);
        assert_eq!(smoke.cells.len(), 2 * 2 + 2);
    }
}
