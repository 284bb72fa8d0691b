//! Which registered kinds the audit covers, so that the rule "every mechanism has an audit row
//! and a planted mutant the audit catches" is checked, not remembered.
//!
//! Each row names the kinds it runs in its [`Claim`](super::Claim)'s `covers`, as a spec names
//! them: `learner:NAME`, `selection:NAME`, `release:NAME` (a selector and a release may share a
//! name, as `laplace` does). Every learner, selector and release of [`crate::kinds`] must be
//! covered by at least one correct row and one planted mutant, or be listed in [`UNAUDITED`]
//! with its [`Exemption`]. Attacks and probes are adversaries and analyses, not mechanisms.

/// Why a registered kind has no correct audit row and planted mutant of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exemption {
    /// It claims no guarantee: a non-private reference, or a selector `epsilab list` marks
    /// NOT private (its `about` says so).
    NonPrivate,
    /// Its ledger is declared by an external program, not computed here: the pipeline is
    /// audited from outside, per spec, by `epsilab audit --spec` (docs/external.md).
    Declared,
    /// It reads no data (noise draws alone, or an analytic curve): there are no neighbours to
    /// tell apart.
    ReadsNoData,
    /// Known bad: it claims ε but is not ε-DP, so no correct row can pass. It has a planted
    /// row (the audit must catch it) and no correct one.
    KnownBad,
}

/// The kinds deliberately not audited by a correct row and a mutant, with why.
pub const UNAUDITED: &[(&str, Exemption)] = &[
    ("learner:majority", Exemption::NonPrivate),
    ("learner:nb", Exemption::NonPrivate),
    ("learner:lr", Exemption::NonPrivate),
    ("learner:svm", Exemption::NonPrivate),
    ("learner:gnb", Exemption::NonPrivate),
    ("learner:tree", Exemption::NonPrivate),
    ("learner:forest", Exemption::NonPrivate),
    ("learner:svm_rff", Exemption::NonPrivate),
    ("learner:linreg", Exemption::NonPrivate),
    ("learner:pca", Exemption::NonPrivate),
    ("learner:kmeans", Exemption::NonPrivate),
    ("selection:nonprivate", Exemption::NonPrivate),
    ("selection:iterative", Exemption::NonPrivate),
    ("learner:external", Exemption::Declared),
    ("release:external", Exemption::Declared),
    ("release:pnorm_noise", Exemption::ReadsNoData),
    ("release:composition", Exemption::ReadsNoData),
    ("learner:vaidya_nb", Exemption::KnownBad),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::all;
    use crate::kinds::{LEARNERS, RELEASES, Registered, SELECTORS};

    /// Every registered learner, selector and release as `family:name`, with its `about`.
    fn kinds() -> Vec<(String, &'static str)> {
        fn family<K: ?Sized>(key: &str, registry: &[Registered<K>]) -> Vec<(String, &'static str)> {
            let entry = |r: &Registered<K>| (format!("{key}:{}", r.name), r.about);
            registry.iter().map(entry).collect()
        }
        [
            family("learner", LEARNERS),
            family("selection", SELECTORS),
            family("release", RELEASES),
        ]
        .concat()
    }

    /// Reads the rows' declarations only (nothing is run): every name a row covers is a
    /// registered kind; every kind not in [`UNAUDITED`] is covered by a correct row and a
    /// mutant; every exemption names a registered kind once, holds (a non-private kind says
    /// so, a known-bad kind has its planted row) and is not stale (no correct row covers it).
    #[test]
    fn every_private_kind_has_a_correct_row_and_a_mutant() {
        let kinds = kinds();
        let claims: Vec<_> = all().iter().map(|m| m.claim()).collect();
        let registered = |k: &str| kinds.iter().any(|(name, _)| name == k);
        for c in &claims {
            for k in c.covers {
                assert!(registered(k), "row {} covers unregistered `{k}`", c.name);
            }
        }
        let rows = |k: &str, mutant: bool| {
            let covering = claims.iter().filter(|c| c.mutant == mutant);
            covering.filter(|c| c.covers.contains(&k)).count()
        };
        let exempt = |k: &str| UNAUDITED.iter().find(|(name, _)| *name == k).map(|e| e.1);
        let mut gaps = Vec::new();
        for (k, about) in &kinds {
            let (correct, mutants) = (rows(k, false), rows(k, true));
            match exempt(k) {
                None if correct == 0 || mutants == 0 => {
                    gaps.push(format!("{k}: {correct} correct rows, {mutants} mutants"));
                }
                None => {}
                Some(why) => {
                    assert_eq!(correct, 0, "{k} is exempt ({why:?}) yet has a correct row");
                    let planted = why == Exemption::KnownBad;
                    assert_eq!(mutants > 0, planted, "{k} ({why:?}): {mutants} mutants");
                    let says = about.contains("non-private") || about.contains("NOT private");
                    assert!(why != Exemption::NonPrivate || says, "{k} claims privacy");
                }
            }
        }
        assert!(
            gaps.is_empty(),
            "private kinds without a correct audit row and a planted mutant (add rows that \
             `.covers(&[..])` them, or an exemption in audit::coverage::UNAUDITED):\n{}",
            gaps.join("\n")
        );
        for (i, (k, _)) in UNAUDITED.iter().enumerate() {
            assert!(registered(k), "exemption of unregistered `{k}`");
            assert!(
                !UNAUDITED[..i].iter().any(|e| e.0 == *k),
                "{k} exempt twice"
            );
        }
    }
}
