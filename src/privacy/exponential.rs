//! The exponential mechanism (McSherry & Talwar 2007) and its exact samplers.
//!
//! * Domain: datasets X; a finite output set R and a quality q(X, r) to maximise.
//! * Input metric: the run's relation (add/remove or replace-one); Delta_q = max over r and
//!   neighbours |q(X, r) - q(X', r)|, supplied by the caller for that relation.
//! * Mechanism: P(r) proportional to exp(eps q(X, r) / (2 Delta_q)).
//! * Measure: pure eps-DP.
//! * Proof sketch: the numerator changes by at most a factor exp(eps/2) between neighbours, and
//!   so does the normaliser (a sum of such terms), so the ratio of output probabilities is at
//!   most exp(eps).
//!
//! Mechanism values here ([`Exponential`], [`BinaryExponential`]) are built from (sensitivity
//! of the quality, eps, relation) and sample through a ledger [`Charge`]: an index
//! ([`Charge::choose`]), a T-subset ([`Charge::choose_subset`]) or a Gumbel top-k
//! ([`Charge::gumbel_top_k`]).
//!
//! Samplers here (plain samplers of given weights or scales, no privacy claim of their own):
//! * [`MaskSampler`]: the exponential mechanism over all T-subsets of D features with an
//!   additive quality sum_d m_d q_d (Algorithm 5 of the thesis), sampled exactly by a log-space
//!   dynamic programme in O(T D) time and no allocation after the first call.
//! * [`gumbel_top_k`]: the "Gumbel-max trick": adding Gumbel(scale 2 Delta / eps) noise to every
//!   score and keeping the arg max samples the exponential mechanism exactly; keeping the top k
//!   equals k rounds of peeling exponential mechanism (without replacement).
//!
//! Sampling uses floating point: fine for measuring accuracy, not hardened against the
//! floating-point attacks of Mironov (2012).

use super::Relation;
use super::mechanism::{Charge, PrivacyMap};
use crate::error::{Error, Result};
use rand::Rng;
use rand_distr::{Distribution, Gumbel};

mechanism_with_map!(Exponential);
mechanism_with_map!(per_draw: BinaryExponential);

/// The exponential mechanism for a quality of sensitivity Delta_q under a relation: pure
/// eps-DP per choice. Draws through a [`Charge`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exponential {
    map: PrivacyMap,
}

impl Exponential {
    pub fn new(sensitivity: f64, epsilon: f64, relation: Relation) -> Result<Self> {
        Ok(Exponential {
            map: PrivacyMap::pure(sensitivity, epsilon, relation)?,
        })
    }
}

impl Charge<'_, Exponential> {
    /// Index r with probability proportional to exp(eps q_r / (2 Delta_q)) (inverse CDF on the
    /// max-shifted weights).
    pub fn choose<R: Rng + ?Sized>(&mut self, q: &[f64], rng: &mut R) -> usize {
        let (epsilon, sensitivity) = (self.mechanism.map.epsilon, self.mechanism.map.sensitivity);
        let logits: Vec<f64> = q
            .iter()
            .map(|v| epsilon * v / (2.0 * sensitivity))
            .collect();
        let m = logits.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
        let w: Vec<f64> = logits.iter().map(|l| (l - m).exp()).collect();
        let total: f64 = w.iter().sum();
        let mut u = rng.r#gen::<f64>() * total;
        for (i, wi) in w.iter().enumerate() {
            if u < *wi {
                return i;
            }
            u -= wi;
        }
        w.len() - 1
    }

    /// A T-subset with P(m) proportional to exp(eps sum_d m_d q_d / (2 Delta)), Delta being the
    /// mechanism's sensitivity (T Delta_q for per-feature scores), drawn exactly by `sampler`.
    pub fn choose_subset<R: Rng + ?Sized>(
        &mut self,
        sampler: &mut MaskSampler,
        q: &[f64],
        t: usize,
        rng: &mut R,
    ) -> Result<Vec<usize>> {
        let w = exponential_weights(
            q,
            self.mechanism.map.epsilon,
            self.mechanism.map.sensitivity,
        );
        sampler.sample(&w, t, rng)
    }

    /// The k best scores after Gumbel noise of scale 2 k Delta_q / eps: k rounds of the peeling
    /// exponential mechanism at eps/k each, eps-DP in all.
    pub fn gumbel_top_k<R: Rng + ?Sized>(
        &mut self,
        q: &[f64],
        k: usize,
        rng: &mut R,
    ) -> Result<Vec<usize>> {
        let map = &self.mechanism.map;
        gumbel_top_k(q, k, 2.0 * k as f64 * map.sensitivity / map.epsilon, rng)
    }
}

/// The weights eps q_d / (2 Delta) of the exponential mechanism (Algorithm 5's mask weights
/// with Delta = T Delta_q).
pub fn exponential_weights(q: &[f64], epsilon: f64, sensitivity: f64) -> Vec<f64> {
    let f = epsilon / (2.0 * sensitivity);
    q.iter().map(|&v| f * v).collect()
}

/// The binary exponential mechanism (keep with quality s, skip with quality 0):
/// P(keep) = sigmoid(eps s / (2 Delta_q)), eps-DP per draw. Every draw is a release of its own,
/// so the recorded spend is draws x eps (Algorithm 4's steps).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BinaryExponential {
    map: PrivacyMap,
}

impl BinaryExponential {
    pub fn new(sensitivity: f64, epsilon: f64, relation: Relation) -> Result<Self> {
        Ok(BinaryExponential {
            map: PrivacyMap::pure(sensitivity, epsilon, relation)?,
        })
    }

    /// P(keep) for quality s: sigmoid(eps s / (2 Delta_q)).
    pub fn keep_probability(&self, s: f64) -> f64 {
        keep_probability(s, self.map.epsilon, self.map.sensitivity)
    }
}

impl Charge<'_, BinaryExponential> {
    /// One binary choice for quality `s`, charged eps.
    pub fn keep<R: Rng + ?Sized>(&mut self, s: f64, rng: &mut R) -> bool {
        let p = self.mechanism.keep_probability(s);
        self.count_draw();
        rng.r#gen::<f64>() < p
    }
}

/// sigmoid(eps s / (2 Delta)).
pub fn keep_probability(s: f64, epsilon: f64, sensitivity: f64) -> f64 {
    let x = epsilon * s / (2.0 * sensitivity);
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// log(exp(a) + exp(b)), stable for large magnitudes and for -inf arguments.
#[inline]
pub fn logaddexp(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    if hi == f64::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    hi + (lo - hi).exp().ln_1p()
}

/// log sum_i exp(x_i), stable.
pub fn log_sum_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY || m.is_nan() {
        return m;
    }
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// The probabilities of the exponential mechanism, exp(eps q_r / (2 Delta)) normalised.
pub fn exponential_probabilities(scores: &[f64], epsilon: f64, sensitivity: f64) -> Vec<f64> {
    let logits: Vec<f64> = scores
        .iter()
        .map(|q| epsilon * q / (2.0 * sensitivity))
        .collect();
    let z = log_sum_exp(&logits);
    logits.iter().map(|l| (l - z).exp()).collect()
}

/// Exact sampler of T-subsets with P(m) proportional to exp(sum_d m_d w_d).
///
/// S(t, d) = log of the sum over masks of the first d weights with t ones of exp(sum w_i m_i):
/// S(0, d) = 0, S(t, d) = -inf for t > d, S(t, d) = logaddexp(S(t, d-1), S(t-1, d-1) + w_d).
/// The sample walks d = D..1 and turns bit d on with probability
/// exp(S(t-1, d-1) + w_d - S(t, d)), which is the exact conditional probability of that bit given
/// the bits above it. The table is kept between calls (a reusable workspace).
#[derive(Debug, Clone, Default)]
pub struct MaskSampler {
    /// S stored by rows of d: table[d * (T + 1) + t].
    table: Vec<f64>,
    k: usize,
    d: usize,
}

impl MaskSampler {
    pub fn new() -> Self {
        Self::default()
    }

    fn fill(&mut self, weights: &[f64], k: usize) -> Result<()> {
        let d = weights.len();
        if k == 0 || k > d {
            return Err(Error::param(
                "features",
                format!("mask size T must be in 1..={d}, got {k}"),
            ));
        }
        if let Some(w) = weights.iter().find(|w| !w.is_finite()) {
            return Err(Error::param(
                "scores",
                format!("weights must be finite, got {w}"),
            ));
        }
        let stride = k + 1;
        let len = stride * (d + 1);
        if self.table.len() < len {
            self.table.resize(len, f64::NEG_INFINITY);
        }
        self.k = k;
        self.d = d;
        let s = &mut self.table[..len];
        s[0] = 0.0;
        s[1..stride].fill(f64::NEG_INFINITY);
        for (j, &w) in weights.iter().enumerate() {
            // Row j holds S(., j); row j + 1 is S(., j + 1), with feature j (0-based) as "d".
            let (prev, next) = s[j * stride..(j + 2) * stride].split_at_mut(stride);
            next[0] = 0.0;
            let top = k.min(j + 1);
            for t in 1..=top {
                next[t] = logaddexp(prev[t], prev[t - 1] + w);
            }
            next[top + 1..].fill(f64::NEG_INFINITY);
        }
        Ok(())
    }

    /// log of the normaliser, S(T, D) = log sum over T-subsets of exp(sum of their weights).
    pub fn log_normaliser(&mut self, weights: &[f64], k: usize) -> Result<f64> {
        self.fill(weights, k)?;
        Ok(self.table[self.d * (k + 1) + k])
    }

    /// Draws one T-subset; writes its feature indices, ascending, into `out` (cleared first).
    pub fn sample_into<R: Rng + ?Sized>(
        &mut self,
        weights: &[f64],
        k: usize,
        rng: &mut R,
        out: &mut Vec<usize>,
    ) -> Result<()> {
        self.fill(weights, k)?;
        out.clear();
        let stride = k + 1;
        let s = &self.table;
        let mut t = k;
        let mut j = self.d;
        while t > 0 {
            // j = number of features still undecided; feature j - 1 is the next one.
            if t == j {
                out.extend(0..j);
                break;
            }
            let on = s[(j - 1) * stride + t - 1] + weights[j - 1] - s[j * stride + t];
            if rng.r#gen::<f64>() < on.exp() {
                out.push(j - 1);
                t -= 1;
            }
            j -= 1;
        }
        out.sort_unstable();
        Ok(())
    }

    /// Draws one T-subset (allocating the result).
    pub fn sample<R: Rng + ?Sized>(
        &mut self,
        weights: &[f64],
        k: usize,
        rng: &mut R,
    ) -> Result<Vec<usize>> {
        let mut out = Vec::with_capacity(k);
        self.sample_into(weights, k, rng, &mut out)?;
        Ok(out)
    }
}

/// Adds Gumbel noise of scale `scale` to each score and returns the indices of the k largest
/// noisy scores, ascending. With scale = 2 k Delta / eps this is eps-DP (k peeling rounds of the
/// exponential mechanism at eps/k each; Durfee & Rogers 2019).
pub fn gumbel_top_k<R: Rng + ?Sized>(
    scores: &[f64],
    k: usize,
    scale: f64,
    rng: &mut R,
) -> Result<Vec<usize>> {
    if k == 0 || k > scores.len() {
        return Err(Error::param(
            "features",
            format!("T must be in 1..={}, got {k}", scores.len()),
        ));
    }
    let g = Gumbel::new(0.0, scale)
        .map_err(|e| Error::param("scale", format!("Gumbel scale {scale}: {e}")))?;
    let mut noisy: Vec<(f64, usize)> = scores
        .iter()
        .enumerate()
        .map(|(i, &q)| (q + g.sample(rng), i))
        .collect();
    noisy.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
    let mut top: Vec<usize> = noisy[..k].iter().map(|&(_, i)| i).collect();
    top.sort_unstable();
    Ok(top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from;

    #[test]
    fn logaddexp_is_stable() {
        assert_eq!(
            logaddexp(f64::NEG_INFINITY, f64::NEG_INFINITY),
            f64::NEG_INFINITY
        );
        assert_eq!(logaddexp(f64::NEG_INFINITY, 3.0), 3.0);
        assert!((logaddexp(1000.0, 1000.0) - (1000.0 + 2f64.ln())).abs() < 1e-12);
        assert!((logaddexp(0.0, 0.0) - 2f64.ln()).abs() < 1e-15);
        assert!((log_sum_exp(&[0.0, 0.0, 0.0, 0.0]) - 4f64.ln()).abs() < 1e-15);
    }

    #[test]
    fn mask_sampler_validates_and_covers_edge_cases() {
        let mut s = MaskSampler::new();
        let mut rng = rng_from(&["mask-edge"]);
        assert!(s.sample(&[1.0, 2.0], 0, &mut rng).is_err());
        assert!(s.sample(&[1.0, 2.0], 3, &mut rng).is_err());
        assert!(s.sample(&[1.0, f64::NAN], 1, &mut rng).is_err());
        assert_eq!(
            s.sample(&[1.0, 2.0, 3.0], 3, &mut rng).unwrap(),
            vec![0, 1, 2]
        );
        // Huge weights: the top-T subset with probability ~1, no NaN.
        let w = [0.0, 1e6, 5e5, 2e6, 1.0];
        assert_eq!(s.sample(&w, 2, &mut rng).unwrap(), vec![1, 3]);
        // Reuse with a smaller and a larger problem.
        assert_eq!(s.sample(&[0.0, 1e9], 1, &mut rng).unwrap(), vec![1]);
        let big: Vec<f64> = (0..50).map(|i| i as f64 * 100.0).collect();
        assert_eq!(
            s.sample(&big, 5, &mut rng).unwrap(),
            vec![45, 46, 47, 48, 49]
        );
    }

    #[test]
    fn gumbel_top_k_validates() {
        let mut rng = rng_from(&["gumbel"]);
        assert!(gumbel_top_k(&[1.0], 2, 1.0, &mut rng).is_err());
        assert!(gumbel_top_k(&[1.0], 1, 0.0, &mut rng).is_err());
        let top = gumbel_top_k(&[0.0, 1e9, 2e9, 5.0], 2, 1.0, &mut rng).unwrap();
        assert_eq!(top, vec![1, 2]);
    }
}
