//! Appendix B's sample complexity: per dataset and pipeline, the smallest training size that
//! reaches the reference's accuracy. A leaf under the tables and the verdicts that both read it.

use crate::spec::Spec;
use crate::stats::mean_se;
use crate::store::TrialRecord;
use std::collections::BTreeMap;

/// One row of an appendix B table: a pipeline's smallest sufficient training size.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleComplexityRow {
    pub dataset: String,
    pub pipeline: String,
    /// Smallest N reaching the target, or `None` (not reached; `n` is then the largest N).
    pub reached: Option<usize>,
    pub n: usize,
    pub accuracy: f64,
    pub se: f64,
    /// The best other grid values at that N (e.g. lambda).
    pub params: String,
    /// N over the reference pipeline's own N.
    pub multiplier: Option<f64>,
    pub target: f64,
}

/// Appendix B: per dataset and pipeline, the smallest `n_train` whose mean test accuracy (best
/// over the other grid values, e.g. lambda) is within the tolerance of the reference pipeline's
/// best accuracy at the largest `n_train`, and the multiplier over the reference's own smallest
/// such size. Choosing the best lambda on test accuracy is optimistic (like tuning on a large
/// validation set) and not private: the table says so.
pub fn sample_complexity_rows(spec: &Spec, records: &[TrialRecord]) -> Vec<SampleComplexityRow> {
    sample_complexity_rows_read(spec, records, |_| Reading::default())
}

/// How a sample-complexity search is read for one dataset: the report's own reading by default;
/// an ablation's hypothesis about how the published search was read otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reading {
    /// The search stops at this N: the target is the reference there, and a series not within
    /// tolerance by then is reported at it (with a multiplier), as a capped search reports it.
    pub largest_n: Option<usize>,
    /// The target accuracy instead of the reference at the largest N.
    pub target: Option<f64>,
}

/// One series' test accuracies: n_train -> its other grid values -> the trials' accuracies.
type Cells = BTreeMap<usize, BTreeMap<String, Vec<f64>>>;

/// The records' test accuracies by (dataset, pipeline) (records without `n_train` or an
/// accuracy left out).
fn accuracies_by_size(records: &[TrialRecord]) -> BTreeMap<(String, String), Cells> {
    let mut by: BTreeMap<(String, String), Cells> = BTreeMap::new();
    for r in records {
        let (Some(acc), Some(n)) = (
            r.test_accuracy,
            r.params.get("n_train").and_then(|v| v.as_u64()),
        ) else {
            continue;
        };
        let rest: Vec<String> = r
            .params
            .iter()
            .filter(|(k, _)| *k != "n_train")
            .map(|(k, v)| super::summary::param_text(k, v))
            .collect();
        by.entry((r.dataset.clone(), r.pipeline.clone()))
            .or_default()
            .entry(n as usize)
            .or_default()
            .entry(rest.join(", "))
            .or_default()
            .push(acc);
    }
    by
}

/// [`sample_complexity_rows`] with each dataset's search read as `reading` says.
pub fn sample_complexity_rows_read(
    spec: &Spec,
    records: &[TrialRecord],
    reading: impl Fn(&str) -> Reading,
) -> Vec<SampleComplexityRow> {
    let reference = spec.report.reference.clone().unwrap_or_default();
    let tol = spec.report.tolerance.unwrap_or(0.02);
    let by = accuracies_by_size(records);
    let best = |cells: &Cells| -> Vec<(usize, f64, f64, String)> {
        cells
            .iter()
            .filter_map(|(&n, ps)| {
                ps.iter()
                    .map(|(p, v)| {
                        let (m, se) = mean_se(v);
                        (n, m, se, p.clone())
                    })
                    .max_by(|a, b| a.1.total_cmp(&b.1))
            })
            .collect()
    };
    let mut rows = Vec::new();
    for d in &spec.experiment.datasets {
        let Some(ref_cells) = by.get(&(d.clone(), reference.clone())) else {
            continue;
        };
        let read = reading(d);
        let cap = read.largest_n.unwrap_or(usize::MAX);
        let capped = |cells: &Cells| -> Vec<(usize, f64, f64, String)> {
            best(cells).into_iter().filter(|c| c.0 <= cap).collect()
        };
        let ref_curve = capped(ref_cells);
        let Some(&(_, at_largest, _, _)) = ref_curve.last() else {
            continue;
        };
        let target = read.target.unwrap_or(at_largest);
        let first_within = |curve: &[(usize, f64, f64, String)]| {
            curve.iter().find(|c| c.1 >= target - tol).cloned()
        };
        let ref_n = first_within(&ref_curve).map(|c| c.0);
        for p in &spec.pipelines {
            let Some(cells) = by.get(&(d.clone(), p.name.clone())) else {
                continue;
            };
            let curve = capped(cells);
            // A capped search reports a series that never got within tolerance at the cap,
            // if the trials reach it.
            let hit = first_within(&curve).or_else(|| {
                curve
                    .last()
                    .filter(|c| read.largest_n == Some(c.0))
                    .cloned()
            });
            let (n, accuracy, se, params) = hit
                .clone()
                .or_else(|| curve.last().cloned())
                .unwrap_or((0, f64::NAN, f64::NAN, String::new()));
            rows.push(SampleComplexityRow {
                dataset: d.clone(),
                pipeline: p.name.clone(),
                reached: hit.as_ref().map(|h| h.0),
                n,
                accuracy,
                se,
                params,
                multiplier: hit.and(ref_n).map(|r| n as f64 / r.max(1) as f64),
                target,
            });
        }
    }
    rows
}
