//! PCA: exact (non-private), Analyze Gauss (Dwork et al. 2014), SuLQ-style Laplace input
//! perturbation (Blum et al. 2005) and the noisy power method (Hardt & Price 2014).
//!
//! The private ones read the second-moment matrix A = Σ z zᵀ of z = u / √d (u: the features
//! in `[-1, 1]` through their public bounds, so ||z||₂ ≤ 1), centred at the bounds' midpoint,
//! not at the private mean. The non-private reference centres at the training mean, as
//! scikit-learn's `PCA` does.

use super::linalg::{add_to_upper, mirror_upper, orthonormalise, symmetric_eigen};
use super::{Estimator, Scored, check_real, unit_box};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::learners::{Classifier, FitInput, Learner, TrialLog};
use crate::privacy::{GaussCalibration, Gaussian, Laplace, Ledger};
use crate::rng::Rng;
use ndarray::{Array2, Axis, s};
use rand_distr::{Distribution, StandardNormal};
use std::collections::BTreeMap;

/// k orthonormal directions (columns) in the scaled feature space `[-1, 1]^d`.
#[derive(Debug, Clone, PartialEq)]
pub struct Subspace {
    pub directions: Array2<f64>,
}

/// The rows of `data` in `[-1, 1]^d`, centred at their own mean.
fn centred(data: &Dataset, rows: &[u32]) -> Result<Array2<f64>> {
    let u = unit_box(data, rows)?;
    let mean = u.mean_axis(Axis(0)).expect("rows");
    Ok(u - &mean)
}

impl Estimator for Subspace {
    /// `captured_variance`: the share of the test rows' variance (about their mean, in the
    /// scaled space) the directions capture; `captured_variance_optimal`: the share the best k
    /// directions for those rows capture (an upper bound no release can pass);
    /// `captured_variance_gap`, their difference (never negative, by Ky Fan's maximum
    /// principle: the error a log-log slope can measure).
    fn score(&self, data: &Dataset, rows: &[u32]) -> Result<BTreeMap<String, f64>> {
        let c = centred(data, rows)?;
        let cov = c.t().dot(&c);
        let total = cov.diag().sum();
        let proj = c.dot(&self.directions);
        let captured = proj.iter().map(|v| v * v).sum::<f64>();
        let k = self.directions.ncols();
        let best: f64 = symmetric_eigen(&cov).0.iter().take(k).sum();
        Ok(BTreeMap::from([
            ("captured_variance".to_string(), captured / total),
            ("captured_variance_optimal".to_string(), best / total),
            (
                "captured_variance_gap".to_string(),
                (best - captured) / total,
            ),
        ]))
    }
}

/// The top-k eigenvectors of the symmetric `a`.
pub fn top_k(a: &Array2<f64>, k: usize) -> Array2<f64> {
    symmetric_eigen(a).1.slice(s![.., ..k]).to_owned()
}

/// The scaled second-moment matrix Σ z zᵀ, z = u / √d (||z||₂ ≤ 1).
fn second_moment(data: &Dataset, rows: &[u32]) -> Result<Array2<f64>> {
    let u = unit_box(data, rows)?;
    let root = (u.ncols() as f64).sqrt();
    let z = u / root;
    Ok(z.t().dot(&z))
}

/// Where exact PCA centres the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PcaCentre {
    /// The training mean: PCA as usual.
    #[default]
    Mean,
    /// The public bounds' midpoint: the second moment the private methods read, without their
    /// noise (an ablation's reference: what centring alone costs them).
    Midpoint,
}

/// Which PCA a cell runs, with its public parameters and its budget.
#[derive(Debug, Clone, Copy)]
pub enum PcaMethod {
    /// Exact PCA (non-private), about the training mean or the bounds' midpoint.
    Exact(PcaCentre),
    /// Analyze Gauss at (ε, δ), σ by `calibration`.
    AnalyzeGauss {
        epsilon: f64,
        delta: f64,
        calibration: GaussCalibration,
    },
    /// Laplace on each upper-triangle entry at ε.
    Sulq { epsilon: f64 },
    /// `iterations` noisy power steps at (ε, δ) in all.
    Power {
        epsilon: f64,
        delta: f64,
        iterations: usize,
    },
}

/// One cell's PCA: k components by one method.
#[derive(Debug, Clone, Copy)]
pub struct PcaFit {
    pub components: usize,
    pub method: PcaMethod,
}

impl Learner for PcaFit {
    fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
        let (data, rows, k) = (input.data, input.train, self.components);
        let directions = match self.method {
            PcaMethod::Exact(centre) => {
                log.ledger.non_private(
                    "train",
                    "none (exact covariance)",
                    "non-private PCA reference",
                );
                match centre {
                    PcaCentre::Mean => {
                        let c = centred(data, rows)?;
                        top_k(&c.t().dot(&c), k)
                    }
                    PcaCentre::Midpoint => top_k(&second_moment(data, rows)?, k),
                }
            }
            PcaMethod::AnalyzeGauss {
                epsilon,
                delta,
                calibration,
            } => {
                let mut rng = log.streams.stream("analyze_gauss");
                let a = second_moment(data, rows)?;
                let noise = MomentNoise::AnalyzeGauss {
                    epsilon,
                    delta,
                    calibration,
                };
                noise.top_k(a, k, &mut log.ledger, &mut rng)?
            }
            PcaMethod::Sulq { epsilon } => {
                let mut rng = log.streams.stream("sulq");
                let a = second_moment(data, rows)?;
                let noise = MomentNoise::sulq(epsilon, a.nrows());
                noise.top_k(a, k, &mut log.ledger, &mut rng)?
            }
            PcaMethod::Power {
                epsilon,
                delta,
                iterations,
            } => {
                let a = second_moment(data, rows)?;
                let mut start = log.streams.stream("power_start");
                let mut rng = log.streams.stream("power_noise");
                let budget = (epsilon, delta, iterations);
                noisy_power(&a, k, budget, &mut log.ledger, (&mut start, &mut rng))?
            }
        };
        Ok(Box::new(Scored(Box::new(Subspace { directions }))))
    }

    fn check_data(&self, data: &Dataset) -> Result<()> {
        check_real(data)?;
        if self.components > data.n_features() {
            return Err(Error::Data {
                dataset: data.name.clone(),
                reason: format!(
                    "PCA asks for {} components of {} features",
                    self.components,
                    data.n_features()
                ),
            });
        }
        Ok(())
    }
}

/// Input perturbation of the second-moment matrix A = Σ z zᵀ (||z||₂ ≤ 1): noise on each
/// upper-triangle entry, mirrored, then the top-k eigenvectors (post-processing).
#[derive(Debug, Clone, Copy)]
pub enum MomentNoise {
    /// Analyze Gauss (Dwork, Talwar, Thakurta & Zhang 2014), (ε, δ)-DP.
    ///
    /// * Add/remove L2 sensitivity of the upper triangle: ||z zᵀ||_F = ||z||₂² ≤ 1; replace-one 2.
    /// * Mechanism: N(0, σ²) on each upper-triangle entry; σ by `calibration`.
    AnalyzeGauss {
        epsilon: f64,
        delta: f64,
        calibration: GaussCalibration,
    },
    /// SuLQ-style input perturbation (after Blum, Dwork, McSherry & Nissim 2005, who add noise
    /// to each entry of the covariance), here with Laplace noise for pure ε-DP.
    ///
    /// * Add/remove L1 sensitivity of the upper triangle: Σ_{i ≤ j} |z_i z_j| =
    ///   (||z||₁² + ||z||₂²) / 2 ≤ (d + 1) / 2 ([`MomentNoise::sulq`]); replace-one twice that.
    /// * Mechanism: Laplace(Δ₁ / ε) on each upper-triangle entry.
    Sulq { epsilon: f64, sensitivity: f64 },
}

impl MomentNoise {
    /// SuLQ at ε with the L1 sensitivity bound of d features.
    pub fn sulq(epsilon: f64, d: usize) -> Self {
        MomentNoise::Sulq {
            epsilon,
            sensitivity: (d as f64 + 1.0) / 2.0,
        }
    }

    /// The top-k eigenvectors of the noisy, mirrored `a`.
    pub fn top_k(
        self,
        a: Array2<f64>,
        k: usize,
        ledger: &mut Ledger,
        rng: &mut Rng,
    ) -> Result<Array2<f64>> {
        let mut a = self.release(a, ledger, rng)?;
        mirror_upper(&mut a);
        Ok(top_k(&a, k))
    }

    /// The release alone: noise on each upper-triangle entry of `a`, the lower triangle left as
    /// it was. The audits call it with rows of larger norm or a wrong sensitivity to plant their
    /// mutants.
    pub fn release(
        self,
        mut a: Array2<f64>,
        ledger: &mut Ledger,
        rng: &mut Rng,
    ) -> Result<Array2<f64>> {
        let relation = ledger.relation();
        match self {
            MomentNoise::AnalyzeGauss {
                epsilon,
                delta,
                calibration,
            } => {
                let sensitivity = relation.doubled_for_replace(1.0);
                let g = calibration.gaussian(sensitivity, (epsilon, delta), relation)?;
                let mut c = ledger.charge("train", "gaussian (Analyze Gauss: Σ z zᵀ)", g)?;
                add_to_upper(&mut a, || c.sample(rng));
            }
            MomentNoise::Sulq {
                epsilon,
                sensitivity,
            } => {
                let sensitivity = relation.doubled_for_replace(sensitivity);
                let lap = Laplace::new(sensitivity, epsilon, relation)?;
                let mut c = ledger.charge("train", "laplace (SuLQ: Σ z zᵀ entries)", lap)?;
                add_to_upper(&mut a, || c.sample(rng));
            }
        }
        Ok(a)
    }
}

/// The noisy power method (Hardt & Price 2014, Algorithm 1), (ε, δ)-DP by basic composition of
/// its T Gaussian releases at (ε/T, δ/T) each.
///
/// * Start: a Gaussian d × k matrix from a public stream, orthonormalised.
/// * Release t: Y = A X + G, X the previous (orthonormal) iterate; add/remove L2 (Frobenius)
///   sensitivity ||z zᵀ X||_F = ||z||₂ ||Xᵀ z||₂ ≤ 1; replace-one 2.
/// * Mechanism: G with N(0, σ²) entries, σ by the analytic Gaussian; X = orth(Y).
pub fn noisy_power(
    a: &Array2<f64>,
    k: usize,
    budget: (f64, f64, usize),
    ledger: &mut Ledger,
    streams: (&mut Rng, &mut Rng),
) -> Result<Array2<f64>> {
    noisy_power_observed(a, k, budget, ledger, streams, &mut |_, _| {})
}

/// [`noisy_power`], showing each release Y = A X + G to `observe(X, Y)` before it is
/// orthonormalised: the audit reads the releases through it.
pub fn noisy_power_observed(
    a: &Array2<f64>,
    k: usize,
    (epsilon, delta, iterations): (f64, f64, usize),
    ledger: &mut Ledger,
    (start, rng): (&mut Rng, &mut Rng),
    observe: &mut dyn FnMut(&Array2<f64>, &Array2<f64>),
) -> Result<Array2<f64>> {
    let d = a.nrows();
    let mut x = Array2::from_shape_simple_fn((d, k), || StandardNormal.sample(start));
    orthonormalise(&mut x);
    let relation = ledger.relation();
    let steps = iterations as f64;
    for _ in 0..iterations {
        let sensitivity = relation.doubled_for_replace(1.0);
        let g = Gaussian::analytic(sensitivity, epsilon / steps, delta / steps, relation)?;
        let mut c = ledger.charge("train", "gaussian (noisy power method: A X)", g)?;
        let mut y = a.dot(&x);
        y.mapv_inplace(|v| v + c.sample(rng));
        observe(&x, &y);
        orthonormalise(&mut y);
        x = y;
    }
    Ok(x)
}
