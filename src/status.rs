//! How far a run is: its progress bar, durations, and `epsilab status` of a results folder.

use crate::data::DataDir;
use crate::error::{Error, Result};
use crate::plan::plan;
use crate::runner::results_dir;
use crate::shard::{Shard, group_of, partition, shard_cells, sizes};
use crate::spec::Spec;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

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

pub(crate) fn progress_bar(show: bool, len: u64) -> ProgressBar {
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
    /// Whether the stored results are of this spec, its data and programs (what `run` would
    /// refuse), and what an unfinished forced run left.
    pub standing: crate::runner::Standing,
}

/// Trials done and planned in `out/<experiment>`, and whether they are of the spec as it is
/// ([`crate::runner::standing`]). The shard count comes from `shards`, else from
/// the shard record files present (an unsharded folder has none).
pub fn status(
    spec: &Spec,
    data_dir: &DataDir,
    out: &std::path::Path,
    smoke: bool,
    shards: Option<usize>,
) -> Result<Status> {
    if shards == Some(0) {
        return Err(Error::param(
            "--shards",
            "must be at least 1 (the number of shards the spec was run with)",
        ));
    }
    let dir = results_dir(spec, out, smoke);
    let standing = crate::runner::standing(spec, data_dir, &dir, smoke)?;
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
            .filter_map(|f| Shard::of_records_file(f.file_name()?.to_str()?))
            .map(|s| s.count)
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
        standing,
    })
}
