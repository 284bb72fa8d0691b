//! Partitioning strategy for private Naive Bayes (thesis section 3.4, SPEC 3).
//!
//! * Released quantity: the training rows are split at random into T disjoint parts (T = the
//!   number of used features), each row independently and uniformly
//!   (`privacy::partition::random_parts`); from part t only the pair (N1[c, f_t], N0[c, f_t])
//!   of feature f_t is released, for every class c.
//! * Neighbouring relation: the ledger's. Add/remove: the other rows' parts have the same law
//!   with or without the example, which lands in exactly one part t and changes one of
//!   N1[c, f_t], N0[c, f_t] of its class by one: within a part the L1 sensitivity is 1. (Parts
//!   of equal size cut from a shuffle, as before issue 46, follow the private N: an added
//!   example also moves a row across a part boundary.) Replace-one: the labels are per
//!   position, so the old and the new example sit in the same part, whose pair of counts moves
//!   by at most 2 in L1: sensitivity 2.
//! * Mechanism: Laplace with b = Delta / eps on each released count; each part is eps-DP and the
//!   parts are disjoint, so by parallel composition the whole release is eps-DP (measure: pure
//!   eps-DP). The random partition is independent of the data values.
//! * Post-processing as Algorithm 1: M = max(noisy count, t) with the threshold t (default the
//!   65% quantile of Lap(1/eps)), theta~ = (M1 + alpha)/(M1 + M0 + 2 alpha), class prior
//!   proportional to the sum over parts of (M1 + M0).

use super::Accounted;
use super::naive_bayes::BernoulliNb;
use super::private_nb::Threshold;
use super::private_nb::check_smoothing;
use crate::data::BinaryMatrix;
use crate::error::{Error, Result};
use crate::privacy::partition::random_parts;
use crate::privacy::{Laplace, Ledger, Relation};
use crate::rng::Rng;
use linfa::dataset::AsSingleTargets;
use ndarray::{Array2, ArrayBase, Data, Ix2};

private_params! {
    /// Validated parameters of the partitioned private NB.
    PartitionedNbValidParams;
    /// Parameters of the partitioned private NB (defaults: 65% noise-quantile threshold,
    /// alpha 1).
    PartitionedNbParams {
        threshold: Threshold = Threshold::default(),
        alpha: f64 = 1.0,
    }
    |p| { check_smoothing(p.alpha, p.threshold) }
}

/// The released model and what the mechanism did.
#[derive(Debug, Clone)]
pub struct PartitionedNbFit {
    pub model: BernoulliNb,
    /// Resolved threshold t.
    pub threshold: f64,
    /// Features with at least one noisy count raised to t.
    pub thresholded_features: usize,
    /// Number of training rows in each part (part t feeds `features[t]`).
    pub part_sizes: Vec<usize>,
}

impl PartitionedNbValidParams {
    /// The Laplace mechanism each part's counts are released through: sensitivity 1 under
    /// add/remove (an example is in one part and moves one of its class's two counts), 2 under
    /// replace-one, at the whole ε (parallel composition over the parts).
    pub fn mechanism(&self, relation: Relation) -> Result<Laplace> {
        Laplace::new(relation.doubled_for_replace(1.0), self.epsilon, relation)
    }

    /// Fits on the training rows `train` of `x` (labels in 0..n_classes), one random part per
    /// feature of `features` (distinct, in range, at most `train.len()` of them). Draws the
    /// partition and the noise from `rng`; records the spend (eps, sensitivity 1, or 2 under
    /// replace-one) in `ledger`.
    #[allow(clippy::too_many_arguments)]
    pub fn fit_rows(
        &self,
        x: &BinaryMatrix,
        labels: &[u16],
        n_classes: usize,
        train: &[u32],
        features: &[usize],
        rng: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<PartitionedNbFit> {
        let dim = x.n_cols();
        check_features(features, dim)?;
        if labels.len() != x.n_rows() {
            return Err(Error::param(
                "labels",
                format!("{} labels for {} rows", labels.len(), x.n_rows()),
            ));
        }
        for &i in train {
            let i = i as usize;
            if i >= x.n_rows() {
                return Err(Error::param("train", format!("row {i} out of range")));
            }
            if labels[i] as usize >= n_classes {
                return Err(Error::param(
                    "labels",
                    format!("class {} >= {n_classes}", labels[i]),
                ));
            }
        }
        let mechanism = self.mechanism(ledger.relation())?;
        let t = self.threshold.value(mechanism.scale(), self.epsilon);
        let mut noise = ledger.charge(
            "train",
            "laplace (partitioned NB: one disjoint part per feature, parallel composition)",
            mechanism,
        )?;
        let a = self.alpha;
        let parts = random_parts(train.len(), features.len(), rng);
        let mut theta = Array2::from_elem((n_classes, dim), 0.5);
        let mut class_weight = vec![0.0; n_classes];
        let mut part_sizes = Vec::with_capacity(parts.len());
        let mut clipped = 0;
        let mut n_c = vec![0.0; n_classes];
        let mut n1 = vec![0.0; n_classes];
        for (part, &f) in parts.iter().zip(features) {
            part_sizes.push(part.len());
            n_c.fill(0.0);
            n1.fill(0.0);
            for i in part.iter().map(|&p| train[p]) {
                let c = labels[i as usize] as usize;
                n_c[c] += 1.0;
                if x.row(i as usize).binary_search(&(f as u32)).is_ok() {
                    n1[c] += 1.0;
                }
            }
            let mut was_clipped = false;
            for c in 0..n_classes {
                let raw1 = n1[c] + noise.sample(rng);
                let raw0 = (n_c[c] - n1[c]) + noise.sample(rng);
                was_clipped |= raw1 < t || raw0 < t;
                let (m1, m0) = (raw1.max(t), raw0.max(t));
                theta[[c, f]] = (m1 + a) / (m1 + m0 + 2.0 * a);
                class_weight[c] += m1 + m0;
            }
            clipped += usize::from(was_clipped);
        }
        Ok(PartitionedNbFit {
            model: BernoulliNb::from_parameters(theta, &class_weight, Some(features)),
            threshold: t,
            thresholded_features: clipped,
            part_sizes,
        })
    }
}

/// Refuses features out of range or repeated. Not an empty training set: under add/remove it
/// neighbours every one-row set, and its parts' counts are noise alone.
pub(crate) fn check_features(features: &[usize], dim: usize) -> Result<()> {
    super::check_feature_indices(features, dim)?;
    let mut seen = vec![false; dim];
    for &f in features {
        if std::mem::replace(&mut seen[f], true) {
            return Err(Error::param("features", format!("feature {f} repeated")));
        }
    }
    Ok(())
}

/// Dense 0/1 records to a sparse matrix (linfa interop).
pub(crate) fn to_binary<D: Data<Elem = f64>>(x: &ArrayBase<D, Ix2>) -> Result<BinaryMatrix> {
    let mut m = BinaryMatrix::new(x.ncols());
    let mut ones = Vec::new();
    for row in x.rows() {
        ones.clear();
        for (j, &v) in row.iter().enumerate() {
            if v == 1.0 {
                ones.push(j as u32);
            } else if v != 0.0 {
                return Err(Error::param("records", format!("value {v} is not binary")));
            }
        }
        m.push_row(&ones);
    }
    Ok(m)
}

// Uses every feature (one part per feature), over the declared classes (public), not the
// labels' largest value.
linfa_fit!(PartitionedNbValidParams => Accounted<BernoulliNb>, |p, ds| {
    let y: Vec<usize> = ds.as_single_targets().iter().copied().collect();
    let x = to_binary(ds.records())?;
    let labels: Vec<u16> = y.iter().map(|&c| c as u16).collect();
    let train: Vec<u32> = (0..x.n_rows() as u32).collect();
    let features: Vec<usize> = (0..x.n_cols()).collect();
    let classes = p.declared_classes(&y)?;
    Accounted::fit("partitioned_nb", p.seed, |rng, ledger| {
        let fit = p.fit_rows(&x, &labels, classes, &train, &features, rng, ledger)?;
        Ok(fit.model)
    })
});

learner_fit!(PartitionedNbParams, |p, input, log| {
    let x = input
        .data
        .features
        .as_binary()
        .ok_or_else(|| super::needs_binary(input))?;
    let all: Vec<usize>;
    let features = match input.features {
        Some(f) => f,
        None => {
            all = (0..x.n_cols()).collect();
            &all
        }
    };
    let mut rng = log.streams.stream("train/partition+laplace");
    let fit = p.fit_rows(
        x,
        &input.data.labels,
        input.data.n_classes(),
        input.train,
        features,
        &mut rng,
        &mut log.ledger,
    )?;
    log.record_threshold(fit.threshold, fit.thresholded_features);
    Ok(Box::new(fit.model))
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counts::ClassCounts;
    use crate::rng::rng_from;
    use linfa::ParamGuard;
    use linfa::dataset::DatasetBase;
    use linfa::traits::Fit;

    fn data() -> (BinaryMatrix, Vec<u16>) {
        let mut m = BinaryMatrix::new(3);
        let mut labels = Vec::new();
        for i in 0..300u32 {
            let c = (i % 3 == 0) as u16;
            let mut ones = Vec::new();
            if (c == 1) == (i % 5 != 0) {
                ones.push(0);
            }
            if i % 2 == 0 {
                ones.push(1);
            }
            if c == 0 && i % 7 == 0 {
                ones.push(2);
            }
            m.push_row(&ones);
            labels.push(c);
        }
        (m, labels)
    }

    #[test]
    fn invalid_inputs_are_refused() {
        for p in [
            PartitionedNbParams::new(0.0),
            PartitionedNbParams::new(f64::INFINITY),
            PartitionedNbParams::new(1.0).alpha(-1.0),
            PartitionedNbParams::new(1.0).threshold(Threshold::NoiseQuantile(0.2)),
        ] {
            assert!(p.check().is_err());
        }
        let (x, labels) = data();
        let p = PartitionedNbParams::new(1.0).check().unwrap();
        let mut rng = rng_from(&["t"]);
        let train: Vec<u32> = (0..300).collect();
        let mut refused = |n_classes: usize, rows: &[u32], fs: &[usize]| {
            p.fit_rows(
                &x,
                &labels,
                n_classes,
                rows,
                fs,
                &mut rng,
                &mut Ledger::default(),
            )
            .is_err()
        };
        for fs in [vec![], vec![3], vec![0, 0]] {
            assert!(refused(2, &train, &fs));
        }
        assert!(refused(1, &train, &[0]));
        // No training rows is answered, not refused (add/remove's neighbour of one row).
        assert!(!refused(2, &[], &[0]));
    }

    /// One feature: the single part is the whole training set, so a huge eps gives the
    /// non-private model; with several features the parts are disjoint and cover the rows
    /// (the class masses add up to N_c).
    #[test]
    fn huge_epsilon_and_disjoint_parts() {
        let (x, labels) = data();
        let train: Vec<u32> = (0..300).collect();
        let counts = ClassCounts::from_rows(&x, &labels, &train, 2);
        let p = PartitionedNbParams::new(1e9)
            .threshold(Threshold::Constant(0.0))
            .check()
            .unwrap();
        let mut ledger = Ledger::default();
        let fit = p
            .fit_rows(
                &x,
                &labels,
                2,
                &train,
                &[0],
                &mut rng_from(&["a"]),
                &mut ledger,
            )
            .unwrap();
        let exact = BernoulliNb::from_counts(&counts, 1.0, Some(&[0]));
        for c in 0..2 {
            assert!((fit.model.theta[[c, 0]] - exact.theta[[c, 0]]).abs() < 1e-6);
            assert!((fit.model.log_prior[c] - exact.log_prior[c]).abs() < 1e-6);
        }
        assert_eq!(ledger.total_epsilon(), 1e9);
        assert_eq!(ledger.entries[0].sensitivity, Some(1.0));
        let fit = p
            .fit_rows(
                &x,
                &labels,
                2,
                &train,
                &[2, 0, 1],
                &mut rng_from(&["b"]),
                &mut ledger,
            )
            .unwrap();
        // Independent labels: the parts cover the 300 rows, each about a third of them.
        assert_eq!(fit.part_sizes.iter().sum::<usize>(), 300);
        assert!(
            fit.part_sizes.iter().all(|&s| (60..=140).contains(&s)),
            "{:?}",
            fit.part_sizes
        );
        for c in 0..2 {
            assert!((fit.model.log_prior[c] - exact.log_prior[c]).abs() < 1e-6);
        }
        // Each feature's theta comes from a third of the data: close to, not equal to, exact.
        let all = BernoulliNb::from_counts(&counts, 1.0, None);
        assert!((fit.model.theta[[1, 0]] - all.theta[[1, 0]]).abs() < 0.15);
        assert!(fit.model.theta != all.theta);
        // linfa path.
        let dense = x.to_dense(&train);
        let y: ndarray::Array1<usize> = labels.iter().map(|&c| c as usize).collect();
        let ds = DatasetBase::new(dense, y);
        let undeclared = PartitionedNbParams::new(1.0).fit(&ds);
        assert!(undeclared.unwrap_err().to_string().contains("classes"));
        let model = PartitionedNbParams::new(1.0).classes(2).fit(&ds).unwrap();
        assert!(model.model.theta.iter().all(|&t| t > 0.0 && t < 1.0));
        // The linfa face keeps its accounting.
        assert!(model.ledger.is_private_within(Some(1.0)));
        assert_eq!(model.ledger.total_epsilon(), 1.0);
    }
}
