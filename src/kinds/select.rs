//! `selection = "..."`: the feature selectors a pipeline may run before training. Their
//! mechanisms and proofs live in [`crate::selection`]; here are their spec fields.

use super::variant::{Excess, Variant};
use super::{Refusal, SelectorKind, kind, refuse};
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
        scored!(
            $ty,
            $name,
            $about,
            private = $private,
            guarantee = $private,
            $make
        );
    };
    (
        $ty:ident,
        $name:literal,
        $about:literal,
        private = $private:literal,
        guarantee = $guarantee:literal,
        $make:expr
    ) => {
        kind! {
            $ty = $name {
                /// `mi` (mutual information, default) or `count` (two classes).
                #[serde(default)]
                score: ScoreName,
            }
            about: $about,
        }

        impl SelectorKind for $ty {
            fn private(&self) -> bool {
                $private
            }

            fn guarantee(&self) -> bool {
                $guarantee
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
    "Algorithm 4: iterative sampling, eps/T per step (NOT private: its walk order reads the exact scores)",
    private = true,
    guarantee = false,
    |score| Selector::IterativeSampling { score }
);
scored!(
    Gumbel,
    "gumbel",
    "one-shot Gumbel top-k, scale 2 T Delta_q / eps (eps-DP)",
    private = true,
    |score| Selector::GumbelTopK { score }
);

kind! {
    /// Algorithm 2: ranks by the MI of the Algorithm 1 noisy model.
    NoisyNbMi = "noisy_nb_mi" {
        /// Only `mi` applies.
        #[serde(default)]
        score: ScoreName,
    }
    about: "Algorithm 2: MI of the Algorithm 1 noisy NB, top T (eps-DP)",
}

impl SelectorKind for NoisyNbMi {
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

kind! {
    /// The sparse vector technique with a public threshold.
    Sparse = "sparse" {
        #[serde(default)]
        score: ScoreName,
        /// The public threshold, in score units.
        sparse_threshold: Option<f64>,
    }
    about: "sparse vector with a public threshold, eps/T per positive (eps-DP)",
}

impl SelectorKind for Sparse {
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

kind! {
    /// Algorithm 5: the exponential mechanism over T-subsets.
    Mask = "mask" {
        /// `mi` (mutual information, default) or `count` (two classes).
        #[serde(default)]
        score: ScoreName,
        /// An ablation variant ([`MASK_DELTA_Q`]); faithful when absent.
        variant: Option<MaskVariant>,
    }
    about: "Algorithm 5: exponential mechanism over T-subsets (eps-DP)",
}

impl SelectorKind for Mask {
    fn selector(&self) -> Selector {
        let score = self.score.into();
        match self.variant {
            None => Selector::MaskSampling { score },
            Some(MaskVariant::DeltaQ) => Selector::MaskSamplingPerFeature { score },
        }
    }
}
