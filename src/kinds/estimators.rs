//! Learner kinds scored by their own test metrics (issue 49): linear regression, PCA and
//! k-means, private beside non-private. The fits live in `learners::estimators`; each private
//! kind's relation, sensitivity and proof are beside its fit and in docs/privacy.md.

use super::{
    Axis, CellBudget, Described, GridValues, LearnerKind, Refusal, check_alpha, check_open_unit,
    refuse,
};
use crate::error::Result;
use crate::learners::Learner;
use crate::learners::estimators::kmeans::{KMeansFit, SampleAggregateFit};
use crate::learners::estimators::linreg::{AdaSspFit, FunctionalFit, ObjectiveFit, RidgeFit};
use crate::learners::estimators::pca::{self, PcaFit, PcaMethod};

fn one() -> f64 {
    1.0
}

fn ten() -> usize {
    10
}

fn five() -> usize {
    5
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

/// The checks of a PCA by a Gaussian mechanism: at least one component, δ in (0, 1).
fn check_gaussian_pca(components: usize, delta: f64) -> std::result::Result<(), Refusal> {
    check_at_least("components", components, 1)?;
    check_open_unit("delta", delta)
}

/// Declares each estimator kind: its struct and [`Described`] (by [`super::kind!`]) and
/// [`LearnerKind`]: whether it is private, `validate` as `|kind| check`, and `learner` as
/// `|kind, budget| fit`, the per-cell learner built from the kind and the cell's budget.
macro_rules! estimators {
    ($(
        $(#[$doc:meta])*
        $kind:ident = $name:literal, private: $private:literal {
            $( $(#[$fattr:meta])* $field:ident: $ty:ty, )*
        }
        about: $about:expr,
        validate: |$vk:ident| $validate:expr,
        learner: |$lk:ident, $budget:pat_param| $learner:expr;
    )*) => {$(
        super::kind! {
            $(#[$doc])*
            $kind = $name {
                $( $(#[$fattr])* $field: $ty, )*
            }
            about: $about
        }

        impl LearnerKind for $kind {
            fn private(&self) -> bool {
                $private
            }
            fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
                let $vk = self;
                $validate
            }
            fn learner(&self, _: &GridValues, $budget: &CellBudget) -> Result<Box<dyn Learner>> {
                let $lk = self;
                Ok(Box::new($learner))
            }
        }
    )*};
}

estimators! {
    /// `learner = "linreg"`: ridge regression, non-private.
    Linreg = "linreg", private: false {
        /// Ridge penalty α on the scaled design [default 1].
        #[serde(default = "one")]
        alpha: f64,
    }
    about: "ridge regression on features scaled by their public bounds (non-private \
            reference; mse, r2)",
    validate: |k| check_alpha(Some(k.alpha)),
    learner: |k, _| RidgeFit { alpha: k.alpha };

    /// `learner = "linreg_ssp"`: AdaSSP (Wang 2018).
    LinregSsp = "linreg_ssp", private: true {
        delta: f64,
    }
    about: "sufficient statistics perturbation, adaptive ridge (AdaSSP, Wang 2018): three \
            Gaussian releases ((ε, δ)-DP)",
    validate: |k| check_open_unit("delta", k.delta),
    learner: |k, budget| AdaSspFit {
        epsilon: budget.train_of(Self::NAME)?,
        delta: k.delta,
    };

    /// `learner = "linreg_functional"`: the functional mechanism (Zhang et al. 2012).
    LinregFunctional = "linreg_functional", private: true {
        /// Public ridge α added to the noisy objective [default 1].
        #[serde(default = "one")]
        alpha: f64,
    }
    about: "functional mechanism (Zhang et al. 2012): Laplace on the least-squares \
            polynomial's coefficients (ε-DP)",
    validate: |k| check_alpha(Some(k.alpha)),
    learner: |k, budget| FunctionalFit {
        epsilon: budget.train_of(Self::NAME)?,
        alpha: k.alpha,
    };

    /// `learner = "pca"`: exact PCA, non-private.
    Pca = "pca", private: false {
        components: usize,
        /// `mean` (default) or `midpoint`: the bounds' midpoint, about which the private
        /// methods read the second moment.
        #[serde(default)]
        centre: pca::PcaCentre,
    }
    about: "PCA about the training mean, or with centre = \"midpoint\" about the bounds' \
            midpoint (non-private reference; captured_variance)",
    validate: |k| check_at_least("components", k.components, 1),
    learner: |k, _| PcaFit {
        components: k.components,
        method: PcaMethod::Exact(k.centre),
    };

    /// `learner = "pca_sulq"`: Laplace on each second-moment entry.
    PcaSulq = "pca_sulq", private: true {
        components: usize,
    }
    about: "SuLQ-style PCA (after Blum et al. 2005): Laplace on each second-moment entry, \
            top-k eigenvectors (ε-DP)",
    validate: |k| check_at_least("components", k.components, 1),
    learner: |k, budget| PcaFit {
        components: k.components,
        method: PcaMethod::Sulq {
            epsilon: budget.train_of(Self::NAME)?,
        },
    };

    /// `learner = "pca_analyze_gauss"`: Analyze Gauss (Dwork et al. 2014).
    PcaAnalyzeGauss = "pca_analyze_gauss", private: true {
        components: usize,
        delta: f64,
        /// σ's calibration: `analytic` (default), `classic` (ε < 1) or `classic_below_1`
        /// (SURVEYS.md §4.3: the classic σ below ε = 1, the analytic from 1 on).
        #[serde(default)]
        calibration: crate::privacy::GaussCalibration,
    }
    about: "Analyze Gauss (Dwork et al. 2014): Gaussian on the second-moment matrix, top-k \
            eigenvectors ((ε, δ)-DP)",
    validate: |k| check_gaussian_pca(k.components, k.delta),
    learner: |k, budget| PcaFit {
        components: k.components,
        method: PcaMethod::AnalyzeGauss {
            epsilon: budget.train_of(Self::NAME)?,
            delta: k.delta,
            calibration: k.calibration,
        },
    };

    /// `learner = "pca_power_method"`: the noisy power method (Hardt & Price 2014).
    PcaPowerMethod = "pca_power_method", private: true {
        components: usize,
        delta: f64,
        /// Power iterations T [default 10].
        #[serde(default = "ten")]
        iterations: usize,
    }
    about: "noisy power method (Hardt & Price 2014): T Gaussian releases of A X ((ε, δ)-DP, \
            basic composition)",
    validate: |k| {
        check_at_least("iterations", k.iterations, 1)?;
        check_gaussian_pca(k.components, k.delta)
    },
    learner: |k, budget| PcaFit {
        components: k.components,
        method: PcaMethod::Power {
            epsilon: budget.train_of(Self::NAME)?,
            delta: k.delta,
            iterations: k.iterations,
        },
    };

    /// `learner = "kmeans"`: Lloyd's algorithm from k seeded training rows, non-private.
    KMeans = "kmeans", private: false {
        clusters: usize,
    }
    about: "Lloyd's k-means from k seeded training rows (non-private reference; kmeans_cost, \
            ari)",
    validate: |k| check_at_least("clusters", k.clusters, 2),
    learner: |k, _| KMeansFit {
        clusters: k.clusters,
        private: None,
    };

    /// `learner = "kmeans_dp_lloyd"`: the SuLQ private Lloyd iteration.
    KMeansDpLloyd = "kmeans_dp_lloyd", private: true {
        clusters: usize,
        /// Lloyd iterations T, each at ε/T [default 5].
        #[serde(default = "five")]
        iterations: usize,
    }
    about: "SuLQ private Lloyd (Blum et al. 2005): Laplace counts and sums per cluster, T \
            iterations (ε-DP, basic composition)",
    validate: |k| {
        check_at_least("clusters", k.clusters, 2)?;
        check_at_least("iterations", k.iterations, 1)
    },
    learner: |k, budget| KMeansFit {
        clusters: k.clusters,
        private: Some((budget.train_of(Self::NAME)?, k.iterations)),
    };

    /// `learner = "linreg_objective"`: objective perturbation over a ball (Kifer, Smith &
    /// Thakurta 2012).
    LinregObjective = "linreg_objective", private: true {
        /// Public ridge α; the fit uses max(α, 4/ε) [default 1].
        #[serde(default = "one")]
        alpha: f64,
        /// Public radius R of the ball the weights are constrained to [default 1].
        #[serde(default = "one")]
        radius: f64,
    }
    about: "objective perturbation for least squares on the ball ||w|| <= radius (Kifer, \
            Smith & Thakurta 2012): L2-mechanism noise in the objective (ε-DP)",
    validate: |k| {
        check_alpha(Some(k.alpha))?;
        if !(k.radius.is_finite() && k.radius > 0.0) {
            return Err(refuse(
                "radius",
                format!("must be finite and > 0, got {}", k.radius),
            ));
        }
        Ok(())
    },
    learner: |k, budget| ObjectiveFit {
        epsilon: budget.train_of(Self::NAME)?,
        alpha: k.alpha,
        radius: k.radius,
    };

    /// `learner = "kmeans_sample_aggregate"`: sample and aggregate (Nissim, Raskhodnikova &
    /// Smith 2007) with the noisy mean of the blocks' centres.
    KMeansSampleAggregate = "kmeans_sample_aggregate", private: true {
        clusters: usize,
        /// Public number of blocks m [default 10].
        #[serde(default = "ten")]
        blocks: usize,
    }
    about: "sample and aggregate (Nissim, Raskhodnikova & Smith 2007): Lloyd on m public \
            blocks, Laplace on the mean of their sorted centres (ε-DP)",
    validate: |k| {
        check_at_least("clusters", k.clusters, 2)?;
        check_at_least("blocks", k.blocks, 1)
    },
    learner: |k, budget| SampleAggregateFit {
        clusters: k.clusters,
        blocks: k.blocks,
        epsilon: budget.train_of(Self::NAME)?,
    };
}
