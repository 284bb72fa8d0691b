//! Scaling-law verdicts (`[[paper.slope]]`): a least-squares fit of log10(metric) on log10(x)
//! (the report's axis, or the law's own `x`) over every stored trial, its 95% interval (Student t on n − 2 degrees of freedom) and,
//! optionally, where it crosses the fitted line of another metric of the same trials.

use super::summary::x_position;
use super::summary::{metric_value, params_match};
use crate::spec::{PaperSlope, Spec};
use crate::store::TrialRecord;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A fitted line log10 y = intercept + slope log10 x.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogLogFit {
    pub slope: f64,
    pub intercept: f64,
    /// Half-width of the 95% interval of the slope.
    pub half_width: f64,
    pub n: usize,
}

/// The outcome of one scaling law.
#[derive(Debug, Clone, PartialEq)]
pub enum SlopeVerdict {
    Holds {
        fit: LogLogFit,
        crossover: Option<f64>,
    },
    Fails {
        fit: LogLogFit,
        crossover: Option<f64>,
    },
    /// The slope's whole 95% interval lies outside the expected slope ± tolerance: our data
    /// rule the law out, not merely miss it.
    Contradicted {
        fit: LogLogFit,
        crossover: Option<f64>,
    },
    /// Fewer than three positive points, or a single x value.
    Missing,
}

verdict_words!(SlopeVerdict {
    Holds => "holds",
    Fails => "fails",
    Contradicted => "contradicted",
    Missing => "missing",
});

impl SlopeVerdict {
    /// The fit and crossover of a law with trials.
    pub fn measured(&self) -> Option<(LogLogFit, Option<f64>)> {
        match self {
            SlopeVerdict::Holds { fit, crossover }
            | SlopeVerdict::Fails { fit, crossover }
            | SlopeVerdict::Contradicted { fit, crossover } => Some((*fit, *crossover)),
            SlopeVerdict::Missing => None,
        }
    }

    /// Whether the law does not hold (fails or is contradicted).
    pub fn differs(&self) -> bool {
        matches!(
            self,
            SlopeVerdict::Fails { .. } | SlopeVerdict::Contradicted { .. }
        )
    }
}

/// Least squares on (log10 x, log10 y) points; `None` below three points or without spread.
pub fn fit_loglog(points: &[(f64, f64)]) -> Option<LogLogFit> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0 && x.is_finite() && y.is_finite())
        .map(|(x, y)| (x.log10(), y.log10()))
        .collect();
    let n = pts.len();
    if n < 3 {
        return None;
    }
    let (mx, my) = pts.iter().fold((0.0, 0.0), |(a, b), (x, y)| {
        (a + x / n as f64, b + y / n as f64)
    });
    let sxx: f64 = pts.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = pts.iter().map(|(x, y)| (x - mx) * (y - my)).sum::<f64>() / sxx;
    let intercept = my - slope * mx;
    let ssr: f64 = pts
        .iter()
        .map(|(x, y)| (y - intercept - slope * x).powi(2))
        .sum();
    let se = (ssr / (n - 2) as f64 / sxx).sqrt();
    let t = StudentsT::new(0.0, 1.0, (n - 2) as f64).map_or(1.96, |d| d.inverse_cdf(0.975));
    Some(LogLogFit {
        slope,
        intercept,
        half_width: t * se,
        n,
    })
}

fn points(spec: &Spec, records: &[TrialRecord], c: &PaperSlope, metric: &str) -> Vec<(f64, f64)> {
    let axis = slope_axis(spec, c);
    let in_range = |x: f64| c.x_min.is_none_or(|m| x >= m) && c.x_max.is_none_or(|m| x <= m);
    records
        .iter()
        .filter(|r| {
            r.dataset == c.dataset && r.pipeline == c.pipeline && params_match(r, &c.params)
        })
        .filter_map(|r| {
            let x = x_position(spec, r.params.get(axis)?);
            Some((x, metric_value(r, metric)?))
        })
        .filter(|(x, _)| in_range(*x))
        .collect()
}

/// The grid axis a law is fitted against: its own `x`, else the report's.
pub fn slope_axis<'a>(spec: &'a Spec, c: &'a PaperSlope) -> &'a str {
    c.x.as_deref().or(spec.report.x.as_deref()).unwrap_or("x")
}

/// Fits the law and, with `crossover`, where it meets the other metric's line.
pub fn slope_verdict(spec: &Spec, records: &[TrialRecord], c: &PaperSlope) -> SlopeVerdict {
    let Some(fit) = fit_loglog(&points(spec, records, c, &c.metric)) else {
        return SlopeVerdict::Missing;
    };
    let crossover = c.crossover.as_deref().and_then(|m| {
        let other = fit_loglog(&points(spec, records, c, m))?;
        let dk = fit.slope - other.slope;
        (dk != 0.0).then(|| 10f64.powf((other.intercept - fit.intercept) / dk))
    });
    judge(fit, crossover, c.expected, c.tolerance)
}

/// `holds` within `expected ± tolerance`; `contradicted` when the slope's 95% interval lies
/// wholly outside that range; else `fails`.
fn judge(fit: LogLogFit, crossover: Option<f64>, expected: f64, tolerance: f64) -> SlopeVerdict {
    let off = (fit.slope - expected).abs();
    if off <= tolerance {
        SlopeVerdict::Holds { fit, crossover }
    } else if off - fit.half_width > tolerance {
        SlopeVerdict::Contradicted { fit, crossover }
    } else {
        SlopeVerdict::Fails { fit, crossover }
    }
}

/// One line describing a slope verdict.
pub fn describe_slope(c: &PaperSlope, v: &SlopeVerdict, axis: &str) -> String {
    let Some((fit, crossover)) = v.measured() else {
        return "missing (fewer than three positive points)".into();
    };
    let cross = match (crossover, &c.crossover) {
        (Some(x), Some(m)) => format!("; crosses `{m}` at {axis} ≈ {x:.3e}"),
        _ => String::new(),
    };
    format!(
        "{} (fitted slope {:.3} ± {:.3} (95%, {} trials), expected {} ± {}{cross})",
        v.word(),
        fit.slope,
        fit.half_width,
        fit.n,
        c.expected,
        c.tolerance
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A noiseless power law gives its exponent with a zero-width interval; noise widens it,
    /// and too few points are no fit.
    #[test]
    fn fits_power_laws() {
        let exact: Vec<(f64, f64)> = [1.0, 10.0, 100.0, 1000.0]
            .iter()
            .map(|&x: &f64| (x, 3.0 * x.powf(-0.5)))
            .collect();
        let f = fit_loglog(&exact).unwrap();
        assert!(
            (f.slope + 0.5).abs() < 1e-12 && f.half_width < 1e-9,
            "{f:?}"
        );
        assert!((f.intercept - 3f64.log10()).abs() < 1e-12);
        let noisy: Vec<(f64, f64)> = exact
            .iter()
            .enumerate()
            .map(|(i, &(x, y))| (x, y * if i % 2 == 0 { 1.3 } else { 0.7 }))
            .collect();
        let g = fit_loglog(&noisy).unwrap();
        assert!(
            g.half_width > 0.05 && (g.slope + 0.5).abs() < g.half_width,
            "{g:?}"
        );
        assert!(fit_loglog(&exact[..2]).is_none());
    }

    /// Expected −1 ± 0.05: a slope of −0.9 fails while its interval reaches −0.95 and is
    /// contradicted once the interval stops short of it.
    #[test]
    fn an_interval_wholly_outside_the_tolerance_contradicts_the_law() {
        let fit = |slope, half_width| LogLogFit {
            slope,
            intercept: 0.0,
            half_width,
            n: 10,
        };
        let word = |slope, half_width| judge(fit(slope, half_width), None, -1.0, 0.05).word();
        assert_eq!(word(-1.04, 0.3), "holds");
        assert_eq!(word(-0.9, 0.06), "fails");
        assert_eq!(word(-0.9, 0.04), "contradicted");
        assert_eq!(word(-1.2, 0.1), "contradicted");
        assert_eq!(word(-1.2, 0.2), "fails");
    }
}
