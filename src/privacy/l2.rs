//! The L2 (vector) mechanism and the general p-norm mechanism (SPEC 2, thesis section 2.x,
//! Chaudhuri et al. 2011).
//!
//! * Domain: vectors f(X) in R^D (model parameters, objective gradients).
//! * Input metric: p-norm distance between f(X) and f(X') for neighbours under the run's
//!   relation; the caller supplies the p-norm sensitivity Delta_p = max ||f(X) - f(X')||_p.
//! * Mechanism: release f(X) + b with density of b proportional to exp(-||b||_p / beta),
//!   beta = Delta_p / eps.
//! * Measure: pure epsilon-DP.
//! * Proof sketch: the density ratio at any output z is
//!   exp((||z - f(X')||_p - ||z - f(X)||_p) / beta) <= exp(||f(X) - f(X')||_p / beta) <= exp(eps)
//!   by the triangle inequality.
//!
//! Sampling: write b = r u with r = ||b||_p and u = b / r on the unit p-sphere. In p-norm polar
//! coordinates the density of r is proportional to r^(D-1) exp(-r / beta), i.e.
//! r ~ Gamma(shape D, scale beta), independent of u, and u follows the cone measure of the unit
//! p-ball. For p = 2 that is the uniform direction (a normalised standard normal vector). For
//! p != 2 it is NOT uniform on the sphere: we draw g with i.i.d. coordinates of density
//! proportional to exp(-|g|^p) (|g| = Gamma(1/p, 1)^(1/p) with a random sign) and use
//! u = g / ||g||_p (Schechtman & Zinn 1990), which has exactly the cone measure.
//!
//! Floating-point sampling: fine for measuring accuracy, not hardened against Mironov (2012).

use super::mechanism::{Charge, PrivacyMap};
use super::{Relation, check_positive};
use crate::error::{Error, Result};
use rand::Rng;
use rand_distr::{Distribution, Gamma, StandardNormal};

mechanism_with_map!(L2Mechanism, PNormMechanism);

pure_noise_mechanism! {
    /// The L2 / vector mechanism: noise density proportional to exp(-||b||_2 / beta), drawn
    /// through a [`Charge`].
    pub struct L2Mechanism(L2Noise);
    /// beta = L2 sensitivity / epsilon for a sensitivity derived under `relation`: pure eps-DP.
    fn new;
}

impl L2Mechanism {
    /// Noise of beta = Delta / `noise_epsilon` for a release that is private by an argument
    /// other than the plain L2 map, stated by `map` (objective perturbation: the noise enters
    /// the objective, and Algorithm 7's proof gives eps for beta = Delta_b / eps'). The caller's
    /// proof sketch must justify the map. The scale is bound to the map: `noise_epsilon` above
    /// the map's eps is refused, so the noise is never below the plain L2 mechanism's for the
    /// map's sensitivity.
    pub fn with_map(map: PrivacyMap, noise_epsilon: f64) -> Result<Self> {
        check_positive("noise epsilon", noise_epsilon)?;
        if noise_epsilon > map.epsilon {
            return Err(Error::param(
                "epsilon",
                format!(
                    "L2 noise calibrated at eps {noise_epsilon} exceeds the stated eps {}",
                    map.epsilon
                ),
            ));
        }
        Ok(L2Mechanism {
            noise: L2Noise::with_scale(map.sensitivity / noise_epsilon)?,
            map,
        })
    }

    /// beta.
    pub fn scale(&self) -> f64 {
        self.noise.scale
    }
}

impl Charge<'_, L2Mechanism> {
    /// The noise vector of dimension `dim` of this release.
    pub fn sample<R: Rng + ?Sized>(&mut self, dim: usize, rng: &mut R) -> Vec<f64> {
        self.mechanism.noise.sample(dim, rng)
    }
}

/// The L2-mechanism noise law (density proportional to exp(-||b||_2 / beta)) with no privacy
/// claim of its own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct L2Noise {
    scale: f64,
}

impl L2Noise {
    /// The law with an explicit beta.
    pub fn with_scale(scale: f64) -> Result<Self> {
        check_positive("scale", scale)?;
        Ok(L2Noise { scale })
    }

    /// beta.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// One noise vector of dimension `dim`: uniform direction, norm ~ Gamma(dim, beta).
    pub fn sample<R: Rng + ?Sized>(&self, dim: usize, rng: &mut R) -> Vec<f64> {
        with_gamma_norm(dim, self.scale, rng, unit_sphere)
    }
}

/// `direction(dim, rng)` (a unit vector in the chosen norm) scaled by a norm ~ Gamma(dim, beta),
/// drawn in that order; empty for dim = 0.
fn with_gamma_norm<R: Rng + ?Sized>(
    dim: usize,
    scale: f64,
    rng: &mut R,
    direction: impl FnOnce(usize, &mut R) -> Vec<f64>,
) -> Vec<f64> {
    if dim == 0 {
        return Vec::new();
    }
    let mut u = direction(dim, rng);
    let r = Gamma::new(dim as f64, scale)
        .expect("valid gamma")
        .sample(rng);
    u.iter_mut().for_each(|v| *v *= r);
    u
}

/// A direction uniform on the unit sphere of R^dim (normalised standard normal vector).
pub fn unit_sphere<R: Rng + ?Sized>(dim: usize, rng: &mut R) -> Vec<f64> {
    loop {
        let g: Vec<f64> = (0..dim).map(|_| rng.sample(StandardNormal)).collect();
        let n = g.iter().map(|v| v * v).sum::<f64>().sqrt();
        if n > 0.0 {
            return g.into_iter().map(|v| v / n).collect();
        }
    }
}

/// The p-norm mechanism: noise density proportional to exp(-||b||_p / beta), p >= 1, drawn
/// through a [`Charge`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PNormMechanism {
    noise: PNormNoise,
    map: PrivacyMap,
}

impl PNormMechanism {
    /// beta = p-norm sensitivity / epsilon under `relation`: pure eps-DP.
    pub fn new(p: f64, sensitivity: f64, epsilon: f64, relation: Relation) -> Result<Self> {
        let map = PrivacyMap::pure(sensitivity, epsilon, relation)?;
        Ok(PNormMechanism {
            noise: PNormNoise::with_scale(p, sensitivity / epsilon)?,
            map,
        })
    }

    pub fn noise(&self) -> PNormNoise {
        self.noise
    }
}

impl Charge<'_, PNormMechanism> {
    /// The noise vector of dimension `dim` of this release.
    pub fn sample<R: Rng + ?Sized>(&mut self, dim: usize, rng: &mut R) -> Vec<f64> {
        self.mechanism.noise.sample(dim, rng)
    }
}

/// The p-norm noise law (density proportional to exp(-||b||_p / beta)), no privacy claim.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PNormNoise {
    p: f64,
    scale: f64,
}

impl PNormNoise {
    /// The law for p >= 1 and beta > 0.
    pub fn with_scale(p: f64, scale: f64) -> Result<Self> {
        check_positive("scale", scale)?;
        if !(p.is_finite() && p >= 1.0) {
            return Err(Error::param(
                "p",
                format!("must be finite and >= 1, got {p}"),
            ));
        }
        Ok(PNormNoise { p, scale })
    }

    pub fn p(&self) -> f64 {
        self.p
    }

    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// One noise vector: cone-measure direction on the unit p-sphere, p-norm ~ Gamma(dim, beta).
    pub fn sample<R: Rng + ?Sized>(&self, dim: usize, rng: &mut R) -> Vec<f64> {
        with_gamma_norm(dim, self.scale, rng, |dim, rng| {
            unit_p_sphere(self.p, dim, rng)
        })
    }
}

/// ||v||_p.
pub fn p_norm(v: &[f64], p: f64) -> f64 {
    v.iter().map(|x| x.abs().powf(p)).sum::<f64>().powf(1.0 / p)
}

/// A point on the unit p-sphere distributed by the cone measure (generalised-Gaussian trick).
pub fn unit_p_sphere<R: Rng + ?Sized>(p: f64, dim: usize, rng: &mut R) -> Vec<f64> {
    let gamma = Gamma::new(1.0 / p, 1.0).expect("valid gamma");
    loop {
        let g: Vec<f64> = (0..dim)
            .map(|_| {
                let m: f64 = gamma.sample(rng);
                let m = m.powf(1.0 / p);
                if rng.r#gen::<bool>() { m } else { -m }
            })
            .collect();
        let n = p_norm(&g, p);
        if n > 0.0 && n.is_finite() {
            return g.into_iter().map(|v| v / n).collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from;
    use crate::stats::ks_statistic;
    use statrs::distribution::{ContinuousCDF, Gamma as SGamma};
    use std::f64::consts::PI;

    /// A mechanism with its own map draws noise calibrated for that map's sensitivity at a
    /// budget share no larger than its eps, and refuses a share above it.
    #[test]
    fn a_stated_map_binds_the_noise_scale() {
        let map = PrivacyMap::pure(2.0, 0.5, Relation::ReplaceOne).unwrap();
        assert_eq!(L2Mechanism::with_map(map, 0.25).unwrap().scale(), 8.0);
        assert_eq!(L2Mechanism::with_map(map, 0.5).unwrap().scale(), 4.0);
        for share in [0.5 + 1e-9, 1.0, 0.0, f64::NAN] {
            assert!(L2Mechanism::with_map(map, share).is_err(), "{share}");
        }
    }

    /// KS at level 0.001 (critical value 1.949 / sqrt(n)): the L2 norm follows Gamma(D, beta)
    /// and the same draws reject Gamma(D, 0.7 beta) and Gamma(D, 1.3 beta).
    #[test]
    fn l2_norm_is_gamma_and_wrong_scales_are_rejected() {
        let n = 20_000;
        let crit = 1.949 / (n as f64).sqrt();
        for (dim, beta) in [(1usize, 2.0), (2, 0.5), (10, 3.0)] {
            let m = L2Noise::with_scale(beta).unwrap();
            let mut rng = rng_from(&["test", "l2-norm", &dim.to_string()]);
            let norms: Vec<f64> = (0..n)
                .map(|_| {
                    let b = m.sample(dim, &mut rng);
                    b.iter().map(|v| v * v).sum::<f64>().sqrt()
                })
                .collect();
            let cdf = |s: f64| {
                let g = SGamma::new(dim as f64, 1.0 / s).unwrap();
                move |x: f64| g.cdf(x)
            };
            assert!(ks_statistic(&norms, cdf(beta)) < crit, "D = {dim}");
            for wrong in [0.7 * beta, 1.3 * beta] {
                assert!(ks_statistic(&norms, cdf(wrong)) > crit, "D = {dim} {wrong}");
            }
        }
    }

    /// Direction: for D = 2 the angle is uniform on (-pi, pi] and its value folded into one
    /// quadrant is uniform (KS, alpha = 0.001), while the folded angle of the (non-uniform) L1
    /// direction is rejected; for D = 5 the mean
    /// direction is within 4 standard errors of 0 in every coordinate.
    #[test]
    fn l2_direction_is_uniform() {
        let n = 20_000;
        let crit = 1.949 / (n as f64).sqrt();
        let mut rng = rng_from(&["test", "l2-dir"]);
        let m = L2Noise::with_scale(1.0).unwrap();
        let angles: Vec<f64> = (0..n)
            .map(|_| {
                let b = m.sample(2, &mut rng);
                b[1].atan2(b[0])
            })
            .collect();
        let uni = |x: f64| ((x + PI) / (2.0 * PI)).clamp(0.0, 1.0);
        assert!(ks_statistic(&angles, uni) < crit);
        // Folded into one quadrant, where the L1 direction deviates most from uniform.
        let quarter = |a: &f64| a.rem_euclid(PI / 2.0);
        let uni_q = |x: f64| (x / (PI / 2.0)).clamp(0.0, 1.0);
        let folded: Vec<f64> = angles.iter().map(quarter).collect();
        assert!(ks_statistic(&folded, uni_q) < crit);
        let l1 = PNormNoise::with_scale(1.0, 1.0).unwrap();
        let l1_angles: Vec<f64> = (0..n)
            .map(|_| {
                let b = l1.sample(2, &mut rng);
                b[1].atan2(b[0])
            })
            .collect();
        let l1_folded: Vec<f64> = l1_angles.iter().map(quarter).collect();
        assert!(ks_statistic(&l1_folded, uni_q) > crit);

        let d = 5;
        let mut mean = vec![0.0; d];
        for _ in 0..n {
            for (m, u) in mean.iter_mut().zip(unit_sphere(d, &mut rng)) {
                *m += u / n as f64;
            }
        }
        // Var of a coordinate of a uniform unit vector is 1/D.
        let se = (1.0 / d as f64 / n as f64).sqrt();
        assert!(mean.iter().all(|m| m.abs() < 4.0 * se), "{mean:?}");
    }

    /// The p-norm of p-norm noise is Gamma(D, beta) for p = 1 and 10 (KS, alpha = 0.001), and
    /// for p = 1, D = 2 each coordinate of the noise is Laplace(beta) (the L1 mechanism is the
    /// Laplace mechanism), which a uniform-direction sampler would fail.
    #[test]
    fn p_norm_noise_has_the_right_law() {
        let n = 20_000;
        let crit = 1.949 / (n as f64).sqrt();
        for p in [1.0, 10.0] {
            let beta = 1.5;
            let m = PNormNoise::with_scale(p, beta).unwrap();
            let mut rng = rng_from(&["test", "pnorm", &p.to_string()]);
            let draws: Vec<Vec<f64>> = (0..n).map(|_| m.sample(2, &mut rng)).collect();
            let norms: Vec<f64> = draws.iter().map(|b| p_norm(b, p)).collect();
            let g = SGamma::new(2.0, 1.0 / beta).unwrap();
            assert!(ks_statistic(&norms, |x| g.cdf(x)) < crit, "p = {p}");
            if p == 1.0 {
                let xs: Vec<f64> = draws.iter().map(|b| b[0]).collect();
                let lap = |x: f64| crate::privacy::laplace::laplace_cdf(beta, x);
                assert!(ks_statistic(&xs, lap) < crit);
                let lap_wrong = |x: f64| crate::privacy::laplace::laplace_cdf(1.3 * beta, x);
                assert!(ks_statistic(&xs, lap_wrong) > crit);
            }
        }
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(L2Mechanism::new(1.0, 0.0, Relation::AddRemove).is_err());
        assert!(L2Noise::with_scale(-1.0).is_err());
        assert!(PNormNoise::with_scale(0.5, 1.0).is_err());
        assert_eq!(
            L2Mechanism::new(2.0, 0.1, Relation::AddRemove)
                .unwrap()
                .scale(),
            20.0
        );
    }
}
