//! Rényi DP of the Poisson-subsampled Gaussian mechanism and its conversion to (ε, δ).
//!
//! The computation follows Google's dp-accounting 0.6.0 (`RdpAccountant`,
//! `_compute_rdp_poisson_subsampled_gaussian`, `compute_epsilon`) step for step, so that its
//! values are reproduced to rounding (`tests/accountant.rs` checks 512 of them):
//!
//! * One step releases Σ_{i ∈ B} g_i + N(0, σ² C² I), B a Poisson sample (each example kept with
//!   probability q), ‖g_i‖ ≤ C. Under add/remove neighbours its RDP of order α is
//!   ε(α) = ln A_α / (α − 1) with A_α = E_{z ~ μ0} [(μ(z)/μ0(z))^α], μ = (1 − q) μ0 + q μ1,
//!   μ0 = N(0, σ²), μ1 = N(1, σ²) (Mironov, Talwar & Zhang 2019, Theorem 4 and Sec. 3.3).
//! * Integer α: the binomial expansion A_α = Σ_{i=0}^{α} C(α, i) q^i (1 − q)^{α−i}
//!   exp((i² − i)/(2σ²)), exact.
//! * Fractional α: the integral is split at z0 = σ² ln(1/q − 1) + 1/2 and each half expanded
//!   in a convergent binomial series with erfc weights (Sec. 3.3 of the same paper). As in
//!   dp-accounting the terms' magnitudes are added (an upper bound on A_α: the alternating
//!   signs are dropped), the series stops once both halves decrease and their terms are below
//!   e^-30 of the total, and an order whose series has not converged after 1000 terms is
//!   dropped (ε(α) = ∞).
//! * q = 1 is the plain Gaussian mechanism, ε(α) = α / (2σ²).
//! * Composition: RDP adds over steps at each order.
//! * Conversion ([`Conversion::Balle2020`], dp-accounting's): for each order,
//!   ε = ε(α) + ln(1 − 1/α) − ln(δ α)/(α − 1) (Balle et al. 2020, Prop. 12; Canonne, Kamath
//!   & Steinke 2020, eq. 20), 0 when δ² + expm1(−ε(α)) > 0, ∞ for α ≤ 1.01; the minimum over
//!   the orders. [`Conversion::Mironov2017`] is the older ε = ε(α) + ln(1/δ)/(α − 1)
//!   (Mironov 2017, Prop. 3), kept to reproduce numbers published with it.

use crate::error::{Error, Result};
use std::f64::consts::PI;

/// dp-accounting 0.6.0's `DEFAULT_RDP_ORDERS`: 1.1, 1.2, …, 10.9, then 11, …, 63, then 128,
/// 256, 512, 1024.
pub fn default_orders() -> Vec<f64> {
    (1..100)
        .map(|x| 1.0 + x as f64 / 10.0)
        .chain((11..64).map(f64::from))
        .chain([128.0, 256.0, 512.0, 1024.0])
        .collect()
}

/// How an RDP curve becomes an (ε, δ) guarantee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Conversion {
    /// Balle et al. 2020, Prop. 12 (dp-accounting's `compute_epsilon`; Opacus' default too).
    #[default]
    Balle2020,
    /// Mironov 2017, Prop. 3: ε = ε(α) + ln(1/δ)/(α − 1) (TF Privacy before 2020).
    Mironov2017,
}

/// Checks the mechanism's parameters: q in (0, 1], σ finite and > 0.
pub fn check_mechanism(sampling_rate: f64, noise_multiplier: f64) -> Result<()> {
    if !(sampling_rate > 0.0 && sampling_rate <= 1.0) {
        return Err(Error::param(
            "sampling_rate",
            format!("must be in (0, 1], got {sampling_rate}"),
        ));
    }
    if !(noise_multiplier.is_finite() && noise_multiplier > 0.0) {
        return Err(Error::param(
            "noise_multiplier",
            format!("must be finite and > 0, got {noise_multiplier}"),
        ));
    }
    Ok(())
}

/// Checks δ in (0, 1).
pub fn check_delta(delta: f64) -> Result<()> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(Error::param(
            "delta",
            format!("must be in (0, 1), got {delta}"),
        ))
    }
}

/// RDP of one step of the Poisson-subsampled Gaussian at order `alpha` > 1 (∞ where the
/// fractional series does not converge). Parameters are assumed checked.
pub fn subsampled_gaussian(q: f64, sigma: f64, alpha: f64) -> f64 {
    if alpha.is_infinite() {
        return f64::INFINITY;
    }
    if q == 1.0 {
        return alpha / (2.0 * sigma * sigma);
    }
    let log_a = if alpha.fract() == 0.0 {
        log_a_int(q, sigma, alpha as u64)
    } else {
        log_a_frac(q, sigma, alpha)
    };
    log_a / (alpha - 1.0)
}

/// RDP of `steps` compositions at each order.
pub fn compute_rdp(q: f64, sigma: f64, steps: u64, orders: &[f64]) -> Result<Vec<f64>> {
    check_mechanism(q, sigma)?;
    check_orders(orders)?;
    Ok(orders
        .iter()
        .map(|&a| steps as f64 * subsampled_gaussian(q, sigma, a))
        .collect())
}

fn check_orders(orders: &[f64]) -> Result<()> {
    if orders.is_empty() || orders.iter().any(|a| a.is_nan() || *a <= 1.0) {
        return Err(Error::param("orders", "need at least one order, each > 1"));
    }
    Ok(())
}

/// (ε, order) from an RDP curve at δ: the smallest ε over the orders, and the order giving it.
pub fn epsilon_from_rdp(
    orders: &[f64],
    rdp: &[f64],
    delta: f64,
    conversion: Conversion,
) -> Result<(f64, f64)> {
    check_delta(delta)?;
    check_orders(orders)?;
    if orders.len() != rdp.len() {
        return Err(Error::param("rdp", "one RDP value per order"));
    }
    let mut best = (f64::INFINITY, orders[0]);
    for (&a, &r) in orders.iter().zip(rdp) {
        let eps = match conversion {
            Conversion::Balle2020 => {
                if r < 0.0 || delta * delta + (-r).exp_m1() > 0.0 {
                    0.0
                } else if a > 1.01 {
                    r + (-1.0 / a).ln_1p() - (delta * a).ln() / (a - 1.0)
                } else {
                    f64::INFINITY
                }
            }
            Conversion::Mironov2017 => r - delta.ln() / (a - 1.0),
        };
        // First minimum wins, as numpy's argmin.
        if eps < best.0 {
            best = (eps, a);
        }
    }
    Ok((best.0.max(0.0), best.1))
}

/// log(exp(x) + exp(y)).
fn log_add(x: f64, y: f64) -> f64 {
    let (a, b) = if x < y { (x, y) } else { (y, x) };
    if a == f64::NEG_INFINITY {
        return b;
    }
    (a - b).exp().ln_1p() + b
}

/// ln |Γ(x)| for real x not a non-positive integer (reflection below 1/2).
fn ln_abs_gamma(x: f64) -> f64 {
    if x < 0.5 {
        PI.ln() - (PI * x).sin().abs().ln() - statrs::function::gamma::ln_gamma(1.0 - x)
    } else {
        statrs::function::gamma::ln_gamma(x)
    }
}

/// ln |C(n, k)| via log-gamma (n real, k integer), as scipy's `gammaln` formula.
fn ln_binom(n: f64, k: f64) -> f64 {
    ln_abs_gamma(n + 1.0) - ln_abs_gamma(k + 1.0) - ln_abs_gamma(n - k + 1.0)
}

/// ln erfc(x), accurate in the far tail: beyond x = 25 erfc nears the subnormal range
/// (2e-274 at 25, subnormal past 26.5), where its logarithm loses digits, so the asymptotic
/// series is used (its next term is below 1e-13 there).
fn ln_erfc(x: f64) -> f64 {
    if x <= 25.0 {
        statrs::function::erf::erfc(x).ln()
    } else {
        -PI.ln() / 2.0 - x.ln() - x * x - 0.5 * x.powi(-2) + 0.625 * x.powi(-4)
            - 37.0 / 24.0 * x.powi(-6)
            + 353.0 / 64.0 * x.powi(-8)
    }
}

fn log_a_int(q: f64, sigma: f64, alpha: u64) -> f64 {
    let log1mq = (-q).ln_1p();
    let lq = q.ln();
    let a = alpha as f64;
    let mut log_a = f64::NEG_INFINITY;
    for i in 0..=alpha {
        let i = i as f64;
        let log_coef = ln_binom(a, i) + i * lq + (a - i) * log1mq;
        log_a = log_add(log_a, log_coef + (i * i - i) / (2.0 * sigma * sigma));
    }
    log_a
}

/// Terms of the fractional series before an order is given up (dp-accounting's limit).
const MAX_FRAC_TERMS: usize = 1000;

fn log_a_frac(q: f64, sigma: f64, alpha: f64) -> f64 {
    let (mut log_a0, mut log_a1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let z0 = sigma * sigma * (1.0 / q - 1.0).ln() + 0.5;
    let log1mq = (-q).ln_1p();
    let lq = q.ln();
    let s2 = std::f64::consts::SQRT_2 * sigma;
    let (mut last0, mut last1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for i in 0..MAX_FRAC_TERMS {
        let i = i as f64;
        let log_coef = ln_binom(alpha, i);
        let j = alpha - i;
        let log_t0 = log_coef + i * lq + j * log1mq;
        let log_t1 = log_coef + j * lq + i * log1mq;
        let log_e0 = 0.5f64.ln() + ln_erfc((i - z0) / s2);
        let log_e1 = 0.5f64.ln() + ln_erfc((z0 - j) / s2);
        let log_s0 = log_t0 + (i * i - i) / (2.0 * sigma * sigma) + log_e0;
        let log_s1 = log_t1 + (j * j - j) / (2.0 * sigma * sigma) + log_e1;
        log_a0 = log_add(log_a0, log_s0);
        log_a1 = log_add(log_a1, log_s1);
        let total = log_add(log_a0, log_a1);
        if log_s0 < last0 && log_s1 < last1 && log_s0.max(log_s1) < total - 30.0 {
            return total;
        }
        last0 = log_s0;
        last1 = log_s1;
    }
    f64::INFINITY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_orders_match_dp_accounting() {
        let o = default_orders();
        assert_eq!(o.len(), 99 + 53 + 4);
        assert_eq!(
            (o[0], o[98], o[99], o[151], o[155]),
            (1.1, 10.9, 11.0, 63.0, 1024.0)
        );
        // 1 + 10/10 is exactly 2: the integer branch, as in Python.
        assert_eq!(o[9], 2.0);
    }

    #[test]
    fn full_batch_is_the_gaussian_mechanism() {
        assert_eq!(subsampled_gaussian(1.0, 2.0, 3.0), 3.0 / 8.0);
    }

    /// For integer α the fractional series must agree with the exact binomial sum (the two
    /// branches are independent derivations of A_α).
    #[test]
    fn fractional_series_agrees_with_the_integer_formula() {
        for (q, sigma) in [(0.01, 1.0), (0.1, 2.0), (0.004, 0.8)] {
            for alpha in [2u64, 3, 8, 20] {
                let exact = log_a_int(q, sigma, alpha);
                let series = log_a_frac(q, sigma, alpha as f64);
                assert!(
                    (exact - series).abs() <= 1e-9 * exact.abs().max(1e-3),
                    "q {q} sigma {sigma} alpha {alpha}: {exact} vs {series}"
                );
            }
        }
    }

    #[test]
    fn ln_erfc_is_continuous_into_the_asymptotic_tail() {
        // The series must join the direct value where one hands over to the other.
        let direct = statrs::function::erf::erfc(25.0).ln();
        let series = ln_erfc(25.0 + 1e-12);
        assert!(
            (direct - series).abs() < 1e-12 * direct.abs(),
            "{direct} {series}"
        );
        assert!(ln_erfc(40.0).is_finite() && ln_erfc(40.0) < ln_erfc(30.0));
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(compute_rdp(0.0, 1.0, 1, &[2.0]).is_err());
        assert!(compute_rdp(1.5, 1.0, 1, &[2.0]).is_err());
        assert!(compute_rdp(0.5, 0.0, 1, &[2.0]).is_err());
        assert!(compute_rdp(0.5, f64::NAN, 1, &[2.0]).is_err());
        assert!(compute_rdp(0.5, 1.0, 1, &[1.0]).is_err());
        assert!(epsilon_from_rdp(&[2.0], &[1.0], 0.0, Conversion::Balle2020).is_err());
        assert!(epsilon_from_rdp(&[2.0], &[1.0], 1.0, Conversion::Balle2020).is_err());
        assert!(epsilon_from_rdp(&[2.0], &[1.0, 2.0], 0.1, Conversion::Balle2020).is_err());
    }
}
