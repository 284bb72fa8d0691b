//! Small statistics helpers shared by tests, reports and audits.

/// Kolmogorov–Smirnov statistic sup |F_n(x) - F(x)| of a sample against a continuous CDF.
pub fn ks_statistic(sample: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let mut xs = sample.to_vec();
    xs.sort_by(f64::total_cmp);
    let n = xs.len() as f64;
    xs.iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max)
}

/// Mean and standard error of the mean (0 for fewer than two values).
pub fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_standard_error() {
        let (m, se) = mean_se(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m, 2.5);
        assert!((se - (1.666_666_666_666_666_7f64 / 4.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_se(&[5.0]), (5.0, 0.0));
    }

    #[test]
    fn ks_of_a_perfect_grid_is_small() {
        let xs: Vec<f64> = (0..100).map(|i| (i as f64 + 0.5) / 100.0).collect();
        assert!(ks_statistic(&xs, |x| x.clamp(0.0, 1.0)) <= 0.005 + 1e-12);
    }
}
