//! Ratio verdicts (`[[paper.ratio]]`): how many times one series' error exceeds another's,
//! e.g. the tutorial's composed average "around 400 times more accurate" than the direct one.
//! Per x of the report's axis: the mean (or median) of `metric` over the numerator pipeline's
//! trials divided by the same over the denominator's; the verdict is judged at the ratio's `x`.

use super::summary::{axis_symbol, x_position, x_text};
use super::summary::{metric_value, params_match, value_eq};
use crate::spec::{PaperRatio, Spec, Statistic};
use crate::store::TrialRecord;
use serde_json::Value;

/// The ratio at every x where both series have trials, ascending in x.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioVerdict {
    pub per_x: Vec<(Value, f64)>,
    /// The ratio at the judged x (`None`: missing).
    pub judged: Option<f64>,
    pub tolerance: f64,
    pub value: f64,
}

impl RatioVerdict {
    pub fn holds(&self) -> bool {
        self.judged
            .is_some_and(|r| (r - self.value).abs() <= self.tolerance)
    }

    pub fn word(&self) -> &'static str {
        match self.judged {
            None => "missing",
            Some(_) if self.holds() => "reproduced",
            Some(_) => "differs",
        }
    }
}

/// Mean or median of `xs` (NaN for none).
pub fn statistic(s: Statistic, xs: &mut [f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    match s {
        Statistic::Mean => xs.iter().sum::<f64>() / xs.len() as f64,
        Statistic::Median => {
            xs.sort_by(f64::total_cmp);
            let m = xs.len() / 2;
            if xs.len() % 2 == 1 {
                xs[m]
            } else {
                0.5 * (xs[m - 1] + xs[m])
            }
        }
    }
}

/// The statistic of one pipeline's metric at x value `x` (any x when the axis is absent).
fn cell(
    spec: &Spec,
    records: &[TrialRecord],
    c: &PaperRatio,
    pipeline: &str,
    x: Option<&Value>,
) -> f64 {
    let axis = spec.report.x.as_deref();
    let mut vals: Vec<f64> = records
        .iter()
        .filter(|r| r.dataset == c.dataset && r.pipeline == pipeline)
        .filter(|r| params_match(r, &c.params))
        .filter(|r| match (axis.and_then(|a| r.params.get(a)), x) {
            (Some(rv), Some(xv)) => value_eq(rv, xv),
            _ => true,
        })
        .filter_map(|r| metric_value(r, &c.metric))
        .collect();
    statistic(c.statistic, &mut vals)
}

/// Evaluates one ratio against the stored trials.
pub fn ratio_verdict(spec: &Spec, records: &[TrialRecord], c: &PaperRatio) -> RatioVerdict {
    let mut xs: Vec<Value> = Vec::new();
    if let Some(axis) = spec.report.x.as_deref() {
        for r in records.iter().filter(|r| r.pipeline == c.numerator) {
            if let Some(v) = r.params.get(axis)
                && !xs.iter().any(|x| value_eq(x, v))
            {
                xs.push(v.clone());
            }
        }
    }
    xs.sort_by(|a, b| x_position(spec, a).total_cmp(&x_position(spec, b)));
    let at = |x: Option<&Value>| {
        let r = cell(spec, records, c, &c.numerator, x) / cell(spec, records, c, &c.denominator, x);
        r.is_finite().then_some(r)
    };
    let per_x = xs
        .iter()
        .filter_map(|x| Some((x.clone(), at(Some(x))?)))
        .collect();
    RatioVerdict {
        per_x,
        judged: at(c.x.as_ref()),
        tolerance: c.tolerance,
        value: c.value,
    }
}

/// A ratio with three or four significant digits.
fn show(r: f64) -> String {
    match r.abs() {
        a if a >= 100.0 => format!("{r:.0}"),
        a if a >= 10.0 => format!("{r:.1}"),
        _ => format!("{r:.3}"),
    }
}

/// One line: the verdict, the ratio at the judged x and at every x.
pub fn describe_ratio(spec: &Spec, c: &PaperRatio, v: &RatioVerdict) -> String {
    let axis = spec
        .report
        .x_label
        .as_deref()
        .unwrap_or_else(|| axis_symbol(spec.report.x.as_deref().unwrap_or("x")));
    let stat = match c.statistic {
        Statistic::Mean => "mean",
        Statistic::Median => "median",
    };
    let all = v
        .per_x
        .iter()
        .map(|(x, r)| format!("{axis} = {}: {}", x_text(x), show(*r)))
        .collect::<Vec<_>>()
        .join(", ");
    let judged = match (v.judged, &c.x) {
        (Some(r), Some(x)) => format!("ratio {} at {axis} = {}", show(r), x_text(x)),
        (Some(r), None) => format!("ratio {}", show(r)),
        (None, _) => "no trials".into(),
    };
    format!(
        "{} ({stat} {} of `{}` / `{}`) — **{}** ({judged}; {} {} ± {}). Against {axis}: {all}{}",
        c.text,
        c.metric,
        c.numerator,
        c.denominator,
        v.word(),
        c.target.word(),
        c.value,
        c.tolerance,
        c.note
            .as_deref()
            .map_or(String::new(), |n| format!(" — {n}"))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_median() {
        assert_eq!(statistic(Statistic::Mean, &mut [1.0, 2.0, 6.0]), 3.0);
        assert_eq!(statistic(Statistic::Median, &mut [6.0, 1.0, 2.0]), 2.0);
        assert_eq!(statistic(Statistic::Median, &mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(statistic(Statistic::Mean, &mut []).is_nan());
    }
}
