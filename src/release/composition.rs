//! Composition as an analytic series: the total privacy of k mechanisms, each eps-DP.
//!
//! * Basic (sequential) composition (Dwork et al. 2006): k eps-DP mechanisms are (k eps)-DP.
//! * Advanced composition (Dwork, Rothblum & Vadhan 2010, Thm. III.3; Dwork & Roth 2014,
//!   Thm. 3.20): for every delta' > 0 they are (eps', delta')-DP (plus k delta if each was
//!   (eps, delta)-DP) with eps' = sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1).
//!
//! Advanced composition wins once k is large and eps small (it grows like sqrt(k) instead of
//! k); for a few mechanisms, or eps near 1, basic composition is tighter. Both are valid, so the
//! better of the two is a valid total ([`Composition::best`]).

use crate::error::{Error, Result};

/// Basic composition: k eps.
pub fn basic(epsilon: f64, k: u64) -> f64 {
    k as f64 * epsilon
}

/// Advanced composition's eps' at slack delta' in (0, 1).
pub fn advanced(epsilon: f64, k: u64, delta_prime: f64) -> f64 {
    let k = k as f64;
    (2.0 * k * (1.0 / delta_prime).ln()).sqrt() * epsilon + k * epsilon * epsilon.exp_m1()
}

/// One point of the series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Composition {
    pub k: u64,
    pub basic: f64,
    pub advanced: f64,
}

impl Composition {
    /// The smaller of the two totals (advanced carries the extra delta').
    pub fn best(&self) -> f64 {
        self.basic.min(self.advanced)
    }
}

/// The series for each k of `ks`, per-mechanism eps and slack delta'.
pub fn series(epsilon: f64, ks: &[u64], delta_prime: f64) -> Result<Vec<Composition>> {
    crate::privacy::check_epsilon(epsilon)?;
    if !(delta_prime > 0.0 && delta_prime < 1.0) {
        return Err(Error::param(
            "delta",
            format!("delta' must be in (0, 1), got {delta_prime}"),
        ));
    }
    Ok(ks
        .iter()
        .map(|&k| Composition {
            k,
            basic: basic(epsilon, k),
            advanced: advanced(epsilon, k, delta_prime),
        })
        .collect())
}

/// The smallest k at which advanced composition beats basic (None if it never does, which
/// happens when e^eps - 1 >= 1, i.e. eps >= ln 2).
pub fn crossover(epsilon: f64, delta_prime: f64) -> Option<u64> {
    // advanced < basic  <=>  sqrt(2 k L) eps < k eps (2 - e^eps)  <=>  k > 2 L / (2 - e^eps)^2.
    let gap = 2.0 - epsilon.exp();
    if gap <= 0.0 {
        return None;
    }
    let k = 2.0 * (1.0 / delta_prime).ln() / (gap * gap);
    Some(k.floor() as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_and_crossover() {
        // k = 10^4, eps = 0.01, delta' = 1e-5: sqrt(2e4 ln 1e5) 0.01 + 100 (e^0.01 - 1).
        let a = advanced(0.01, 10_000, 1e-5);
        let want = (2e4 * 1e5f64.ln()).sqrt() * 0.01 + 100.0 * 0.01f64.exp_m1();
        assert!((a - want).abs() < 1e-12 && (a - 5.80).abs() < 0.01, "{a}");
        assert_eq!(basic(0.01, 10_000), 100.0);
        let k = crossover(0.01, 1e-5).unwrap();
        assert!(advanced(0.01, k, 1e-5) < basic(0.01, k));
        assert!(advanced(0.01, k - 1, 1e-5) >= basic(0.01, k - 1));
        assert_eq!(crossover(1.0, 1e-5), None);
        assert!(series(0.0, &[1], 1e-5).is_err());
        assert!(series(0.1, &[1], 1.0).is_err());
    }
}
