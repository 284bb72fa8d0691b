//! Scalar sources: one column of reals for the release pipelines (`release = ...`,
//! `attack = ...`), not a classification dataset. A scalar dataset has no classes and no labels
//! ([`Dataset::is_scalar`]); learners, selectors and probes refuse it before any trial runs.
//!
//! Synthetic sources are generated once per run from their own seed (`scalar/<name>/<seed>`)
//! and shared by every trial; a trial varies only the mechanism's noise (and, with an `n_train`
//! axis, which rows it reads). Public bounds belong to the release, not to the source.

use super::catalog::{Column, DataDir};
use super::csv_source::{CsvLayout, parse};
use super::libsvm::RawFeatures;
use super::{Dataset, Features, SplitRule, files};
use crate::error::{Error, Result};
use crate::release::attacks::TABLE_I;
use crate::rng::rng_from;
use ndarray::Array2;
use rand::Rng as _;
use rand_distr::{Beta, Distribution, StandardNormal, StudentT};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

source_def! {
    /// n draws of U(lo, hi).
    UniformDef {
        pub n: usize,
        #[serde(default)]
        pub lo: f64,
        #[serde(default = "one")]
        pub hi: f64,
        #[serde(default)]
        pub seed: u64,
    }
}

source_def! {
    /// n draws of Beta(a, b) on [0, 1].
    BetaDef {
        pub n: usize,
        pub a: f64,
        pub b: f64,
        #[serde(default)]
        pub seed: u64,
    }
}

source_def! {
    /// A mixture: with probability 1 - `outliers`, center + spread N(0, 1); otherwise the value
    /// `outlier_value` (the review's "points moved to 1"), or U(0, 1) when it is not given.
    ContaminatedDef {
        /// Fraction of outliers in [0, 1].
        pub outliers: f64,
        /// Where every outlier sits; absent: each is U(0, 1).
        pub outlier_value: Option<f64>,
        /// Centre and standard deviation of the inliers (spread 0: all at the centre).
        pub center: f64,
        pub spread: f64,
        pub n: usize,
        #[serde(default)]
        pub seed: u64,
    }
}

source_def! {
    /// n draws of center + scale t_df (Student's t with `df` degrees of freedom): heavy-tailed
    /// data for the robust releases (df = 2 has no finite variance; df = 1 is Cauchy).
    ///
    /// With `contamination` c (and `outlier`, required with it), each row is instead a gross
    /// outlier at `outlier` with probability c, independently (Huber's contamination model
    /// (1 - c) F + c δ_outlier), and the dataset states `center`, the inliers' location, as its
    /// truth: releases on it then also record their error against it (`abs_error_location`).
    StudentTDef {
        pub n: usize,
        pub df: f64,
        pub center: f64,
        pub scale: f64,
        #[serde(default)]
        pub seed: u64,
        /// Fraction of gross outliers in [0, 1) (absent: none, and no location truth).
        pub contamination: Option<f64>,
        /// Where every gross outlier sits.
        pub outlier: Option<f64>,
    }
}

source_def! {
    /// The review's Table I results column (Tom 0, Diego 1, Jack 1, Henry 0, Alice 1).
    TableIDef {

    }
}

source_def! {
    /// No rows at all: for releases that draw noise only or attack a secret of their own.
    NoDataDef {

    }
}

source_def! {
    /// One numeric column of a CSV file, multiplied by `scale` (e.g. UCI Adult's age / 100).
    CsvColumnDef {
        pub file: PathBuf,
        /// A header name, or a column number counted from 1.
        pub column: Column,
        /// Whether the first line names the columns. Off by default, unlike `csv`'s: the built-in
        /// `adult_age` reads UCI's `adult.data`, which has no header, by this default. A header
        /// read as data fails on its first line with a message naming `header = true`.
        #[serde(default)]
        pub header: bool,
        #[serde(default = "one")]
        pub scale: f64,
        /// Expected SHA-256 (hex, of the decompressed bytes) per file path as written above.
        #[serde(default)]
        pub sha256: BTreeMap<String, String>,
        /// The number of rows, declared public (releases reading n use it; a file of another
        /// length is an error).
        pub public_n: Option<usize>,
    }
}

fn one() -> f64 {
    1.0
}

fn bad(name: &str, reason: String) -> Error {
    Error::Data {
        dataset: name.into(),
        reason,
    }
}

/// A scalar dataset of `values`: every row is read (no train/test split).
pub fn column_dataset(name: &str, title: &str, values: Vec<f64>) -> Dataset {
    let n = values.len();
    Dataset::new(
        name.into(),
        title.into(),
        Features::Dense(
            Array2::from_shape_vec((n, 1), values)
                .expect("n x 1")
                .into(),
        ),
        Vec::new(),
        Vec::new(),
        SplitRule::Fixed { n_train: n },
    )
}

fn check_n(name: &str, n: usize) -> Result<()> {
    if n == 0 {
        return Err(bad(name, "`n` must be at least 1".into()));
    }
    Ok(())
}

fn draw(
    name: &str,
    seed: u64,
    n: usize,
    mut f: impl FnMut(&mut crate::rng::Rng) -> f64,
) -> Vec<f64> {
    let mut rng = rng_from(&["scalar", name, &seed.to_string()]);
    (0..n).map(|_| f(&mut rng)).collect()
}

pub fn uniform(name: &str, title: &str, d: &UniformDef) -> Result<Dataset> {
    check_n(name, d.n)?;
    if !(d.lo.is_finite() && d.hi.is_finite() && d.lo < d.hi) {
        return Err(bad(
            name,
            format!("need finite `lo` < `hi`, got [{}, {}]", d.lo, d.hi),
        ));
    }
    let values = draw(name, d.seed, d.n, |r| r.gen_range(d.lo..d.hi));
    Ok(column_dataset(name, title, values))
}

pub fn beta(name: &str, title: &str, d: &BetaDef) -> Result<Dataset> {
    check_n(name, d.n)?;
    let law = Beta::new(d.a, d.b).map_err(|_| {
        bad(
            name,
            format!("`a` and `b` must be > 0, got {} and {}", d.a, d.b),
        )
    })?;
    let values = draw(name, d.seed, d.n, |r| law.sample(r));
    Ok(column_dataset(name, title, values))
}

pub fn contaminated(name: &str, title: &str, d: &ContaminatedDef) -> Result<Dataset> {
    check_n(name, d.n)?;
    if !(0.0..=1.0).contains(&d.outliers) {
        return Err(bad(
            name,
            format!("`outliers` must be in [0, 1], got {}", d.outliers),
        ));
    }
    if !(d.center.is_finite() && d.spread.is_finite() && d.spread >= 0.0) {
        return Err(bad(
            name,
            "`center` must be finite and `spread` >= 0".into(),
        ));
    }
    let values = draw(name, d.seed, d.n, |r| {
        if r.r#gen::<f64>() < d.outliers {
            d.outlier_value.unwrap_or_else(|| r.r#gen::<f64>())
        } else {
            let z: f64 = StandardNormal.sample(r);
            d.center + d.spread * z
        }
    });
    Ok(column_dataset(name, title, values))
}

pub fn student_t(name: &str, title: &str, d: &StudentTDef) -> Result<Dataset> {
    check_n(name, d.n)?;
    let law = StudentT::new(d.df)
        .ok()
        .filter(|_| d.df > 0.0 && d.center.is_finite() && d.scale.is_finite() && d.scale > 0.0)
        .ok_or_else(|| {
            bad(
                name,
                format!(
                    "need `df` > 0, a finite `center` and `scale` > 0, got df {}, center {}, scale {}",
                    d.df, d.center, d.scale
                ),
            )
        })?;
    let Some((c, outlier)) = contamination(name, d)? else {
        let values = draw(name, d.seed, d.n, |r| d.center + d.scale * law.sample(r));
        return Ok(column_dataset(name, title, values));
    };
    let values = draw(name, d.seed, d.n, |r| {
        if r.r#gen::<f64>() < c {
            outlier
        } else {
            d.center + d.scale * law.sample(r)
        }
    });
    let mut data = column_dataset(name, title, values);
    data.truth = Some(vec![d.center]);
    Ok(data)
}

/// The contamination fraction and outlier value of a Student's t source, both or neither.
fn contamination(name: &str, d: &StudentTDef) -> Result<Option<(f64, f64)>> {
    match (d.contamination, d.outlier) {
        (None, None) => Ok(None),
        (Some(c), Some(o)) if (0.0..1.0).contains(&c) && o.is_finite() => Ok(Some((c, o))),
        (Some(c), Some(o)) => Err(bad(
            name,
            format!("`contamination` must be in [0, 1) and `outlier` finite, got {c} and {o}"),
        )),
        _ => Err(bad(
            name,
            "`contamination` and `outlier` go together".into(),
        )),
    }
}

pub fn table_i(name: &str, title: &str) -> Dataset {
    let values = TABLE_I.iter().map(|&(_, r)| f64::from(r)).collect();
    column_dataset(name, title, values)
}

pub fn no_data(name: &str, title: &str) -> Dataset {
    column_dataset(name, title, Vec::new())
}

/// The position (from 1) of column `name` in the first line of a CSV file, if it is there.
fn header_position(bytes: &[u8], name: &str) -> Option<usize> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(bytes);
    let first = reader.records().next()?.ok()?;
    Some(first.iter().position(|f| f.trim() == name)? + 1)
}

/// Reads the column, checking the file's SHA-256 when the definition pins it.
pub fn csv_column(
    name: &str,
    title: &str,
    d: &CsvColumnDef,
    base: &Path,
    dir: &DataDir,
) -> Result<Dataset> {
    let path = base.join(&d.file);
    let found = files::locate(&path).ok_or_else(|| Error::MissingData {
        dataset: name.into(),
        path: path.clone(),
        dir: dir.0.clone(),
    })?;
    let bytes = files::read(&found).map_err(|e| Error::io(&found, e))?;
    if let Some(expected) = d.sha256.get(&d.file.to_string_lossy().to_string()) {
        let actual = files::sha256_hex(&bytes);
        if !actual.eq_ignore_ascii_case(expected) {
            return Err(Error::Checksum {
                dataset: name.into(),
                path: found,
                expected: expected.clone(),
                actual,
            });
        }
    }
    if !(d.scale.is_finite() && d.scale != 0.0) {
        return Err(bad(
            name,
            format!("`scale` must be finite and non-zero, got {}", d.scale),
        ));
    }
    // A header name by its position, so that the unused label column below is another one.
    let column = match (&d.column, d.header) {
        (Column::Name(n), true) => {
            header_position(&bytes, n).map_or(d.column.clone(), Column::Number)
        }
        (c, _) => c.clone(),
    };
    let cols = [column.clone()];
    // The reader wants a label column distinct from the features; any other column serves
    // (its text is ignored), so a scalar CSV needs at least two columns.
    let other = Column::Number(if column == Column::Number(1) { 2 } else { 1 });
    let layout = CsvLayout {
        label: &other,
        features: Some(&cols),
        header: d.header,
        delimiter: b',',
        delimiter_field: false,
        real: true,
    };
    let parsed = parse(&bytes, &found, &layout)?;
    let RawFeatures::Real { values, .. } = parsed.features else {
        return Err(bad(name, "the column is not numeric".into()));
    };
    let values = values.into_iter().map(|v| v * d.scale).collect();
    Ok(column_dataset(name, title, values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_seeded_columns_without_classes() {
        let d = UniformDef {
            title: None,
            n: 500,
            lo: 0.0,
            hi: 1.0,
            seed: 3,
        };
        let a = uniform("u", "u", &d).unwrap();
        assert!(a.is_scalar() && a.n_rows() == 500 && a.n_classes() == 0);
        let col = a.column().unwrap();
        assert!(col.iter().all(|v| (0.0..1.0).contains(v)));
        assert_eq!(col, uniform("u", "u", &d).unwrap().column().unwrap());
        let b = BetaDef {
            title: None,
            n: 2000,
            a: 2.0,
            b: 5.0,
            seed: 1,
        };
        let m = crate::release::query::mean(beta("b", "b", &b).unwrap().column().unwrap());
        assert!((m - 2.0 / 7.0).abs() < 0.02, "{m}");
        let c = ContaminatedDef {
            title: None,
            n: 1000,
            center: 0.5,
            spread: 0.0,
            outliers: 0.1,
            outlier_value: Some(1.0),
            seed: 1,
        };
        let ones = contaminated("c", "c", &c)
            .unwrap()
            .column()
            .unwrap()
            .iter()
            .filter(|&&v| v == 1.0)
            .count();
        assert!((60..140).contains(&ones), "{ones}");
        assert_eq!(
            table_i("t", "t").column().unwrap(),
            &[0.0, 1.0, 1.0, 0.0, 1.0]
        );
        assert_eq!(no_data("n", "n").n_rows(), 0);
        let e = uniform("u", "u", &UniformDef { n: 0, ..d })
            .unwrap_err()
            .to_string();
        assert!(e.contains("`u`") && e.contains("`n`"), "{e}");
    }
}
