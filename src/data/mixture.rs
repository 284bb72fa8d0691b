//! A synthetic Gaussian mixture for k-means and PCA at any scale (issue 49): k centres drawn
//! uniformly in `[-1/2, 1/2]^d`, each row a centre plus N(0, σ² I), clipped to the public
//! bounds `[-1, 1]^d`. Row i belongs to cluster i mod k (its class), so both splits hold every
//! cluster in equal shares. Generated once from its own seed like every synthetic source.

use super::dense::DenseData;
use super::{Dataset, Features, PublicBounds, SplitRule};
use crate::error::{Error, Result};
use crate::rng::rng_from;
use ndarray::Array2;
use rand::Rng as _;
use rand_distr::{Distribution, StandardNormal};

source_def! {
    /// `source = "gaussian_mixture"`.
    GaussianMixtureDef {
        pub dimension: usize,
        /// k, the number of mixture components (and classes).
        pub clusters: usize,
        pub train: usize,
        pub test: usize,
        /// σ, each component's standard deviation per coordinate [default 0.1].
        pub spread: Option<f64>,
        #[serde(default)]
        pub seed: u64,
    }
}

/// Generates the mixture (see the module doc); refuses k < 2, d = 0 or a bad σ.
pub fn gaussian_mixture(name: &str, title: &str, def: &GaussianMixtureDef) -> Result<Dataset> {
    let (d, k) = (def.dimension, def.clusters);
    let spread = def.spread.unwrap_or(0.1);
    let fail = |reason: String| Error::Data {
        dataset: name.into(),
        reason,
    };
    if !(2..=u16::MAX as usize).contains(&k) {
        return Err(fail(format!("`clusters` must be in 2..=65535, got {k}")));
    }
    if d == 0 {
        return Err(fail("`dimension` must be at least 1, got 0".into()));
    }
    if def.train < k {
        return Err(fail(format!(
            "`train` must be at least `clusters` ({k}), got {}",
            def.train
        )));
    }
    if def.test == 0 {
        return Err(fail("`test` must be at least 1, got 0".into()));
    }
    if !(spread.is_finite() && spread > 0.0) {
        return Err(fail(format!(
            "`spread` must be finite and > 0, got {spread}"
        )));
    }
    let mut rng = rng_from(&["data", name, "gaussian_mixture", &def.seed.to_string()]);
    let centres = Array2::from_shape_simple_fn((k, d), || rng.gen_range(-0.5..=0.5));
    let n = def.train + def.test;
    let labels: Vec<u16> = (0..n).map(|i| (i % k) as u16).collect();
    let mut clipped = vec![0u32; n];
    let x = DenseData::generate(n, d, |i, row| {
        for (j, v) in row.iter_mut().enumerate() {
            let z: f64 = StandardNormal.sample(&mut rng);
            let raw = centres[[i % k, j]] + spread * z;
            clipped[i] += u32::from(raw.abs() > 1.0);
            *v = raw.clamp(-1.0, 1.0);
        }
    })
    .map_err(|e| fail(format!("cannot hold its {n} x {d} rows: {e}")))?;
    Ok(Dataset {
        bounds: Some(PublicBounds {
            lo: vec![-1.0; d],
            hi: vec![1.0; d],
            clipped,
        }),
        ..Dataset::new(
            name.into(),
            title.into(),
            Features::Dense(x),
            labels,
            (0..k).map(|c| format!("component {c}")).collect(),
            SplitRule::Fixed { n_train: def.train },
        )
    })
}
