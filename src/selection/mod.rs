//! Feature selection (thesis section 3.5): feature scores and the private selectors.
//!
//! Selectors read only the training counts ([`crate::counts::ClassCounts`]) and return the chosen
//! feature indices, recording their spend in the trial's ledger.
