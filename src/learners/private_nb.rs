//! Algorithm 1: private Bernoulli Naive Bayes by the Laplace mechanism (thesis section 3.3).
//!
//! * Released quantity: for every class c and used feature d the pair (N1[c, d], N0[c, d]).
//! * Neighbouring relation: the ledger's. Add/remove: adding an example of class c changes, for
//!   every feature d, exactly one of N1[c, d] and N0[c, d] by one and nothing else, so the L1
//!   sensitivity is D (the number of features released). Replace-one: 2D (a removal and an
//!   addition; attained when the class changes).
//! * Mechanism: Laplace with b = D / eps on each count (privacy::laplace); measure: pure eps-DP.
//! * Everything afterwards — thresholding at t, smoothing, theta~, the class prior from the mean
//!   of M1 + M0 — reads only the noisy counts and is post-processing.
//!
//! Variant `release = "on_only"`: release N1[c, d] and N_c instead (L1 sensitivity D + 1:
//! at most D on-counts and one class count change; 2(D + 1) under replace-one) and derive
//! M0 = N~_c - M1.

use super::Accounted;
use super::naive_bayes::{BernoulliNb, check_alpha};
use crate::counts::ClassCounts;
use crate::error::{Error, Result};
use crate::privacy::laplace::{Laplace, laplace_quantile};
use crate::privacy::{Ledger, Relation};
use crate::rng::Rng;
use ndarray::Array2;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The lower threshold t applied to the noisy counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// A fixed count.
    Constant(f64),
    /// ln 2 / eps.
    LnTwoOverEps,
    /// The q-quantile of the noise Lap(Delta / eps), q in [0.5, 1); the thesis default is 0.65.
    NoiseQuantile(f64),
}

impl Default for Threshold {
    fn default() -> Self {
        Threshold::NoiseQuantile(0.65)
    }
}

impl Threshold {
    /// The threshold value for noise scale `scale` at privacy level `epsilon`.
    pub fn value(&self, scale: f64, epsilon: f64) -> f64 {
        match *self {
            Threshold::Constant(t) => t,
            Threshold::LnTwoOverEps => std::f64::consts::LN_2 / epsilon,
            Threshold::NoiseQuantile(q) => laplace_quantile(scale, q),
        }
    }

    /// Parses `"q65"`, `"q99.5"`, `"ln2/eps"` or a number.
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        if s == "ln2/eps" {
            return Ok(Threshold::LnTwoOverEps);
        }
        if let Some(p) = s.strip_prefix('q') {
            let pct: f64 = p.parse().map_err(|_| format!("bad quantile `{s}`"))?;
            return Ok(Threshold::NoiseQuantile(pct / 100.0));
        }
        s.parse()
            .map(Threshold::Constant)
            .map_err(|_| format!("`{s}` is not a number, `ln2/eps` or a noise quantile like `q65`"))
    }

    /// Why the threshold is invalid, if it is.
    pub fn problem(&self) -> Option<String> {
        match *self {
            Threshold::Constant(t) if !(t.is_finite() && t >= 0.0) => {
                Some(format!("must be finite and >= 0, got {t}"))
            }
            Threshold::NoiseQuantile(q) if !(0.5..1.0).contains(&q) => Some(format!(
                "noise quantile must be in [50%, 100%), got {}%",
                q * 100.0
            )),
            _ => None,
        }
    }

    pub(crate) fn check(&self) -> Result<()> {
        self.problem()
            .map_or(Ok(()), |r| Err(Error::param("threshold", r)))
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Threshold::Constant(t) => write!(f, "{t}"),
            Threshold::LnTwoOverEps => f.write_str("ln2/eps"),
            Threshold::NoiseQuantile(q) => write!(f, "q{}", q * 100.0),
        }
    }
}

impl Serialize for Threshold {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Threshold::Constant(t) => s.serialize_f64(*t),
            other => s.serialize_str(&other.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Threshold {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match super::NumberOrWord::deserialize(d)? {
            super::NumberOrWord::Number(t) => Ok(Threshold::Constant(t)),
            super::NumberOrWord::Word(s) => Threshold::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

/// Which counts are released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Release {
    /// N1 and N0 per class and feature (sensitivity D).
    #[default]
    OnOff,
    /// N1 per class and feature plus N_c (sensitivity D + 1).
    OnOnly,
}

private_params! {
    /// Validated parameters of Algorithm 1.
    PrivateNbValidParams;
    /// Parameters of Algorithm 1 (defaults: threshold at the 65% noise quantile, alpha = 1).
    PrivateNbParams {
        threshold: Threshold = Threshold::default(),
        alpha: f64 = 1.0,
        release: Release = Release::OnOff,
        /// The ablation variant `exact_prior`: the class prior from the exact class counts
        /// (NOT private: the class counts are used without noise; recorded as a non-private
        /// step).
        exact_prior: bool = false,
    }
    |p| {
        if p.exact_prior && p.release == Release::OnOnly {
            return Err(Error::param(
                "variant",
                "exact_prior applies to release = \"on_off\" (on_only derives M0 from the class counts)",
            ));
        }
        check_smoothing(p.alpha, p.threshold)
    }
}

/// Valid smoothing for thresholded noisy counts: alpha >= 0, a valid threshold, and not both
/// zero (that could give 0/0 parameters).
pub(crate) fn check_smoothing(alpha: f64, threshold: Threshold) -> Result<()> {
    check_alpha(alpha)?;
    threshold.check()?;
    if alpha == 0.0 && threshold == Threshold::Constant(0.0) {
        return Err(Error::param(
            "alpha",
            "alpha = 0 with threshold 0 can give 0/0 parameters; raise one of them",
        ));
    }
    Ok(())
}

/// The released model and what the mechanism did.
#[derive(Debug, Clone)]
pub struct PrivateNbFit {
    pub model: BernoulliNb,
    /// L1 sensitivity of the released counts.
    pub sensitivity: f64,
    /// Resolved threshold t.
    pub threshold: f64,
    /// Features with at least one noisy count raised to t.
    pub thresholded_features: usize,
}

impl PrivateNbValidParams {
    pub fn threshold(&self) -> Threshold {
        self.threshold
    }

    pub fn release(&self) -> Release {
        self.release
    }

    /// L1 sensitivity for `d` released features under add/remove.
    pub fn sensitivity(&self, d: usize) -> f64 {
        match self.release {
            Release::OnOff => d as f64,
            Release::OnOnly => d as f64 + 1.0,
        }
    }

    /// L1 sensitivity for `d` released features under `relation` (replace-one: twice).
    pub fn sensitivity_under(&self, d: usize, relation: Relation) -> f64 {
        relation.doubled_for_replace(self.sensitivity(d))
    }

    /// The mechanism: the noisy (unthresholded) counts of Algorithm 1, restricted to `features`
    /// if given, with noise from `rng` (one stream for this one mechanism call), calibrated
    /// for the ledger's relation and recorded there as step `train`. This is the only step that
    /// reads the data; [`Self::fit_counts`] post-processes its output.
    pub fn release_counts(
        &self,
        counts: &ClassCounts,
        features: Option<&[usize]>,
        rng: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<NoisyCounts> {
        let used = super::used_features(features, counts.n_features())?;
        let relation = ledger.relation();
        let sensitivity = self.sensitivity_under(used.len(), relation);
        let mechanism = Laplace::new(sensitivity, self.epsilon, relation)?;
        let scale = mechanism.scale();
        let mut noise = ledger.charge("train", "laplace (Algorithm 1 counts)", mechanism)?;
        let k = counts.n_classes();
        let mut on = Array2::zeros((k, used.len()));
        let mut off = Array2::zeros((k, used.len()));
        let mut class = Vec::new();
        for c in 0..k {
            if self.release == Release::OnOnly {
                class.push(counts.class[c] + noise.sample(rng));
            }
            for (i, &d) in used.iter().enumerate() {
                on[[c, i]] = counts.on[[c, d]] + noise.sample(rng);
                if self.release == Release::OnOff {
                    off[[c, i]] = counts.off(c, d) + noise.sample(rng);
                }
            }
        }
        Ok(NoisyCounts {
            features: used,
            on,
            off: (self.release == Release::OnOff).then_some(off),
            class: (self.release == Release::OnOnly).then_some(class),
            scale,
            sensitivity,
        })
    }

    /// Algorithm 1: [`Self::release_counts`] then post-processing (threshold, smoothing, prior).
    /// Records the spend in `ledger`; the linfa `Fit` returns it beside the model instead.
    pub fn fit_counts(
        &self,
        counts: &ClassCounts,
        features: Option<&[usize]>,
        rng: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<PrivateNbFit> {
        let mut noisy = self.release_counts(counts, features, rng, ledger)?;
        if self.exact_prior && noisy.off.is_some() {
            // With off-counts released the class counts only set the prior.
            noisy.class = Some(counts.class.clone());
            ledger.non_private(
                "train",
                "class prior from the exact class counts (variant exact_prior)",
                "NOT eps-DP: the class counts are used without noise (no finite eps)",
            );
        }
        Ok(self.post_process(&noisy, counts.n_features()))
    }

    /// Thresholding at t, add-alpha smoothing and the class prior: reads only released values.
    pub fn post_process(&self, noisy: &NoisyCounts, n_features: usize) -> PrivateNbFit {
        let t = self.threshold.value(noisy.scale, self.epsilon);
        let k = noisy.on.nrows();
        let a = self.alpha;
        let mut theta = Array2::from_elem((k, n_features), 0.5);
        let mut class_weight = vec![0.0; k];
        let mut clipped = vec![false; n_features];
        for c in 0..k {
            let mut mass = 0.0;
            for (i, &d) in noisy.features.iter().enumerate() {
                let raw1 = noisy.on[[c, i]];
                let raw0 = match (&noisy.off, &noisy.class) {
                    (Some(off), _) => off[[c, i]],
                    (None, Some(nc)) => nc[c] - raw1.max(t),
                    (None, None) => unreachable!("a release has off-counts or class counts"),
                };
                clipped[d] |= raw1 < t || raw0 < t;
                let (m1, m0) = (raw1.max(t), raw0.max(t));
                theta[[c, d]] = (m1 + a) / (m1 + m0 + 2.0 * a);
                mass += m1 + m0;
            }
            class_weight[c] = match &noisy.class {
                None => mass / noisy.features.len() as f64,
                Some(nc) => nc[c].max(0.0),
            };
        }
        PrivateNbFit {
            model: BernoulliNb::from_parameters(theta, &class_weight, Some(&noisy.features)),
            sensitivity: noisy.sensitivity,
            threshold: t,
            thresholded_features: clipped.iter().filter(|&&c| c).count(),
        }
    }
}

/// What Algorithm 1's mechanism releases: noisy counts for the used features (columns in the
/// order of `features`).
#[derive(Debug, Clone)]
pub struct NoisyCounts {
    pub features: Vec<usize>,
    /// N1 + Lap(b), C x |features|.
    pub on: Array2<f64>,
    /// N0 + Lap(b) (`on_off` release).
    pub off: Option<Array2<f64>>,
    /// N_c + Lap(b) (`on_only` release).
    pub class: Option<Vec<f64>>,
    /// Laplace scale b = sensitivity / eps.
    pub scale: f64,
    pub sensitivity: f64,
}

// Over the declared classes (public), not the labels' largest value.
linfa_fit!(PrivateNbValidParams => Accounted<BernoulliNb>, |p, ds| {
    let counts = ClassCounts::from_linfa(ds, |y| p.declared_classes(y))?;
    Accounted::fit("private_nb", p.seed, |rng, ledger| {
        Ok(p.fit_counts(&counts, None, rng, ledger)?.model)
    })
});

learner_fit!(PrivateNbParams, |p, input, log| {
    let counts = super::binary_counts(input)?;
    let mut rng = log.streams.stream("train/laplace");
    let fit = p.fit_counts(counts, input.features, &mut rng, &mut log.ledger)?;
    log.record_threshold(fit.threshold, fit.thresholded_features);
    Ok(Box::new(fit.model))
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from;
    use linfa::ParamGuard;
    use ndarray::array;

    /// The linfa face releases over the declared classes, never the labels' largest value:
    /// undeclared classes are refused, three declared classes give a three-class model from
    /// labels that use two, and a label outside them is refused.
    #[test]
    fn linfa_fit_releases_over_the_declared_classes() {
        use linfa::dataset::DatasetBase;
        use linfa::traits::Fit;
        let x = array![[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]];
        let ds = DatasetBase::new(x.clone(), array![0usize, 1, 0, 1]);
        let undeclared = PrivateNbParams::new(1.0).check().unwrap().fit(&ds);
        assert!(undeclared.unwrap_err().to_string().contains("classes"));
        let p = PrivateNbParams::new(1.0)
            .classes(3)
            .seed(1)
            .check()
            .unwrap();
        let fit = p.fit(&ds).unwrap();
        assert_eq!(fit.model.log_prior.len(), 3);
        assert_eq!(fit.model.theta.nrows(), 3);
        let outside = DatasetBase::new(x, array![0usize, 3, 0, 1]);
        assert!(p.fit(&outside).unwrap_err().to_string().contains("class 3"));
    }

    #[test]
    fn threshold_parsing_and_display_round_trip() {
        for s in ["q65", "q99", "ln2/eps", "10", "0"] {
            let t = Threshold::parse(s).unwrap();
            assert_eq!(Threshold::parse(&t.to_string()).unwrap(), t);
        }
        assert_eq!(
            Threshold::parse("q65").unwrap(),
            Threshold::NoiseQuantile(0.65)
        );
        assert!(Threshold::parse("q").is_err());
        assert!(Threshold::parse("big").is_err());
    }

    #[test]
    fn invalid_parameters_are_refused() {
        for p in [
            PrivateNbParams::new(0.0),
            PrivateNbParams::new(-1.0),
            PrivateNbParams::new(f64::NAN),
            PrivateNbParams::new(1.0).threshold(Threshold::NoiseQuantile(0.3)),
            PrivateNbParams::new(1.0).threshold(Threshold::Constant(-1.0)),
            PrivateNbParams::new(1.0)
                .alpha(0.0)
                .threshold(Threshold::Constant(0.0)),
        ] {
            assert!(p.check().is_err());
        }
    }

    #[test]
    fn default_threshold_is_the_65_percent_noise_quantile() {
        let counts = ClassCounts {
            class: vec![100.0, 100.0],
            on: array![[50.0, 10.0, 90.0], [10.0, 50.0, 5.0]],
        };
        let p = PrivateNbParams::new(0.1).check().unwrap();
        let mut rng = rng_from(&["t"]);
        let mut ledger = Ledger::default();
        let fit = p.fit_counts(&counts, None, &mut rng, &mut ledger).unwrap();
        // t = -(D/eps) ln(2 (1 - 0.65)) with D = 3.
        assert!((fit.threshold - (-(3.0 / 0.1) * (0.7f64).ln())).abs() < 1e-12);
        assert_eq!(fit.sensitivity, 3.0);
        assert_eq!(ledger.total_epsilon(), 0.1);
        assert!(fit.model.theta.iter().all(|&t| t > 0.0 && t < 1.0));
        let on_only = PrivateNbParams::new(0.1)
            .release(Release::OnOnly)
            .check()
            .unwrap();
        assert_eq!(on_only.sensitivity(3), 4.0);
    }

    #[test]
    fn huge_epsilon_recovers_the_non_private_model() {
        let counts = ClassCounts {
            class: vec![100.0, 60.0],
            on: array![[50.0, 10.0], [10.0, 50.0]],
        };
        let p = PrivateNbParams::new(1e9)
            .threshold(Threshold::Constant(0.0))
            .check()
            .unwrap();
        let fit = p
            .fit_counts(&counts, None, &mut rng_from(&["t"]), &mut Ledger::default())
            .unwrap();
        let exact = BernoulliNb::from_counts(&counts, 1.0, None);
        for (a, b) in fit.model.theta.iter().zip(exact.theta.iter()) {
            assert!((a - b).abs() < 1e-6);
        }
        for (a, b) in fit.model.log_prior.iter().zip(&exact.log_prior) {
            assert!((a - b).abs() < 1e-6);
        }
    }
}
