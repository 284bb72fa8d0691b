//! Verdicts: a spec's `[paper]` (published numbers and qualitative claims) against our trials.
//!
//! A [`PaperCell`] is `reproduced` when |ours − published| <= its tolerance, `differs` otherwise,
//! `missing` when no stored trial matches it. A [`PaperClaim`] ("series A above series B by at
//! least `margin` for x in [x_min, x_max]") `holds` when the smallest difference A − B over the
//! x values where both series exist is >= `margin`; a series without the x axis (a reference
//! line) counts at every x.

use super::ratio::{RatioVerdict, ratio_verdict};
use super::sample_complexity::{Reading, SampleComplexityRow};
use super::slope::{SlopeVerdict, slope_verdict};
use super::summary::{is_accuracy, metric_value, params_match, value_eq, x_position, x_text};
use crate::spec::{PaperCell, PaperClaim, PaperRatio, PaperSlope, Spec, Target};
use crate::stats::mean_se;
use crate::store::TrialRecord;
use serde_json::Value;
use std::collections::BTreeMap;

/// Our mean and standard error for one published cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ours {
    pub mean: f64,
    pub se: f64,
    pub n: usize,
}

/// The outcome for one published number.
#[derive(Debug, Clone, PartialEq)]
pub enum CellVerdict {
    /// Within tolerance; `diff` = ours − published.
    Reproduced { ours: Ours, diff: f64 },
    /// Outside tolerance; `diff` = ours − published.
    Differs { ours: Ours, diff: f64 },
    /// No stored trial matches the cell.
    Missing,
}

/// The outcome for one qualitative claim; `worst` is the smallest (above − below) over the
/// checked x values and `at` the x where it occurs (`None` for two reference lines); `gap`
/// the spread of that difference over the same x values.
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimVerdict {
    Holds {
        worst: f64,
        at: Option<f64>,
        gap: Gap,
    },
    Fails {
        worst: f64,
        at: Option<f64>,
        gap: Gap,
    },
    /// The claim is false at every checked x: `above` − `below` is below the margin everywhere.
    Contradicted {
        worst: f64,
        at: Option<f64>,
        gap: Gap,
    },
    /// One of the series has no trials in the x range.
    Missing,
}

/// The difference (above − below) of a claim over its checked x values: largest, where, mean
/// and how many x values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gap {
    pub best: f64,
    pub best_at: Option<f64>,
    pub mean: f64,
    pub points: usize,
}

verdict_words!(CellVerdict {
    Reproduced => "reproduced",
    Differs => "differs",
    Missing => "missing",
});

verdict_words!(ClaimVerdict {
    Holds => "holds",
    Fails => "fails",
    Contradicted => "contradicted",
    Missing => "missing",
});

impl ClaimVerdict {
    /// (worst, where, spread) of a claim with trials.
    pub fn measured(&self) -> Option<(f64, Option<f64>, Gap)> {
        match self {
            ClaimVerdict::Holds { worst, at, gap }
            | ClaimVerdict::Fails { worst, at, gap }
            | ClaimVerdict::Contradicted { worst, at, gap } => Some((*worst, *at, *gap)),
            ClaimVerdict::Missing => None,
        }
    }

    /// Whether the claim does not hold (fails or is contradicted).
    pub fn differs(&self) -> bool {
        matches!(
            self,
            ClaimVerdict::Fails { .. } | ClaimVerdict::Contradicted { .. }
        )
    }
}

/// Every verdict of a spec, in `[paper]` order.
#[derive(Debug, Clone)]
pub struct Verdicts<'a> {
    pub cells: Vec<(&'a PaperCell, CellVerdict)>,
    pub claims: Vec<(&'a PaperClaim, ClaimVerdict)>,
    pub slopes: Vec<(&'a PaperSlope, SlopeVerdict)>,
    pub ratios: Vec<(&'a PaperRatio, RatioVerdict)>,
}

impl Verdicts<'_> {
    /// (reproduced or holding, total) over cells and claims.
    pub fn tally(&self) -> (usize, usize) {
        let ok = self
            .cells
            .iter()
            .filter(|(_, v)| matches!(v, CellVerdict::Reproduced { .. }))
            .count()
            + self
                .claims
                .iter()
                .filter(|(_, v)| matches!(v, ClaimVerdict::Holds { .. }))
                .count()
            + self
                .slopes
                .iter()
                .filter(|(_, v)| matches!(v, SlopeVerdict::Holds { .. }))
                .count()
            + self.ratios.iter().filter(|(_, v)| v.holds()).count();
        let total = self.cells.len() + self.claims.len() + self.slopes.len() + self.ratios.len();
        (ok, total)
    }
}

impl Verdicts<'_> {
    /// (target, reproduced or holding, total) per kind of target present, published first.
    pub fn tally_by_target(&self) -> Vec<(Target, usize, usize)> {
        let all: Vec<(Target, bool)> = (self.cells.iter())
            .map(|(c, v)| (c.target, matches!(v, CellVerdict::Reproduced { .. })))
            .chain(
                (self.claims.iter())
                    .map(|(c, v)| (c.target, matches!(v, ClaimVerdict::Holds { .. }))),
            )
            .chain(
                (self.slopes.iter())
                    .map(|(c, v)| (c.target, matches!(v, SlopeVerdict::Holds { .. }))),
            )
            .chain(self.ratios.iter().map(|(c, v)| (c.target, v.holds())))
            .collect();
        Target::ALL
            .iter()
            .map(|&t| {
                let of: Vec<bool> = all.iter().filter(|a| a.0 == t).map(|a| a.1).collect();
                (t, of.iter().filter(|&&ok| ok).count(), of.len())
            })
            .filter(|&(_, _, n)| n > 0)
            .collect()
    }

    /// How many claims (false at every checked x) and scaling laws (ruled out by the slope's
    /// 95% interval) are contradicted.
    pub fn contradicted(&self) -> usize {
        (self.claims.iter())
            .filter(|(_, v)| matches!(v, ClaimVerdict::Contradicted { .. }))
            .count()
            + (self.slopes.iter())
                .filter(|(_, v)| matches!(v, SlopeVerdict::Contradicted { .. }))
                .count()
    }
}

/// Evaluates the spec's `[paper]` against its records.
pub fn evaluate<'a>(spec: &'a Spec, records: &[TrialRecord]) -> Verdicts<'a> {
    Verdicts {
        cells: spec
            .paper
            .cell
            .iter()
            .map(|c| (c, cell_verdict(spec, records, c)))
            .collect(),
        claims: spec
            .paper
            .claim
            .iter()
            .map(|c| (c, claim_verdict(spec, records, c)))
            .collect(),
        slopes: spec
            .paper
            .slope
            .iter()
            .map(|c| (c, slope_verdict(spec, records, c)))
            .collect(),
        ratios: spec
            .paper
            .ratio
            .iter()
            .map(|c| (c, ratio_verdict(spec, records, c)))
            .collect(),
    }
}

/// The verdict of one published number against the stored trials.
pub fn cell_verdict(spec: &Spec, records: &[TrialRecord], c: &PaperCell) -> CellVerdict {
    if c.metric == "multiplier" {
        return multiplier_verdict(spec, records, c, |_| Reading::default()).0;
    }
    let axis = spec.report.x.as_deref();
    // A cell whose grid values name the x axis (`params = { epsilon = 1 }` in a spec drawn over
    // epsilon) takes that value as its x.
    let mut params = c.params.clone();
    let x = c.x.clone().or_else(|| axis.and_then(|a| params.remove(a)));
    let vals: Vec<f64> = records
        .iter()
        .filter(|r| r.dataset == c.dataset && r.pipeline == c.pipeline)
        .filter(|r| params_match(r, &params))
        .filter(|r| match (axis.and_then(|a| r.params.get(a)), &x) {
            (None, _) => true,
            (Some(rv), Some(cv)) => value_eq(rv, cv),
            (Some(_), None) => false,
        })
        .filter_map(|r| metric_value(r, &c.metric))
        .collect();
    if vals.is_empty() {
        return CellVerdict::Missing;
    }
    let (mean, se) = mean_se(&vals);
    let ours = Ours {
        mean,
        se,
        n: vals.len(),
    };
    let diff = mean - c.value;
    if diff.abs() <= c.tolerance {
        CellVerdict::Reproduced { ours, diff }
    } else {
        CellVerdict::Differs { ours, diff }
    }
}

/// Mean of a series per x position (key `None`: a reference line without the x axis).
fn series(
    spec: &Spec,
    records: &[TrialRecord],
    dataset: &str,
    pipeline: &str,
    metric: &str,
    params: &BTreeMap<String, Value>,
    at: Option<&Value>,
) -> BTreeMap<Option<i64>, (f64, Vec<f64>)> {
    let axis = spec.report.x.as_deref();
    let mut out: BTreeMap<Option<i64>, (f64, Vec<f64>)> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.dataset == dataset && r.pipeline == pipeline && params_match(r, params))
    {
        let Some(v) = metric_value(r, metric) else {
            continue;
        };
        let rx = axis.and_then(|a| r.params.get(a));
        if let Some(at) = at {
            // One point of the axis, used like a reference line.
            if rx.is_some_and(|rx| value_eq(rx, at)) {
                out.entry(None).or_insert((f64::NAN, Vec::new())).1.push(v);
            }
            continue;
        }
        let x = axis
            .and_then(|a| r.params.get(a))
            .map(|xv| x_position(spec, xv));
        // Exact float keys: x positions are grid values, identical across records.
        let key = x.map(|p| (p * 1e9).round() as i64);
        out.entry(key)
            .or_insert((x.unwrap_or(f64::NAN), Vec::new()))
            .1
            .push(v);
    }
    out
}

fn claim_verdict(spec: &Spec, records: &[TrialRecord], c: &PaperClaim) -> ClaimVerdict {
    claim_verdict_with(spec, records, c, [&c.params, &c.params])
}

/// A claim's verdict with the grid values of its `above` and `below` series given separately
/// (an ablation hypothesis selects its own series only).
pub fn claim_verdict_with(
    spec: &Spec,
    records: &[TrialRecord],
    c: &PaperClaim,
    [above, below]: [&BTreeMap<String, Value>; 2],
) -> ClaimVerdict {
    let a = series(
        spec,
        records,
        &c.dataset,
        &c.above,
        &c.metric,
        above,
        c.above_x.as_ref(),
    );
    let b = series(
        spec,
        records,
        &c.dataset,
        &c.below,
        &c.metric,
        below,
        c.below_x.as_ref(),
    );
    let in_range = |x: f64| c.x_min.is_none_or(|m| x >= m) && c.x_max.is_none_or(|m| x <= m);
    let mean = |s: &BTreeMap<Option<i64>, (f64, Vec<f64>)>, k: Option<i64>| {
        s.get(&k)
            .or_else(|| s.get(&None))
            .map(|(_, v)| mean_se(v).0)
    };
    let mut keys: Vec<(Option<i64>, f64)> = a
        .iter()
        .chain(b.iter())
        .map(|(k, (x, _))| (*k, *x))
        .filter(|(k, x)| k.is_none() || in_range(*x))
        .collect();
    keys.sort_by_key(|k| k.0);
    keys.dedup_by_key(|k| k.0);
    // A reference line only counts alone when neither series varies along x.
    if keys.iter().any(|k| k.0.is_some()) {
        keys.retain(|k| k.0.is_some());
    }
    let diffs: Vec<(f64, Option<f64>)> = keys
        .into_iter()
        .filter_map(|(k, x)| Some((mean(&a, k)? - mean(&b, k)?, k.map(|_| x))))
        .collect();
    judge_claim(c.margin, c.strict, &diffs)
}

/// The verdict from the differences (above − below, x) over the checked x values: holds when
/// the smallest is at least `margin`; contradicted when even the largest is below it (the
/// claim, margin included, is false at every x: "ahead by about 20 points" where we are ahead
/// by 10 at best is contradicted, as "within 3 points" is 3.2 points apart); fails when it
/// holds at some x and not at others. A `strict` claim needs more than the margin: a tie at
/// the margin counts against it.
fn judge_claim(margin: f64, strict: bool, diffs: &[(f64, Option<f64>)]) -> ClaimVerdict {
    let by = |a: &&(f64, Option<f64>), b: &&(f64, Option<f64>)| a.0.total_cmp(&b.0);
    let (Some(&(worst, at)), Some(&(best, best_at))) =
        (diffs.iter().min_by(by), diffs.iter().max_by(by))
    else {
        return ClaimVerdict::Missing;
    };
    let gap = Gap {
        best,
        best_at,
        mean: diffs.iter().map(|d| d.0).sum::<f64>() / diffs.len() as f64,
        points: diffs.len(),
    };
    let meets = |d: f64| if strict { d > margin } else { d >= margin };
    if meets(worst) {
        ClaimVerdict::Holds { worst, at, gap }
    } else if !meets(best) {
        ClaimVerdict::Contradicted { worst, at, gap }
    } else {
        ClaimVerdict::Fails { worst, at, gap }
    }
}

/// Appendix B multipliers are powers of two: compared in doublings, log2(ours / published),
/// with the tolerance in doublings. A pipeline that never reaches the target differs. The cell's
/// `params` (e.g. `{ epsilon = 0.05 }`) select the series' trials (the reference keeps its best
/// over its own grid); the row is returned beside the verdict.
pub fn multiplier_verdict(
    spec: &Spec,
    records: &[TrialRecord],
    c: &PaperCell,
    reading: impl Fn(&str) -> Reading,
) -> (CellVerdict, Option<SampleComplexityRow>) {
    let chosen: Vec<TrialRecord> = records
        .iter()
        .filter(|r| r.dataset == c.dataset)
        .filter(|r| {
            Some(&r.pipeline) == spec.report.reference.as_ref() || params_match(r, &c.params)
        })
        .cloned()
        .collect();
    let rows = super::sample_complexity::sample_complexity_rows_read(spec, &chosen, reading);
    let Some(row) = rows.into_iter().find(|r| r.pipeline == c.pipeline) else {
        return (CellVerdict::Missing, None);
    };
    let verdict = match row.multiplier {
        Some(m) => {
            let ours = Ours {
                mean: m,
                se: 0.0,
                n: 1,
            };
            let diff = (m / c.value).log2();
            if diff.abs() <= c.tolerance {
                CellVerdict::Reproduced { ours, diff }
            } else {
                CellVerdict::Differs { ours, diff }
            }
        }
        None => CellVerdict::Differs {
            ours: Ours {
                mean: f64::INFINITY,
                se: 0.0,
                n: 1,
            },
            diff: f64::INFINITY,
        },
    };
    (verdict, Some(row))
}

/// A value in the metric's display unit (accuracies in percentage points).
pub fn show(metric: &str, v: f64) -> String {
    if v.is_infinite() {
        "not reached within the grid".into()
    } else if is_accuracy(metric) || metric.ends_with("fraction") {
        format!("{:.1}%", 100.0 * v)
    } else if v.fract() == 0.0 && v.abs() < 1e12 {
        format!("{}", v as i64)
    } else if v.abs() < 1e-3 {
        // Three significant digits where four decimals would print 0.0000.
        format!("{v:.2e}")
    } else {
        format!("{v:.4}")
    }
}

/// A difference in the metric's display unit (accuracies in percentage points).
pub fn show_diff(metric: &str, d: f64) -> String {
    if metric == "multiplier" {
        format!("{d:+.0} doublings")
    } else if is_accuracy(metric) || metric.ends_with("fraction") {
        format!("{:+.1} pts", 100.0 * d)
    } else if d != 0.0 && d.abs() < 1e-3 {
        // As in `show`: three significant digits where four decimals would print a tie.
        format!("{d:+.2e}")
    } else {
        format!("{d:+.4}")
    }
}

/// One line describing a cell's verdict.
pub fn describe_cell(c: &PaperCell, v: &CellVerdict) -> String {
    match v {
        CellVerdict::Reproduced { ours, diff } | CellVerdict::Differs { ours, diff } => format!(
            "{} (ours {} ± {}, {} {}, difference {}, tolerance {})",
            v.word(),
            show(&c.metric, ours.mean),
            show(&c.metric, ours.se).trim_end_matches('%'),
            c.target.word(),
            show(&c.metric, c.value),
            show_diff(&c.metric, *diff),
            show_diff(&c.metric, c.tolerance).trim_start_matches('+'),
        ),
        CellVerdict::Missing => "missing (no stored trial matches this cell)".into(),
    }
}

/// One line describing a claim's verdict.
pub fn describe_claim(c: &PaperClaim, v: &ClaimVerdict) -> String {
    let Some((worst, x, gap)) = v.measured() else {
        return "missing (a series has no stored trials in the range)".into();
    };
    format!(
        "{} (worst margin {}{}{}, required {})",
        v.word(),
        show_diff(&c.metric, worst),
        at_x(x),
        spread(&c.metric, &gap),
        show_diff(&c.metric, c.margin)
    )
}

fn at_x(x: Option<f64>) -> String {
    x.map_or(String::new(), |x| format!(" at x = {}", fmt_x(x)))
}

/// The mean and largest difference of a claim over more than one x value (empty for one).
pub fn spread(metric: &str, gap: &Gap) -> String {
    if gap.points < 2 {
        return String::new();
    }
    format!(
        "; mean {} and largest {}{} over {} values",
        show_diff(metric, gap.mean),
        show_diff(metric, gap.best),
        at_x(gap.best_at),
        gap.points
    )
}

fn fmt_x(x: f64) -> String {
    x_text(&serde_json::json!(x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Ledger;

    const SPEC: &str = include_str!("testdata/verdict.toml");

    fn rec(pipeline: &str, t: Option<usize>, acc: f64) -> TrialRecord {
        let mut params = BTreeMap::new();
        params.insert("epsilon".to_string(), serde_json::json!(0.1));
        if let Some(t) = t {
            params.insert("features".to_string(), serde_json::json!(t));
        }
        TrialRecord {
            key: format!("{pipeline}{t:?}{acc}"),
            dataset: "d".into(),
            pipeline: pipeline.into(),
            epsilon: Some(0.1),
            trial: 0,
            seed: 0,
            params,
            test_accuracy: Some(acc),
            train_accuracy: None,
            baseline_accuracy: Some(0.5),
            n_train: 10,
            n_test: 10,
            n_features: 5,
            fit_seconds: 0.0,
            ledger: Ledger::default(),
            private: true,
            metrics: BTreeMap::new(),
            selected_features: None,
            vectors: BTreeMap::new(),
            feature_names: None,
            shared: BTreeMap::new(),
        }
    }

    fn spec() -> Spec {
        Spec::parse(SPEC, std::path::Path::new("t.toml")).unwrap()
    }

    fn records() -> Vec<TrialRecord> {
        vec![
            rec("all", None, 0.61),
            rec("all", None, 0.59),
            rec("mask", Some(1), 0.70),
            rec("mask", Some(2), 0.65),
            rec("mask", Some(2), 0.67),
            rec("mask", Some(3), 0.55),
        ]
    }

    /// A margin too small for four decimals keeps three significant digits and its sign, so a
    /// failing claim never prints a tie ("-0.0000"); zero and larger margins print as before.
    #[test]
    fn small_differences_keep_their_digits() {
        assert_eq!(show_diff("abs_error", -2.03e-5), "-2.03e-5");
        assert_eq!(show_diff("abs_error", 2.8e-5), "+2.80e-5");
        assert_eq!(show_diff("abs_error", 0.0), "+0.0000");
        assert_eq!(show_diff("abs_error", 0.0416), "+0.0416");
        assert_eq!(show_diff("test_accuracy", -0.00004), "-0.0 pts");
    }

    #[test]
    fn cell_inside_and_outside_tolerance_and_missing() {
        let spec = spec();
        let v = evaluate(&spec, &records());
        match &v.cells[0].1 {
            CellVerdict::Reproduced { ours, diff } => {
                assert!((ours.mean - 0.60).abs() < 1e-12);
                assert_eq!(ours.n, 2);
                assert!(diff.abs() < 1e-12);
            }
            other => panic!("expected reproduced, got {other:?}"),
        }
        match &v.cells[1].1 {
            CellVerdict::Differs { diff, .. } => assert!((diff - 0.06).abs() < 1e-12),
            other => panic!("expected differs, got {other:?}"),
        }
        assert_eq!(v.cells[2].1, CellVerdict::Missing);
        assert!(describe_cell(v.cells[1].0, &v.cells[1].1).contains("+6.0 pts"));
    }

    #[test]
    fn claim_holds_in_range_and_fails_outside() {
        let spec = spec();
        let v = evaluate(&spec, &records());
        match &v.claims[0].1 {
            ClaimVerdict::Holds { worst, at, .. } => {
                // The reference line (0.60) counts at T = 1 and T = 2; worst at T = 2.
                assert!((worst - 0.06).abs() < 1e-12);
                assert_eq!(*at, Some(2.0));
            }
            other => panic!("expected holds, got {other:?}"),
        }
        match &v.claims[1].1 {
            ClaimVerdict::Fails { worst, at, gap } => {
                assert!((worst + 0.05).abs() < 1e-12);
                // T = 1: +0.10, T = 2: +0.06, T = 3: -0.05.
                assert!((gap.best - 0.10).abs() < 1e-12 && gap.best_at == Some(1.0));
                assert!((gap.mean - 0.11 / 3.0).abs() < 1e-12 && gap.points == 3);
                assert_eq!(*at, Some(3.0));
            }
            other => panic!("expected fails, got {other:?}"),
        }
        match &v.claims[2].1 {
            ClaimVerdict::Holds {
                worst, at: None, ..
            } => assert!((worst - 0.15).abs() < 1e-12),
            other => panic!("expected holds between two x points, got {other:?}"),
        }
        assert_eq!(v.tally(), (3, 6));
    }

    #[test]
    fn a_claim_is_contradicted_only_when_it_is_false_at_every_x() {
        let d = |v: &[f64]| v.iter().map(|&d| (d, Some(d))).collect::<Vec<_>>();
        assert_eq!(
            judge_claim(0.0, false, &d(&[-0.1, -0.02])).word(),
            "contradicted"
        );
        // Ahead at one x: the claim fails, it is not contradicted.
        assert_eq!(judge_claim(0.0, false, &d(&[-0.1, 0.01])).word(), "fails");
        // Ahead everywhere but never by the claimed margin: contradicted, as a "within" claim
        // missed everywhere is; ahead by the margin at one x only: fails.
        assert_eq!(
            judge_claim(0.05, false, &d(&[0.01, 0.02])).word(),
            "contradicted"
        );
        assert_eq!(judge_claim(0.05, false, &d(&[0.01, 0.06])).word(), "fails");
        // "Within 2 points" (margin -0.02) is contradicted only beyond the margin everywhere.
        assert_eq!(
            judge_claim(-0.02, false, &d(&[-0.01, -0.05])).word(),
            "fails"
        );
        assert_eq!(
            judge_claim(-0.02, false, &d(&[-0.03, -0.05])).word(),
            "contradicted"
        );
        assert_eq!(judge_claim(0.0, false, &d(&[0.0, 0.3])).word(), "holds");
        // A strict claim ("beats") is not held by a tie, and a tie everywhere contradicts it.
        assert_eq!(judge_claim(0.0, true, &d(&[0.0, 0.3])).word(), "fails");
        assert_eq!(
            judge_claim(0.0, true, &d(&[0.0, 0.0])).word(),
            "contradicted"
        );
        assert_eq!(judge_claim(0.0, false, &[]), ClaimVerdict::Missing);
    }

    #[test]
    fn vector_entries_and_sizes_are_metrics() {
        let mut r = rec("all", None, 0.5);
        r.vectors.insert("mi".into(), vec![0.2, 0.1]);
        assert_eq!(metric_value(&r, "mi[1]"), Some(0.1));
        assert_eq!(metric_value(&r, "mi[2]"), None);
        assert_eq!(metric_value(&r, "n_train"), Some(10.0));
        assert!(value_eq(&serde_json::json!(100), &serde_json::json!(100.0)));
    }
}
