//! Privacy: the mechanisms, stated with their domain, metric, measure and proof sketch, and the
//! per-trial ledger that records every privacy-spending (or non-private) step.
//!
//! One neighbouring relation per run ([`Relation`], `[experiment] neighbours` in a spec; SPEC 1's
//! add/remove by default). The trial's [`Ledger`] carries it. A mechanism value ([`Laplace`],
//! [`L2Mechanism`], [`Gaussian`], [`Exponential`], ...) is built from its sensitivity for that
//! relation, its epsilon (and delta) and the relation, and draws noise only through the
//! [`Charge`] handle that [`Ledger::charge`] returns after recording the step (see
//! [`mechanism`]); a mechanism calibrated for another relation is refused. docs/privacy.md lists every
//! mechanism's sensitivity under both relations.

/// `impl Mechanism` for mechanism structs that keep their [`PrivacyMap`] in a field `map`
/// (one charge per release; with `per_draw:` first, charged per draw instead).
macro_rules! mechanism_with_map {
    (per_draw: $($t:ty),+) => {
        $(impl $crate::privacy::mechanism::Mechanism for $t {
            fn privacy_map(&self) -> &$crate::privacy::mechanism::PrivacyMap {
                &self.map
            }

            fn charged_per_draw(&self) -> bool {
                true
            }
        })+
    };
    ($($t:ty),+) => {
        $(impl $crate::privacy::mechanism::Mechanism for $t {
            fn privacy_map(&self) -> &$crate::privacy::mechanism::PrivacyMap {
                &self.map
            }
        })+
    };
}

/// An additive-noise mechanism struct (its noise and [`PrivacyMap`]) with `new(sensitivity,
/// epsilon, relation)`: pure eps-DP, noise scale Delta / eps (see [`PrivacyMap::pure_noise`]).
macro_rules! pure_noise_mechanism {
    ($(#[$sa:meta])* pub struct $t:ident($n:ty); $(#[$na:meta])* fn new;) => {
        $(#[$sa])*
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub struct $t {
            noise: $n,
            map: $crate::privacy::mechanism::PrivacyMap,
        }

        impl $t {
            $(#[$na])*
            pub fn new(
                sensitivity: f64,
                epsilon: f64,
                relation: $crate::privacy::Relation,
            ) -> $crate::error::Result<Self> {
                let (noise, map) = $crate::privacy::mechanism::PrivacyMap::pure_noise(
                    sensitivity,
                    epsilon,
                    relation,
                    <$n>::with_scale,
                )?;
                Ok($t { noise, map })
            }
        }
    };
}

pub mod accountant;
pub mod exponential;
pub mod exponential_median;
pub mod gaussian;
pub mod l2;
pub mod laplace;
pub mod ledger;
pub mod mechanism;
pub mod partition;
pub mod ptr;
pub mod randomized_response;
pub mod repeated_laplace;
pub mod secure;
pub mod smooth_sensitivity;
pub mod sparse_vector;

pub use exponential::{BinaryExponential, Exponential};
pub use gaussian::{AccountedGaussian, GaussCalibration, Gaussian, GaussianNoise};
pub use l2::{L2Mechanism, L2Noise, PNormMechanism, PNormNoise};
pub use laplace::{Laplace, LaplaceNoise};
pub use ledger::{Ledger, LedgerEntry};
pub use mechanism::{Charge, Mechanism, PrivacyMap};
use serde::{Deserialize, Serialize};
pub use sparse_vector::SparseVector;

/// The training-set size N of a run, public because the run declares it (the thesis's "N is
/// public", made checkable): the only size a noise scale, sampling rate, threshold or
/// regulariser may read. Under add/remove the data's own size is private (a neighbour has one
/// example more or less), so a mechanism reading it would use different parameters on the two
/// sides; a mechanism reading this N uses the same on both, and its sensitivity covers
/// neighbours of N - 1 and N + 1 examples (docs/privacy.md, "Sizes").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicSize {
    pub n: usize,
    /// Where it is declared, as the ledger states it (e.g. "declared in grid.n_train").
    pub declared: String,
}

impl PublicSize {
    pub fn new(n: usize, declared: impl Into<String>) -> Self {
        PublicSize {
            n,
            declared: declared.into(),
        }
    }

    /// The size a fit on one of `k` random parts reads, N / k (rounded down): public, being a
    /// function of the public N alone, and the parts' expected size (their actual sizes are
    /// private). `what` names the parts in the ledger's note.
    pub fn part(&self, k: usize, what: &str) -> PublicSize {
        PublicSize::new(
            self.n / k.max(1),
            format!("N = {} / {k}: {what} ({})", self.n, self.declared),
        )
    }
}

/// A privacy parameter must be finite and positive (eps = 0 or NaN would silently mean "no
/// noise" or "no guarantee").
pub fn check_epsilon(epsilon: f64) -> crate::error::Result<()> {
    check_positive("epsilon", epsilon)
}

/// A parameter (epsilon, a sensitivity, a scale, lambda, ...) must be finite and positive.
pub fn check_positive(name: &str, value: f64) -> crate::error::Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(crate::error::Error::param(
            name,
            format!("must be finite and > 0, got {value}"),
        ))
    }
}

/// The privacy measure a step's guarantee is stated in (OpenDP's "measure").
///
/// * `PureDp`: pure epsilon-DP, P[M(X) in S] <= e^eps P[M(X') in S] for all neighbours.
/// * `ApproxDp`: (epsilon, delta)-DP, P[M(X) in S] <= e^eps P[M(X') in S] + delta.
///
/// Pure epsilon-DP is (epsilon, 0)-DP, so both compose sequentially by adding epsilons and
/// deltas (basic composition).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Measure {
    #[serde(rename = "pure ε-DP")]
    PureDp,
    #[serde(rename = "(ε,δ)-DP")]
    ApproxDp,
}

impl Measure {
    /// How ledgers and reports state the measure.
    pub fn describe(self) -> &'static str {
        match self {
            Measure::PureDp => "pure ε-DP",
            Measure::ApproxDp => "(ε,δ)-DP",
        }
    }
}

/// The neighbouring relation a run's guarantees are stated for.
///
/// * `AddRemove` ("unbounded" DP, SPEC 1): X' = X plus or minus one example.
/// * `ReplaceOne` ("bounded" DP, Chaudhuri et al. 2011): X' = X with one example replaced.
///
/// A replacement is a removal followed by an addition, so a replace-one sensitivity is at most
/// twice the add/remove one (and eps-DP under add/remove implies 2 eps-DP under replace-one);
/// each mechanism states the tighter value where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    #[default]
    AddRemove,
    ReplaceOne,
}

impl<'de> Deserialize<'de> for Relation {
    /// Accepts the spec spellings; anything else is refused with the field and both choices.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "add_remove" => Ok(Relation::AddRemove),
            "replace_one" => Ok(Relation::ReplaceOne),
            _ => Err(serde::de::Error::custom(format!(
                "neighbours must be \"add_remove\" or \"replace_one\", got \"{s}\""
            ))),
        }
    }
}

impl Relation {
    /// How ledgers and reports state the relation.
    pub fn describe(self) -> &'static str {
        match self {
            Relation::AddRemove => "add/remove one example",
            Relation::ReplaceOne => "replace one example",
        }
    }

    /// The spec spelling (`add_remove`, `replace_one`).
    pub fn key(self) -> &'static str {
        match self {
            Relation::AddRemove => "add_remove",
            Relation::ReplaceOne => "replace_one",
        }
    }

    /// True for the spec default (used to keep default specs serialised as before).
    pub fn is_default(&self) -> bool {
        *self == Relation::AddRemove
    }

    /// The sensitivity of a quantity whose add/remove sensitivity is `add_remove`, when the
    /// only available replace-one argument is the triangle inequality (remove, then add).
    pub fn doubled_for_replace(self, add_remove: f64) -> f64 {
        match self {
            Relation::AddRemove => add_remove,
            Relation::ReplaceOne => 2.0 * add_remove,
        }
    }
}
