//! Learner kinds scored by their own test metrics (issue 49): linear regression, PCA and
//! k-means, private beside non-private. The fits live in `learners::estimators`; each private
//! kind's relation, sensitivity and proof are beside its fit and in docs/privacy.md.

use super::{Axis, CellBudget, Described, GridValues, LearnerKind, Refusal, refuse};
use crate::error::Result;
use crate::learners::Learner;
use crate::learners::estimators::kmeans::{KMeansFit, SampleAggregateFit};
use crate::learners::estimators::linreg::{AdaSspFit, FunctionalFit, ObjectiveFit, RidgeFit};
use crate::learners::estimators::pca::{PcaFit, PcaMethod};
use serde::Deserialize;

fn one() -> f64 {
    1.0
}

fn ten() -> usize {
    10
}

fn five() -> usize {
    5
}

fn check_alpha(alpha: f64) -> std::result::Result<(), Refusal> {
    if !(alpha.is_finite() && alpha >= 0.0) {
        return Err(refuse(
            "alpha",
            format!("must be finite and >= 0, got {alpha}"),
        ));
    }
    Ok(())
}

fn check_delta(delta: f64) -> std::result::Result<(), Refusal> {
    if !(delta > 0.0 && delta < 1.0) {
        return Err(refuse("delta", format!("must be in (0, 1), got {delta}")));
    }
    Ok(())
}

fn check_at_least(
    field: &'static str,
    value: usize,
    min: usize,
) -> std::result::Result<(), Refusal> {
    if value < min {
        return Err(refuse(
            field,
            format!("must be at least {min}, got {value}"),
        ));
    }
    Ok(())
}

/// `learner = "linreg"`: ridge regression, non-private.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Linreg {
    /// Ridge penalty α on the scaled design [default 1].
    #[serde(default = "one")]
    alpha: f64,
}

impl Described for Linreg {
    const NAME: &'static str = "linreg";
    const ABOUT: &'static str = "ridge regression on features scaled by their public bounds \
                                 (non-private reference; mse, r2)";
    const FIELDS: &'static [&'static str] = &["alpha"];
}

impl LearnerKind for Linreg {
    fn private(&self) -> bool {
        false
    }
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_alpha(self.alpha)
    }
    fn learner(&self, _: &GridValues, _: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(RidgeFit { alpha: self.alpha }))
    }
}

/// `learner = "linreg_ssp"`: AdaSSP (Wang 2018).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinregSsp {
    delta: f64,
}

impl Described for LinregSsp {
    const NAME: &'static str = "linreg_ssp";
    const ABOUT: &'static str = "sufficient statistics perturbation, adaptive ridge (AdaSSP, \
                                 Wang 2018): three Gaussian releases ((ε, δ)-DP)";
    const FIELDS: &'static [&'static str] = &["delta"];
}

impl LearnerKind for LinregSsp {
    fn private(&self) -> bool {
        true
    }
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_delta(self.delta)
    }
    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(AdaSspFit {
            epsilon: budget.train_of(Self::NAME)?,
            delta: self.delta,
        }))
    }
}

/// `learner = "linreg_functional"`: the functional mechanism (Zhang et al. 2012).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinregFunctional {
    /// Public ridge α added to the noisy objective [default 1].
    #[serde(default = "one")]
    alpha: f64,
}

impl Described for LinregFunctional {
    const NAME: &'static str = "linreg_functional";
    const ABOUT: &'static str = "functional mechanism (Zhang et al. 2012): Laplace on the \
                                 least-squares polynomial's coefficients (ε-DP)";
    const FIELDS: &'static [&'static str] = &["alpha"];
}

impl LearnerKind for LinregFunctional {
    fn private(&self) -> bool {
        true
    }
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_alpha(self.alpha)
    }
    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(FunctionalFit {
            epsilon: budget.train_of(Self::NAME)?,
            alpha: self.alpha,
        }))
    }
}

/// `learner = "pca"`: exact PCA, non-private.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pca {
    components: usize,
}

impl Described for Pca {
    const NAME: &'static str = "pca";
    const ABOUT: &'static str = "PCA about the training mean (non-private reference; \
                                 captured_variance)";
    const FIELDS: &'static [&'static str] = &["components"];
}

impl LearnerKind for Pca {
    fn private(&self) -> bool {
        false
    }
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_at_least("components", self.components, 1)
    }
    fn learner(&self, _: &GridValues, _: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(PcaFit {
            components: self.components,
            method: PcaMethod::Exact,
        }))
    }
}

/// `learner = "pca_sulq"`: Laplace on each second-moment entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcaSulq {
    components: usize,
}

impl Described for PcaSulq {
    const NAME: &'static str = "pca_sulq";
    const ABOUT: &'static str = "SuLQ-style PCA (after Blum et al. 2005): Laplace on each \
                                 second-moment entry, top-k eigenvectors (ε-DP)";
    const FIELDS: &'static [&'static str] = &["components"];
}

impl LearnerKind for PcaSulq {
    fn private(&self) -> bool {
        true
    }
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_at_least("components", self.components, 1)
    }
    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(PcaFit {
            components: self.components,
            method: PcaMethod::Sulq {
                epsilon: budget.train_of(Self::NAME)?,
            },
        }))
    }
}

/// `learner = "pca_analyze_gauss"`: Analyze Gauss (Dwork et al. 2014).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcaAnalyzeGauss {
    components: usize,
    delta: f64,
}

impl Described for PcaAnalyzeGauss {
    const NAME: &'static str = "pca_analyze_gauss";
    const ABOUT: &'static str = "Analyze Gauss (Dwork et al. 2014): Gaussian on the \
                                 second-moment matrix, top-k eigenvectors ((ε, δ)-DP)";
    const FIELDS: &'static [&'static str] = &["components", "delta"];
}

impl LearnerKind for PcaAnalyzeGauss {
    fn private(&self) -> bool {
        true
    }
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_at_least("components", self.components, 1)?;
        check_delta(self.delta)
    }
    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(PcaFit {
            components: self.components,
            method: PcaMethod::AnalyzeGauss {
                epsilon: budget.train_of(Self::NAME)?,
                delta: self.delta,
            },
        }))
    }
}

/// `learner = "pca_power_method"`: the noisy power method (Hardt & Price 2014).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcaPowerMethod {
    components: usize,
    delta: f64,
    /// Power iterations T [default 10].
    #[serde(default = "ten")]
    iterations: usize,
}

impl Described for PcaPowerMethod {
    const NAME: &'static str = "pca_power_method";
    const ABOUT: &'static str = "noisy power method (Hardt & Price 2014): T Gaussian \
                                 releases of A X ((ε, δ)-DP, basic composition)";
    const FIELDS: &'static [&'static str] = &["components", "delta", "iterations"];
}

impl LearnerKind for PcaPowerMethod {
    fn private(&self) -> bool {
        true
    }
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_at_least("components", self.components, 1)?;
        check_at_least("iterations", self.iterations, 1)?;
        check_delta(self.delta)
    }
    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(PcaFit {
            components: self.components,
            method: PcaMethod::Power {
                epsilon: budget.train_of(Self::NAME)?,
                delta: self.delta,
                iterations: self.iterations,
            },
        }))
    }
}

/// `learner = "kmeans"`: Lloyd's algorithm from k seeded training rows, non-private.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KMeans {
    clusters: usize,
}

impl Described for KMeans {
    const NAME: &'static str = "kmeans";
    const ABOUT: &'static str = "Lloyd's k-means from k seeded training rows (non-private \
                                 reference; kmeans_cost, ari)";
    const FIELDS: &'static [&'static str] = &["clusters"];
}

impl LearnerKind for KMeans {
    fn private(&self) -> bool {
        false
    }
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_at_least("clusters", self.clusters, 2)
    }
    fn learner(&self, _: &GridValues, _: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(KMeansFit {
            clusters: self.clusters,
            private: None,
        }))
    }
}

/// `learner = "kmeans_dp_lloyd"`: the SuLQ private Lloyd iteration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KMeansDpLloyd {
    clusters: usize,
    /// Lloyd iterations T, each at ε/T [default 5].
    #[serde(default = "five")]
    iterations: usize,
}

impl Described for KMeansDpLloyd {
    const NAME: &'static str = "kmeans_dp_lloyd";
    const ABOUT: &'static str = "SuLQ private Lloyd (Blum et al. 2005): Laplace counts and sums \
                                 per cluster, T iterations (ε-DP, basic composition)";
    const FIELDS: &'static [&'static str] = &["clusters", "iterations"];
}

impl LearnerKind for KMeansDpLloyd {
    fn private(&self) -> bool {
        true
    }
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_at_least("clusters", self.clusters, 2)?;
        check_at_least("iterations", self.iterations, 1)
    }
    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(KMeansFit {
            clusters: self.clusters,
            private: Some((budget.train_of(Self::NAME)?, self.iterations)),
        }))
    }
}

/// `learner = "linreg_objective"`: objective perturbation over a ball (Kifer, Smith &
/// Thakurta 2012).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinregObjective {
    /// Public ridge α; the fit uses max(α, 4/ε) [default 1].
    #[serde(default = "one")]
    alpha: f64,
    /// Public radius R of the ball the weights are constrained to [default 1].
    #[serde(default = "one")]
    radius: f64,
}

impl Described for LinregObjective {
    const NAME: &'static str = "linreg_objective";
    const ABOUT: &'static str = "objective perturbation for least squares on the ball ||w|| <= \
                                 radius (Kifer, Smith & Thakurta 2012): L2-mechanism noise in \
                                 the objective (ε-DP)";
    const FIELDS: &'static [&'static str] = &["alpha", "radius"];
}

impl LearnerKind for LinregObjective {
    fn private(&self) -> bool {
        true
    }
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_alpha(self.alpha)?;
        if !(self.radius.is_finite() && self.radius > 0.0) {
            return Err(refuse(
                "radius",
                format!("must be finite and > 0, got {}", self.radius),
            ));
        }
        Ok(())
    }
    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(ObjectiveFit {
            epsilon: budget.train_of(Self::NAME)?,
            alpha: self.alpha,
            radius: self.radius,
        }))
    }
}

/// `learner = "kmeans_sample_aggregate"`: sample and aggregate (Nissim, Raskhodnikova & Smith
/// 2007) with the noisy mean of the blocks' centres.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KMeansSampleAggregate {
    clusters: usize,
    /// Public number of blocks m [default 10].
    #[serde(default = "ten")]
    blocks: usize,
}

impl Described for KMeansSampleAggregate {
    const NAME: &'static str = "kmeans_sample_aggregate";
    const ABOUT: &'static str = "sample and aggregate (Nissim, Raskhodnikova & Smith 2007): \
                                 Lloyd on m public blocks, Laplace on the mean of their sorted \
                                 centres (ε-DP)";
    const FIELDS: &'static [&'static str] = &["clusters", "blocks"];
}

impl LearnerKind for KMeansSampleAggregate {
    fn private(&self) -> bool {
        true
    }
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_at_least("clusters", self.clusters, 2)?;
        check_at_least("blocks", self.blocks, 1)
    }
    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        Ok(Box::new(SampleAggregateFit {
            clusters: self.clusters,
            blocks: self.blocks,
            epsilon: budget.train_of(Self::NAME)?,
        }))
    }
}
