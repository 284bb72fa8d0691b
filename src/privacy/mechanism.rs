//! Mechanisms that carry their privacy map, and the ledger handle that alone draws their noise.
//!
//! OpenDP's shape: a mechanism value is built from its sensitivity, its epsilon (and delta) and
//! the neighbouring relation the sensitivity was derived for, and states what one release
//! spends ([`PrivacyMap`]). Its sampling methods live on [`Charge`], the handle
//! [`Ledger::charge`](super::Ledger::charge) returns after recording the step (name, measure,
//! relation, sensitivity, spend): a calibrated mechanism's noise cannot be drawn without its
//! spend being in the ledger, and a mechanism calibrated for another relation than the ledger's
//! is refused before any draw.
//!
//! One charge is one release: a vector release (all the coordinates of Laplace noise on a count
//! table, one L2 noise vector) is drawn through one handle. Mechanisms whose spend grows with
//! every draw (Algorithm 4's binary steps) say so with [`Mechanism::charged_per_draw`], and
//! their handle updates the recorded epsilon as it samples.
//!
//! Plain noise distributions with no privacy claim ([`LaplaceNoise`](super::LaplaceNoise),
//! [`L2Noise`](super::L2Noise), ...) stay public for noise-only figures, audits' deliberately
//! broken mutants and speed references; a data-dependent release uses a mechanism.
//!
//! Adding a mechanism: a struct holding its noise and a [`PrivacyMap`], a constructor from
//! (sensitivity, epsilon[, delta], relation) with the proof sketch beside it, `impl Mechanism`,
//! and its sampling as `impl Charge<'_, YourMechanism>` in the same module (see
//! [`Gaussian`](super::Gaussian)).

use super::ledger::Ledger;
use super::{Measure, Relation, check_positive};
use crate::error::{Error, Result};

/// What one release of a calibrated mechanism spends, and for which relation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrivacyMap {
    pub measure: Measure,
    pub epsilon: f64,
    /// `Some` exactly for (epsilon, delta)-DP.
    pub delta: Option<f64>,
    /// The sensitivity the noise is calibrated for (L1, L2 or of the quality, per mechanism).
    pub sensitivity: f64,
    pub relation: Relation,
}

impl PrivacyMap {
    /// [`Self::pure`] with the additive noise of scale Delta / eps it calibrates, built by
    /// `with_scale` (Laplace, repeated Laplace, L2).
    pub fn pure_noise<N>(
        sensitivity: f64,
        epsilon: f64,
        relation: Relation,
        with_scale: impl FnOnce(f64) -> Result<N>,
    ) -> Result<(N, Self)> {
        let map = PrivacyMap::pure(sensitivity, epsilon, relation)?;
        Ok((with_scale(sensitivity / epsilon)?, map))
    }

    /// Pure epsilon-DP for a sensitivity under `relation`; both must be finite and positive.
    pub fn pure(sensitivity: f64, epsilon: f64, relation: Relation) -> Result<Self> {
        check_positive("epsilon", epsilon)?;
        check_positive("sensitivity", sensitivity)?;
        Ok(PrivacyMap {
            measure: Measure::PureDp,
            epsilon,
            delta: None,
            sensitivity,
            relation,
        })
    }

    /// (epsilon, delta)-DP; delta must lie in (0, 1).
    pub fn approximate(
        sensitivity: f64,
        epsilon: f64,
        delta: f64,
        relation: Relation,
    ) -> Result<Self> {
        let mut map = Self::pure(sensitivity, epsilon, relation)?;
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::param(
                "delta",
                format!("must lie in (0, 1), got {delta}"),
            ));
        }
        map.measure = Measure::ApproxDp;
        map.delta = Some(delta);
        Ok(map)
    }
}

/// A calibrated mechanism: it knows what one release spends.
pub trait Mechanism {
    fn privacy_map(&self) -> &PrivacyMap;

    /// True when every draw is a release of its own, spending `epsilon` each (the recorded
    /// spend is then draws x epsilon); false when one charge covers one vector release.
    fn charged_per_draw(&self) -> bool {
        false
    }
}

/// The ledger handle of one recorded release: the only way to draw a mechanism's noise.
///
/// Made by [`Ledger::charge`](super::Ledger::charge); each mechanism adds its sampling methods
/// (`impl Charge<'_, Laplace> { fn sample(..) }`). It borrows the ledger, so the entry it
/// recorded is the last one while it lives and can be annotated ([`Charge::note`]).
#[derive(Debug)]
pub struct Charge<'l, M> {
    ledger: &'l mut Ledger,
    entry: usize,
    pub(super) mechanism: M,
    draws: u64,
}

impl<'l, M: Mechanism> Charge<'l, M> {
    /// Called by [`Ledger::charge`](super::Ledger::charge) once the entry is recorded.
    pub(super) fn new(ledger: &'l mut Ledger, entry: usize, mechanism: M) -> Self {
        Charge {
            ledger,
            entry,
            mechanism,
            draws: 0,
        }
    }

    pub fn mechanism(&self) -> &M {
        &self.mechanism
    }

    /// Number of draws made through this handle (counted only for per-draw mechanisms).
    pub fn draws(&self) -> u64 {
        self.draws
    }

    /// Attaches a note to the recorded step (e.g. how many steps a composition took).
    pub fn note(&mut self, note: impl Into<String>) {
        self.ledger.entries[self.entry].note = Some(note.into());
    }

    /// Marks the recorded step as giving no DP guarantee, and why: its noise was drawn here,
    /// but something else it releases reads the data without noise (Algorithm 4's walk order
    /// comes from the exact scores). The entry keeps what its draws spent, for comparison with
    /// the claim, and the trial is no longer private.
    pub fn without_guarantee(&mut self, why: impl Into<String>) {
        let entry = &mut self.ledger.entries[self.entry];
        entry.private = false;
        entry.note = Some(why.into());
    }

    /// Counts one draw of a per-draw mechanism and records the spend so far, draws x epsilon
    /// (computed as a product, not a running sum, so the recorded value is exact).
    pub(super) fn count_draw(&mut self) {
        if self.mechanism.charged_per_draw() {
            self.draws += 1;
            let eps = self.draws as f64 * self.mechanism.privacy_map().epsilon;
            self.ledger.entries[self.entry].epsilon = Some(eps);
        }
    }
}
