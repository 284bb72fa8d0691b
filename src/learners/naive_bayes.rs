//! Bernoulli Naive Bayes: the fitted model shared by the private and non-private learners, and
//! the non-private reference learner (SPEC 3).
//!
//! theta[c, d] = (N1[c, d] + alpha) / (N_c + 2 alpha), pi_c = N_c / N; predict
//! argmax_c log pi_c + sum_d [x_d log theta + (1 - x_d) log(1 - theta)]. Agrees with
//! scikit-learn's `BernoulliNB(alpha=1)` and linfa's `BernoulliNb` (tested).

use super::Classifier;
use crate::counts::ClassCounts;
use crate::data::{BinaryMatrix, Dataset, zip_four};
use crate::error::{Error, Result};
use linfa::traits::PredictInplace;
use ndarray::{Array1, Array2, ArrayBase, Data, Ix2};

/// A fitted Bernoulli NB, stored as per-class offsets plus per-feature log-odds so that
/// prediction of a sparse row costs one addition per (on-feature, class).
#[derive(Debug, Clone, PartialEq)]
pub struct BernoulliNb {
    /// theta[c, d]; unused features keep 0.5 and do not contribute.
    pub theta: Array2<f64>,
    /// log pi_c.
    pub log_prior: Vec<f64>,
    /// log pi_c + sum over used d of log(1 - theta[c, d]).
    base: Vec<f64>,
    /// Feature-major log theta - log(1 - theta): weights[d * C + c].
    weights: Vec<f64>,
}

impl BernoulliNb {
    /// Builds the model from (possibly noisy) on/off counts and class weights.
    ///
    /// `features` restricts the model to a subset (the others are ignored); `class_weight` are
    /// the unnormalised prior masses.
    pub fn from_parameters(
        theta: Array2<f64>,
        class_weight: &[f64],
        features: Option<&[usize]>,
    ) -> Self {
        let (n_classes, d) = theta.dim();
        let total: f64 = class_weight.iter().sum();
        let log_prior: Vec<f64> = if total > 0.0 {
            class_weight
                .iter()
                .map(|&w| (w / total).max(f64::MIN_POSITIVE).ln())
                .collect()
        } else {
            vec![-(n_classes as f64).ln(); n_classes]
        };
        let mut base = log_prior.clone();
        let mut weights = vec![0.0; d * n_classes];
        let mut use_feature = |j: usize| {
            for c in 0..n_classes {
                let t = theta[[c, j]];
                let log_off = (1.0 - t).ln();
                base[c] += log_off;
                weights[j * n_classes + c] = t.ln() - log_off;
            }
        };
        match features {
            Some(fs) => fs.iter().for_each(|&j| use_feature(j)),
            None => (0..d).for_each(use_feature),
        }
        BernoulliNb {
            theta,
            log_prior,
            base,
            weights,
        }
    }

    /// Non-private fit from exact counts with add-alpha smoothing.
    pub fn from_counts(counts: &ClassCounts, alpha: f64, features: Option<&[usize]>) -> Self {
        let mut theta = counts.on.clone();
        for (c, mut row) in theta.rows_mut().into_iter().enumerate() {
            let denom = counts.class[c] + 2.0 * alpha;
            row.mapv_inplace(|n1| (n1 + alpha) / denom);
        }
        BernoulliNb::from_parameters(theta, &counts.class, features)
    }

    pub fn n_classes(&self) -> usize {
        self.log_prior.len()
    }

    /// Class of one sparse row; ties go to the lowest class index.
    #[inline]
    pub fn predict_sparse_row(&self, ones: &[u32], scores: &mut [f64]) -> u16 {
        let k = self.n_classes();
        if k == 2 {
            // Same per-class sums as the general path (so the same rounding), without slicing.
            let (mut s0, mut s1) = (self.base[0], self.base[1]);
            for &j in ones {
                let j = 2 * j as usize;
                s0 += self.weights[j];
                s1 += self.weights[j + 1];
            }
            return u16::from(s1 > s0);
        }
        scores.copy_from_slice(&self.base);
        for &j in ones {
            let w = &self.weights[j as usize * k..(j as usize + 1) * k];
            for (s, wc) in scores.iter_mut().zip(w) {
                *s += wc;
            }
        }
        argmax(scores)
    }

    /// Joint log-likelihood of one dense 0/1 row, per class.
    fn predict_dense_row(&self, row: ndarray::ArrayView1<f64>, scores: &mut [f64]) -> u16 {
        let k = self.n_classes();
        scores.copy_from_slice(&self.base);
        for (j, &x) in row.iter().enumerate() {
            if x != 0.0 {
                for (s, w) in scores.iter_mut().zip(&self.weights[j * k..(j + 1) * k]) {
                    *s += x * w;
                }
            }
        }
        argmax(scores)
    }

    /// Predictions for rows of a sparse matrix.
    pub fn predict_rows(&self, x: &BinaryMatrix, rows: &[u32]) -> Vec<u16> {
        if self.n_classes() == 2 && self.weights.len() >= 2 * x.n_cols() {
            return self.predict_rows_binary(x, rows);
        }
        let mut scores = vec![0.0; self.n_classes()];
        rows.iter()
            .map(|&i| self.predict_sparse_row(x.row(i as usize), &mut scores))
            .collect()
    }

    /// Two classes, four rows side by side: a row's two sums are chains of dependent
    /// additions, so one row at a time waits on the adder; four rows keep eight chains in
    /// flight. Each sum adds the same terms in the same order as [`Self::predict_sparse_row`]
    /// (the same bits, the same predictions).
    fn predict_rows_binary(&self, x: &BinaryMatrix, rows: &[u32]) -> Vec<u16> {
        let w = &self.weights[..2 * x.n_cols()];
        // SAFETY (every get_unchecked below): on-indices are < n_cols, so 2 j + 1 < w.len().
        let pair = |j: u32| unsafe {
            let j = 2 * j as usize;
            (*w.get_unchecked(j), *w.get_unchecked(j + 1))
        };
        let finish = |row: &[u32], (mut s0, mut s1): (f64, f64)| {
            for &j in row {
                let (w0, w1) = pair(j);
                s0 += w0;
                s1 += w1;
            }
            u16::from(s1 > s0)
        };
        let b = (self.base[0], self.base[1]);
        let mut out = Vec::with_capacity(rows.len());
        let mut quads = rows.chunks_exact(4);
        for r4 in &mut quads {
            let (r, len) = x.four_rows(r4);
            // Named accumulators, so they stay in registers.
            let (mut a0, mut a1, mut b0, mut b1) = (b.0, b.1, b.0, b.1);
            let (mut c0, mut c1, mut d0, mut d1) = (b.0, b.1, b.0, b.1);
            for [j0, j1, j2, j3] in zip_four(r, len) {
                let (wa, wb, wc, wd) = (pair(j0), pair(j1), pair(j2), pair(j3));
                a0 += wa.0;
                a1 += wa.1;
                b0 += wb.0;
                b1 += wb.1;
                c0 += wc.0;
                c1 += wc.1;
                d0 += wd.0;
                d1 += wd.1;
            }
            out.push(finish(&r[0][len..], (a0, a1)));
            out.push(finish(&r[1][len..], (b0, b1)));
            out.push(finish(&r[2][len..], (c0, c1)));
            out.push(finish(&r[3][len..], (d0, d1)));
        }
        for &i in quads.remainder() {
            out.push(finish(x.row(i as usize), b));
        }
        out
    }
}

#[inline]
fn argmax(xs: &[f64]) -> u16 {
    let mut best = 0;
    for (c, &s) in xs.iter().enumerate().skip(1) {
        if s > xs[best] {
            best = c;
        }
    }
    best as u16
}

impl Classifier for BernoulliNb {
    fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Vec<u16>> {
        let x = data.features.as_binary().ok_or_else(|| Error::Data {
            dataset: data.name.clone(),
            reason: "Naive Bayes needs binary features".into(),
        })?;
        Ok(self.predict_rows(x, rows))
    }
}

impl<D: Data<Elem = f64>> PredictInplace<ArrayBase<D, Ix2>, Array1<usize>> for BernoulliNb {
    fn predict_inplace(&self, x: &ArrayBase<D, Ix2>, y: &mut Array1<usize>) {
        assert_eq!(x.nrows(), y.len(), "one target slot per record");
        let mut scores = vec![0.0; self.n_classes()];
        for (row, out) in x.rows().into_iter().zip(y.iter_mut()) {
            *out = self.predict_dense_row(row, &mut scores) as usize;
        }
    }

    fn default_target(&self, x: &ArrayBase<D, Ix2>) -> Array1<usize> {
        Array1::zeros(x.nrows())
    }
}

/// Validated hyper-parameters of the non-private Bernoulli NB.
#[derive(Debug, Clone, PartialEq)]
pub struct BernoulliNbValidParams {
    alpha: f64,
}

impl BernoulliNbValidParams {
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

/// Hyper-parameters of the non-private Bernoulli NB (alpha = 1: add-one smoothing).
#[derive(Debug, Clone, PartialEq)]
pub struct BernoulliNbParams(BernoulliNbValidParams);

impl Default for BernoulliNbParams {
    fn default() -> Self {
        BernoulliNbParams(BernoulliNbValidParams { alpha: 1.0 })
    }
}

impl BernoulliNbParams {
    pub fn new() -> Self {
        Self::default()
    }
}

setters!(BernoulliNbParams { alpha: f64 });

param_guard!(BernoulliNbParams => BernoulliNbValidParams, |p| {
    check_alpha(p.alpha)?;
    Ok(())
});

pub(crate) fn check_alpha(alpha: f64) -> Result<()> {
    super::check_non_negative("alpha", alpha)
}

// Number of classes implied by targets 0..k.
linfa_fit!(BernoulliNbValidParams => BernoulliNb, |p, ds| {
    let counts = ClassCounts::from_linfa(ds, |y| Ok(crate::counts::n_classes_of(y)))?;
    Ok(BernoulliNb::from_counts(&counts, p.alpha, None))
});

#[cfg(test)]
mod tests {
    use super::*;
    use linfa::dataset::DatasetBase;
    use linfa::traits::Fit;
    use linfa::traits::Predict;
    use ndarray::array;

    #[test]
    fn hand_computed_example() {
        // Class 0: rows [1,0], [1,1]; class 1: row [0,1].
        let x = array![[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]];
        let y = array![0usize, 0, 1];
        let model = BernoulliNbParams::new()
            .fit(&DatasetBase::new(x.clone(), y))
            .unwrap();
        assert_eq!(
            model.theta,
            array![[3.0 / 4.0, 2.0 / 4.0], [1.0 / 3.0, 2.0 / 3.0]]
        );
        assert!((model.log_prior[0] - (2.0f64 / 3.0).ln()).abs() < 1e-15);
        let pred: Array1<usize> = Predict::predict(&model, &x);
        assert_eq!(pred, array![0, 0, 1]);
    }

    /// Two-class prediction over many rows (four at a time) gives each row the prediction
    /// of the one-row path: rows of every length, a row count with a remainder of four,
    /// weights drawn so that many rows land close to the decision boundary.
    #[test]
    fn prediction_of_many_rows_matches_one_row_at_a_time() {
        use crate::rng::rng_from;
        use rand::Rng as _;
        let mut rng = rng_from(&["nb-rows"]);
        let d = 40;
        let theta = Array2::from_shape_fn((2, d), |_| 0.3 + 0.4 * rng.r#gen::<f64>());
        let model = BernoulliNb::from_parameters(theta, &[0.5, 0.5], None);
        let mut x = BinaryMatrix::new(d);
        for i in 0..1003 {
            let p = [0.02, 0.2, 0.6][i % 3];
            let ones: Vec<u32> = (0..d as u32).filter(|_| rng.r#gen::<f64>() < p).collect();
            x.push_row(&ones);
        }
        let rows: Vec<u32> = (0..1003).rev().collect();
        let mut scores = vec![0.0; 2];
        let want: Vec<u16> = rows
            .iter()
            .map(|&i| model.predict_sparse_row(x.row(i as usize), &mut scores))
            .collect();
        let got = model.predict_rows(&x, &rows);
        assert_eq!(got, want);
        let ones = want.iter().filter(|&&p| p == 1).count();
        assert!(ones > 100 && ones < 900, "{ones} of 1003 predicted 1");
    }

    #[test]
    fn negative_alpha_is_refused() {
        let x = array![[1.0]];
        let err = BernoulliNbParams::new()
            .alpha(-1.0)
            .fit(&DatasetBase::new(x, array![0usize]));
        assert!(err.unwrap_err().to_string().contains("alpha"));
    }

    #[test]
    fn feature_subset_ignores_other_features() {
        let counts = ClassCounts {
            class: vec![10.0, 10.0],
            on: array![[9.0, 1.0], [1.0, 9.0]],
        };
        let only_first = BernoulliNb::from_counts(&counts, 1.0, Some(&[0]));
        let mut s = [0.0; 2];
        // Feature 1 on, feature 0 off: with the subset only feature 0 counts -> class 1.
        assert_eq!(only_first.predict_sparse_row(&[1], &mut s), 1);
        assert_eq!(only_first.predict_sparse_row(&[0, 1], &mut s), 0);
    }
}
