//! Privacy accounting for iterative mechanisms: the Rényi-DP accountant of DP-SGD and noisy
//! gradient descent ([`rdp`]), and the search for the noise multiplier that meets a target ε.
//!
//! The mechanism accounted ([`SubsampledGaussian`]), stated as the other mechanisms are:
//!
//! * Domain: training sets; one step releases the sum of the per-example gradients of a
//!   Poisson sample (each example kept independently with probability q), each clipped to L2
//!   norm C, plus N(0, σ² C² I). `steps` such releases, each step's gradients at the model the
//!   previous releases produced (adaptive composition).
//! * Input metric: add/remove one example. The clipped sum then has L2 sensitivity C.
//!   Replace-one is only accounted at q = 1 (noisy full-batch gradient descent), where it is
//!   the Gaussian mechanism with sensitivity 2C, i.e. noise multiplier σ/2
//!   ([`SubsampledGaussian::for_relation`]); the subsampled analysis is for add/remove only.
//! * Measure: Rényi DP of every order in the grid (Mironov, Talwar & Zhang 2019), composed
//!   by adding over steps, converted to (ε, δ)-DP ([`rdp::Conversion`]).
//! * Proof sketch: Mironov et al. 2019 show the privacy loss of one step is dominated by the
//!   pair μ0 = N(0, σ²), μ = (1 − q) μ0 + q N(1, σ²) (in units of C) and compute its RDP;
//!   RDP composes adaptively by addition (Mironov 2017, Prop. 1); RDP of order α implies
//!   (ε, δ)-DP by the stated conversion.
//!
//! δ defaults to 1/n² for a training set of n examples ([`default_delta`]).

pub mod rdp;

use crate::error::{Error, Result};
use crate::privacy::Relation;
pub use rdp::Conversion;

/// δ = 1/n², the default for a training set of n examples (the surveys' convention).
pub fn default_delta(n: usize) -> f64 {
    1.0 / (n.max(2) as f64).powi(2)
}

/// A DP-SGD training plan: `steps` releases of the Poisson-subsampled Gaussian mechanism with
/// sampling rate q and noise multiplier σ (noise standard deviation σ C for clipping norm C).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubsampledGaussian {
    pub noise_multiplier: f64,
    pub sampling_rate: f64,
    pub steps: u64,
}

/// An (ε, δ) guarantee and the RDP order that gave it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Guarantee {
    pub epsilon: f64,
    pub delta: f64,
    pub order: f64,
}

impl SubsampledGaussian {
    /// A checked plan: σ finite and > 0, q in (0, 1], steps >= 1.
    pub fn new(noise_multiplier: f64, sampling_rate: f64, steps: u64) -> Result<Self> {
        rdp::check_mechanism(sampling_rate, noise_multiplier)?;
        if steps == 0 {
            return Err(Error::param("steps", "must be at least 1"));
        }
        Ok(SubsampledGaussian {
            noise_multiplier,
            sampling_rate,
            steps,
        })
    }

    /// The plan as accounted under `relation`: unchanged for add/remove; at q = 1 under
    /// replace-one the sensitivity doubles to 2C, so the effective multiplier is σ/2. A
    /// subsampled plan under replace-one is refused.
    pub fn for_relation(self, relation: Relation) -> Result<Self> {
        match relation {
            Relation::AddRemove => Ok(self),
            Relation::ReplaceOne if self.sampling_rate == 1.0 => Ok(SubsampledGaussian {
                noise_multiplier: self.noise_multiplier / 2.0,
                ..self
            }),
            Relation::ReplaceOne => Err(Error::param(
                "neighbours",
                "the subsampled-Gaussian accountant covers add/remove neighbours only; use \
                 neighbours = \"add_remove\" or full batches (sampling rate 1)",
            )),
        }
    }

    /// The composed RDP curve over `orders`.
    pub fn rdp(&self, orders: &[f64]) -> Result<Vec<f64>> {
        rdp::compute_rdp(
            self.sampling_rate,
            self.noise_multiplier,
            self.steps,
            orders,
        )
    }

    /// (ε, δ) over dp-accounting's default orders with the Balle et al. 2020 conversion.
    pub fn epsilon(&self, delta: f64) -> Result<Guarantee> {
        self.epsilon_with(delta, &rdp::default_orders(), Conversion::Balle2020)
    }

    /// (ε, δ) over the given orders and conversion.
    pub fn epsilon_with(
        &self,
        delta: f64,
        orders: &[f64],
        conversion: Conversion,
    ) -> Result<Guarantee> {
        let curve = self.rdp(orders)?;
        let (epsilon, order) = rdp::epsilon_from_rdp(orders, &curve, delta, conversion)?;
        Ok(Guarantee {
            epsilon,
            delta,
            order,
        })
    }
}

/// Largest multiplier tried before a target is declared unreachable.
const MAX_SIGMA: f64 = 1e6;

/// The smallest noise multiplier (to relative precision 1e-9) whose plan of `steps` steps at
/// sampling rate q is (ε, δ)-DP with ε <= `epsilon` (default orders, Balle et al. conversion).
///
/// ε(σ) is non-increasing in σ (at each order the subsampled Gaussian's RDP falls as σ grows,
/// and the conversion is monotone in the RDP), so bisection on a bracket [lo, hi] with
/// ε(lo) > target >= ε(hi) converges; the upper end is returned, which meets the target.
pub fn noise_multiplier_for(
    epsilon: f64,
    sampling_rate: f64,
    steps: u64,
    delta: f64,
) -> Result<(f64, Guarantee)> {
    crate::privacy::check_epsilon(epsilon)?;
    rdp::check_delta(delta)?;
    let eps_at = |sigma: f64| -> Result<Guarantee> {
        SubsampledGaussian::new(sigma, sampling_rate, steps)?.epsilon(delta)
    };
    let mut hi = 1.0;
    let mut at_hi = eps_at(hi)?;
    while at_hi.epsilon > epsilon {
        hi *= 2.0;
        if hi > MAX_SIGMA {
            return Err(Error::param(
                "epsilon",
                format!(
                    "{epsilon} is not reached by any noise multiplier up to {MAX_SIGMA:e} \
                     (sampling rate {sampling_rate}, {steps} steps, delta {delta:e})"
                ),
            ));
        }
        at_hi = eps_at(hi)?;
    }
    let mut lo = hi / 2.0;
    while eps_at(lo)?.epsilon <= epsilon {
        hi = lo;
        lo /= 2.0;
        if lo < 1e-6 {
            // Any multiplier meets a target this loose; the smallest tried is returned.
            return Ok((hi, eps_at(hi)?));
        }
    }
    at_hi = eps_at(hi)?;
    while hi / lo - 1.0 > 1e-9 {
        let mid = (lo * hi).sqrt();
        let g = eps_at(mid)?;
        if g.epsilon <= epsilon {
            hi = mid;
            at_hi = g;
        } else {
            lo = mid;
        }
    }
    Ok((hi, at_hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_delta_is_one_over_n_squared() {
        assert_eq!(default_delta(100), 1e-4);
        assert_eq!(default_delta(32561), 1.0 / (32561.0f64 * 32561.0));
    }

    #[test]
    fn more_noise_never_costs_more_epsilon() {
        let mut last = f64::INFINITY;
        for sigma in [0.6, 0.8, 1.0, 1.5, 3.0, 10.0] {
            let e = SubsampledGaussian::new(sigma, 0.01, 1000)
                .unwrap()
                .epsilon(1e-5)
                .unwrap()
                .epsilon;
            assert!(e < last, "sigma {sigma}: {e} >= {last}");
            last = e;
        }
    }

    #[test]
    fn search_meets_the_target_tightly() {
        let (sigma, g) = noise_multiplier_for(1.0, 0.01, 1000, 1e-5).unwrap();
        assert!(g.epsilon <= 1.0 && g.epsilon > 0.999, "{g:?}");
        let below = SubsampledGaussian::new(sigma * (1.0 - 1e-6), 0.01, 1000)
            .unwrap()
            .epsilon(1e-5)
            .unwrap();
        assert!(below.epsilon > 1.0, "{below:?}");
    }

    #[test]
    fn replace_one_is_accounted_only_for_full_batches() {
        let full = SubsampledGaussian::new(2.0, 1.0, 10).unwrap();
        let r = full.for_relation(Relation::ReplaceOne).unwrap();
        assert_eq!(r.noise_multiplier, 1.0);
        let sub = SubsampledGaussian::new(2.0, 0.1, 10).unwrap();
        let err = sub
            .for_relation(Relation::ReplaceOne)
            .unwrap_err()
            .to_string();
        assert!(err.contains("add/remove"), "{err}");
        assert!(SubsampledGaussian::new(1.0, 0.1, 0).is_err());
    }
}
