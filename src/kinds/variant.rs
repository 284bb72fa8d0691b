//! Ablation variants (`variant = "..."` on a pipeline): a kind run with one named deviation from
//! SPEC, to test a candidate explanation of a published number that we do not reproduce.
//!
//! Each variant is defined by the kind that owns it (the consts beside the kind's struct) and
//! listed in [`VARIANTS`]; the spec routes `variant` to the learner or selector that owns the
//! name, and the kind applies it. A variant that weakens privacy states by how much the real
//! epsilon exceeds the claimed one ([`Excess`]): its ledger entry records the real spend beside
//! the claim, and every table, legend, REPORT.md and `epsilab audit` row labels it not ε-DP.

/// How far a variant's real epsilon exceeds the epsilon it claims.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Excess {
    /// The guarantee holds as claimed (the variant changes accuracy, not privacy).
    None,
    /// Real ε = T × claimed (a selection over T features calibrated for one).
    Features,
    /// Real ε = N × claimed (noise N times too small, N the training-set size of the fit).
    TrainingSize,
    /// No finite ε: a statistic of the data is used without noise.
    Unbounded,
}

impl Excess {
    /// Whether the variant is not ε-DP at the epsilon it claims.
    pub fn weakens(self) -> bool {
        self != Excess::None
    }

    /// The label every output shows beside the series (empty when privacy holds).
    pub fn label(self) -> &'static str {
        match self {
            Excess::None => "",
            Excess::Features => "NOT ε-DP: real ε = T × claimed",
            Excess::TrainingSize => "NOT ε-DP: real ε = N × claimed",
            Excess::Unbounded => "NOT ε-DP: exact statistic, no finite ε",
        }
    }
}

/// One ablation variant of a kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Variant {
    /// The kind (learner or selector) that owns it.
    pub kind: &'static str,
    /// What a spec writes (`variant = "..."`).
    pub name: &'static str,
    /// The one deviation from SPEC, shown by `epsilab list`.
    pub about: &'static str,
    pub excess: Excess,
    /// Shown beside the series when privacy holds (a weakening variant shows its `Excess`
    /// label instead), so a deviation from SPEC is named in every output either way.
    pub label: &'static str,
    /// The `epsilab audit` row that measures a weakening variant's excess (empty otherwise).
    pub audit: &'static str,
}

impl Variant {
    /// The label every table, legend and REPORT.md row shows beside a series run with it.
    pub fn tag(&self) -> &'static str {
        if self.excess.weakens() {
            self.excess.label()
        } else {
            self.label
        }
    }
}

/// Every ablation variant, by owning kind.
pub const VARIANTS: &[Variant] = &[
    super::select::MASK_DELTA_Q,
    super::logistic::OUTPUT_LAMBDA_TWICE,
    super::logistic::OBJECTIVE_LARGER_EPS_PRIME,
    super::naive_bayes::PRIVATE_NB_EXACT_PRIOR,
];

/// The variant `name` of kind `kind`.
pub fn find(kind: &str, name: &str) -> Option<&'static Variant> {
    VARIANTS.iter().find(|v| v.kind == kind && v.name == name)
}

/// The variants a kind owns, for "known: ..." messages.
pub fn names_of(kind: &str) -> String {
    let names: Vec<&str> = VARIANTS
        .iter()
        .filter(|v| v.kind == kind)
        .map(|v| v.name)
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{LEARNERS, SELECTORS, find as find_kind};

    #[test]
    fn every_variant_belongs_to_a_registered_kind_that_reads_it() {
        for v in VARIANTS {
            let fields = find_kind(LEARNERS, v.kind)
                .map(|r| r.fields)
                .or_else(|| find_kind(SELECTORS, v.kind).map(|r| r.fields))
                .unwrap_or_else(|| panic!("variant {} of unknown kind {}", v.name, v.kind));
            assert!(fields.contains(&"variant"), "{} reads no variant", v.kind);
            assert_eq!(find(v.kind, v.name), Some(v));
            assert_eq!(v.excess.weakens(), !v.excess.label().is_empty());
            assert!(!v.tag().is_empty(), "{} shows no label", v.name);
        }
        assert_eq!(find("mask", "no_such"), None);
        assert_eq!(names_of("nb"), "none");
    }
}
