//! Shards: a deterministic partition of a spec's trial plan for job arrays (Slurm, a Kubernetes
//! indexed Job, a CI matrix).
//!
//! The unit of work is the runner's group, one (dataset, trial): its pipelines share one split
//! and one set of counts, so a group never straddles two shards. Groups are dealt by an
//! *estimated* cost (rows × features × the pipelines' cost weights, see [`Partition`]), so
//! shards are balanced by expected work, not by count alone, and the assignment depends only on
//! the spec and its data: every shard computes the same partition on its own, and a shard rerun
//! alone (after a kill or a cancel) runs exactly its own groups again.
//!
//! Each shard appends to its own record file (`trials.shard-I-of-N.jsonl`), so array tasks on
//! a shared filesystem never write the same file; readers merge every record file of a folder.

use crate::data::{DataDir, Dataset, DatasetDef};
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::spec::Spec;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Shard `index` of `count` (0-based, like `SLURM_ARRAY_TASK_ID` with `--array=0-(N-1)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = Error;

    /// `I/N` with `0 <= I < N`.
    fn from_str(s: &str) -> Result<Shard> {
        let bad =
            |why: &str| Error::param("shard", format!("`{s}`: {why} (expected I/N, 0 <= I < N)"));
        let (i, n) = s.split_once('/').ok_or_else(|| bad("no `/`"))?;
        let index: usize = i
            .trim()
            .parse()
            .map_err(|_| bad("I is not a whole number"))?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| bad("N is not a whole number"))?;
        Shard::new(index, count).map_err(|_| bad("I must be below N and N at least 1"))
    }
}

/// Environment variables an array engine sets, in the order they are looked for.
pub const ENV_HELP: &str = "SLURM_ARRAY_TASK_ID (minus SLURM_ARRAY_TASK_MIN) of \
SLURM_ARRAY_TASK_COUNT; else EPSILAB_SHARD_INDEX of EPSILAB_SHARD_COUNT; else \
JOB_COMPLETION_INDEX (a Kubernetes indexed Job) of EPSILAB_SHARD_COUNT";

impl Shard {
    pub fn new(index: usize, count: usize) -> Result<Shard> {
        if count == 0 || index >= count {
            return Err(Error::param(
                "shard",
                format!(
                    "shard {index}/{count}: the index must be below the count, and the count at least 1"
                ),
            ));
        }
        Ok(Shard { index, count })
    }

    /// The shard of an array task, from its environment (see [`ENV_HELP`]).
    pub fn from_env() -> Result<Shard> {
        Shard::from_vars(|k| std::env::var(k).ok())
    }

    /// [`Shard::from_env`] over any variable lookup (testable without touching the process).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Shard> {
        let num = |k: &str| -> Result<Option<usize>> {
            match var(k) {
                None => Ok(None),
                Some(v) => v.trim().parse().map(Some).map_err(|_| {
                    Error::param(
                        "shard",
                        format!("environment variable {k}=`{v}` is not a whole number"),
                    )
                }),
            }
        };
        if let (Some(id), Some(count)) =
            (num("SLURM_ARRAY_TASK_ID")?, num("SLURM_ARRAY_TASK_COUNT")?)
        {
            let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let index = id.checked_sub(min).ok_or_else(|| {
                Error::param(
                    "shard",
                    format!("SLURM_ARRAY_TASK_ID {id} is below SLURM_ARRAY_TASK_MIN {min}"),
                )
            })?;
            return Shard::new(index, count);
        }
        let count = num("EPSILAB_SHARD_COUNT")?;
        let index = match num("EPSILAB_SHARD_INDEX")? {
            Some(i) => Some(i),
            None => num("JOB_COMPLETION_INDEX")?,
        };
        match (index, count) {
            (Some(i), Some(n)) => Shard::new(i, n),
            _ => Err(Error::param(
                "shard",
                format!("--shard env: no array task in the environment; looked for {ENV_HELP}"),
            )),
        }
    }

    /// This shard's record file inside the results folder.
    pub fn records_file(&self) -> String {
        format!("trials.shard-{}-of-{}.jsonl", self.index, self.count)
    }

    /// This shard's provenance file inside the results folder, beside its records.
    pub fn provenance_file(&self) -> String {
        format!("provenance.shard-{}-of-{}.json", self.index, self.count)
    }

    /// The shard whose record file is called `name` ([`Shard::records_file`]), if it is one.
    pub fn of_records_file(name: &str) -> Option<Shard> {
        let (index, count) = name
            .strip_prefix("trials.shard-")?
            .strip_suffix(".jsonl")?
            .split_once("-of-")?;
        Shard::new(index.parse().ok()?, count.parse().ok()?).ok()
    }
}

/// Which shard runs each (dataset, trial) group.
///
/// Every group of one dataset costs the same (the same pipelines and grid points), so the
/// longest-processing-time rule reduces to a rotation: datasets in decreasing order of group cost
/// (ties by index), each dealing its trials round-robin onto the shards, starting where the
/// previous dataset stopped. Each shard gets ⌊T/N⌋ or ⌈T/N⌉ groups of every dataset and the loads
/// differ by at most one group per dataset; `shard_of` is O(1), so plans of any size stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    count: usize,
    offsets: Vec<usize>,
}

impl Partition {
    /// `group_cost[d]`: estimated cost of one group of dataset `d`; `trials` groups each.
    pub fn new(group_cost: &[u64], trials: u32, count: usize) -> Partition {
        let mut order: Vec<usize> = (0..group_cost.len()).collect();
        order.sort_by(|&a, &b| group_cost[b].cmp(&group_cost[a]).then(a.cmp(&b)));
        let mut offsets = vec![0; group_cost.len()];
        let mut next = 0usize;
        for d in order {
            offsets[d] = next;
            next = (next + trials as usize % count.max(1)) % count.max(1);
        }
        Partition {
            count: count.max(1),
            offsets,
        }
    }

    pub fn shard_of(&self, dataset: usize, trial: u32) -> usize {
        (self.offsets[dataset] + trial as usize % self.count) % self.count
    }

    /// Number of groups of dataset `d` (of `trials`) that fall to `shard`.
    pub fn groups_in(&self, dataset: usize, trials: u32, shard: usize) -> u64 {
        let n = self.count as u64;
        let t = u64::from(trials);
        // Trial t goes to (offset + t) mod n: shard s gets the t ≡ s − offset (mod n).
        let first = (shard as u64 + n - self.offsets[dataset] as u64 % n) % n;
        if first >= t {
            0
        } else {
            (t - first).div_ceil(n)
        }
    }
}

/// Each dataset's (rows, features), and the datasets read to learn them.
pub type Sizes = (Vec<(usize, usize)>, Vec<Option<Arc<Dataset>>>);

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn parses_and_refuses() {
        assert_eq!(
            "2/4".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 4 }
        );
        for bad in ["4/4", "1/0", "a/2", "3", "-1/2"] {
            let e = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(e.contains("shard"), "{bad}: {e}");
        }
    }

    #[test]
    fn reads_slurm_then_generic_then_kubernetes_variables() {
        let env = |pairs: &[(&str, &str)]| {
            let m: HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Shard::from_vars(move |k| m.get(k).cloned())
        };
        let s = env(&[
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_MIN", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ]);
        assert_eq!(s.unwrap(), Shard { index: 1, count: 3 });
        let s = env(&[("EPSILAB_SHARD_INDEX", "0"), ("EPSILAB_SHARD_COUNT", "2")]);
        assert_eq!(s.unwrap(), Shard { index: 0, count: 2 });
        let s = env(&[("JOB_COMPLETION_INDEX", "1"), ("EPSILAB_SHARD_COUNT", "2")]);
        assert_eq!(s.unwrap(), Shard { index: 1, count: 2 });
        assert!(
            env(&[])
                .unwrap_err()
                .to_string()
                .contains("SLURM_ARRAY_TASK_ID")
        );
        assert!(
            env(&[
                ("SLURM_ARRAY_TASK_ID", "x"),
                ("SLURM_ARRAY_TASK_COUNT", "2")
            ])
            .is_err()
        );
    }

    #[test]
    fn partition_balances_cost_not_count() {
        // Two datasets, 5 trials each, on 2 shards: by dataset alone one shard would get all the
        // expensive groups; the rotation gives each shard 2 or 3 of each, and the expensive
        // dataset's extra group and the cheap dataset's extra group go to different shards.
        let p = Partition::new(&[10, 100], 5, 2);
        let load = |s: usize| -> u64 {
            (0..5u32)
                .map(|t| {
                    u64::from(p.shard_of(0, t) == s) * 10 + u64::from(p.shard_of(1, t) == s) * 100
                })
                .sum()
        };
        assert_eq!(load(0) + load(1), 550);
        assert_eq!(load(0).abs_diff(load(1)), 90, "{} vs {}", load(0), load(1));
        // groups_in agrees with shard_of on every shard, dataset and count.
        for count in 1..6 {
            let p = Partition::new(&[3, 7, 7, 1], 11, count);
            for d in 0..4 {
                for s in 0..count {
                    let n = (0..11u32).filter(|&t| p.shard_of(d, t) == s).count() as u64;
                    assert_eq!(
                        p.groups_in(d, 11, s),
                        n,
                        "count {count} dataset {d} shard {s}"
                    );
                }
            }
        }
        // Stable: the same inputs give the same partition.
        assert_eq!(Partition::new(&[3, 7], 4, 3), Partition::new(&[3, 7], 4, 3));
    }
}
