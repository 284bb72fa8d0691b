//! Design matrices for logistic regression without dense copies of the shared data.
//!
//! Row i of a [`Design`] is x_i = s_i * T(source row r_i) restricted to the used columns, where
//! `T` is the [`Encoding`] (binary 0/1 indicators, binary +-1, or dense values) and s_i a
//! per-row scale factor. The solvers only need margins X theta, weighted column sums X^T c and
//! weighted Gram matrices X^T diag(w) X, which each encoding computes from the sparse on-indices.

use super::csr;
use super::gram;
use super::mapped::{self, dot4};
use super::row_caches::SharedWork;
use crate::data::{BinaryMatrix, Dataset, Features};
use crate::error::{Error, Result};
use crate::memo::{Footprint, Key};
use ndarray::{Array2, ArrayView2};
use std::sync::{Arc, OnceLock, Weak};

const UNUSED: u32 = u32::MAX;

/// How a binary source row becomes a feature vector (before the row scale).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// x_j = b_j in {0, 1}.
    #[default]
    Indicator,
    /// x_j = 2 b_j - 1 in {-1, +1} (min-max of a 0/1 column to [-1, 1]).
    PlusMinus,
}

#[derive(Debug, Clone)]
enum Source<'a> {
    Binary(&'a BinaryMatrix, Encoding),
    /// Dense values, read through a per-column affine map when there is one.
    Dense(ArrayView2<'a, f64>, Option<&'a ColumnMap>),
}

/// The two passes over a design's rows that fits make, computed together for several vectors
/// ([`Design::margins_each`], [`Design::weighted_sum_each`]) and in parts
/// ([`Design::each_part`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// z = X theta (the input is theta).
    Margins,
    /// out = X^T c (the input is c).
    WeightedSum,
}

/// A per-column affine map applied as a dense source's rows are read: value j of a row is
/// `a[j] * x[c_j] + b[j]`, rounded exactly as an owned scaled copy of the rows would hold it.
/// Appendix B's designs read the shared 2^20-row matrix through it instead of a scaled copy
/// of 8-12 GB beside it, so a run stays within twice its datasets.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMap {
    pub a: Vec<f64>,
    pub b: Vec<f64>,
}

/// [`Design::max_row_norm`] of keyed designs (a key names the exact design), held in
/// [`SharedWork::norms`].
pub(super) struct MaxRowNorm(f64);

impl Footprint for MaxRowNorm {
    fn bytes(&self) -> usize {
        8
    }
}

thread_local! {
    /// One mapped row at a time (no allocation per row or pass once sized). Not cross-trial
    /// state: every use overwrites the values it reads before reading them
    /// ([`Design::with_mapped`]), so only its capacity (one row) outlives a call, and no
    /// result depends on what an earlier cell left in it.
    static MAPPED_ROW: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The rows and columns a logistic-regression fit sees (see the module doc).
#[derive(Debug, Clone)]
pub struct Design<'a> {
    source: Source<'a>,
    rows: Vec<u32>,
    scale: Vec<f64>,
    /// Used source columns, in parameter order.
    cols: Vec<usize>,
    /// Source column -> parameter index, or `UNUSED`.
    col_map: Vec<u32>,
    /// Whether `cols` is 0..n_cols (then no column lookup is needed).
    identity: bool,
    /// Memo key of this exact design (rows, columns, encoding, scales and the rows' content),
    /// when it came from the memo; derived designs (subsets, other rows) have none.
    key: Option<Key>,
    /// Where this design's noise-free results are memoised under `key`: its dataset's
    /// workspace ([`SharedWork`]), weakly, so a design never keeps it past the runner's loop
    /// over the dataset. Empty (computed in place) for a design made outside a run.
    work: Weak<SharedWork>,
    /// [`Self::grouped_cached`]'s result and the labels it is for: a cross-validation fold
    /// is solved at every lambda of the grid, and groups once.
    grouping: OnceLock<(Vec<f64>, Option<Arc<Grouped<'a>>>)>,
    /// Where the passes split across two threads ([`Self::halves`]); depends on the rows only.
    halves: OnceLock<Halves>,
    /// X^T c's frequent columns ([`Self::hot_columns`]) while fits run on this design.
    hot: HotCache,
    /// How its passes may split across the pool (inherited by derived designs).
    splitting: Splitting,
}

/// A design's [`csr::HotColumns`]: built by the first X^T c that needs it and kept until
/// [`Design::release_fit_scratch`], so that a cross-validation, which keeps five fold designs,
/// holds the split of one at a time (a fold's path over the lambda grid reuses it).
#[derive(Debug, Default)]
struct HotCache(std::sync::Mutex<Option<Arc<csr::HotColumns>>>);

impl HotCache {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<csr::HotColumns>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Clone for HotCache {
    fn clone(&self) -> Self {
        HotCache(std::sync::Mutex::new(self.slot().clone()))
    }
}

/// A binary design with at least this many rows sums X^T c's frequent columns column by column
/// ([`csr::HotColumns`]; the split costs about two passes to build).
pub const HOT_MIN_ROWS: usize = 1024;

/// A design with at least this many rows runs its passes on two threads when the pool has
/// them (a join costs microseconds; a pass over 4096 rows tens of them).
pub const PAR_MIN_ROWS: usize = 4096;

/// How one pass splits across two threads so that every sum adds the same terms in the same
/// order as on one thread: margins by rows, X^T c by output column, the Gram matrix by row of
/// its upper triangle. The column splits balance the design's non-zeros and pairs.
#[derive(Debug, Clone)]
pub struct Halves {
    /// First row of the second half (a multiple of four, as the four-row passes take them).
    pub row: usize,
    /// First source column of X^T c's second half.
    pub col: usize,
    /// First row of the Gram matrix's second half.
    pub gram: usize,
    /// Per row: how many of its on-indices lie below `col`, and below `gram`.
    cuts: Vec<[u32; 2]>,
}

/// How a design's passes may split their work across the current rayon pool, chosen by
/// whoever runs the fit and handed down explicitly (a field of the [`Design`], inherited by
/// its subsets and grouped rows; [`Design::with_splitting`]): never thread or process state.
/// It changes who computes a pass, never its bits (split and one-thread passes give the same
/// results, see this module's tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Splitting {
    /// Binary designs' margins, X^T c and Gram matrix split across two threads
    /// ([`Design::halves`]): a single fit from outside any pool ([`split_passes`]). The
    /// runner's fits keep one thread each (T4.2 at `-j 2`: 14% more CPU time when split).
    pub passes: bool,
    /// Dense X^T X split across the pool: each block of rows goes into the triangle's first
    /// rows and the rest side by side ([`gram::add_block_split`], the same bits), so a thread
    /// of the pool with nothing else to do takes half. For the runner's whole-training-set
    /// phase only, where the pool runs nothing but that phase's few tasks: in the trials, a
    /// thread waiting on a join could take up a second multi-gigabyte trial.
    pub gram: bool,
    /// New scaled dense rows are read through their column map, never copied: for a lockstep
    /// group of nested subsets ([`super::lockstep`]), whose rounds read the longest subset's
    /// source rows once for all, the shorter ones' values mapped in cache, where a copy would
    /// be written and then read again ([`super::dense::DenseRows::through_map`]).
    pub through_map: bool,
}

/// The first triangle row of a split Gram matrix's second part: the last tile edge (a multiple
/// of 16 rows) at which rows 0..cut hold at most half the triangle's entries, about 0.29 d.
fn gram_cut(d: usize) -> usize {
    let half = d * (d + 1) / 4;
    let mut cut = 0;
    while cut + 16 < d && (cut + 16) * (2 * d - cut - 15) / 2 <= half {
        cut += 16;
    }
    cut
}

/// Runs `f` on a thread of the current rayon pool (the global one from outside any pool), on
/// `design` with its passes split across the pool's threads ([`Splitting::passes`]): for a
/// single fit, which has the pool to itself. A join from outside a pool would hand both
/// halves over and sleep, hence the pool thread.
pub fn split_passes<'a, R: Send>(
    design: &Design<'a>,
    f: impl FnOnce(&Design<'a>) -> R + Send,
) -> R {
    let split = design.clone().with_splitting(Splitting {
        passes: true,
        ..design.splitting
    });
    rayon::scope(|_| f(&split))
}

/// Pools of one and two threads, for tests that compare a split pass with the one-thread pass.
#[cfg(test)]
pub(super) fn one_and_two_thread_pools() -> (rayon::ThreadPool, rayon::ThreadPool) {
    let pool = |t| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .expect("thread pool")
    };
    (pool(1), pool(2))
}

/// One column map of `d` constants per length of `lengths`, `a` and `b` drawn by `a_of` and
/// `b_of`: the test fixture of appendix B's subsets of one trial ([`nested_designs`]).
#[cfg(test)]
pub(super) fn random_maps(
    lengths: &[usize],
    d: usize,
    rng: &mut crate::rng::Rng,
    a_of: fn(&mut crate::rng::Rng) -> f64,
    b_of: fn(&mut crate::rng::Rng) -> f64,
) -> Vec<ColumnMap> {
    let mut map = || ColumnMap {
        a: (0..d).map(|_| a_of(rng)).collect(),
        b: (0..d).map(|_| b_of(rng)).collect(),
    };
    lengths.iter().map(|_| map()).collect()
}

/// For each length n of `lengths`, the dense design on the first n rows of `order` (every
/// column of `x`) through its own map of `maps`, row scales drawn by `scale`: the test fixture
/// of designs that nest ([`Design::nests_in`]).
#[cfg(test)]
pub(super) fn nested_designs<'a>(
    x: ArrayView2<'a, f64>,
    order: &[u32],
    lengths: &[usize],
    maps: &'a [ColumnMap],
    rng: &mut crate::rng::Rng,
    scale: fn(&mut crate::rng::Rng) -> f64,
) -> Vec<Design<'a>> {
    let cols: Vec<usize> = (0..x.ncols()).collect();
    let design = |(&n, map)| {
        let mut des = Design::dense_mapped(x, &order[..n], &cols, map).expect("one map per column");
        des.set_scales((0..n).map(|_| scale(rng)).collect());
        des
    };
    lengths.iter().zip(maps).map(design).collect()
}

/// The smallest s with sum(v[..s]) >= sum(v) / 2.
fn balance(v: &[u64]) -> usize {
    let total: u64 = v.iter().sum();
    let mut acc = 0;
    for (s, &x) in v.iter().enumerate() {
        if 2 * acc >= total {
            return s;
        }
        acc += x;
    }
    v.len()
}

/// A binary design whose identical examples would leave at most this fraction of its rows is
/// solved on the grouped rows (every pass shrinks by the same factor; grouping costs one hash
/// pass and a sort, about one solver iteration).
pub const GROUP_MAX_FRACTION: f64 = 0.9;

/// A design with identical examples merged ([`Design::grouped`]): row r stands for `count[r]`
/// examples with label `y[r]`.
#[derive(Debug, Clone)]
pub struct Grouped<'a> {
    pub design: Design<'a>,
    pub y: Vec<f64>,
    pub count: Vec<f64>,
}

/// The owned part of a binary design (everything but the borrowed matrix), as the memo holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct DesignParts {
    rows: Vec<u32>,
    scale: Vec<f64>,
    cols: Vec<usize>,
    encoding: Encoding,
}

impl Footprint for DesignParts {
    fn bytes(&self) -> usize {
        self.rows.len() * 4 + self.scale.len() * 8 + self.cols.len() * 8
    }
}

impl<'a> Design<'a> {
    /// Rows `rows` of a dataset's features; `cols = None` uses every column. Binary features
    /// use `encoding`; dense features ignore it. Row scales start at 1.
    pub fn new(
        data: &'a Dataset,
        rows: &[u32],
        cols: Option<&[usize]>,
        encoding: Encoding,
    ) -> Result<Self> {
        let source = match &data.features {
            Features::Binary(m) => Source::Binary(m, encoding),
            Features::Dense(x) => Source::Dense(x.view(), None),
        };
        Self::build(source, data.n_features(), rows, cols)
    }

    /// Every row of a dense matrix (used by the linfa `Fit` impls).
    pub fn dense(x: ArrayView2<'a, f64>) -> Self {
        let (n, d) = x.dim();
        let rows: Vec<u32> = (0..n as u32).collect();
        Self::build(Source::Dense(x, None), d, &rows, None).expect("all columns are in range")
    }

    /// Rows `rows` of `x` at columns `cols`, read through `map` (one pair of constants per
    /// column of `cols`): the design of a scaled copy without the copy.
    pub fn dense_mapped(
        x: ArrayView2<'a, f64>,
        rows: &[u32],
        cols: &[usize],
        map: &'a ColumnMap,
    ) -> Result<Self> {
        if map.a.len() != cols.len() || map.b.len() != cols.len() {
            return Err(Error::param(
                "features",
                format!(
                    "{} columns but {} and {} map constants",
                    cols.len(),
                    map.a.len(),
                    map.b.len()
                ),
            ));
        }
        Self::build(Source::Dense(x, Some(map)), x.ncols(), rows, Some(cols))
    }

    /// Rows of a binary matrix.
    pub fn binary(
        m: &'a BinaryMatrix,
        rows: &[u32],
        cols: Option<&[usize]>,
        encoding: Encoding,
    ) -> Result<Self> {
        Self::build(Source::Binary(m, encoding), m.n_cols(), rows, cols)
    }

    fn build(
        source: Source<'a>,
        n_cols: usize,
        rows: &[u32],
        cols: Option<&[usize]>,
    ) -> Result<Self> {
        let cols: Vec<usize> = match cols {
            Some(c) => c.to_vec(),
            None => (0..n_cols).collect(),
        };
        let mut col_map = vec![UNUSED; n_cols];
        for (k, &c) in cols.iter().enumerate() {
            if c >= n_cols {
                return Err(Error::param(
                    "features",
                    format!("column {c} out of range (D = {n_cols})"),
                ));
            }
            if col_map[c] != UNUSED {
                return Err(Error::param("features", format!("column {c} listed twice")));
            }
            col_map[c] = k as u32;
        }
        let identity = every_column_in_order(&cols, n_cols);
        Ok(Design {
            source,
            rows: rows.to_vec(),
            scale: vec![1.0; rows.len()],
            cols,
            col_map,
            identity,
            key: None,
            work: Weak::new(),
            grouping: OnceLock::new(),
            halves: OnceLock::new(),
            hot: HotCache::default(),
            splitting: Splitting::default(),
        })
    }

    /// The owned parts of a binary design (`None` for dense sources).
    pub fn parts(&self) -> Option<DesignParts> {
        let Source::Binary(_, encoding) = self.source else {
            return None;
        };
        Some(DesignParts {
            rows: self.rows.clone(),
            scale: self.scale.clone(),
            cols: self.cols.clone(),
            encoding,
        })
    }

    /// The design `parts` describe over `data`'s binary matrix, with memo key `key`: the same
    /// rows, columns, encoding and scales, so every operation gives the same bits.
    pub fn from_parts(data: &'a Dataset, parts: &DesignParts, key: Key) -> Result<Self> {
        let Features::Binary(m) = &data.features else {
            return Err(Error::param(
                "features",
                "a memoised design needs binary features",
            ));
        };
        let mut design = Self::binary(m, &parts.rows, Some(&parts.cols), parts.encoding)?;
        design.set_scales(parts.scale.clone());
        design.key = Some(key);
        Ok(design)
    }

    /// This design with memo key `key`, which the caller derived from everything the design
    /// depends on (the rows' content, columns and scaling). A dense design borrows its rows, so
    /// sharing it needs only the key: its exact fits are then memoised like a binary design's.
    pub fn with_key(mut self, key: Key) -> Self {
        self.key = Some(key);
        self
    }

    /// The memo key of this exact design, if it came from the memo.
    pub fn key(&self) -> Option<&Key> {
        self.key.as_ref()
    }

    /// This design with its noise-free results memoised in `work` (under its key, if it has
    /// one): the dataset's workspace, which the design refers to weakly.
    pub fn memoised_in(mut self, work: &Arc<SharedWork>) -> Self {
        self.work = Arc::downgrade(work);
        self
    }

    /// This design with its passes split as `splitting` says; its grouped rows, if already
    /// grouped, follow (a copy of their rows: once per fit at most).
    pub fn with_splitting(mut self, splitting: Splitting) -> Self {
        if splitting == self.splitting {
            return self;
        }
        self.splitting = splitting;
        if let Some((labels, g)) = self.grouping.take() {
            let g = g.map(|g| {
                Arc::new(Grouped {
                    design: g.design.clone().with_splitting(splitting),
                    y: g.y.clone(),
                    count: g.count.clone(),
                })
            });
            let _ = self.grouping.set((labels, g));
        }
        self
    }

    /// How this design's passes may split ([`Self::with_splitting`]).
    pub fn splitting(&self) -> Splitting {
        self.splitting
    }

    /// Where this design's noise-free results are memoised, with its key: both, or none.
    pub fn memo(&self) -> Option<(Key, Arc<SharedWork>)> {
        Some((self.key?, self.work.upgrade()?))
    }

    /// Whether this design's passes would split with [`Splitting::passes`]: a binary source of
    /// at least [`PAR_MIN_ROWS`] rows, and a pool of two threads or more.
    pub fn splittable(&self) -> bool {
        matches!(self.source, Source::Binary(..))
            && self.rows.len() >= PAR_MIN_ROWS
            && rayon::current_num_threads() >= 2
    }

    /// How this binary design's passes split across two threads, or `None` when they run on
    /// one: without [`Splitting::passes`], for dense sources (appendix B's multi-gigabyte fits
    /// keep one thread each, so a thread waiting on a join never takes up a second such
    /// trial), under [`PAR_MIN_ROWS`] rows, or in a pool of one thread. Every split pass is
    /// bit for bit the one-thread pass.
    pub fn halves(&self) -> Option<&Halves> {
        let Source::Binary(m, _) = &self.source else {
            return None;
        };
        if !self.splitting.passes || !self.splittable() {
            return None;
        }
        Some(self.halves.get_or_init(|| {
            let row = self.rows.len() / 8 * 4;
            // Non-zeros and upper-triangle pairs per source column, in one pass.
            let (mut ones, mut pairs) = (vec![0u64; m.n_cols()], vec![0u64; m.n_cols()]);
            for &r in &self.rows {
                let row = m.row(r as usize);
                for (p, &j) in row.iter().enumerate() {
                    ones[j as usize] += 1;
                    pairs[j as usize] += (row.len() - p) as u64;
                }
            }
            let (col, gram) = (balance(&ones), balance(&pairs));
            let below = |row: &[u32], s: usize| row.partition_point(|&j| (j as usize) < s) as u32;
            let cuts = self
                .rows
                .iter()
                .map(|&r| {
                    let row = m.row(r as usize);
                    [below(row, col), below(row, gram)]
                })
                .collect();
            Halves {
                row,
                col,
                gram,
                cuts,
            }
        }))
    }

    /// The hot/cold column split of this binary design's rows for X^T c
    /// ([`csr::HotColumns`]), when it has [`HOT_MIN_ROWS`] rows and a used column on in many
    /// of them; built on first use, kept until [`Self::release_fit_scratch`].
    fn hot_columns(&self) -> Option<Arc<csr::HotColumns>> {
        let Source::Binary(m, _) = &self.source else {
            return None;
        };
        if self.rows.len() < HOT_MIN_ROWS {
            return None;
        }
        let mut slot = self.hot.slot();
        if slot.is_none() {
            *slot = csr::HotColumns::new(m, &self.rows, |j| {
                self.identity || self.col_map[j as usize] != UNUSED
            })
            .map(Arc::new);
        }
        slot.clone()
    }

    /// Drops what fits built on this design (and on its grouped rows) to speed their passes
    /// ([`Self::hot_columns`]): about one copy of the rows' structure, rebuilt by the next fit
    /// that needs it.
    pub fn release_fit_scratch(&self) {
        *self.hot.slot() = None;
        if let Some((_, Some(g))) = self.grouping.get() {
            g.design.release_fit_scratch();
        }
    }

    /// The same columns, encoding and source on other rows (scales reset to 1).
    pub fn with_rows(&self, rows: &[u32]) -> Design<'a> {
        self.on_rows(rows.to_vec(), vec![1.0; rows.len()])
    }

    /// A sub-design of positions `idx` (indices into this design's rows), keeping row scales.
    pub fn subset(&self, idx: &[usize]) -> Design<'a> {
        let rows = idx.iter().map(|&i| self.rows[i]).collect();
        self.on_rows(rows, idx.iter().map(|&i| self.scale[i]).collect())
    }

    /// The same columns, encoding and source on `rows` with their `scale`: a derived design,
    /// with no memo key and nothing cached yet.
    fn on_rows(&self, rows: Vec<u32>, scale: Vec<f64>) -> Design<'a> {
        Design {
            source: self.source.clone(),
            rows,
            scale,
            cols: self.cols.clone(),
            col_map: self.col_map.clone(),
            identity: self.identity,
            key: None,
            work: Weak::new(),
            grouping: OnceLock::new(),
            halves: OnceLock::new(),
            hot: HotCache::default(),
            splitting: self.splitting,
        }
    }

    pub fn n_rows(&self) -> usize {
        self.rows.len()
    }

    /// Number of parameters D.
    pub fn dim(&self) -> usize {
        self.cols.len()
    }

    /// The source row of each design row.
    pub fn rows(&self) -> &[u32] {
        &self.rows
    }

    /// Used source columns, in parameter order.
    pub fn cols(&self) -> &[usize] {
        &self.cols
    }

    pub fn encoding(&self) -> Option<Encoding> {
        match self.source {
            Source::Binary(_, e) => Some(e),
            Source::Dense(..) => None,
        }
    }

    pub fn scales(&self) -> &[f64] {
        &self.scale
    }

    /// Sets every row scale (length must equal `n_rows`).
    pub fn set_scales(&mut self, scale: Vec<f64>) {
        assert_eq!(scale.len(), self.rows.len(), "one scale per row");
        self.scale = scale;
        self.key = None;
        self.grouping = OnceLock::new();
    }

    /// Multiplies every row scale by `c`.
    pub fn scale_all(&mut self, c: f64) {
        self.scale.iter_mut().for_each(|s| *s *= c);
        self.key = None;
        self.grouping = OnceLock::new();
    }

    /// ||T(row i)||_2^2 before the row scale.
    pub fn raw_sq_norm(&self, i: usize) -> f64 {
        let r = self.rows[i] as usize;
        match &self.source {
            Source::Binary(m, Encoding::Indicator) => self.used_ones(m.row(r)) as f64,
            Source::Binary(_, Encoding::PlusMinus) => self.cols.len() as f64,
            Source::Dense(x, None) => self.cols.iter().map(|&c| x[[r, c]].powi(2)).sum(),
            Source::Dense(x, Some(map)) => {
                self.with_mapped(x, map, r, |v| v.iter().map(|v| v.powi(2)).sum())
            }
        }
    }

    /// [`Self::raw_sq_norm`] of every row. Dense rows that are slices go a group at a time
    /// ([`Self::each_group`]), side by side: each row's sum is one chain of dependent adds, so alone it runs at the add's
    /// latency; every row still adds its squares in column order, so each is bit for bit its
    /// own `raw_sq_norm`.
    pub fn raw_sq_norms(&self) -> Vec<f64> {
        let n = self.rows.len();
        let Source::Dense(x, map) = &self.source else {
            return (0..n).map(|i| self.raw_sq_norm(i)).collect();
        };
        if !self.fuses_map(x) {
            return (0..n).map(|i| self.raw_sq_norm(i)).collect();
        }
        let mut out = vec![0.0; n];
        self.each_group(x, *map, 0..n, |group| {
            // A short last group repeats its last row; only its own sums are kept.
            let (first, g, next) = (group.first, group.rows.len(), group.ahead);
            let rows: [&[f64]; mapped::GROUP] = std::array::from_fn(|k| group.rows[k.min(g - 1)]);
            let acc = match group.map {
                None => sq_norms_group(rows, next, |_, v| v),
                Some(m) => sq_norms_group(rows, next, |j, v| m.a[j] * v + m.b[j]),
            };
            out[first..first + g].copy_from_slice(&acc[..g]);
        });
        out
    }

    /// Number of used on-features of binary row i (0 for dense sources).
    pub fn ones(&self, i: usize) -> usize {
        match &self.source {
            Source::Binary(m, _) => self.used_ones(m.row(self.rows[i] as usize)),
            Source::Dense(..) => 0,
        }
    }

    #[inline]
    fn used_ones(&self, row: &[u32]) -> usize {
        row.iter()
            .filter(|&&j| self.col_map[j as usize] != UNUSED)
            .count()
    }

    /// ||x_i||_2 (with the row scale).
    pub fn row_norm(&self, i: usize) -> f64 {
        self.scale[i].abs() * self.raw_sq_norm(i).sqrt()
    }

    /// max_i ||x_i||_2 (each [`Self::row_norm`], from [`Self::raw_sq_norms`]); once per keyed
    /// design and dataset workspace: every private fit checks it, and the cells of a trial, or a
    /// lockstep group's members across trials, fit one design (12.6 GB read at appendix B's
    /// largest).
    pub fn max_row_norm(&self) -> f64 {
        let compute = || {
            self.raw_sq_norms()
                .into_iter()
                .zip(&self.scale)
                .map(|(sq, s)| s.abs() * sq.sqrt())
                .fold(0.0, f64::max)
        };
        match self.memo() {
            Some((key, work)) => work.norms.get_or_compute(key, || MaxRowNorm(compute())).0,
            None => compute(),
        }
    }

    /// x_i . theta.
    #[inline]
    pub fn dot(&self, i: usize, theta: &[f64]) -> f64 {
        let sum_theta = match self.source {
            Source::Binary(_, Encoding::PlusMinus) => theta.iter().sum(),
            _ => 0.0,
        };
        self.dot_with(i, theta, sum_theta)
    }

    /// `out[k]` = [`Self::dot`] of row `rows[k]`, bit for bit. The sparse binary rows of the
    /// whole design go four at a time: each row's sum is one chain of dependent adds (alone it
    /// runs at the add's latency), so four chains side by side overlap, each still adding its
    /// row's values in order. DP-SGD's batches are a few hundred such rows.
    pub fn dots(&self, rows: &[u32], theta: &[f64], out: &mut Vec<f64>) {
        out.clear();
        let sum_theta = match self.source {
            Source::Binary(_, Encoding::PlusMinus) => theta.iter().sum(),
            _ => 0.0,
        };
        let (Source::Binary(m, enc), true) = (&self.source, self.identity) else {
            out.extend(
                rows.iter()
                    .map(|&i| self.dot_with(i as usize, theta, sum_theta)),
            );
            return;
        };
        assert_eq!(theta.len(), self.cols.len());
        let finish = |i: u32, s: f64| {
            let raw = match enc {
                Encoding::Indicator => s,
                Encoding::PlusMinus => 2.0 * s - sum_theta,
            };
            self.scale[i as usize] * raw
        };
        // SAFETY (each `get_unchecked`): on-indices are < n_cols = theta.len() (BinaryMatrix
        // invariant, checked length above).
        let at = |j: &u32| unsafe { *theta.get_unchecked(*j as usize) };
        let mut quads = rows.chunks_exact(4);
        for quad in &mut quads {
            let ones: [&[u32]; 4] =
                std::array::from_fn(|k| m.row(self.rows[quad[k] as usize] as usize));
            let common = ones.iter().map(|r| r.len()).min().unwrap_or(0);
            let mut sums = [0.0f64; 4];
            for j in 0..common {
                for (s, r) in sums.iter_mut().zip(&ones) {
                    *s += at(&r[j]);
                }
            }
            for ((s, r), &i) in sums.iter_mut().zip(&ones).zip(quad) {
                *s = r[common..].iter().fold(*s, |s, j| s + at(j));
                out.push(finish(i, *s));
            }
        }
        for &i in quads.remainder() {
            let s = m
                .row(self.rows[i as usize] as usize)
                .iter()
                .fold(0.0, |s, j| s + at(j));
            out.push(finish(i, s));
        }
    }

    #[inline]
    fn dot_with(&self, i: usize, theta: &[f64], sum_theta: f64) -> f64 {
        let r = self.rows[i] as usize;
        let raw = match &self.source {
            Source::Binary(m, enc) => {
                let mut s = 0.0;
                if self.identity {
                    assert_eq!(theta.len(), self.cols.len());
                    for &j in m.row(r) {
                        // SAFETY: on-indices are < n_cols = theta.len() (BinaryMatrix invariant).
                        s += unsafe { *theta.get_unchecked(j as usize) };
                    }
                } else {
                    for &j in m.row(r) {
                        let k = self.col_map[j as usize];
                        if k != UNUSED {
                            s += theta[k as usize];
                        }
                    }
                }
                match enc {
                    Encoding::Indicator => s,
                    Encoding::PlusMinus => 2.0 * s - sum_theta,
                }
            }
            // The mapped values as a copy would hold them, summed as the copy's rows are.
            Source::Dense(x, Some(map)) => self.with_mapped(x, map, r, |v| dot4(v, theta)),
            Source::Dense(x, None) => match self.dense_row(x, r) {
                Some(row) => dot4(row, theta),
                None => self
                    .cols
                    .iter()
                    .zip(theta)
                    .map(|(&c, t)| x[[r, c]] * t)
                    .sum(),
            },
        };
        self.scale[i] * raw
    }

    /// Runs `f` on row r's values through `map` (in this thread's row buffer).
    #[inline]
    fn with_mapped<R>(
        &self,
        x: &ArrayView2<'a, f64>,
        map: &ColumnMap,
        r: usize,
        f: impl FnOnce(&[f64]) -> R,
    ) -> R {
        MAPPED_ROW.with(|buf| {
            let mut buf = buf.borrow_mut();
            buf.resize(self.cols.len(), 0.0);
            self.mapped_row(x, map, r, &mut buf);
            f(&buf)
        })
    }

    /// Whether the passes over `x` can fuse a column map into groups of source rows: every
    /// column is used in order and the rows are slices. Otherwise they go row by row through
    /// [`Self::dot_with`] and [`Self::axpy`], the same sums.
    fn fuses_map(&self, x: &ArrayView2<'a, f64>) -> bool {
        self.identity && x.is_standard_layout()
    }

    /// Runs `f` on each [`Group`] of the design's rows `rows` in order, groups of up to
    /// [`mapped::GROUP`] read through `map`, each `ahead` being the group after (only when
    /// [`Self::fuses_map`]): the rows come from anywhere in a shuffled order, so the kernels
    /// fetch the next group's lines while they read this one's.
    fn each_group(
        &self,
        x: &ArrayView2<'a, f64>,
        map: Option<&ColumnMap>,
        rows: std::ops::Range<usize>,
        mut f: impl FnMut(&Group),
    ) {
        let row = |i: usize| {
            self.dense_row(x, self.rows[i] as usize)
                .expect("standard layout")
        };
        let n = rows.end;
        let size = |first: usize| mapped::GROUP.min(n.saturating_sub(first));
        let mut group: [&[f64]; mapped::GROUP] = [&[]; mapped::GROUP];
        let mut next: [&[f64]; mapped::GROUP] = [&[]; mapped::GROUP];
        let mut g = size(rows.start);
        for (k, slot) in group[..g].iter_mut().enumerate() {
            *slot = row(rows.start + k);
        }
        for first in rows.step_by(mapped::GROUP) {
            let h = size(first + g);
            for (k, slot) in next[..h].iter_mut().enumerate() {
                *slot = row(first + g + k);
            }
            f(&Group {
                map,
                first,
                rows: &group[..g],
                ahead: &next[..h],
            });
            std::mem::swap(&mut group, &mut next);
            g = h;
        }
    }

    /// `zs[k][i - rows.start]` = the margin of row i in `rows` for `thetas[k]`, a group of rows
    /// at a time against every vector (`mapped::dots_each`), the map (if any) applied once per
    /// value: `dot_with`'s sums, each its row's own `dot4` (only when [`Self::fuses_map`]).
    fn fused_margins(
        &self,
        x: &ArrayView2<'a, f64>,
        map: Option<&ColumnMap>,
        rows: std::ops::Range<usize>,
        thetas: &[&[f64]],
        zs: &mut [&mut [f64]],
    ) {
        let mut sums = vec![0.0; thetas.len() * mapped::GROUP];
        let start = rows.start;
        self.each_group(x, map, rows, |group| {
            self.group_margins(group, start, thetas, &mut sums, zs)
        })
    }

    /// The margins of one group of this design's rows: `zs[k][first - start + r]` is row
    /// `first + r`'s for `thetas[k]`, each its own `dot4` times its scale; `sums` scratch of at
    /// least `thetas.len() * rows.len()` values.
    fn group_margins(
        &self,
        group: &Group,
        start: usize,
        thetas: &[&[f64]],
        sums: &mut [f64],
        zs: &mut [&mut [f64]],
    ) {
        let (first, g) = (group.first, group.rows.len());
        let consts = group.map.map(|m| (&m.a[..], &m.b[..]));
        let sums = &mut sums[..thetas.len() * g];
        mapped::dots_each(group.rows, thetas, consts, sums, group.ahead);
        let scales = &self.scale[first..first + g];
        for (z, sums) in zs.iter_mut().zip(sums.chunks_exact(g)) {
            let z = &mut z[first - start..];
            for (zi, (&raw, &s)) in z.iter_mut().zip(sums.iter().zip(scales)) {
                *zi = s * raw;
            }
        }
    }

    /// `outs[k][j - cols.start]` = entry j in `cols` of X^T `cs[k]` over the first `n` rows, a
    /// group of rows at a time with every output's entries held while the group passes
    /// (`mapped::axpys_each`), the map (if any) applied once per value: `axpy`'s sums, every
    /// entry in row order, computed alike wherever the columns start (only when
    /// [`Self::fuses_map`]).
    fn fused_sums(
        &self,
        x: &ArrayView2<'a, f64>,
        map: Option<&ColumnMap>,
        n: usize,
        cols: std::ops::Range<usize>,
        cs: &[&[f64]],
        outs: &mut [&mut [f64]],
    ) {
        outs.iter_mut().for_each(|o| o.fill(0.0));
        let mut coefs = vec![0.0; cs.len() * mapped::GROUP];
        self.each_group(x, map, 0..n, |group| {
            self.group_sums(group, &cols, cs, &mut coefs, outs)
        });
    }

    /// Adds one group of this design's rows into X^T `cs[k]`'s entries `cols` (`outs[k]`),
    /// every entry's terms in row order; `coefs` scratch of at least `cs.len() * rows.len()`
    /// values.
    fn group_sums(
        &self,
        group: &Group,
        cols: &std::ops::Range<usize>,
        cs: &[&[f64]],
        coefs: &mut [f64],
        outs: &mut [&mut [f64]],
    ) {
        let (first, g) = (group.first, group.rows.len());
        let consts = group.map.map(|m| (&m.a[cols.clone()], &m.b[cols.clone()]));
        for (k, c) in cs.iter().enumerate() {
            for (r, a) in coefs[k * g..(k + 1) * g].iter_mut().enumerate() {
                *a = c[first + r] * self.scale[first + r];
            }
        }
        let (part, ahead_part) = (columns(group.rows, cols), columns(group.ahead, cols));
        let ahead = &ahead_part[..group.ahead.len()];
        mapped::axpys_each(&part[..g], &coefs[..cs.len() * g], consts, outs, ahead);
    }

    /// Writes row r's values through `map` into `out` (one per used column).
    #[inline]
    fn mapped_row(&self, x: &ArrayView2<'a, f64>, map: &ColumnMap, r: usize, out: &mut [f64]) {
        let consts = map.a.iter().zip(&map.b);
        match self.dense_row(x, r) {
            Some(row) => {
                for ((v, &s), (&a, &b)) in out.iter_mut().zip(row).zip(consts) {
                    *v = a * s + b;
                }
            }
            None => {
                let row = x.row(r);
                for ((v, &c), (&a, &b)) in out.iter_mut().zip(&self.cols).zip(consts) {
                    *v = a * row[c] + b;
                }
            }
        }
    }

    /// Row r of a dense source as a slice when every column is used in order and the row is
    /// contiguous (the fast path: no per-element index arithmetic).
    #[inline]
    fn dense_row<'x>(&self, x: &'x ArrayView2<'a, f64>, r: usize) -> Option<&'x [f64]> {
        if self.identity {
            x.row(r).to_slice()
        } else {
            None
        }
    }

    /// Number of stored non-zeros the solvers touch per pass (N D for dense sources).
    pub fn nnz(&self) -> usize {
        match &self.source {
            Source::Binary(m, Encoding::Indicator) => {
                if self.identity {
                    self.rows.iter().map(|&r| m.row(r as usize).len()).sum()
                } else {
                    self.rows
                        .iter()
                        .map(|&r| self.used_ones(m.row(r as usize)))
                        .sum()
                }
            }
            // Handled in sparse form: on-indices plus one dense correction per row.
            Source::Binary(m, Encoding::PlusMinus) => {
                self.rows.iter().map(|&r| m.row(r as usize).len() + 1).sum()
            }
            Source::Dense(..) => self.rows.len() * self.cols.len(),
        }
    }

    /// Flop estimate of one [`Self::weighted_gram`] call (its scatter of row outer products
    /// plus the dense D x D work), for the solvers' cost model.
    pub fn gram_cost(&self) -> f64 {
        let d = self.dim() as f64;
        match &self.source {
            Source::Binary(m, enc) => {
                let pairs: f64 = self
                    .rows
                    .iter()
                    .map(|&r| {
                        let k = m.row(r as usize).len() as f64;
                        k * (k + 1.0) / 2.0
                    })
                    .sum();
                let dense = if *enc == Encoding::PlusMinus {
                    d * d
                } else {
                    0.0
                };
                pairs + dense + d * d
            }
            Source::Dense(..) => self.rows.len() as f64 * d * (d + 1.0) / 2.0 + d * d,
        }
    }

    /// out_j = sum_i w_i x_ij^2: the diagonal of X^T diag(w) X (a CG preconditioner).
    pub fn weighted_sq_sum(&self, w: &[f64], out: &mut [f64]) {
        out.iter_mut().for_each(|o| *o = 0.0);
        match &self.source {
            Source::Binary(m, Encoding::Indicator) => {
                for (i, &wi) in w.iter().enumerate() {
                    let a = wi * self.scale[i] * self.scale[i];
                    for &j in m.row(self.rows[i] as usize) {
                        let k = self.col_map[j as usize];
                        if k != UNUSED {
                            out[k as usize] += a;
                        }
                    }
                }
            }
            Source::Binary(_, Encoding::PlusMinus) => {
                let total: f64 = w.iter().zip(&self.scale).map(|(wi, s)| wi * s * s).sum();
                out.iter_mut().for_each(|o| *o = total);
            }
            Source::Dense(x, None) => {
                for (i, &wi) in w.iter().enumerate() {
                    let a = wi * self.scale[i] * self.scale[i];
                    let r = self.rows[i] as usize;
                    for (o, &c) in out.iter_mut().zip(&self.cols) {
                        let v = x[[r, c]];
                        *o += a * v * v;
                    }
                }
            }
            Source::Dense(x, Some(map)) => {
                for (i, &wi) in w.iter().enumerate() {
                    let a = wi * self.scale[i] * self.scale[i];
                    self.with_mapped(x, map, self.rows[i] as usize, |row| {
                        for (o, &v) in out.iter_mut().zip(row) {
                            *o += a * v * v;
                        }
                    });
                }
            }
        }
    }

    /// out += a * x_i.
    pub fn axpy(&self, i: usize, a: f64, out: &mut [f64]) {
        let r = self.rows[i] as usize;
        let a = a * self.scale[i];
        match &self.source {
            Source::Binary(m, enc) => {
                if *enc == Encoding::PlusMinus {
                    out.iter_mut().for_each(|o| *o -= a);
                }
                let f = if *enc == Encoding::PlusMinus {
                    2.0
                } else {
                    1.0
                };
                for &j in m.row(r) {
                    let k = self.col_map[j as usize];
                    if k != UNUSED {
                        out[k as usize] += f * a;
                    }
                }
            }
            Source::Dense(x, Some(map)) => self.with_mapped(x, map, r, |row| {
                for (o, &v) in out.iter_mut().zip(row) {
                    *o += a * v;
                }
            }),
            Source::Dense(x, None) => match self.dense_row(x, r) {
                Some(row) => {
                    for (o, &v) in out.iter_mut().zip(row) {
                        *o += a * v;
                    }
                }
                None => {
                    for (o, &c) in out.iter_mut().zip(&self.cols) {
                        *o += a * x[[r, c]];
                    }
                }
            },
        }
    }

    /// z_i = x_i . theta for every row.
    pub fn margins(&self, theta: &[f64], z: &mut [f64]) {
        let sum_theta: f64 = theta.iter().sum();
        let (m, enc) = match &self.source {
            Source::Binary(m, enc) => (m, enc),
            Source::Dense(x, map) if self.fuses_map(x) => {
                let n = z.len().min(self.rows.len());
                return self.fused_margins(x, *map, 0..n, &[theta], &mut [z]);
            }
            Source::Dense(..) => {
                for (i, zi) in z.iter_mut().enumerate() {
                    *zi = self.dot_with(i, theta, sum_theta);
                }
                return;
            }
        };
        // The same sums as `dot_with`, four rows at a time (see `csr`).
        let z = &mut z[..self.rows.len()];
        // Each row's sum is its own, so the rows split across threads as they come.
        let gather = |table: &[f64], z: &mut [f64]| match self.halves() {
            Some(h) => {
                let (r0, r1) = self.rows.split_at(h.row);
                let (z0, z1) = z.split_at_mut(h.row);
                rayon::join(
                    || csr::gather_sums(m, r0, table, z0),
                    || csr::gather_sums(m, r1, table, z1),
                );
            }
            None => csr::gather_sums(m, &self.rows, table, z),
        };
        if self.identity {
            assert_eq!(theta.len(), m.n_cols());
            gather(theta, z);
        } else {
            csr::with_scratch(m.n_cols(), |table| {
                for (&c, &t) in self.cols.iter().zip(theta) {
                    table[c] = t;
                }
                gather(table, z);
            });
        }
        for (zi, &s) in z.iter_mut().zip(&self.scale) {
            let raw = match enc {
                Encoding::Indicator => *zi,
                Encoding::PlusMinus => 2.0 * *zi - sum_theta,
            };
            *zi = s * raw;
        }
    }

    /// [`Self::margins`] for several thetas in one pass over the rows: `zs[j]` is bit for bit
    /// `margins(thetas[j])`. Dense rows are read once for all (a copy's rows, or the column
    /// map's groups of source rows, which stay in cache while each theta passes); other
    /// sources take one pass per theta.
    pub fn margins_each(&self, thetas: &[&[f64]], zs: &mut [&mut [f64]]) {
        let n = self.rows.len();
        match &self.source {
            Source::Dense(x, map) if self.fuses_map(x) && zs.iter().all(|z| z.len() >= n) => {
                self.fused_margins(x, *map, 0..n, thetas, zs)
            }
            _ => {
                for (theta, z) in thetas.iter().zip(zs.iter_mut()) {
                    self.margins(theta, z);
                }
            }
        }
    }

    /// [`Self::weighted_sum`] for several coefficient vectors in one pass over the rows:
    /// `outs[j]` is bit for bit `weighted_sum(cs[j])` (each output receives its rows' terms in
    /// row order, as there).
    pub fn weighted_sum_each(&self, cs: &[&[f64]], outs: &mut [&mut [f64]]) {
        let n = cs.first().map_or(0, |c| c.len());
        let same_rows = n <= self.rows.len() && cs.iter().all(|c| c.len() == n);
        match &self.source {
            Source::Dense(x, map) if self.fuses_map(x) && same_rows => {
                self.fused_sums(x, *map, n, 0..self.cols.len(), cs, outs)
            }
            _ => {
                for (c, out) in cs.iter().zip(outs.iter_mut()) {
                    self.weighted_sum(c, out);
                }
            }
        }
    }

    /// Whether the combined passes can be computed in parts ([`Self::each_part`]): dense rows read as slices, over a copy or through
    /// the column map.
    pub fn splits_combined(&self) -> bool {
        matches!(&self.source, Source::Dense(x, _) if self.fuses_map(x))
    }

    /// The part `range` of a combined pass, bit for bit the whole pass's entries there; only
    /// when [`Self::splits_combined`]. For [`Pass::Margins`], rows `range` of
    /// [`Self::margins_each`]: `outs[k][i - range.start]` is row i's margin for `ins[k]` (each
    /// row's sum is its own). For [`Pass::WeightedSum`], entries `range` of
    /// [`Self::weighted_sum_each`] over all of the `ins`' rows: `outs[k][j - range.start]`
    /// (each entry adds its rows' terms in row order, computed alike wherever the part starts).
    pub fn each_part(
        &self,
        pass: Pass,
        range: std::ops::Range<usize>,
        ins: &[&[f64]],
        outs: &mut [&mut [f64]],
    ) {
        let Source::Dense(x, map) = &self.source else {
            panic!("each_part needs a dense design (splits_combined)");
        };
        assert!(self.fuses_map(x));
        match pass {
            Pass::Margins => {
                assert!(range.end <= self.rows.len());
                assert!(outs.iter().all(|z| z.len() >= range.len()));
                self.fused_margins(x, *map, range, ins, outs)
            }
            Pass::WeightedSum => {
                let n = ins.first().map_or(0, |c| c.len());
                assert!(n <= self.rows.len() && range.end <= self.cols.len());
                assert!(ins.iter().all(|c| c.len() == n));
                assert!(outs.iter().all(|o| o.len() == range.len()));
                self.fused_sums(x, *map, n, range, ins, outs)
            }
        }
    }

    /// Whether this design's rows are the first rows of `outer`'s, read as slices of the same
    /// dense source (each through its own column map, if any): then one pass over `outer`'s
    /// rows serves both ([`margins_nested`], [`weighted_sum_nested`]). Appendix B's subsets of
    /// one trial are such prefixes of one shuffled order, each with its own scaling.
    pub fn nests_in(&self, outer: &Design) -> bool {
        match (&self.source, &outer.source) {
            (Source::Dense(x, _), Source::Dense(y, _)) => {
                self.fuses_map(x)
                    && outer.fuses_map(y)
                    && std::ptr::eq(x.as_ptr(), y.as_ptr())
                    && x.dim() == y.dim()
                    && self.rows.len() <= outer.rows.len()
                    && outer.rows[..self.rows.len()] == self.rows[..]
            }
            _ => false,
        }
    }

    /// out = sum_i c_i x_i (X^T c).
    pub fn weighted_sum(&self, c: &[f64], out: &mut [f64]) {
        out.iter_mut().for_each(|o| *o = 0.0);
        match &self.source {
            Source::Binary(m, enc) => {
                // Each entry receives its rows' terms in row order (see `csr`).
                let (rows, scale) = (&self.rows[..c.len()], &self.scale[..c.len()]);
                let whole = c.len() == self.rows.len();
                let halves = self.halves().filter(|_| whole);
                let hot = match halves {
                    None if whole => self.hot_columns(),
                    _ => None,
                };
                let scatter = |acc: &mut [f64]| match (halves, hot.as_deref()) {
                    (Some(h), _) => {
                        csr::scatter_sums_halves(m, rows, &h.cuts, scale, c, acc, h.col)
                    }
                    (None, Some(hot)) => csr::scatter_sums_hot(hot, scale, c, acc),
                    (None, None) => csr::scatter_sums(m, rows, scale, c, acc),
                };
                let total = if self.identity {
                    assert_eq!(out.len(), m.n_cols());
                    scatter(out)
                } else {
                    csr::with_scratch(m.n_cols(), |acc| {
                        let total = scatter(acc);
                        for (o, &col) in out.iter_mut().zip(&self.cols) {
                            *o = acc[col];
                        }
                        total
                    })
                };
                if *enc == Encoding::PlusMinus {
                    out.iter_mut().for_each(|o| *o = 2.0 * *o - total);
                }
            }
            Source::Dense(x, map) if self.fuses_map(x) => {
                self.fused_sums(x, *map, c.len(), 0..self.cols.len(), &[c], &mut [out])
            }
            Source::Dense(..) => {
                for (i, &ci) in c.iter().enumerate() {
                    self.axpy(i, ci, out);
                }
            }
        }
    }

    /// h = sum_i w_i x_i x_i^T (D x D, symmetric, row-major in a Vec).
    pub fn weighted_gram(&self, w: &[f64]) -> Vec<f64> {
        let mut h = Vec::new();
        self.weighted_gram_into(w, &mut h);
        h
    }

    /// [`Self::weighted_gram`] into `h` (resized to D x D; no allocation once it has the size,
    /// so Newton reuses one buffer). Binary rows scatter one add per pair of on-indices into
    /// the upper triangle (105 per Adult row), read straight from the shared CSR rows.
    pub fn weighted_gram_into(&self, w: &[f64], h: &mut Vec<f64>) {
        let d = self.dim();
        h.clear();
        h.resize(d * d, 0.0);
        match self.source {
            Source::Binary(m, enc) => self.binary_gram(m, enc, w, h),
            Source::Dense(x, map) => self.dense_gram(x, map, w, h),
        }
        for k in 0..d {
            for l in 0..k {
                h[k * d + l] = h[l * d + k];
            }
        }
    }

    /// [`Self::weighted_gram_into`]'s upper triangle over binary rows, into `h` (zeroed).
    fn binary_gram(&self, m: &BinaryMatrix, enc: Encoding, w: &[f64], h: &mut [f64]) {
        let d = self.dim();
        // Upper triangle of sum_i a_i b_i b_i^T with a_i = w_i s_i^2. Its diagonal is
        // u = sum_i a_i b_i (b_k^2 = b_k), which the +-1 encoding needs.
        assert!(!self.identity || d == m.n_cols());
        let n = w.len();
        let (scale, rows) = (&self.scale[..n], &self.rows[..n]);
        let total = if self.identity {
            // The triangle's rows split across threads (see `csr::gram_pairs`).
            match self.halves().filter(|_| n == self.rows.len()) {
                Some(halves) => {
                    let (h0, h1) = h.split_at_mut(halves.gram * d);
                    let cut = &halves.cuts;
                    let (total, _) = rayon::join(
                        || csr::gram_pairs(m, rows, scale, w, h0, 0, |i, _| 0..cut[i][1] as usize),
                        || {
                            csr::gram_pairs(m, rows, scale, w, h1, halves.gram, |i, row| {
                                cut[i][1] as usize..row.len()
                            })
                        },
                    );
                    total
                }
                None => csr::gram_pairs(m, rows, scale, w, h, 0, |_, row| 0..row.len()),
            }
        } else {
            csr::gram_pairs_mapped(m, rows, scale, w, h, d, &self.col_map, UNUSED)
        };
        if enc == Encoding::PlusMinus {
            // (2b - 1)(2b - 1)^T = 4 b b^T - 2 (b 1^T + 1 b^T) + 1 1^T; off-diagonal
            // entries first, while the diagonal still holds u.
            for k in 0..d {
                for l in k + 1..d {
                    let (uk, ul) = (h[k * d + k], h[l * d + l]);
                    h[k * d + l] = 4.0 * h[k * d + l] - 2.0 * (uk + ul) + total;
                }
            }
            for k in 0..d {
                let uk = h[k * d + k];
                h[k * d + k] = 4.0 * uk - 2.0 * (uk + uk) + total;
            }
        }
    }

    /// [`Self::weighted_gram_into`]'s upper triangle over dense rows, into `h` (zeroed).
    fn dense_gram(
        &self,
        x: ArrayView2<'a, f64>,
        map: Option<&ColumnMap>,
        w: &[f64],
        h: &mut [f64],
    ) {
        let d = self.dim();
        // Rows in blocks of GRAM_BLOCK (in L2), added tile by tile into the triangle
        // ([`gram::add_block`]); every entry still adds its rows in row order with
        // the same products: bit for bit the row-wise sum.
        const GRAM_BLOCK: usize = 64;
        let mut block = vec![0.0; GRAM_BLOCK * d];
        let mut coef = [0.0; GRAM_BLOCK];
        let mut panels = gram::Panels::default();
        let in_pool = rayon::current_thread_index().is_some();
        let cut = (self.splitting.gram && in_pool && rayon::current_num_threads() > 1)
            .then(|| gram_cut(d))
            .filter(|&c| c > 0);
        for (b, wb) in w.chunks(GRAM_BLOCK).enumerate() {
            let mut m = 0;
            for (j, &wi) in wb.iter().enumerate() {
                let i = b * GRAM_BLOCK + j;
                let a = wi * self.scale[i] * self.scale[i];
                if a == 0.0 {
                    continue;
                }
                let r = self.rows[i] as usize;
                let row = &mut block[m * d..(m + 1) * d];
                match (map, self.dense_row(&x, r)) {
                    (Some(map), _) => self.mapped_row(&x, map, r, row),
                    (None, Some(src)) => row.copy_from_slice(src),
                    (None, None) => {
                        for (v, &c) in row.iter_mut().zip(&self.cols) {
                            *v = x[[r, c]];
                        }
                    }
                }
                coef[m] = a;
                m += 1;
            }
            let (block, coef) = (&block[..m * d], &coef[..m]);
            match cut {
                Some(c) => gram::add_block_split(&mut panels, block, coef, d, h, c),
                None => gram::add_block(&mut panels, block, coef, d, h),
            }
        }
    }

    /// Identical examples merged (binary sources): one representative row per distinct
    /// (used on-indices, row scale, label), the labels and how many examples each stands for.
    /// `None` for dense sources, or when more than `max_fraction` of the rows would remain (the
    /// merge would not pay). Rows are hashed, sorted by (hash, position) and compared within
    /// equal hashes, so the grouping is exact and a pure function of the design and labels;
    /// each group is represented by its first row, in row order.
    pub fn grouped(&self, y: &[f64], max_fraction: f64) -> Option<Grouped<'a>> {
        let Source::Binary(m, _) = &self.source else {
            return None;
        };
        let n = self.rows.len();
        if n < 64 {
            return None;
        }
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let used = |i: usize| {
            m.row(self.rows[i] as usize)
                .iter()
                .filter(|&&j| self.identity || self.col_map[j as usize] != UNUSED)
        };
        let mut order: Vec<(u64, u32)> = (0..n)
            .map(|i| {
                let mut h =
                    (self.scale[i].to_bits() ^ y[i].to_bits().rotate_left(1)).wrapping_mul(K);
                for &j in used(i) {
                    h = (h.rotate_left(5) ^ u64::from(j)).wrapping_mul(K);
                }
                (h, i as u32)
            })
            .collect();
        order.sort_unstable();
        let same = |a: usize, b: usize| {
            self.scale[a].to_bits() == self.scale[b].to_bits()
                && y[a].to_bits() == y[b].to_bits()
                && used(a).eq(used(b))
        };
        let (mut reps, mut count): (Vec<usize>, Vec<f64>) = (Vec::new(), Vec::new());
        let mut k = 0;
        while k < n {
            let first = reps.len();
            let mut e = k;
            while e < n && order[e].0 == order[k].0 {
                let i = order[e].1 as usize;
                match reps[first..].iter().position(|&r| same(r, i)) {
                    Some(p) => count[first + p] += 1.0,
                    None => {
                        reps.push(i);
                        count.push(1.0);
                    }
                }
                e += 1;
            }
            k = e;
        }
        if reps.len() as f64 > max_fraction * n as f64 {
            return None;
        }
        // Back in row order, so every pass reads the shared CSR rows front to back.
        let mut by_row: Vec<(usize, f64)> = reps.into_iter().zip(count).collect();
        by_row.sort_unstable_by_key(|&(i, _)| i);
        let (reps, count): (Vec<usize>, Vec<f64>) = by_row.into_iter().unzip();
        Some(Grouped {
            design: self.subset(&reps),
            y: reps.iter().map(|&i| y[i]).collect(),
            count,
        })
    }

    /// [`Self::grouped`] at [`GROUP_MAX_FRACTION`], computed once per design for the first
    /// labels asked about (other labels are grouped afresh).
    pub fn grouped_cached(&self, y: &[f64]) -> Option<Arc<Grouped<'a>>> {
        if let Some((labels, g)) = self.grouping.get()
            && labels.as_slice() == y
        {
            return g.clone();
        }
        let g = self.grouped(y, GROUP_MAX_FRACTION).map(Arc::new);
        let _ = self.grouping.set((y.to_vec(), g.clone()));
        g
    }

    /// A dense copy (tests and small problems only).
    pub fn to_dense(&self) -> Array2<f64> {
        let (n, d) = (self.n_rows(), self.dim());
        let mut x = Array2::zeros((n, d));
        let mut row = vec![0.0; d];
        for i in 0..n {
            row.iter_mut().for_each(|v| *v = 0.0);
            self.axpy(i, 1.0, &mut row);
            for k in 0..d {
                x[[i, k]] = row[k];
            }
        }
        x
    }
}

/// One design's part of a nested pass ([`margins_nested`], [`weighted_sum_nested`]): its input
/// vectors (thetas or coefficient vectors) and their outputs.
pub struct Share<'s, 'a> {
    pub design: &'s Design<'a>,
    pub inputs: Vec<&'s [f64]>,
    pub outs: Vec<&'s mut [f64]>,
}

/// The shares' designs, longest first, when they nest in the longest ([`Design::nests_in`]),
/// fuse their maps and `fits` each share's vectors; the longest leads the pass.
fn nested_order(shares: &mut [Share], fits: impl Fn(&Share) -> bool) -> bool {
    shares.sort_by_key(|s| std::cmp::Reverse(s.design.n_rows()));
    let Some(outer) = shares.first().map(|s| s.design) else {
        return false;
    };
    shares.iter().all(|s| s.design.nests_in(outer) && fits(s))
}

/// Runs `f(share, group)` for each group of rows of the longest share (the first, after
/// [`nested_order`]) and each share that has them: the group's rows cut to the share's length,
/// read through its column map, the next group `ahead` for the leading share only (the others
/// read the rows in cache). `false`, running nothing, unless the first design is dense.
fn each_nested_group(shares: &mut [Share], mut f: impl FnMut(&mut Share, &Group)) -> bool {
    let Some(outer) = shares.first().map(|s| s.design) else {
        return false;
    };
    let Source::Dense(x, _) = &outer.source else {
        return false;
    };
    outer.each_group(x, None, 0..outer.n_rows(), |group| {
        for (k, share) in shares.iter_mut().enumerate() {
            let g = group
                .rows
                .len()
                .min(share.design.n_rows().saturating_sub(group.first));
            let Source::Dense(_, map) = share.design.source else {
                continue;
            };
            if g > 0 {
                let ahead = if k == 0 { group.ahead } else { &[] };
                let rows = &group.rows[..g];
                f(
                    share,
                    &Group {
                        map,
                        rows,
                        ahead,
                        ..*group
                    },
                );
            }
        }
    });
    true
}

/// [`Design::margins_each`] of several designs whose rows nest ([`Design::nests_in`]) in one
/// pass over the longest one's rows: each group of source rows is read once, then passed by
/// every design that has it, through its own map and row scales while it is in cache. Every
/// margin is bit for bit its design's own (the same groups, kernels and sums). Returns
/// whether it did so; otherwise (the designs do not nest, or an output is shorter than its
/// design) nothing is written.
pub fn margins_nested(shares: &mut [Share]) -> bool {
    let fits = |s: &Share| s.outs.iter().all(|z| z.len() >= s.design.n_rows());
    if !nested_order(shares, fits) {
        return false;
    }
    let most = shares.iter().map(|s| s.inputs.len()).max().unwrap_or(0);
    let mut sums = vec![0.0; most * mapped::GROUP];
    each_nested_group(shares, |share, group| {
        let (des, thetas) = (share.design, &share.inputs);
        des.group_margins(group, 0, thetas, &mut sums, &mut share.outs)
    })
}

/// [`Design::weighted_sum_each`] of several designs whose rows nest, in one pass over the
/// longest one's rows (as [`margins_nested`]): each output adds its rows' terms in row order,
/// bit for bit its design's own. Returns whether it did so; otherwise nothing is written.
pub fn weighted_sum_nested(shares: &mut [Share]) -> bool {
    let fits = |s: &Share| {
        let n = s.inputs.first().map_or(0, |c| c.len());
        n == s.design.n_rows()
            && s.inputs.iter().all(|c| c.len() == n)
            && s.outs.iter().all(|o| o.len() == s.design.dim())
    };
    if !nested_order(shares, fits) {
        return false;
    }
    for share in shares.iter_mut() {
        share.outs.iter_mut().for_each(|o| o.fill(0.0));
    }
    let cols = 0..shares[0].design.dim();
    let most = shares.iter().map(|s| s.inputs.len()).max().unwrap_or(0);
    let mut coefs = vec![0.0; most * mapped::GROUP];
    each_nested_group(shares, |share, group| {
        let (des, cs) = (share.design, &share.inputs);
        des.group_sums(group, &cols, cs, &mut coefs, &mut share.outs)
    })
}

/// One group of a design's rows in a combined pass: `rows` (their source slices) from the
/// design's row `first`, read through `map` (if any); `ahead` the rows to fetch meanwhile.
#[derive(Clone, Copy)]
struct Group<'g> {
    map: Option<&'g ColumnMap>,
    first: usize,
    rows: &'g [&'g [f64]],
    ahead: &'g [&'g [f64]],
}

/// Columns `cols` of each of a group of rows (the rest of the array empty).
fn columns<'r>(rows: &[&'r [f64]], cols: &std::ops::Range<usize>) -> [&'r [f64]; mapped::GROUP] {
    let mut part: [&[f64]; mapped::GROUP] = [&[]; mapped::GROUP];
    for (p, row) in part.iter_mut().zip(rows) {
        *p = &row[cols.clone()];
    }
    part
}

/// Whether `cols` lists every one of `n_cols` columns in order: then a source row is read
/// as a slice, with no column lookup per value.
pub(super) fn every_column_in_order(cols: &[usize], n_cols: usize) -> bool {
    cols.len() == n_cols && cols.iter().enumerate().all(|(k, &c)| k == c)
}

/// Logistic regression (and every linear ERM learner) separates exactly two classes.
pub fn check_two_classes(data: &Dataset) -> Result<()> {
    if data.n_classes() != 2 {
        return Err(Error::Data {
            dataset: data.name.clone(),
            reason: format!(
                "logistic regression needs two classes, found {}",
                data.n_classes()
            ),
        });
    }
    Ok(())
}

/// Labels y_i in {-1, +1} of the rows: class 1 -> +1, class 0 -> -1 (two classes only).
pub fn labels_pm1(data: &Dataset, rows: &[u32]) -> Result<Vec<f64>> {
    check_two_classes(data)?;
    Ok(rows
        .iter()
        .map(|&i| {
            if data.labels[i as usize] == 1 {
                1.0
            } else {
                -1.0
            }
        })
        .collect())
}

/// Sums of squares of a group of rows of equal length, value j of a row taken as
/// `value(j, x_j)`, each row's terms added in column order (as
/// `iter().map(|v| v.powi(2)).sum()`); the rows of `next` are fetched as these pass
/// ([`mapped::fetch_ahead`]).
#[inline(always)]
fn sq_norms_group(
    rows: [&[f64]; mapped::GROUP],
    next: &[&[f64]],
    value: impl Fn(usize, f64) -> f64,
) -> [f64; mapped::GROUP] {
    let d = rows[0].len();
    let rows = rows.map(|r| &r[..d]);
    let mut acc = [0.0f64; mapped::GROUP];
    for j in 0..d {
        if j % 8 == 0 {
            mapped::fetch_ahead(next, j);
        }
        for (acc, row) in acc.iter_mut().zip(&rows) {
            let v = value(j, row[j]);
            *acc += v * v;
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Rng, rng_from};
    use rand::Rng as _;
    use rand::seq::SliceRandom as _;

    fn random_binary(n: usize, d: usize) -> BinaryMatrix {
        let mut rng = rng_from(&["design-test"]);
        let mut m = BinaryMatrix::new(d);
        for _ in 0..n {
            let ones: Vec<u32> = (0..d as u32).filter(|_| rng.r#gen::<f64>() < 0.3).collect();
            m.push_row(&ones);
        }
        m
    }

    /// n rows whose on-feature densities cycle through `density` (rows of every length).
    fn varied_binary(
        rng: &mut crate::rng::Rng,
        n: usize,
        d: usize,
        density: [f64; 3],
    ) -> BinaryMatrix {
        let mut m = BinaryMatrix::new(d);
        for i in 0..n {
            let p = density[i % 3];
            let ones: Vec<u32> = (0..d as u32).filter(|_| rng.r#gen::<f64>() < p).collect();
            m.push_row(&ones);
        }
        m
    }

    /// The CSR passes (`csr`) round exactly as the one-row loops: margins as `dot` row by
    /// row, X^T c as adding c_i x_i row after row, for all columns and for a permuted subset,
    /// both encodings, row counts with and without a remainder of four, rows of every length
    /// and values spanning twelve orders of magnitude (so any other order of the additions
    /// would show in the bits).
    #[test]
    fn csr_passes_round_as_the_one_row_loops() {
        let mut rng = rng_from(&["csr-bits"]);
        let d = 23;
        let m = varied_binary(&mut rng, 101, d, [0.05, 0.3, 0.9]);
        let mut wide = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|_| (rng.r#gen::<f64>() - 0.5) * 10f64.powi(rng.gen_range(-6..6)))
                .collect()
        };
        let (theta_all, theta_sub, c) = (wide(d), wide(7), wide(101));
        let scales: Vec<f64> = (0..101).map(|i| 0.5 + (i % 7) as f64 * 0.1).collect();
        let sub: [usize; 7] = [20, 3, 0, 17, 9, 22, 5];
        for n in [101usize, 100, 3] {
            let rows: Vec<u32> = (0..n as u32).rev().collect();
            for enc in [Encoding::Indicator, Encoding::PlusMinus] {
                for (cols, theta) in [(None, &theta_all), (Some(&sub[..]), &theta_sub)] {
                    let mut des = Design::binary(&m, &rows, cols, enc).unwrap();
                    des.set_scales(scales[..n].to_vec());
                    let mut z = vec![0.0; n];
                    des.margins(theta, &mut z);
                    for (i, zi) in z.iter().enumerate() {
                        assert_eq!(zi.to_bits(), des.dot(i, theta).to_bits(), "row {i}");
                    }
                    // A batch as DP-SGD draws one (any order, any length: a remainder too).
                    let batch: Vec<u32> = (0..n as u32).map(|k| (k * 37 + 11) % n as u32).collect();
                    let mut dots = Vec::new();
                    des.dots(&batch, theta, &mut dots);
                    assert_eq!(dots.len(), batch.len());
                    for (&i, d) in batch.iter().zip(&dots) {
                        assert_eq!(d.to_bits(), des.dot(i as usize, theta).to_bits(), "row {i}");
                    }
                    if enc == Encoding::Indicator {
                        let mut g = vec![0.0; theta.len()];
                        des.weighted_sum(&c[..n], &mut g);
                        let mut want = vec![0.0; theta.len()];
                        for (i, &ci) in c[..n].iter().enumerate() {
                            des.axpy(i, ci, &mut want);
                        }
                        for (k, (a, b)) in g.iter().zip(&want).enumerate() {
                            assert_eq!(a.to_bits(), b.to_bits(), "n {n}, column {k}");
                        }
                    }
                }
            }
        }
    }

    /// X^T c through the hot/cold column split (`csr::HotColumns`) rounds exactly as adding
    /// c_i x_i row after row: all columns and a permuted subset, hot columns in groups of four
    /// and a remainder, a term of -0.0, values over twelve orders of magnitude; and a released
    /// split is rebuilt the same.
    #[test]
    fn hot_column_sums_round_as_the_row_scatter() {
        let mut rng = rng_from(&["hot-bits"]);
        let (n, d) = (HOT_MIN_ROWS * 3 + 7, 37);
        let mut m = BinaryMatrix::new(d);
        for _ in 0..n {
            // Columns 0..13 on in 11% to 95% of the rows (hot: >= 1/16), the others in 1%.
            let ones: Vec<u32> = (0..d as u32)
                .filter(|&j| {
                    rng.r#gen::<f64>() < if j < 13 { 0.95 - 0.07 * j as f64 } else { 0.01 }
                })
                .collect();
            m.push_row(&ones);
        }
        let mut c: Vec<f64> = (0..n)
            .map(|_| (rng.r#gen::<f64>() - 0.5) * 10f64.powi(rng.gen_range(-6..6)))
            .collect();
        c[5] = -0.0;
        let rows: Vec<u32> = (0..n as u32).rev().collect();
        let sub: Vec<usize> = (0..d).rev().filter(|j| j % 5 != 1).collect();
        for (cols, hot) in [(None, 13), (Some(&sub[..]), 10)] {
            let mut des = Design::binary(&m, &rows, cols, Encoding::Indicator).unwrap();
            des.set_scales((0..n).map(|i| 0.5 + (i % 7) as f64 * 0.1).collect());
            let mut want = vec![0.0; des.dim()];
            for (i, &ci) in c.iter().enumerate() {
                des.axpy(i, ci, &mut want);
            }
            for round in 0..2 {
                assert_eq!(des.hot_columns().expect("hot columns").n_cols(), hot);
                let mut g = vec![0.0; des.dim()];
                des.weighted_sum(&c, &mut g);
                for (k, (a, b)) in g.iter().zip(&want).enumerate() {
                    assert_eq!(a.to_bits(), b.to_bits(), "column {k}, round {round}");
                }
                des.release_fit_scratch();
                assert!(des.hot.slot().is_none());
            }
        }
    }

    /// The Hessian's scatter (rows in order, each row's pairs into the upper triangle, zero
    /// weights skipped) rounds exactly as the textbook loop, entry by entry: on every column,
    /// and on a permuted subset of the columns (rows mapped to parameters once per row).
    /// The row norms eight rows at a time are each row's own sum, bit for bit, on a copy and
    /// through a column map (shuffled rows, a count that is not a multiple of eight, columns
    /// of every scale, and a column subset that takes the row-by-row path).
    #[test]
    fn row_norms_side_by_side_round_as_one_at_a_time() {
        let mut rng = rng_from(&["row-norms"]);
        let (n, d) = (61, 37);
        let x = ndarray::Array2::from_shape_fn((n, d), |_| {
            (rng.r#gen::<f64>() - 0.5) * 10f64.powi(rng.gen_range(-8..8))
        });
        let map = ColumnMap {
            a: (0..d).map(|j| 0.25 + j as f64 * 0.37).collect(),
            b: (0..d).map(|j| j as f64 * -0.11).collect(),
        };
        let mut rows: Vec<u32> = (0..n as u32).collect();
        rows.shuffle(&mut rng);
        let all: Vec<usize> = (0..d).collect();
        let some: Vec<usize> = (0..d).filter(|j| j % 4 != 2).collect();
        let some_map = ColumnMap {
            a: some.iter().map(|&j| map.a[j]).collect(),
            b: some.iter().map(|&j| map.b[j]).collect(),
        };
        let designs = [
            Design::dense(x.view()),
            Design::dense_mapped(x.view(), &rows, &all, &map).unwrap(),
            Design::dense_mapped(x.view(), &rows[..13], &some, &some_map).unwrap(),
        ];
        for des in &designs {
            let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
            let one = (0..des.n_rows()).map(|i| des.raw_sq_norm(i)).collect();
            assert_eq!(bits(des.raw_sq_norms()), bits(one));
        }
    }

    #[test]
    fn gram_rounds_as_one_pass_over_the_rows() {
        let mut rng = rng_from(&["gram-bits"]);
        let n_cols = 100;
        let m = varied_binary(&mut rng, 203, n_cols, [0.02, 0.1, 0.3]);
        let rows: Vec<u32> = (0..203).collect();
        let w: Vec<f64> = (0..203)
            .map(|i| {
                let v = rng.r#gen::<f64>() * 10f64.powi(rng.gen_range(-6..6));
                if i % 17 == 0 { 0.0 } else { v }
            })
            .collect();
        let sub: Vec<usize> = (0..n_cols).rev().filter(|j| j % 3 != 1).collect();
        for cols in [None, Some(&sub[..])] {
            let mut des = Design::binary(&m, &rows, cols, Encoding::Indicator).unwrap();
            des.set_scales((0..203).map(|i| 0.5 + (i % 5) as f64 * 0.2).collect());
            let d = des.dim();
            let h = des.weighted_gram(&w);
            let mut want = vec![0.0; d * d];
            for (i, &r) in rows.iter().enumerate() {
                let a = w[i] * des.scales()[i] * des.scales()[i];
                if a == 0.0 {
                    continue;
                }
                let row = m.row(r as usize);
                for (p, &j) in row.iter().enumerate() {
                    for &jl in &row[p..] {
                        let (k, l) = (des.col_map[j as usize], des.col_map[jl as usize]);
                        if k != UNUSED && l != UNUSED {
                            want[k.min(l) as usize * d + k.max(l) as usize] += a;
                        }
                    }
                }
            }
            for k in 0..d {
                for l in k..d {
                    let (x, y) = (h[k * d + l], want[k * d + l]);
                    assert_eq!(x.to_bits(), y.to_bits(), "({k}, {l}), {} columns", d);
                    assert_eq!(h[l * d + k].to_bits(), y.to_bits(), "({l}, {k})");
                }
            }
        }
    }

    /// On a two-thread pool, with [`Splitting::passes`], the passes split ([`Design::halves`])
    /// and still round as on one thread: margins, X^T c and the Gram matrix, all columns and a permuted subset, both
    /// encodings, zero weights, rows of every length and values over twelve orders of
    /// magnitude.
    #[test]
    fn two_thread_passes_round_as_one_thread() {
        let mut rng = rng_from(&["halves-bits"]);
        let (n, d) = (PAR_MIN_ROWS + 1003, 41);
        let m = varied_binary(&mut rng, n, d, [0.02, 0.2, 0.7]);
        let mut wide = |len: usize| -> Vec<f64> {
            (0..len)
                .map(|_| (rng.r#gen::<f64>() - 0.5) * 10f64.powi(rng.gen_range(-6..6)))
                .collect()
        };
        let (theta_all, theta_sub, c) = (wide(d), wide(9), wide(n));
        let w: Vec<f64> = c
            .iter()
            .enumerate()
            .map(|(i, v)| if i % 13 == 0 { 0.0 } else { v.abs() })
            .collect();
        let sub: [usize; 9] = [40, 3, 0, 17, 9, 22, 5, 31, 12];
        let rows: Vec<u32> = (0..n as u32).rev().collect();
        let (one, two) = one_and_two_thread_pools();
        for enc in [Encoding::Indicator, Encoding::PlusMinus] {
            for (cols, theta) in [(None, &theta_all), (Some(&sub[..]), &theta_sub)] {
                let mut des = Design::binary(&m, &rows, cols, enc).unwrap();
                des.set_scales((0..n).map(|i| 0.5 + (i % 7) as f64 * 0.1).collect());
                let passes = |des: &Design| {
                    let mut z = vec![0.0; n];
                    des.margins(theta, &mut z);
                    let mut g = vec![0.0; theta.len()];
                    des.weighted_sum(&c, &mut g);
                    let h = des.weighted_gram(&w);
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    (bits(&z), bits(&g), bits(&h))
                };
                assert!(
                    two.install(|| des.halves().is_none()),
                    "the runner's fits do not split"
                );
                let split_des = des.clone().with_splitting(Splitting {
                    passes: true,
                    ..Splitting::default()
                });
                assert!(one.install(|| split_des.halves().is_none()));
                let split = two.install(|| split_des.halves().map(|h| (h.row, h.col, h.gram)));
                let (_, col, gram) = split.expect("a two-thread pool splits the passes");
                assert!(0 < col && col < d && 0 < gram && gram < d, "{split:?}");
                assert!(
                    two.install(|| split_passes(&des, |d| d.halves().is_some())),
                    "a single fit's design splits"
                );
                let split = two.install(|| passes(&split_des));
                assert_eq!(one.install(|| passes(&des)), split);
            }
        }
    }

    /// A dense X^T X split across two threads ([`Splitting::gram`]) rounds as on one thread,
    /// and the cut halves the triangle at a tile edge.
    #[test]
    fn a_split_dense_gram_rounds_as_one_thread() {
        assert_eq!(gram_cut(1500), 432);
        assert_eq!(gram_cut(70), 16);
        assert_eq!(gram_cut(20), 0, "too small to split");
        let mut rng = rng_from(&["gram-split-bits"]);
        let (n, d) = (300, 70);
        let x = Array2::from_shape_fn((n, d), |_| {
            (rng.r#gen::<f64>() - 0.5) * 10f64.powi(rng.gen_range(-6..6))
        });
        let w: Vec<f64> = (0..n)
            .map(|i| {
                if i % 11 == 0 {
                    0.0
                } else {
                    0.5 + (i % 5) as f64
                }
            })
            .collect();
        let mut des = Design::dense(x.view());
        des.set_scales((0..n).map(|i| 0.5 + (i % 7) as f64 * 0.1).collect());
        let bits = |h: Vec<f64>| h.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let (one, two) = one_and_two_thread_pools();
        let want = bits(one.install(|| des.weighted_gram(&w)));
        let des = des.with_splitting(Splitting {
            gram: true,
            ..Splitting::default()
        });
        assert_eq!(bits(two.install(|| des.weighted_gram(&w))), want);
        assert_eq!(bits(one.install(|| des.weighted_gram(&w))), want);
    }

    #[test]
    fn sparse_operations_match_a_dense_copy() {
        let m = random_binary(40, 9);
        let rows: Vec<u32> = (0..40).rev().step_by(2).collect();
        let cols = [7usize, 0, 3, 4, 8];
        for enc in [Encoding::Indicator, Encoding::PlusMinus] {
            let mut des = Design::binary(&m, &rows, Some(&cols), enc).unwrap();
            let scales: Vec<f64> = (0..rows.len()).map(|i| 0.1 + i as f64 * 0.05).collect();
            des.set_scales(scales);
            let x = des.to_dense();
            let theta = [0.3, -1.0, 2.0, 0.5, -0.7];
            let c: Vec<f64> = (0..rows.len()).map(|i| (i as f64).sin()).collect();
            let mut z = vec![0.0; rows.len()];
            des.margins(&theta, &mut z);
            let mut g = vec![0.0; 5];
            des.weighted_sum(&c, &mut g);
            let h = des.weighted_gram(&c);
            for i in 0..rows.len() {
                let zi: f64 = (0..5).map(|k| x[[i, k]] * theta[k]).sum();
                assert!((z[i] - zi).abs() < 1e-12);
                assert!((des.dot(i, &theta) - zi).abs() < 1e-12);
                let n2: f64 = (0..5).map(|k| x[[i, k]].powi(2)).sum();
                assert!((des.row_norm(i) - n2.sqrt()).abs() < 1e-12);
            }
            for k in 0..5 {
                let gk: f64 = (0..rows.len()).map(|i| c[i] * x[[i, k]]).sum();
                assert!((g[k] - gk).abs() < 1e-12);
                for l in 0..5 {
                    let hkl: f64 = (0..rows.len()).map(|i| c[i] * x[[i, k]] * x[[i, l]]).sum();
                    assert!((h[k * 5 + l] - hkl).abs() < 1e-12);
                }
            }
            // Dense source over the same values agrees.
            let dd = Design::dense(x.view());
            let hd = dd.weighted_gram(&c);
            for (a, b) in h.iter().zip(&hd) {
                assert!((a - b).abs() < 1e-12);
            }
        }
    }

    /// `margins_each` and `weighted_sum_each` for one to six vectors give each vector's own
    /// `margins` and `weighted_sum`, bit for bit (called on every design of the test below).
    fn passes_each_round_as_one_at_a_time(des: &Design, rng: &mut crate::rng::Rng) {
        let (n, k) = (des.n_rows(), des.dim());
        for count in 1..=6 {
            let thetas: Vec<Vec<f64>> = (0..count)
                .map(|_| (0..k).map(|_| rng.r#gen::<f64>() - 0.5).collect())
                .collect();
            let cs: Vec<Vec<f64>> = (0..count)
                .map(|_| (0..n).map(|_| rng.r#gen::<f64>() - 0.3).collect())
                .collect();
            let (mut zs, mut gs) = (vec![vec![0.0; n]; count], vec![vec![1.0; k]; count]);
            {
                let t: Vec<&[f64]> = thetas.iter().map(Vec::as_slice).collect();
                let mut z: Vec<&mut [f64]> = zs.iter_mut().map(Vec::as_mut_slice).collect();
                des.margins_each(&t, &mut z);
                let c: Vec<&[f64]> = cs.iter().map(Vec::as_slice).collect();
                let mut g: Vec<&mut [f64]> = gs.iter_mut().map(Vec::as_mut_slice).collect();
                des.weighted_sum_each(&c, &mut g);
            }
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for j in 0..count {
                let (mut z, mut g) = (vec![0.0; n], vec![0.0; k]);
                des.margins(&thetas[j], &mut z);
                des.weighted_sum(&cs[j], &mut g);
                assert_eq!(bits(&zs[j]), bits(&z), "margins {j} of {count}");
                assert_eq!(bits(&gs[j]), bits(&g), "X^T c {j} of {count}");
            }
            // In parts (lockstep's split rounds): rows cut anywhere, columns at a block's
            // edge or inside one, give the whole pass's entries.
            if !des.splits_combined() {
                continue;
            }
            for (row_cut, col_cut) in [(0, 0), (n / 2, k / 2), (n - 1, 16.min(k)), (n, k - 1)] {
                let t: Vec<&[f64]> = thetas.iter().map(Vec::as_slice).collect();
                let c: Vec<&[f64]> = cs.iter().map(Vec::as_slice).collect();
                let (mut z, mut g) = (vec![vec![9.0; n]; count], vec![vec![9.0; k]; count]);
                for rows in [0..row_cut, row_cut..n] {
                    let mut part: Vec<&mut [f64]> =
                        z.iter_mut().map(|z| &mut z[rows.clone()]).collect();
                    des.each_part(Pass::Margins, rows, &t, &mut part);
                }
                for cols in [0..col_cut, col_cut..k] {
                    let mut part: Vec<&mut [f64]> =
                        g.iter_mut().map(|g| &mut g[cols.clone()]).collect();
                    des.each_part(Pass::WeightedSum, cols, &c, &mut part);
                }
                for j in 0..count {
                    assert_eq!(
                        bits(&z[j]),
                        bits(&zs[j]),
                        "margins {j} cut at row {row_cut}"
                    );
                    assert_eq!(
                        bits(&g[j]),
                        bits(&gs[j]),
                        "X^T c {j} cut at column {col_cut}"
                    );
                }
            }
        }
    }

    /// A design read through a column map gives every pass of a design over the mapped copy
    /// bit for bit (margins, X^T c, the Gram matrix, dot, axpy, norms, squared sums), with
    /// rows in a shuffled order, all columns or a subset, at D across a block's edge.
    #[test]
    fn mapped_rows_pass_as_a_mapped_copy() {
        let mut rng = rng_from(&["mapped-design"]);
        for (n, d) in [(37usize, 5usize), (70, 300)] {
            let x = Array2::from_shape_fn((n + 3, d), |_| rng.r#gen::<f64>() * 8.0 - 3.0);
            let mut rows: Vec<u32> = (0..n as u32 + 3).collect();
            rows.shuffle(&mut rng);
            rows.truncate(n);
            for cols in [
                (0..d).collect::<Vec<_>>(),
                (0..d).rev().step_by(2).collect(),
            ] {
                let k = cols.len();
                let map = ColumnMap {
                    a: (0..k).map(|_| rng.r#gen::<f64>() * 2.0 - 0.5).collect(),
                    b: (0..k).map(|_| rng.r#gen::<f64>() - 0.5).collect(),
                };
                let copy = Array2::from_shape_fn((n, k), |(i, j)| {
                    map.a[j] * x[[rows[i] as usize, cols[j]]] + map.b[j]
                });
                let scales: Vec<f64> = (0..n).map(|_| rng.r#gen::<f64>() + 0.1).collect();
                let mut by_copy = Design::dense(copy.view());
                let mut mapped = Design::dense_mapped(x.view(), &rows, &cols, &map).unwrap();
                for i in 0..n {
                    assert_eq!(
                        mapped.raw_sq_norm(i).to_bits(),
                        by_copy.raw_sq_norm(i).to_bits()
                    );
                }
                by_copy.set_scales(scales.clone());
                mapped.set_scales(scales);
                let theta: Vec<f64> = (0..k).map(|_| rng.r#gen::<f64>() - 0.5).collect();
                let c: Vec<f64> = (0..n).map(|_| rng.r#gen::<f64>() - 0.3).collect();
                let pass = |des: &Design| {
                    let (mut z, mut g, mut q) = (vec![0.0; n], vec![0.0; k], vec![0.0; k]);
                    des.margins(&theta, &mut z);
                    des.weighted_sum(&c, &mut g);
                    des.weighted_sq_sum(&c, &mut q);
                    let mut ax = theta.clone();
                    des.axpy(n / 2, 0.7, &mut ax);
                    let dots: Vec<f64> = (0..n).map(|i| des.dot(i, &theta)).collect();
                    // The grouped margins are each row's own dot product.
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&z), bits(&dots), "margins as row-by-row dots");
                    let mut by_rows = vec![0.0; k];
                    for (i, &ci) in c.iter().enumerate() {
                        des.axpy(i, ci, &mut by_rows);
                    }
                    assert_eq!(bits(&g), bits(&by_rows), "X^T c as row-by-row axpys");
                    [z, g, q, ax, dots, des.weighted_gram(&c)]
                        .map(|v| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
                };
                assert_eq!(
                    pass(&mapped),
                    pass(&by_copy),
                    "n = {n}, d = {d}, {k} columns"
                );
                passes_each_round_as_one_at_a_time(&mapped, &mut rng);
                passes_each_round_as_one_at_a_time(&by_copy, &mut rng);
            }
        }
    }

    /// Designs whose rows are prefixes of one shuffled order, each through its own column map
    /// and row scales (appendix B's subsets of one trial), pass together in one read of the
    /// longest one's rows with every margin and X^T c entry bit for bit each design's own:
    /// lengths inside and at the end of a group of rows, D across a block's edge, several
    /// vectors a design. Designs that do not nest are refused, their outputs untouched.
    #[test]
    fn nested_designs_pass_as_each_their_own() {
        let mut rng = rng_from(&["nested-designs"]);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for d in [5usize, 300] {
            let x = Array2::from_shape_fn((120, d), |_| rng.r#gen::<f64>() * 8.0 - 3.0);
            let mut order: Vec<u32> = (0..120).collect();
            order.shuffle(&mut rng);
            let lengths = [101usize, 64, 37, 8];
            let a = |r: &mut Rng| r.r#gen::<f64>() * 2.0 - 0.5;
            let b = |r: &mut Rng| r.r#gen::<f64>() - 0.5;
            let maps = random_maps(&lengths, d, &mut rng, a, b);
            let scale = |r: &mut Rng| r.r#gen::<f64>() + 0.1;
            let designs = nested_designs(x.view(), &order, &lengths, &maps, &mut rng, scale);
            for (k, des) in designs.iter().enumerate() {
                assert!(designs[..=k].iter().all(|outer| des.nests_in(outer)));
                assert!(!designs[0].nests_in(des) || k == 0);
            }
            // Per design: two or three vectors (thetas, and coefficients over its rows).
            let thetas: Vec<Vec<Vec<f64>>> = lengths
                .iter()
                .enumerate()
                .map(|(k, _)| {
                    (0..2 + k % 2)
                        .map(|_| (0..d).map(|_| rng.r#gen::<f64>() - 0.5).collect())
                        .collect()
                })
                .collect();
            let coefs: Vec<Vec<Vec<f64>>> = lengths
                .iter()
                .zip(&thetas)
                .map(|(&n, t)| {
                    t.iter()
                        .map(|_| (0..n).map(|_| rng.r#gen::<f64>() - 0.3).collect())
                        .collect()
                })
                .collect();
            // Shortest first: the passes lead with the longest whatever the order given.
            let run = |margins: bool, ks: &[usize]| {
                let mut outs: Vec<Vec<Vec<f64>>> = ks
                    .iter()
                    .map(|&k| {
                        let len = if margins { lengths[k] } else { d };
                        vec![vec![7.0; len]; thetas[k].len()]
                    })
                    .collect();
                let mut shares: Vec<Share> = ks
                    .iter()
                    .zip(outs.iter_mut())
                    .map(|(&k, outs)| Share {
                        design: &designs[k],
                        inputs: match margins {
                            true => thetas[k].iter().map(Vec::as_slice).collect(),
                            false => coefs[k].iter().map(Vec::as_slice).collect(),
                        },
                        outs: outs.iter_mut().map(Vec::as_mut_slice).collect(),
                    })
                    .collect();
                let done = match margins {
                    true => margins_nested(&mut shares),
                    false => weighted_sum_nested(&mut shares),
                };
                (done, outs)
            };
            for margins in [true, false] {
                let (done, outs) = run(margins, &[3, 2, 1, 0]);
                assert!(done);
                for (&k, outs) in [3usize, 2, 1, 0].iter().zip(&outs) {
                    for (j, out) in outs.iter().enumerate() {
                        let mut own = vec![0.0; out.len()];
                        match margins {
                            true => designs[k].margins(&thetas[k][j], &mut own),
                            false => designs[k].weighted_sum(&coefs[k][j], &mut own),
                        }
                        assert_eq!(bits(out), bits(&own), "D = {d}, design {k}, vector {j}");
                    }
                }
            }
            // Rows that are not a prefix (another order) do not nest: nothing is computed.
            let mut other = order.clone();
            other.swap(3, 90);
            let cols: Vec<usize> = (0..d).collect();
            let odd = Design::dense_mapped(x.view(), &other[..64], &cols, &maps[1]).unwrap();
            assert!(!odd.nests_in(&designs[0]) && !designs[2].nests_in(&odd));
            let theta = vec![0.5; d];
            let mut z = [vec![7.0; 101], vec![7.0; 64]];
            let [z0, z1] = &mut z;
            let mut shares = vec![
                Share {
                    design: &designs[0],
                    inputs: vec![&theta[..]],
                    outs: vec![&mut z0[..]],
                },
                Share {
                    design: &odd,
                    inputs: vec![&theta[..]],
                    outs: vec![&mut z1[..]],
                },
            ];
            assert!(!margins_nested(&mut shares));
            assert!(z.iter().flatten().all(|&v| v == 7.0));
        }
    }
}
