//! Audits of the real-valued classifiers (issue 50), each beside a planted mutant it must catch:
//!
//! * `private_gnb` (add/remove, eps = 1): one feature with public bounds [0, 1]; X = one row of
//!   class 0 at 0.5 and one of class 1 at 0.5, X' = X plus a class-0 row at 1. Statistic: the
//!   released prior of class 0 (n~_0 / (n~_0 + n~_1)), which reads the class-count release
//!   (eps/3). Mutant `private_gnb_exact_counts`: the class counts released without noise (the
//!   prior is 1/2 on X and 2/3 on X' every time: infinite privacy loss).

use super::{Auditable, Claim, Side};
use crate::learners::gaussian_nb::{Bounds, CountNoise, PrivateGnbParams, TrainRows};
use crate::privacy::{Ledger, Relation};
use crate::rng::Rng;
use linfa::ParamGuard;
use ndarray::array;

/// The classifier audits, in report order: each correct row, then its mutant.
pub fn all() -> Vec<Box<dyn Auditable>> {
    let gnb = "one feature in [0, 1]: X = {(0.5, c0), (0.5, c1)}, X' = X + (1, c0); statistic: \
               the released class-0 prior";
    vec![
        Box::new(PrivateGnb(Claim::new("private_gnb", EPS, gnb))),
        Box::new(PrivateGnb(
            Claim::new("private_gnb_exact_counts", EPS, gnb).mutant(true),
        )),
    ]
}

const EPS: f64 = 1.0;

/// The private Gaussian NB's releases on an add/remove pair (the mutant: exact counts).
pub struct PrivateGnb(Claim);

impl Auditable for PrivateGnb {
    fn claim(&self) -> Claim {
        self.0
    }

    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        let x = array![[0.5], [0.5], [1.0]];
        let labels = [0u16, 1, 0];
        let rows: &[u32] = side.pick(&[0, 1][..], &[0, 1, 2][..]);
        let t = TrainRows {
            x: x.view(),
            rows,
            labels: &labels,
            n_classes: 2,
            cols: &[0],
        };
        let bounds = Bounds {
            lo: &[0.0],
            hi: &[1.0],
        };
        let noise = if self.0.mutant {
            CountNoise::ExactMutant
        } else {
            CountNoise::Laplace
        };
        let p = PrivateGnbParams::new(EPS).check().expect("valid");
        let mut ledger = Ledger::new(Relation::AddRemove);
        let r = p
            .release(&t, &bounds, rng, &mut ledger, noise)
            .expect("valid release");
        r.counts[0] / (r.counts[0] + r.counts[1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 20,000 runs per side: the correct row stays below its claim, the mutant is caught.
    #[test]
    fn classifier_rows_pass_and_their_mutants_are_caught() {
        let results = super::super::audit_each(&all(), 20_000, 1).unwrap();
        let table = super::super::table(&results);
        for r in &results {
            assert!(r.ok, "{}\n{table}", r.mechanism);
        }
        let mutant = results
            .iter()
            .find(|r| r.mechanism == "private_gnb_exact_counts")
            .unwrap();
        assert!(mutant.caught, "{table}");
    }
}
