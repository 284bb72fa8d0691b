//! Data: loading (LIBSVM files, the catalog, synthetic generators), shared storage and splits.
//!
//! A [`Dataset`] is loaded once per run and shared (`Arc`) by every trial; a trial only holds
//! row indices ([`Split`]), never a copy of the data.

/// Declares a source's definition (a `[dataset.NAME]` table with its `source`): a serde struct
/// that refuses unknown fields, so a misspelt key is an error naming it rather than a silent
/// default, with the optional display `title` every source takes. `file` definitions (LIBSVM,
/// CSV) also take the split, subsampling, checksum, download and public-size fields of a file.
macro_rules! source_def {
    ($(#[$doc:meta])* $name:ident { $($own:tt)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// Display title in reports (default: the dataset's name).
            pub title: Option<String>,
            $($own)*
        }
    };
    (file $(#[$doc:meta])* $name:ident { $($own:tt)* }) => {
        source_def! {
            $(#[$doc])*
            $name {
                /// Training file, or the only file when the split is random.
                pub train: std::path::PathBuf,
                /// Published test file (a fixed split); absent means a seeded random split.
                pub test: Option<std::path::PathBuf>,
                /// Training fraction of the random split (required without `test`).
                pub train_fraction: Option<f64>,
                $($own)*
                /// Keep only rows whose label is listed (otherwise an unlisted label is an error).
                #[serde(default)]
                pub subset: bool,
                /// Seed of the class subsampling (fixed per dataset, so every run sees the same
                /// rows).
                #[serde(default)]
                pub subsample_seed: u64,
                /// Expected SHA-256 (hex) per file path as written above.
                #[serde(default)]
                pub sha256: std::collections::BTreeMap<String, String>,
                /// Public bounds of real-valued features; without them every value must be 0 or 1.
                pub bounds: Option<$crate::data::catalog::BoundsDef>,
                /// Download URL per file path (`epsilab data fetch NAME`; checked against
                /// `sha256`).
                #[serde(default)]
                pub urls: std::collections::BTreeMap<String, String>,
                /// The training set's size N, declared public (SPEC 1: N is public): every
                /// size-dependent mechanism parameter reads it, and a training split of another
                /// size is an error.
                pub public_n: Option<usize>,
            }
        }
    };
}

pub mod catalog;
pub mod csv_source;
pub mod dense;
pub mod fetch;
pub mod files;
pub mod libsvm;
pub mod mixture;
pub mod scalar;
pub mod synthetic;

use crate::rng::Rng;
use ndarray::Array2;
use rand::seq::SliceRandom;

pub use catalog::{Catalog, DataDir, DatasetDef};

/// The most values (rows × features) a generated source may have: 2^34, 128 GiB as dense
/// `f64`. Larger sizes are refused when the spec is read instead of aborting every run with an
/// allocation failure.
pub const MAX_VALUES: u64 = 1 << 34;

/// Why a generated source of `rows` rows and `cols` features cannot be held, if it cannot:
/// row indices are `u32` ([`Split`]), and [`MAX_VALUES`] bounds the whole matrix.
pub fn size_problem(rows: u64, cols: u64) -> Option<String> {
    if rows > u64::from(u32::MAX) {
        return Some(format!(
            "{rows} rows: at most {} rows (train + test) are supported",
            u32::MAX
        ));
    }
    let values = rows.saturating_mul(cols);
    (values > MAX_VALUES).then(|| {
        format!(
            "{rows} rows x {cols} features = {values} values, above the limit of {MAX_VALUES} \
             (2^34, 128 GiB as dense floats)"
        )
    })
}

/// Binary features stored sparsely: the indices of the ones of each row (CSR without values).
#[derive(Debug, Clone, PartialEq)]
pub struct BinaryMatrix {
    n_cols: usize,
    row_ptr: Vec<usize>,
    cols: Vec<u32>,
}

impl BinaryMatrix {
    /// N_c and N1[c, d] over the chosen rows (the sufficient statistics of Naive Bayes; see
    /// `counts::ClassCounts`).
    pub fn class_counts(
        &self,
        labels: &[u16],
        rows: &[u32],
        n_classes: usize,
    ) -> (Vec<f64>, Array2<f64>) {
        let d = self.n_cols;
        let mut class = vec![0.0; n_classes];
        let mut on = vec![0u32; n_classes * d];
        for &i in rows {
            let c = labels[i as usize] as usize;
            class[c] += 1.0;
            let row = &mut on[c * d..(c + 1) * d];
            for &j in self.row(i as usize) {
                row[j as usize] += 1;
            }
        }
        let on = Array2::from_shape_vec((n_classes, d), on.into_iter().map(f64::from).collect())
            .expect("shape matches");
        (class, on)
    }

    pub fn new(n_cols: usize) -> Self {
        BinaryMatrix {
            n_cols,
            row_ptr: vec![0],
            cols: Vec::new(),
        }
    }

    /// Appends a row given its sorted, in-range on-feature indices.
    pub fn push_row(&mut self, ones: &[u32]) {
        debug_assert!(ones.windows(2).all(|w| w[0] < w[1]));
        debug_assert!(ones.iter().all(|&j| (j as usize) < self.n_cols));
        self.cols.extend_from_slice(ones);
        self.row_ptr.push(self.cols.len());
    }

    pub fn n_rows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// Rows `r[0..4]` side by side, for passes that keep four independent sums in flight:
    /// their on-features and the length of their common prefix (see [`zip_four`]).
    #[inline]
    pub fn four_rows(&self, r: &[u32]) -> ([&[u32]; 4], usize) {
        // Written out: `array::from_fn` stayed an out-of-line call per quad (4% of Table 4.2).
        let rows = [
            self.row(r[0] as usize),
            self.row(r[1] as usize),
            self.row(r[2] as usize),
            self.row(r[3] as usize),
        ];
        let len = rows.iter().map(|x| x.len()).min().unwrap_or(0);
        (rows, len)
    }

    /// The on-features of row `i`, ascending.
    #[inline]
    pub fn row(&self, i: usize) -> &[u32] {
        &self.cols[self.row_ptr[i]..self.row_ptr[i + 1]]
    }

    /// A dense 0/1 copy of the chosen rows (for linfa interop and learners that need one).
    pub fn to_dense(&self, rows: &[u32]) -> Array2<f64> {
        let mut x = Array2::zeros((rows.len(), self.n_cols));
        for (r, &i) in rows.iter().enumerate() {
            for &j in self.row(i as usize) {
                x[[r, j as usize]] = 1.0;
            }
        }
        x
    }
}

/// The feature matrix: binary (all thesis datasets) or real-valued (the toy Gaussian).
#[derive(Debug, Clone)]
pub enum Features {
    Binary(BinaryMatrix),
    Dense(dense::DenseData),
}

impl Features {
    pub fn n_rows(&self) -> usize {
        match self {
            Features::Binary(m) => m.n_rows(),
            Features::Dense(x) => x.nrows(),
        }
    }

    pub fn n_cols(&self) -> usize {
        match self {
            Features::Binary(m) => m.n_cols(),
            Features::Dense(x) => x.ncols(),
        }
    }

    pub fn as_binary(&self) -> Option<&BinaryMatrix> {
        match self {
            Features::Binary(m) => Some(m),
            Features::Dense(_) => None,
        }
    }
}

/// How train and test rows are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SplitRule {
    /// The first `n_train` rows are the training set, the rest the test set (published splits).
    Fixed { n_train: usize },
    /// A fresh seeded random split per trial with this training fraction.
    Random { train_fraction: f64 },
    /// A fixed split whose training set grew after its test set was drawn: rows
    /// `0..first_train` train, the next `test` rows test, every later row trains. The `n_train`
    /// order shuffles the two training blocks separately (see [`Dataset::nested_order`]).
    Grown { first_train: usize, test: usize },
}

/// A loaded dataset, shared read-only by all trials.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub name: String,
    pub title: String,
    pub features: Features,
    /// Class index of each row, in `0..class_names.len()`.
    pub labels: Vec<u16>,
    pub class_names: Vec<String>,
    pub split: SplitRule,
    /// Name of each feature (a vocabulary), when the catalog has one.
    pub feature_names: Option<Vec<String>>,
    /// Declared public bounds of real-valued features (values already clipped to them).
    pub bounds: Option<PublicBounds>,
    /// The true weights w* of a synthetic source drawn from a linear model (the population
    /// minimiser), for the sampling error ||w_np(n) - w*||.
    pub truth: Option<Vec<f64>>,
    /// The real-valued regression target of each row (clipped to its public bounds), when the
    /// catalog declares one (`target_bounds`); the rows then all belong to one class.
    pub targets: Option<Targets>,
}

/// A real-valued regression target: each row's value, clipped at load to the public
/// `[lo, hi]` the catalog declares (`target_bounds`).
#[derive(Debug, Clone, PartialEq)]
pub struct Targets {
    pub values: Vec<f64>,
    pub lo: f64,
    pub hi: f64,
}

/// Public per-feature bounds of a real-valued dataset and how many values each row had
/// outside them (clipped at load). Private: a per-example map with public constants.
#[derive(Debug, Clone, PartialEq)]
pub struct PublicBounds {
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
    /// Values clipped in each row.
    pub clipped: Vec<u32>,
}

impl PublicBounds {
    /// Number of values clipped among `rows`.
    pub fn clipped_in(&self, rows: &[u32]) -> u64 {
        rows.iter()
            .map(|&r| u64::from(self.clipped[r as usize]))
            .sum()
    }
}

/// Row indices of one trial's training and test sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub train: Vec<u32>,
    pub test: Vec<u32>,
}

impl Dataset {
    /// A dataset with no feature names, public bounds, true weights or regression targets
    /// (set them by struct update: `Dataset { bounds, ..Dataset::new(..) }`).
    pub fn new(
        name: String,
        title: String,
        features: Features,
        labels: Vec<u16>,
        class_names: Vec<String>,
        split: SplitRule,
    ) -> Self {
        Dataset {
            name,
            title,
            features,
            labels,
            class_names,
            split,
            feature_names: None,
            bounds: None,
            truth: None,
            targets: None,
        }
    }

    pub fn n_rows(&self) -> usize {
        self.features.n_rows()
    }

    /// Whether it is a scalar source (one column, no classes): only release pipelines read it.
    pub fn is_scalar(&self) -> bool {
        self.class_names.is_empty()
    }

    /// The column of a scalar source.
    pub fn column(&self) -> Option<&[f64]> {
        match &self.features {
            Features::Dense(x) if self.is_scalar() => x.as_slice(),
            _ => None,
        }
    }

    pub fn n_features(&self) -> usize {
        self.features.n_cols()
    }

    pub fn n_classes(&self) -> usize {
        self.class_names.len()
    }

    /// The number of training rows every trial's split has (the same in each trial).
    pub fn train_size(&self) -> usize {
        let n = self.n_rows();
        match self.split {
            SplitRule::Fixed { n_train } => n_train,
            SplitRule::Random { train_fraction } => (train_fraction * n as f64).round() as usize,
            SplitRule::Grown { test, .. } => n - test,
        }
    }

    /// The trial's split; `rng` is used only for random splits.
    pub fn split(&self, rng: &mut Rng) -> Split {
        let n = self.n_rows();
        match self.split {
            SplitRule::Fixed { n_train } => Split {
                train: (0..n_train as u32).collect(),
                test: (n_train as u32..n as u32).collect(),
            },
            SplitRule::Random { train_fraction } => {
                let mut idx: Vec<u32> = (0..n as u32).collect();
                idx.shuffle(rng);
                let n_train = (train_fraction * n as f64).round() as usize;
                let test = idx.split_off(n_train);
                Split { train: idx, test }
            }
            SplitRule::Grown { first_train, test } => {
                let end = (first_train + test) as u32;
                Split {
                    train: (0..first_train as u32).chain(end..n as u32).collect(),
                    test: (first_train as u32..end).collect(),
                }
            }
        }
    }

    /// The training rows in the seeded order whose prefixes are the nested `n_train` subsets.
    /// A grown split shuffles its first block with `first` and the later rows with `later`
    /// and puts them after it, so every prefix up to the first block's size is the one the
    /// smaller spec drew; any other split shuffles all its training rows with `first`.
    pub fn nested_order(&self, train: &[u32], first: &mut Rng, later: &mut Rng) -> Vec<u32> {
        let mut rows = train.to_vec();
        match self.split {
            SplitRule::Grown { first_train, .. } => {
                let (head, tail) = rows.split_at_mut(first_train.min(train.len()));
                head.shuffle(first);
                tail.shuffle(later);
            }
            _ => rows.shuffle(first),
        }
        rows
    }

    /// Size of each class among `rows`.
    pub fn class_sizes(&self, rows: &[u32]) -> Vec<usize> {
        let mut n = vec![0; self.n_classes()];
        for &i in rows {
            n[self.labels[i as usize] as usize] += 1;
        }
        n
    }
}

/// The four rows' entries at each position p below `len`, side by side (rows from
/// [`BinaryMatrix::four_rows`]), so a pass runs four independent chains at once.
#[inline]
pub fn zip_four<'r>(r: [&'r [u32]; 4], len: usize) -> impl Iterator<Item = [u32; 4]> + 'r {
    r[0][..len]
        .iter()
        .zip(&r[1][..len])
        .zip(&r[2][..len])
        .zip(&r[3][..len])
        .map(|(((&a, &b), &c), &d)| [a, b, c, d])
}
