//! Scaling rows into the unit ball (SPEC 5: the LR privacy proofs need ||x_n||_2 <= 1).
//!
//! Privacy of a scaling step: a transformation applied to each example using only that example
//! and public constants is part of the mechanism's input map, so adding/removing one example
//! still changes exactly one row: the DP guarantee is unaffected ("per-example", private).
//! A transformation whose constants are computed from the data (min/max of a column, the
//! largest row norm, which columns are constant) lets one example change every row: such steps
//! are NOT private and must be recorded in the ledger with `Ledger::non_private`.

use super::design::{Design, Encoding};
use crate::data::{Dataset, Features};
use crate::error::Result;
use crate::privacy::Ledger;
use ndarray::{Array2, ArrayView2};

/// How rows are scaled into the unit ball.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RowScaling {
    /// Leave as is.
    None,
    /// x / ||x|| (zero rows stay zero). Per-example: private.
    OwnNorm,
    /// x / max(1, ||x||). Per-example: private.
    ClipToUnit,
    /// x / sqrt(max(k, ||T(x)||^2)) with a public bound k on the squared norm, e.g. on the number
    /// of ones of a binary row (a row above the bound is divided by its own norm). Private.
    PublicBound(f64),
    /// x / max_n ||x_n|| over the rows: data-derived, NOT private.
    MaxNorm,
}

/// What a preprocessing step did and whether it keeps the guarantee.
#[derive(Debug, Clone, PartialEq)]
pub struct Preprocessing {
    pub description: String,
    pub private: bool,
}

impl Preprocessing {
    /// Records a non-private step in the ledger (`name` e.g. "scaling"); private steps spend
    /// nothing and are not recorded.
    pub fn record(&self, name: &str, ledger: &mut Ledger) {
        if !self.private {
            ledger.non_private(
                name,
                &self.description,
                "scaling constants derived from the data",
            );
        }
    }
}

/// Sets the row scales of `design` by `rule`.
pub fn scale_rows(design: &mut Design, rule: RowScaling) -> Preprocessing {
    let n = design.n_rows();
    let raw: Vec<f64> = design.raw_sq_norms().into_iter().map(f64::sqrt).collect();
    let (scales, description, private): (Vec<f64>, String, bool) = match rule {
        RowScaling::None => (vec![1.0; n], "no row scaling".into(), true),
        RowScaling::OwnNorm => (
            raw.iter()
                .map(|&r| if r > 0.0 { 1.0 / r } else { 1.0 })
                .collect(),
            "each row divided by its own L2 norm (per-example)".into(),
            true,
        ),
        RowScaling::ClipToUnit => (
            raw.iter().map(|&r| 1.0 / r.max(1.0)).collect(),
            "each row divided by max(1, its L2 norm) (per-example)".into(),
            true,
        ),
        RowScaling::PublicBound(k) => (
            raw.iter()
                .map(|&r| 1.0 / (r * r).max(k).max(f64::MIN_POSITIVE).sqrt())
                .collect(),
            format!("each row divided by sqrt(max({k}, ||x||^2)) (public bound, per-example)"),
            true,
        ),
        RowScaling::MaxNorm => {
            let m = raw.iter().fold(0.0f64, |a, &b| a.max(b));
            let s = if m > 0.0 { 1.0 / m } else { 1.0 };
            (
                vec![s; n],
                format!("all rows divided by the largest row norm {m} (data-derived)"),
                false,
            )
        }
    };
    design.set_scales(scales);
    Preprocessing {
        description,
        private,
    }
}

/// The thesis's preprocessing on binary data: min-max each used column to [-1, 1] (a 0/1
/// column becomes 2b - 1; columns constant on `rows` are dropped, as min-max maps them to 0),
/// then each row to norm <= 1 (every row then has norm sqrt(D'), so this is x / sqrt(D')).
/// Which columns are constant is read from the data: NOT private. With `drop_constant = false`
/// nothing is data-derived and the step is private.
pub fn thesis_binary<'a>(
    data: &'a Dataset,
    rows: &[u32],
    cols: Option<&[usize]>,
    drop_constant: bool,
) -> Result<(Design<'a>, Preprocessing)> {
    let all: Vec<usize> = match cols {
        Some(c) => c.to_vec(),
        None => (0..data.n_features()).collect(),
    };
    let used: Vec<usize> = match (&data.features, drop_constant) {
        (Features::Binary(m), true) => {
            let mut ones = vec![0usize; data.n_features()];
            for &r in rows {
                for &j in m.row(r as usize) {
                    ones[j as usize] += 1;
                }
            }
            all.into_iter()
                .filter(|&j| ones[j] > 0 && ones[j] < rows.len())
                .collect()
        }
        _ => all,
    };
    let mut design = Design::new(data, rows, Some(&used), Encoding::PlusMinus)?;
    let _ = scale_rows(&mut design, RowScaling::ClipToUnit);
    let pre = if drop_constant {
        Preprocessing {
            description:
                "min-max to [-1, 1] with data-derived constant columns dropped, rows to norm <= 1"
                    .into(),
            private: false,
        }
    } else {
        Preprocessing {
            description: "0/1 -> -1/+1 (public bounds), rows divided by sqrt(D)".into(),
            private: true,
        }
    };
    Ok((design, pre))
}

/// Per-column min and max of the chosen rows of a dense matrix (data-derived: NOT private).
pub fn minmax_bounds(x: ArrayView2<f64>, rows: &[u32]) -> (Vec<f64>, Vec<f64>) {
    let d = x.ncols();
    let mut lo = vec![f64::INFINITY; d];
    let mut hi = vec![f64::NEG_INFINITY; d];
    for &r in rows {
        for j in 0..d {
            let v = x[[r as usize, j]];
            lo[j] = lo[j].min(v);
            hi[j] = hi[j].max(v);
        }
    }
    (lo, hi)
}

/// Maps every row of `x` to [-1, 1]^D with the given bounds (clipping values outside them;
/// constant columns map to 0), then each row to norm <= 1 (x / max(1, ||x||)). Returns a new
/// matrix of all rows, so test rows are transformed with the training bounds.
pub fn minmax_transform(x: ArrayView2<f64>, lo: &[f64], hi: &[f64]) -> Array2<f64> {
    let mut out = x.to_owned();
    for mut row in out.rows_mut() {
        for (j, v) in row.iter_mut().enumerate() {
            let w = hi[j] - lo[j];
            *v = if w > 0.0 {
                (2.0 * (*v - lo[j]) / w - 1.0).clamp(-1.0, 1.0)
            } else {
                0.0
            };
        }
        let n = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        if n > 1.0 {
            row.iter_mut().for_each(|v| *v /= n);
        }
    }
    out
}
