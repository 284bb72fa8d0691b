//! `learner = "nb" | "private_nb" | "partitioned_nb" | "vaidya_nb"`: Bernoulli Naive Bayes,
//! exact or under one of three noise schemes. One struct; each kind reads only its `FIELDS`.

use super::variant::{Excess, Variant};
use super::{
    Axis, CellBudget, Described, GridValues, LearnerKind, Refusal, check_alpha,
    check_fixed_threshold, refuse,
};
use crate::error::Result;
use crate::learners::{
    BernoulliNbParams, Learner, PartitionedNbParams, PrivateNbParams, Release, Threshold,
    VaidyaNbParams,
};
use serde::Deserialize;

const EXACT: u8 = 0;
const ALGORITHM_1: u8 = 1;
const PARTITIONED: u8 = 2;
const VAIDYA: u8 = 3;

/// `nb`: the non-private reference.
pub type Nb = NaiveBayes<EXACT>;
/// `private_nb`: Algorithm 1.
pub type PrivateNb = NaiveBayes<ALGORITHM_1>;
/// `partitioned_nb`: the partitioning strategy of section 3.4.
pub type PartitionedNb = NaiveBayes<PARTITIONED>;
/// `vaidya_nb`: Vaidya et al. 2013, kept as a known-bad comparison.
pub type VaidyaNb = NaiveBayes<VAIDYA>;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NaiveBayes<const V: u8> {
    /// Smoothing pseudo-count; default 1.
    alpha: Option<f64>,
    /// Threshold t of the noisy counts (or a `threshold` grid axis); default `q65`.
    threshold: Option<Threshold>,
    /// Which counts Algorithm 1 releases; default `on_off`.
    release: Option<Release>,
    /// An ablation variant ([`PRIVATE_NB_EXACT_PRIOR`], `private_nb` only).
    variant: Option<NbVariant>,
}

/// Algorithm 1 with the class prior from the exact class counts: only the feature counts noisy.
pub const PRIVATE_NB_EXACT_PRIOR: Variant = Variant {
    kind: "private_nb",
    name: "exact_prior",
    about: "class prior from the exact class counts instead of the noisy ones' mean",
    excess: Excess::Unbounded,
    label: "",
    audit: "alg1_nb_exact_prior",
};

/// Naive Bayes's ablation variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NbVariant {
    /// [`PRIVATE_NB_EXACT_PRIOR`].
    ExactPrior,
}

impl<const V: u8> Described for NaiveBayes<V> {
    const NAME: &'static str = ["nb", "private_nb", "partitioned_nb", "vaidya_nb"][V as usize];
    const ABOUT: &'static str = [
        "Bernoulli Naive Bayes, add-alpha smoothing (non-private reference)",
        "Algorithm 1: Laplace noise on NB counts, threshold t (eps-DP, sensitivity D)",
        "partitioning strategy (3.4): feature t counted on its own disjoint part, Lap(1/eps) (eps-DP, parallel composition)",
        "Vaidya et al. 2013 NB, BROKEN: claims eps; with its re-sampled negatives up to 2 (D eps + 1)-DP under add/remove (known-bad comparison)",
    ][V as usize];
    const FIELDS: &'static [&'static str] = match V {
        ALGORITHM_1 => &["alpha", "threshold", "release", "variant"],
        PARTITIONED => &["alpha", "threshold"],
        _ => &["alpha"],
    };
}

impl<const V: u8> LearnerKind for NaiveBayes<V> {
    fn private(&self) -> bool {
        V != EXACT
    }

    fn axes(&self) -> &'static [Axis] {
        match V {
            ALGORITHM_1 | PARTITIONED => &[Axis::Threshold],
            _ => &[],
        }
    }

    fn validate(&self, grid: &[Axis]) -> std::result::Result<(), Refusal> {
        check_alpha(self.alpha)?;
        if self.variant.is_some() && self.release == Some(Release::OnOnly) {
            return Err(refuse(
                "variant",
                "exact_prior applies to release = \"on_off\" (on_only derives M0 from the class counts)",
            ));
        }
        check_fixed_threshold(self.threshold.as_ref(), grid)
    }

    fn needs_binary(&self) -> bool {
        true
    }

    fn learner(&self, at: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        let alpha = self.alpha.unwrap_or(1.0);
        let threshold = at.threshold.or(self.threshold);
        Ok(match V {
            EXACT => Box::new(BernoulliNbParams::new().alpha(alpha)),
            ALGORITHM_1 => {
                let mut p = PrivateNbParams::new(budget.train_of(Self::NAME)?)
                    .alpha(alpha)
                    .release(self.release.unwrap_or_default())
                    .exact_prior(self.variant == Some(NbVariant::ExactPrior));
                if let Some(t) = threshold {
                    p = p.threshold(t);
                }
                Box::new(p)
            }
            PARTITIONED => {
                let mut p = PartitionedNbParams::new(budget.train_of(Self::NAME)?).alpha(alpha);
                if let Some(t) = threshold {
                    p = p.threshold(t);
                }
                Box::new(p)
            }
            _ => Box::new(VaidyaNbParams::new(budget.train_of(Self::NAME)?).alpha(alpha)),
        })
    }
}
