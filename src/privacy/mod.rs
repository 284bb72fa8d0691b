//! Privacy: the mechanisms, stated with their domain, metric, measure and proof sketch, and the
//! per-trial ledger that records every privacy-spending (or non-private) step.
//!
//! Neighbouring relation everywhere (SPEC 1): X' = X plus one added example (add/remove,
//! "unbounded" DP). Sensitivities are for that relation.

pub mod exponential;
pub mod l2;
pub mod laplace;
pub mod ledger;
pub mod secure;

pub use l2::{L2Mechanism, PNormMechanism};
pub use laplace::Laplace;
pub use ledger::{Ledger, LedgerEntry};

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

/// The neighbouring relation every mechanism here is stated for.
pub const RELATION: &str = "add/remove one example";
