//! Synthetic datasets that need no files (SPEC 6).
//!
//! Each is generated once per run from its own seed (`data/<name>/<seed>`) and shared by every
//! trial, like a file-backed dataset. Classes alternate row by row, so both halves are balanced.

use super::dense::DenseData;
use super::{BinaryMatrix, Dataset, Features, SplitRule};
use crate::error::{Error, Result};
use crate::rng::{Rng, rng_from};
use ndarray::Array2;
use rand::Rng as _;
use rand_distr::{Distribution, StandardNormal};

/// Default relative jitter of the NB-sampled thetas (our choice; the thesis does not say).
pub const DEFAULT_JITTER: f64 = 0.1;

source_def! {
    /// Toy Gaussian of the thesis appendix A.7: N(0, I) vs N(a 1, I), Bayes accuracy 90%.
    ToyGaussianDef {
        pub dimension: usize,
        pub train: usize,
        pub test: usize,
        #[serde(default)]
        pub seed: u64,
        /// Grows a smaller spec's training set without changing its rows: the first
        /// `first_train` training rows are drawn before the test rows (exactly the rows of
        /// `train = first_train`), the remaining `train - first_train` after them, so the test
        /// set, every `n_train` subset up to `first_train` and so every stored cell of the
        /// smaller spec stay the same.
        pub first_train: Option<usize>,
    }
}

impl ToyGaussianDef {
    /// Training rows drawn before the test rows.
    pub fn first_train(&self) -> usize {
        self.first_train.unwrap_or(self.train)
    }
}

source_def! {
    /// The surveys' synthetic source for the ERM experiments: x = z / (2 sqrt D) with
    /// z ~ N(0, I_D), clipped to ||x|| <= 1 (so every row is in the unit ball the privacy proofs
    /// need, with public bound 1), and y = +1 with probability sigmoid(w*.x),
    /// w* = 2 s (1, ..., 1): a well-specified logistic model whose margin w*.x has standard
    /// deviation about s at every D.
    LogisticBallDef {
        pub dimension: usize,
        pub train: usize,
        pub test: usize,
        /// s: the margin's standard deviation (default 3).
        pub signal: Option<f64>,
        #[serde(default)]
        pub seed: u64,
    }
}

impl LogisticBallDef {
    /// The true weights w* (the population minimiser of the unregularised logistic risk).
    pub fn truth(&self) -> Vec<f64> {
        vec![2.0 * self.signal.unwrap_or(3.0); self.dimension]
    }
}

/// Rows of [`LogisticBallDef`], generated once (one stream, row by row).
pub fn logistic_ball(name: &str, title: &str, def: &LogisticBallDef) -> Dataset {
    let (d, n) = (def.dimension, def.train + def.test);
    let w = def.truth();
    let mut rng = data_rng(name, def.seed);
    let mut x = Array2::zeros((n, d));
    let mut labels = Vec::with_capacity(n);
    let scale = 1.0 / (2.0 * (d as f64).sqrt());
    for mut row in x.rows_mut() {
        row.iter_mut().for_each(|v| {
            *v = {
                let z: f64 = StandardNormal.sample(&mut rng);
                scale * z
            }
        });
        let norm = row.dot(&row).sqrt();
        if norm > 1.0 {
            row.iter_mut().for_each(|v| *v /= norm);
        }
        let z: f64 = row.iter().zip(&w).map(|(a, b)| a * b).sum();
        labels.push(u16::from(rng.r#gen::<f64>() < 1.0 / (1.0 + (-z).exp())));
    }
    Dataset {
        truth: Some(w),
        ..Dataset::new(
            name.into(),
            title.into(),
            Features::Dense(x.into()),
            labels,
            vec!["-1".into(), "+1".into()],
            SplitRule::Fixed { n_train: def.train },
        )
    }
}

source_def! {
    /// Binary data sampled from a two-class Naive Bayes model (thesis section 3.4).
    NbSampledDef {
        pub dimension: usize,
        /// Base probability that a feature is on, per class (dense: [0.8, 0.5]; sparse:
        /// [0.01, 0.03]).
        pub theta: [f64; 2],
        /// Relative uniform jitter per feature: theta_cd = theta_c (1 + U(-jitter, jitter)).
        #[serde(default = "default_jitter")]
        pub jitter: f64,
        pub train: usize,
        pub test: usize,
        #[serde(default)]
        pub seed: u64,
    }
}

fn default_jitter() -> f64 {
    DEFAULT_JITTER
}

source_def! {
    /// Binary data sampled from the non-private NB fitted on another dataset's training set.
    NbProxyDef {
        /// Catalog name of the dataset whose fitted NB generates the rows.
        pub of: String,
        pub train: usize,
        pub test: usize,
        #[serde(default)]
        pub seed: u64,
    }
}

/// Phi^-1(0.9).
const PROBIT_0_9: f64 = 1.281_551_565_544_600_5;

fn data_rng(name: &str, seed: u64) -> Rng {
    rng_from(&["data", name, &seed.to_string()])
}

fn two_classes() -> Vec<String> {
    vec!["class 1".into(), "class 2".into()]
}

/// Sparse binary logistic-regression data of Adult's shape: `n` rows with `k` ones each (a
/// uniform `k`-subset of `d` features), labels drawn from a logistic model with weights uniform
/// in [-1, 1]; classes `0`/`1`, every row a training row. The workload of the LR benches and of
/// `check`'s LR speed reference, which differ only in the stream they pass.
pub fn logistic_binary(
    rng: &mut Rng,
    name: &str,
    title: &str,
    n: usize,
    d: usize,
    k: usize,
) -> Dataset {
    let w: Vec<f64> = (0..d).map(|_| rng.r#gen::<f64>() * 2.0 - 1.0).collect();
    let mut m = BinaryMatrix::new(d);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let mut ones: Vec<u32> = rand::seq::index::sample(rng, d, k)
            .into_iter()
            .map(|j| j as u32)
            .collect();
        ones.sort_unstable();
        let z: f64 = ones.iter().map(|&j| w[j as usize]).sum();
        labels.push(u16::from(rng.r#gen::<f64>() < 1.0 / (1.0 + (-z).exp())));
        m.push_row(&ones);
    }
    Dataset::new(
        name.into(),
        title.into(),
        Features::Binary(m),
        labels,
        vec!["0".into(), "1".into()],
        SplitRule::Fixed { n_train: n },
    )
}

/// Toy Gaussian (appendix A.7): class 1 ~ N(0, I_D), class 2 ~ N(a 1, I_D) with
/// a = 2 Phi^-1(0.9) / sqrt(D), so the Bayes classifier is 90% accurate.
///
/// Rows are stored in the order they are drawn from the one stream: `first_train` training rows,
/// the test rows, then the rest of the training rows (none unless the definition grows the
/// training set). Labels alternate within each block, so every block is balanced.
pub fn toy_gaussian(name: &str, title: &str, def: &ToyGaussianDef) -> Result<Dataset> {
    let (d, first) = (def.dimension, def.first_train());
    if first == 0 || first > def.train {
        return Err(Error::Data {
            dataset: name.into(),
            reason: format!("first_train = {first} must be in 1..=train ({})", def.train),
        });
    }
    let n = def.train + def.test;
    let a = 2.0 * PROBIT_0_9 / (d as f64).sqrt();
    let mut rng = data_rng(name, def.seed);
    let grown = first + def.test;
    let labels: Vec<u16> = (0..n)
        .map(|i| (if i < grown { i } else { i - grown } % 2) as u16)
        .collect();
    // Row-major, as `Array2::from_shape_fn` drew them: the same values in memory or mapped.
    let x = DenseData::generate(n, d, |i, row| {
        let shift = if labels[i] == 1 { a } else { 0.0 };
        for v in row {
            let z: f64 = StandardNormal.sample(&mut rng);
            *v = z + shift;
        }
    })
    .map_err(|e| Error::Data {
        dataset: name.into(),
        reason: format!("cannot write its {n} x {d} rows to a temporary file: {e}"),
    })?;
    let split = if first == def.train {
        SplitRule::Fixed { n_train: def.train }
    } else {
        SplitRule::Grown {
            first_train: first,
            test: def.test,
        }
    };
    Ok(Dataset::new(
        name.into(),
        title.into(),
        Features::Dense(x),
        labels,
        two_classes(),
        split,
    ))
}

/// Rows sampled from a two-class NB with theta_cd = theta_c (1 + U(-jitter, jitter)).
pub fn nb_sampled(name: &str, title: &str, def: &NbSampledDef) -> Dataset {
    let mut rng = data_rng(name, def.seed);
    let theta = Array2::from_shape_fn((2, def.dimension), |(c, _)| {
        let u: f64 = rng.gen_range(-1.0..1.0);
        (def.theta[c] * (1.0 + def.jitter * u)).clamp(0.0, 1.0)
    });
    let n = def.train + def.test;
    let labels: Vec<u16> = (0..n).map(|i| (i % 2) as u16).collect();
    Dataset::new(
        name.into(),
        title.into(),
        Features::Binary(sample_rows(&theta, &labels, &mut rng)),
        labels,
        two_classes(),
        SplitRule::Fixed { n_train: def.train },
    )
}

/// Rows sampled from the non-private NB (alpha = 1) fitted on `source`'s training rows
/// (its fixed split, or all rows if it has a random split): classes from pi, features from theta.
pub fn nb_proxy(name: &str, title: &str, def: &NbProxyDef, source: &Dataset) -> Result<Dataset> {
    let x = source.features.as_binary().ok_or_else(|| Error::Data {
        dataset: name.into(),
        reason: format!("`of = {}` must be a binary dataset", def.of),
    })?;
    let train: Vec<u32> = match source.split {
        SplitRule::Fixed { n_train } => (0..n_train as u32).collect(),
        SplitRule::Grown { first_train, test } => (0..first_train)
            .chain(first_train + test..source.n_rows())
            .map(|i| i as u32)
            .collect(),
        SplitRule::Random { .. } => (0..source.n_rows() as u32).collect(),
    };
    let (prior, theta) = smoothed_nb(x, &source.labels, &train, source.n_classes());
    let mut rng = data_rng(name, def.seed);
    let labels: Vec<u16> = (0..def.train + def.test)
        .map(|_| {
            let mut u: f64 = rng.r#gen();
            prior
                .iter()
                .position(|&p| {
                    u -= p;
                    u < 0.0
                })
                .unwrap_or(prior.len() - 1) as u16
        })
        .collect();
    Ok(Dataset {
        feature_names: source.feature_names.clone(),
        ..Dataset::new(
            name.into(),
            title.into(),
            Features::Binary(sample_rows(&theta, &labels, &mut rng)),
            labels,
            source.class_names.clone(),
            SplitRule::Fixed { n_train: def.train },
        )
    })
}

/// The class prior and theta of the non-private Bernoulli NB with add-one smoothing on the
/// chosen rows: theta = (N1 + 1) / (N_c + 2), prior N_c / N. Computed with the same operations
/// as `learners::BernoulliNb::from_counts` (the prior through its log, floored at the smallest
/// normal, as the model stores it), so the generated rows are those of the fitted model; kept
/// here so that `data` does not depend on the learners.
fn smoothed_nb(
    x: &BinaryMatrix,
    labels: &[u16],
    rows: &[u32],
    k: usize,
) -> (Vec<f64>, Array2<f64>) {
    let (class, on) = x.class_counts(labels, rows, k);
    let mut theta = on;
    for (c, mut row) in theta.rows_mut().into_iter().enumerate() {
        let denom = class[c] + 2.0;
        row.mapv_inplace(|n1| (n1 + 1.0) / denom);
    }
    let total: f64 = class.iter().sum();
    let prior = if total > 0.0 {
        class
            .iter()
            .map(|&w| (w / total).max(f64::MIN_POSITIVE).ln().exp())
            .collect()
    } else {
        vec![(-(k as f64).ln()).exp(); k]
    };
    (prior, theta)
}

fn sample_rows(theta: &Array2<f64>, labels: &[u16], rng: &mut Rng) -> BinaryMatrix {
    let d = theta.ncols();
    let mut m = BinaryMatrix::new(d);
    let mut ones = Vec::with_capacity(d);
    for &c in labels {
        ones.clear();
        let row = theta.row(c as usize);
        for (j, &p) in row.iter().enumerate() {
            if rng.r#gen::<f64>() < p {
                ones.push(j as u32);
            }
        }
        m.push_row(&ones);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toy_gaussian_has_the_stated_shape_and_separation() {
        let def = ToyGaussianDef {
            title: None,
            dimension: 4,
            train: 3000,
            test: 3000,
            seed: 1,
            first_train: None,
        };
        let ds = toy_gaussian("toy", "toy", &def).unwrap();
        let Features::Dense(x) = &ds.features else {
            panic!("dense")
        };
        let x = x.view();
        assert_eq!(x.dim(), (6000, 4));
        assert_eq!(
            ds.class_sizes(&(0..6000).collect::<Vec<_>>()),
            vec![3000, 3000]
        );
        // Projection on 1/sqrt(D): class means 0 and 2 Phi^-1(0.9); threshold halfway -> ~90%.
        let a = 2.0 * PROBIT_0_9;
        let correct = (0..6000)
            .filter(|&i| {
                let s: f64 = x.row(i).sum() / 2.0;
                (s > a / 2.0) == (ds.labels[i] == 1)
            })
            .count();
        let acc = correct as f64 / 6000.0;
        assert!((acc - 0.9).abs() < 0.015, "{acc}");
    }

    #[test]
    fn nb_sampled_frequencies_match_theta() {
        let def = NbSampledDef {
            title: None,
            dimension: 50,
            theta: [0.8, 0.5],
            jitter: 0.0,
            train: 2000,
            test: 2000,
            seed: 3,
        };
        let ds = nb_sampled("dense", "dense", &def);
        let x = ds.features.as_binary().unwrap();
        let rows: Vec<u32> = (0..4000).collect();
        let (_, on) = x.class_counts(&ds.labels, &rows, 2);
        let f0 = on.row(0).sum() / (2000.0 * 50.0);
        let f1 = on.row(1).sum() / (2000.0 * 50.0);
        assert!(
            (f0 - 0.8).abs() < 0.01 && (f1 - 0.5).abs() < 0.01,
            "{f0} {f1}"
        );
    }
}
