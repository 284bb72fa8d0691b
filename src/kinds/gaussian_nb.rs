//! `learner = "gnb" | "private_gnb"`: Gaussian Naive Bayes on real-valued features
//! (`learners::gaussian_nb`); the thesis's NB stays binary.

use super::{CellBudget, Described, GridValues, LearnerKind, Refusal, refuse};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::learners::gaussian_nb::{
    Bounds, GaussianNbParams, GaussianNbValidParams, PrivateGnbParams, PrivateGnbValidParams,
    TrainRows, dense,
};
use crate::learners::{Classifier, FitInput, Learner, TrialLog};
use linfa::ParamGuard;
use serde::Deserialize;

/// `gnb`: scikit-learn's GaussianNB.
pub type Gnb = GaussianNbKind<false>;
/// `private_gnb`: Laplace on class counts, sums and squared deviations (eps-DP).
pub type PrivateGnb = GaussianNbKind<true>;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GaussianNbKind<const PRIVATE: bool> {
    /// `gnb`: fraction of the largest feature variance added to every variance (default
    /// 1e-9); `private_gnb`: fraction of each feature's squared public width added to its
    /// variances (default 1e-9).
    var_smoothing: Option<f64>,
}

impl<const PRIVATE: bool> Described for GaussianNbKind<PRIVATE> {
    const NAME: &'static str = if PRIVATE { "private_gnb" } else { "gnb" };
    const ABOUT: &'static str = if PRIVATE {
        "Gaussian NB: Lap on class counts, sums and squared deviations in public bounds, eps/3 each (eps-DP, sensitivity 1, D, D)"
    } else {
        "Gaussian Naive Bayes as scikit-learn's GaussianNB (non-private reference)"
    };
    const FIELDS: &'static [&'static str] = &["var_smoothing"];
}

impl<const PRIVATE: bool> LearnerKind for GaussianNbKind<PRIVATE> {
    fn private(&self) -> bool {
        PRIVATE
    }

    fn validate(&self, _grid: &[super::Axis]) -> std::result::Result<(), Refusal> {
        match self.var_smoothing {
            Some(v) if !(v.is_finite() && v >= 0.0) => Err(refuse(
                "var_smoothing",
                format!("must be finite and >= 0, got {v}"),
            )),
            _ => Ok(()),
        }
    }

    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        let smoothing = self.var_smoothing.unwrap_or(1e-9);
        Ok(if PRIVATE {
            let eps = budget.train_of(Self::NAME)?;
            let p = PrivateGnbParams::new(eps).var_smoothing(smoothing);
            Box::new(GnbFit::Private(p.check()?))
        } else {
            let p = GaussianNbParams::default().var_smoothing(smoothing);
            Box::new(GnbFit::Exact(p.check()?))
        })
    }
}

/// One cell's Gaussian NB.
#[derive(Debug)]
enum GnbFit {
    Exact(GaussianNbValidParams),
    Private(PrivateGnbValidParams),
}

impl Learner for GnbFit {
    fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
        let data = input.data;
        let all: Vec<usize> = (0..data.n_features()).collect();
        let t = train_rows(input, &all)?;
        Ok(Box::new(match self {
            GnbFit::Exact(p) => {
                log.ledger.non_private(
                    "train",
                    "none (exact means and variances)",
                    "non-private Gaussian NB reference",
                );
                p.fit_rows(&t)?
            }
            GnbFit::Private(p) => {
                let b = public_bounds(data)?;
                let bounds = Bounds {
                    lo: &b.lo,
                    hi: &b.hi,
                };
                let mut rng = log.streams.stream("train/private_gnb");
                p.fit_rows(&t, &bounds, &mut rng, &mut log.ledger)?
            }
        }))
    }

    fn check_data(&self, data: &Dataset) -> Result<()> {
        dense(data)?;
        if matches!(self, GnbFit::Private(_)) {
            public_bounds(data)?;
        }
        Ok(())
    }
}

/// The dataset's declared public bounds, or an error naming the field to declare.
/// The training rows of a fit on a dense dataset: its selected columns, else `all` (which the
/// caller owns: 0..D).
pub(crate) fn train_rows<'a>(input: &FitInput<'a>, all: &'a [usize]) -> Result<TrainRows<'a>> {
    let data = input.data;
    Ok(TrainRows {
        x: dense(data)?,
        rows: input.train,
        labels: &data.labels,
        n_classes: data.n_classes(),
        cols: input.features.unwrap_or(all),
    })
}

pub(crate) fn public_bounds(data: &Dataset) -> Result<&crate::data::PublicBounds> {
    data.bounds.as_ref().ok_or_else(|| Error::Data {
        dataset: data.name.clone(),
        reason: "a private learner on real-valued features needs the dataset's public `bounds`"
            .into(),
    })
}
