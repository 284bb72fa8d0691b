//! A secure sampler option: the discrete Laplace distribution sampled exactly with integer
//! arithmetic (Canonne, Kamath & Steinke 2020, Algorithms 1 and 2).
//!
//! * Law: P(Z = z) = (1 - e^(-1/b)) / (1 + e^(-1/b)) e^(-|z|/b) on the integers, scale
//!   b = num/den rational.
//! * Mechanism: for an integer-valued query with integer L1 sensitivity Delta, releasing
//!   f(X) + Z with b = Delta / eps is eps-DP (the same density-ratio argument as Laplace; the
//!   ratio of probabilities at any output is at most exp(Delta / b)).
//! * Why: the floating-point Laplace sampler of [`super::laplace`] leaks through the pattern of
//!   representable doubles it can output (Mironov 2012). Here every step is an exact Bernoulli
//!   trial of a rational probability (uniform integers by rejection), so the output law is
//!   exactly the one above: nothing depends on floating-point rounding. Only the rng's
//!   uniform integers are trusted (use a cryptographic rng for a real release; PCG is not).
//!
//! Which mechanisms could use it (docs/threat-model.md): integer counts with integer
//! sensitivity — Algorithm 1's counts (Delta = D), the partitioning strategy, Algorithm 3 and the
//! sparse vector on the count score. The learners are not rewired to it: the harness reproduces
//! accuracy, for which the floating-point sampler is fine.

use crate::error::{Error, Result};
use rand::Rng;

/// Exact Bernoulli(num / den), 0 <= num <= den.
fn bernoulli_rational<R: Rng + ?Sized>(num: u64, den: u64, rng: &mut R) -> bool {
    rng.gen_range(0..den) < num
}

/// Exact Bernoulli(exp(-num / den)) for num / den in [0, 1] (CKS20 Algorithm 1, first part):
/// K = 1; while Bernoulli(gamma / K) K += 1; return K odd.
fn bernoulli_exp_le1<R: Rng + ?Sized>(num: u64, den: u64, rng: &mut R) -> bool {
    let mut k: u64 = 1;
    loop {
        // Bernoulli(gamma / k) = Bernoulli(num / (den k)).
        match den.checked_mul(k) {
            Some(dk) if bernoulli_rational(num, dk, rng) => k += 1,
            _ => break,
        }
    }
    k % 2 == 1
}

/// Exact Bernoulli(exp(-num / den)) for any num / den >= 0.
pub fn bernoulli_exp<R: Rng + ?Sized>(num: u64, den: u64, rng: &mut R) -> bool {
    let whole = num / den;
    for _ in 0..whole {
        if !bernoulli_exp_le1(1, 1, rng) {
            return false;
        }
    }
    bernoulli_exp_le1(num % den, den, rng)
}

/// The discrete Laplace distribution with rational scale b = num / den.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscreteLaplace {
    num: u64,
    den: u64,
}

impl DiscreteLaplace {
    /// Scale b = num / den; both must be positive and below 2^32 (so products fit in u64).
    pub fn new(num: u64, den: u64) -> Result<Self> {
        const MAX: u64 = 1 << 32;
        if num == 0 || den == 0 || num >= MAX || den >= MAX {
            return Err(Error::param(
                "scale",
                format!("discrete Laplace scale {num}/{den}: both parts must be in 1..2^32"),
            ));
        }
        Ok(DiscreteLaplace { num, den })
    }

    /// The mechanism for integer sensitivity Delta and rational epsilon eps_num / eps_den:
    /// b = Delta eps_den / eps_num.
    pub fn for_epsilon(sensitivity: u64, eps_num: u64, eps_den: u64) -> Result<Self> {
        let num = sensitivity
            .checked_mul(eps_den)
            .ok_or_else(|| Error::param("sensitivity", "Delta x eps denominator overflows"))?;
        Self::new(num, eps_num)
    }

    pub fn scale(&self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// One exact draw (CKS20 Algorithm 2 with s = den, t = num: P(z) ∝ exp(-|z| den / num)).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        let (s, t) = (self.den, self.num);
        loop {
            let u = rng.gen_range(0..t);
            if !bernoulli_exp(u, t, rng) {
                continue;
            }
            let mut v: u64 = 0;
            while bernoulli_exp(1, 1, rng) {
                v += 1;
            }
            let x = u + t * v;
            let y = (x / s) as i64;
            let negative = rng.r#gen::<bool>();
            if negative && y == 0 {
                continue;
            }
            return if negative { -y } else { y };
        }
    }

    /// P(Z = z).
    pub fn pmf(&self, z: i64) -> f64 {
        discrete_laplace_pmf(self.scale(), z)
    }
}

/// P(Z = z) for the discrete Laplace of scale b (any real b > 0).
pub fn discrete_laplace_pmf(b: f64, z: i64) -> f64 {
    let r = (-1.0 / b).exp();
    (1.0 - r) / (1.0 + r) * r.powi(z.unsigned_abs().min(i32::MAX as u64) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from;
    use statrs::distribution::{ChiSquared, ContinuousCDF};

    #[test]
    fn rejects_bad_scales() {
        assert!(DiscreteLaplace::new(0, 1).is_err());
        assert!(DiscreteLaplace::new(1, 0).is_err());
        assert!(DiscreteLaplace::new(1 << 32, 1).is_err());
        assert_eq!(
            DiscreteLaplace::for_epsilon(2, 1, 10).unwrap().scale(),
            20.0
        );
        let s: f64 = (-200..=200).map(|z| discrete_laplace_pmf(3.0, z)).sum();
        assert!((s - 1.0).abs() < 1e-12);
    }

    /// Bernoulli(exp(-gamma)) for gamma = 0, 1/3, 1 and 5/2: 200,000 draws each, two-sided
    /// z-test at alpha = 0.001 (|z| < 3.29).
    #[test]
    fn bernoulli_exp_has_the_right_mean() {
        let mut rng = rng_from(&["test", "bernoulli-exp"]);
        let n = 200_000;
        for (num, den) in [(0u64, 1u64), (1, 3), (1, 1), (5, 2)] {
            let p = (-(num as f64) / den as f64).exp();
            let k = (0..n).filter(|_| bernoulli_exp(num, den, &mut rng)).count() as f64;
            let se = (p * (1.0 - p) / n as f64).sqrt().max(1e-12);
            let z = (k / n as f64 - p) / se;
            assert!(
                z.abs() < 3.29 || p == 1.0 && k == n as f64,
                "{num}/{den}: z = {z}"
            );
        }
    }

    /// Discrete Laplace of scale 5/2: 50,000 draws binned as z <= -10, -9..=9, z >= 10;
    /// chi-square at alpha = 0.001 accepts, and rejects the same draws against the discrete
    /// Laplace at 0.7x and 1.3x the scale.
    #[test]
    fn discrete_laplace_fits_and_rejects_wrong_scales() {
        let lap = DiscreteLaplace::new(5, 2).unwrap();
        let mut rng = rng_from(&["test", "discrete-laplace"]);
        const K: i64 = 10;
        let bin = |z: i64| (z.clamp(-K, K) + K) as usize;
        let mut observed = vec![0u64; (2 * K + 1) as usize];
        let n = 50_000;
        for _ in 0..n {
            observed[bin(lap.sample(&mut rng))] += 1;
        }
        let probs = |b: f64| -> Vec<f64> {
            let mut p: Vec<f64> = (-K..=K).map(|z| discrete_laplace_pmf(b, z)).collect();
            // Tails: P(Z >= K) = P(Z = K) / (1 - r).
            let r = (-1.0 / b).exp();
            p[0] /= 1.0 - r;
            p[(2 * K) as usize] /= 1.0 - r;
            p
        };
        let chi = |p: &[f64]| -> f64 {
            observed
                .iter()
                .zip(p)
                .map(|(&o, &pi)| (o as f64 - pi * n as f64).powi(2) / (pi * n as f64))
                .sum()
        };
        let crit = ChiSquared::new((2 * K) as f64)
            .unwrap()
            .inverse_cdf(1.0 - 0.001);
        let b = lap.scale();
        assert!((probs(b).iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(chi(&probs(b)) < crit, "{} >= {crit}", chi(&probs(b)));
        for m in [0.7, 1.3] {
            assert!(chi(&probs(m * b)) > crit, "scale x{m} not rejected");
        }
    }
}
