//! The privacy ledger of one trial: every step that touches the data, with what it spent.
//!
//! A step with `private = false` has no DP guarantee (non-private ranking, data-derived scaling,
//! a model fitted without noise...). A trial is end-to-end private only when every step is
//! private and the spend stays within the declared budget (sequential composition: budgets add).

use serde::{Deserialize, Serialize};

/// One privacy-relevant step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// Pipeline step: `selection`, `train`, ...
    pub name: String,
    /// Mechanism or procedure used (e.g. `laplace`, `none (exact counts)`).
    pub mechanism: String,
    /// Epsilon spent; `null` when the step gives no guarantee.
    pub epsilon: Option<f64>,
    pub private: bool,
    /// Neighbouring relation the guarantee is stated for.
    pub relation: String,
    /// L1 (or stated) sensitivity of the released quantity, when private.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sensitivity: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub note: Option<String>,
}

/// All steps of one trial.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ledger {
    pub entries: Vec<LedgerEntry>,
}

impl Ledger {
    /// Records a private step that spent `epsilon` with the given sensitivity.
    pub fn spend(&mut self, name: &str, mechanism: &str, epsilon: f64, sensitivity: f64) {
        self.entries.push(LedgerEntry {
            name: name.into(),
            mechanism: mechanism.into(),
            epsilon: Some(epsilon),
            private: true,
            relation: super::RELATION.into(),
            sensitivity: Some(sensitivity),
            note: None,
        });
    }

    /// Records a step without a privacy guarantee, and why.
    pub fn non_private(&mut self, name: &str, mechanism: &str, why: &str) {
        self.entries.push(LedgerEntry {
            name: name.into(),
            mechanism: mechanism.into(),
            epsilon: None,
            private: false,
            relation: super::RELATION.into(),
            sensitivity: None,
            note: Some(why.into()),
        });
    }

    /// Records a step that touches the data but spends nothing because it only uses public
    /// constants per example (e.g. clipping to declared public bounds), and why.
    pub fn public(&mut self, name: &str, mechanism: &str, why: &str) {
        self.entries.push(LedgerEntry {
            name: name.into(),
            mechanism: mechanism.into(),
            epsilon: Some(0.0),
            private: true,
            relation: super::RELATION.into(),
            sensitivity: None,
            note: Some(why.into()),
        });
    }

    /// Sum of the epsilons of the private steps (sequential composition).
    pub fn total_epsilon(&self) -> f64 {
        self.entries.iter().filter_map(|e| e.epsilon).sum()
    }

    /// True when every step is private and the total is within `budget` (with float slack).
    pub fn is_private_within(&self, budget: Option<f64>) -> bool {
        let all_private = !self.entries.is_empty() && self.entries.iter().all(|e| e.private);
        match budget {
            Some(b) => all_private && self.total_epsilon() <= b * (1.0 + 1e-9),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composition_and_labels() {
        let mut l = Ledger::default();
        l.spend("selection", "exponential", 0.05, 1.0);
        l.spend("train", "laplace", 0.05, 10.0);
        assert!((l.total_epsilon() - 0.1).abs() < 1e-15);
        assert!(l.is_private_within(Some(0.1)));
        assert!(!l.is_private_within(Some(0.09)));
        assert!(!l.is_private_within(None));
        l.non_private("scaling", "min-max", "bounds from the data");
        assert!(!l.is_private_within(Some(1.0)));
        assert!(!Ledger::default().is_private_within(Some(1.0)));
    }
}
