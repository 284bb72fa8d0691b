//! Vaidya et al. (2013) private Naive Bayes: a known-bad comparison case (SPEC 3).
//!
//! * Released quantity: class counts N_c + Lap(1) and on-counts N1[c, d] + Lap(1/eps); any
//!   negative draw is re-sampled until non-negative. theta~ = (min(N1~, N_c~) + alpha) /
//!   (N_c~ + 2 alpha) (the min keeps theta~ in (0, 1); our choice, needs alpha > 0).
//! * Claimed: eps-DP. Actual (add/remove one example): the example changes its class count
//!   (Lap(1): 1-DP per class count, C in total as stated by SPEC) and up to D on-counts, each
//!   protected at eps, so the release is only (D eps + C)-DP; the re-sampling of negative draws
//!   also changes the noise law (a truncated Laplace whose normaliser depends on the count).
//! * The harness therefore records it with `Ledger::non_private`, with a note stating the real
//!   guarantee: use it only as a known-bad case (for audits and the thesis comparison).

use super::Accounted;
use super::naive_bayes::BernoulliNb;
use crate::counts::ClassCounts;
use crate::error::{Error, Result};
use crate::privacy::{LaplaceNoise, Ledger};
use crate::rng::Rng;
use ndarray::Array2;

private_params! {
    /// Validated parameters of Vaidya et al.'s NB.
    VaidyaNbValidParams;
    /// Parameters of Vaidya et al.'s NB (alpha = 1 by default; alpha must be > 0).
    VaidyaNbParams { alpha: f64 = 1.0 }
    |p| { crate::privacy::check_positive("alpha", p.alpha) }
}

/// count + noise, re-drawn while negative (counts are >= 0, so each try succeeds w.p. >= 1/2).
fn nonnegative<R: rand::Rng + ?Sized>(count: f64, noise: &LaplaceNoise, rng: &mut R) -> f64 {
    loop {
        let v = count + noise.sample(rng);
        if v >= 0.0 {
            return v;
        }
    }
}

impl VaidyaNbValidParams {
    /// The real guarantee, D eps + C, for `d` released features and `c` classes (SPEC 3).
    pub fn actual_epsilon(&self, d: usize, c: usize) -> f64 {
        d as f64 * self.epsilon + c as f64
    }

    /// Fits from exact counts, restricted to `features` if given. Records the step in `ledger`
    /// as NOT private, with the claimed and the real epsilon in the note.
    pub fn fit_counts(
        &self,
        counts: &ClassCounts,
        features: Option<&[usize]>,
        rng: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<BernoulliNb> {
        let (k, dim) = (counts.n_classes(), counts.n_features());
        let used = &super::used_features(features, dim)?;
        if counts
            .class
            .iter()
            .chain(counts.on.iter())
            .any(|&v| !(v.is_finite() && v >= 0.0))
        {
            return Err(Error::param("counts", "counts must be finite and >= 0"));
        }
        // Not a calibrated mechanism (the claimed eps is wrong): plain noise, labelled below.
        let class_noise = LaplaceNoise::with_scale(1.0)?;
        let feature_noise = LaplaceNoise::with_scale(1.0 / self.epsilon)?;
        let a = self.alpha;
        let mut theta = Array2::from_elem((k, dim), 0.5);
        let mut class_weight = vec![0.0; k];
        for c in 0..k {
            let nc = nonnegative(counts.class[c], &class_noise, rng);
            class_weight[c] = nc;
            for &d in used {
                let n1 = nonnegative(counts.on[[c, d]], &feature_noise, rng).min(nc);
                theta[[c, d]] = (n1 + a) / (nc + 2.0 * a);
            }
        }
        ledger.non_private(
            "train",
            "Vaidya et al. NB (Lap(1) class counts, Lap(1/eps) on-counts, negatives re-sampled)",
            &format!(
                "known-bad case: claims eps = {} but is only (D eps + C) = ({} x {} + {}) = {}-DP, \
                 and re-sampling negative draws changes the noise law",
                self.epsilon,
                used.len(),
                self.epsilon,
                k,
                self.actual_epsilon(used.len(), k)
            ),
        );
        Ok(BernoulliNb::from_parameters(
            theta,
            &class_weight,
            Some(used),
        ))
    }
}

linfa_fit!(VaidyaNbValidParams => Accounted<BernoulliNb>, |p, ds| {
    let counts = ClassCounts::from_linfa(ds, |y| Ok(crate::counts::n_classes_of(y)))?;
    Accounted::fit("vaidya_nb", p.seed, |rng, ledger| {
        p.fit_counts(&counts, None, rng, ledger)
    })
});

learner_fit!(VaidyaNbParams, |p, input, log| {
    let counts = super::binary_counts(input)?;
    let mut rng = log.streams.stream("train/vaidya");
    let model = p.fit_counts(counts, input.features, &mut rng, &mut log.ledger)?;
    let d = input.features.map_or(counts.n_features(), <[usize]>::len);
    log.metrics.insert(
        "actual_epsilon".into(),
        p.actual_epsilon(d, counts.n_classes()),
    );
    Ok(Box::new(model))
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from;
    use linfa::ParamGuard;
    use linfa::dataset::DatasetBase;
    use linfa::traits::Fit;
    use ndarray::array;

    #[test]
    fn labelled_non_private_with_the_real_guarantee() {
        for p in [
            VaidyaNbParams::new(0.0),
            VaidyaNbParams::new(1.0).alpha(0.0),
            VaidyaNbParams::new(f64::NAN),
        ] {
            assert!(p.check().is_err());
        }
        let counts = ClassCounts {
            class: vec![1000.0, 600.0],
            on: array![[500.0, 0.0, 1000.0], [100.0, 600.0, 0.0]],
        };
        let p = VaidyaNbParams::new(0.1).check().unwrap();
        let mut ledger = Ledger::default();
        let model = p
            .fit_counts(&counts, None, &mut rng_from(&["v"]), &mut ledger)
            .unwrap();
        assert!(model.theta.iter().all(|&t| t > 0.0 && t < 1.0));
        assert!(!ledger.is_private_within(Some(1e9)));
        let note = ledger.entries[0].note.as_deref().unwrap();
        assert!(
            note.contains("known-bad") && note.contains("= 2.3-DP"),
            "{note}"
        );
        assert!(
            p.fit_counts(&counts, Some(&[3]), &mut rng_from(&["v"]), &mut ledger)
                .is_err()
        );
        // Huge eps: close to the non-private model (class counts still get Lap(1)).
        let big = VaidyaNbParams::new(1e9).check().unwrap();
        let model = big
            .fit_counts(&counts, None, &mut rng_from(&["w"]), &mut Ledger::default())
            .unwrap();
        let exact = BernoulliNb::from_counts(&counts, 1.0, None);
        for (a, b) in model.theta.iter().zip(exact.theta.iter()) {
            assert!((a - b).abs() < 0.02, "{a} vs {b}");
        }
        // linfa path.
        let x = array![[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]];
        let m = VaidyaNbParams::new(1.0)
            .fit(&DatasetBase::new(x, array![0usize, 0, 1]))
            .unwrap();
        assert_eq!(m.model.n_classes(), 2);
        assert!(!m.ledger.is_private_within(Some(1e9)));
    }
}
