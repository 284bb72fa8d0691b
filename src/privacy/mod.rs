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

/// The neighbouring relation every mechanism here is stated for.
pub const RELATION: &str = "add/remove one example";
