//! `selection = "..."`: the feature selectors a pipeline may run before training. Their
//! mechanisms and proofs live in [`crate::selection`]; here are their spec fields.

use super::variant::{Excess, Variant};
use super::{Described, Refusal, SelectorKind, refuse};
use crate::selection::{Score, Selector};
use serde::{Deserialize, Serialize};

/// The score a selector ranks features by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScoreName {
    /// Mutual information (the default).
    #[default]
    Mi,
    /// The count score (two classes).
    Count,
}

impl From<ScoreName> for Score {
    fn from(s: ScoreName) -> Score {
        match s {
            ScoreName::Mi => Score::MutualInformation,
            ScoreName::Count => Score::Count,
        }
    }
}

/// Declares a selector whose only field is `score`.
macro_rules! scored {
    ($ty:ident, $name:literal, $about:literal, private = $private:literal, $make:expr) => {
        #[derive(Debug, Clone, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $ty {
            /// `mi` (mutual information, default) or `count` (two classes).
            #[serde(default)]
            score: ScoreName,
        }

        impl Described for $ty {
            const NAME: &'static str = $name;
            const ABOUT: &'static str = $about;
            const FIELDS: &'static [&'static str] = &["score"];
        }

        impl SelectorKind for $ty {
            fn private(&self) -> bool {
                $private
            }

            fn selector(&self) -> Selector {
                let make: fn(Score) -> Selector = $make;
                make(self.score.into())
            }
        }
    };
}

scored!(
    NonPrivate,
    "nonprivate",
    "top T by the exact score (NOT private)",
    private = false,
    |score| Selector::NonPrivate { score }
);
scored!(
    Laplace,
    "laplace",
    "Algorithm 3: score + Lap(D Delta_q / eps), top T (eps-DP)",
    private = true,
    |score| Selector::LaplaceScores { score }
);
scored!(
    Iterative,
    "iterative",
    "Algorithm 4: iterative sampling, eps/T per step (spends steps x eps/T: NOT eps-DP)",
    private = true,
    |score| Selector::IterativeSampling { score }
);
scored!(
    Gumbel,
    "gumbel",
    "one-shot Gumbel top-k, scale 2 T Delta_q / eps (eps-DP)",
    private = true,
    |score| Selector::GumbelTopK { score }
);

/// Algorithm 2: ranks by the MI of the Algorithm 1 noisy model.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoisyNbMi {
    /// Only `mi` applies.
    #[serde(default)]
    score: ScoreName,
}

impl Described for NoisyNbMi {
    const NAME: &'static str = "noisy_nb_mi";
    const ABOUT: &'static str = "Algorithm 2: MI of the Algorithm 1 noisy NB, top T (eps-DP)";
    const FIELDS: &'static [&'static str] = &["score"];
}

impl SelectorKind for NoisyNbMi {
    fn private(&self) -> bool {
        true
    }

    fn validate(&self) -> Result<(), Refusal> {
        match self.score {
            ScoreName::Count => Err(refuse(
                "score",
                "Algorithm 2 ranks by the MI of the noisy model only",
            )),
            ScoreName::Mi => Ok(()),
        }
    }

    fn selector(&self) -> Selector {
        Selector::NoisyNbMi
    }
}

/// The sparse vector technique with a public threshold.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sparse {
    #[serde(default)]
    score: ScoreName,
    /// The public threshold, in score units.
    sparse_threshold: Option<f64>,
}

impl Described for Sparse {
    const NAME: &'static str = "sparse";
    const ABOUT: &'static str =
        "sparse vector with a public threshold, eps/T per positive (eps-DP)";
    const FIELDS: &'static [&'static str] = &["score", "sparse_threshold"];
}

impl SelectorKind for Sparse {
    fn private(&self) -> bool {
        true
    }

    fn validate(&self) -> Result<(), Refusal> {
        match self.sparse_threshold {
            None => Err(refuse(
                "sparse_threshold",
                "the sparse selector needs a public threshold",
            )),
            Some(t) if !t.is_finite() => Err(refuse(
                "sparse_threshold",
                format!("must be finite, got {t}"),
            )),
            Some(_) => Ok(()),
        }
    }

    fn selector(&self) -> Selector {
        Selector::Sparse {
            score: self.score.into(),
            threshold: self.sparse_threshold.unwrap_or(f64::NAN),
        }
    }
}

/// Algorithm 5 with Delta_m = Delta_q: the mask's quality sensitivity taken per feature, as if
/// Algorithm 5's parameter Delta were the score's own sensitivity (eq. 3.30 says T Delta_q).
pub const MASK_DELTA_Q: Variant = Variant {
    kind: "mask",
    name: "delta_q",
    about: "quality sensitivity Delta_q instead of T Delta_q (eq. 3.30): T times less spread",
    excess: Excess::Features,
    label: "",
    audit: "mask_variant_delta_q",
};

/// `mask`'s ablation variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaskVariant {
    /// [`MASK_DELTA_Q`].
    DeltaQ,
}

/// Algorithm 5: the exponential mechanism over T-subsets.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mask {
    /// `mi` (mutual information, default) or `count` (two classes).
    #[serde(default)]
    score: ScoreName,
    /// An ablation variant ([`MASK_DELTA_Q`]); faithful when absent.
    variant: Option<MaskVariant>,
}

impl Described for Mask {
    const NAME: &'static str = "mask";
    const ABOUT: &'static str = "Algorithm 5: exponential mechanism over T-subsets (eps-DP)";
    const FIELDS: &'static [&'static str] = &["score", "variant"];
}

impl SelectorKind for Mask {
    fn private(&self) -> bool {
        true
    }

    fn selector(&self) -> Selector {
        let score = self.score.into();
        match self.variant {
            None => Selector::MaskSampling { score },
            Some(MaskVariant::DeltaQ) => Selector::MaskSamplingPerFeature { score },
        }
    }
}
