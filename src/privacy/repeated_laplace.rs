//! The Laplace mechanism asked repeatedly: k independent releases of the same query answer
//! (k trials of one release measured at once, or a query an analyst repeats).
//!
//! * Domain, metric and per-release guarantee: those of [`super::laplace`] (L1 sensitivity
//!   Delta_1 under the relation, b = Delta_1 / eps, pure eps-DP per release).
//! * Composition: each draw is a release of its own, so the mechanism is charged per draw and a
//!   [`Charge`] that drew k releases records k eps (sequential composition) — the accounting a
//!   repeated query really costs, which the differencing and averaging attacks exploit.
//! * Why a separate value: drawing many releases through one charge keeps the hot loop free of
//!   ledger allocations (`benches/release.rs`), while the recorded spend stays exact.

use super::LaplaceNoise;
use super::mechanism::Charge;
use rand::Rng;

mechanism_with_map!(per_draw: RepeatedLaplace);

pure_noise_mechanism! {
    /// Laplace noise of scale Delta_1 / eps, charged eps per draw.
    pub struct RepeatedLaplace(LaplaceNoise);
    /// The mechanism for an L1 sensitivity under `relation` and a per-release epsilon.
    fn new;
}

impl RepeatedLaplace {
    pub fn scale(&self) -> f64 {
        self.noise.scale()
    }
}

impl Charge<'_, RepeatedLaplace> {
    /// One release of `truth` (recorded: eps more on the step).
    #[inline]
    pub fn release<R: Rng + ?Sized>(&mut self, truth: f64, rng: &mut R) -> f64 {
        self.count_draw();
        truth + self.mechanism.noise.sample(rng)
    }

    /// `out.len()` independent releases of `truth` (no allocation).
    pub fn fill<R: Rng + ?Sized>(&mut self, truth: f64, rng: &mut R, out: &mut [f64]) {
        for y in out {
            *y = self.release(truth, rng);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Ledger;
    use crate::privacy::Relation;
    use crate::rng::rng_from;

    #[test]
    fn every_release_is_charged() {
        let mut ledger = Ledger::default();
        let m = RepeatedLaplace::new(1.0, 0.1, Relation::AddRemove).unwrap();
        assert_eq!(m.scale(), 10.0);
        let mut c = ledger.charge("count", "laplace (repeated)", m).unwrap();
        let mut out = [0.0; 7];
        c.fill(5.0, &mut rng_from(&["repeated"]), &mut out);
        assert_eq!(c.draws(), 7);
        assert!(out.iter().all(|y| y.is_finite() && *y != 5.0));
        assert!((ledger.total_epsilon() - 0.7).abs() < 1e-12);
        assert!(RepeatedLaplace::new(0.0, 0.1, Relation::AddRemove).is_err());
    }
}
