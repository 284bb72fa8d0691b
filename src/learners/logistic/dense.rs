//! Dense training rows for logistic regression: scaled once, shared by every cell that reads
//! the same rows (issue 15: no work done twice, no copies of a 2^20-row matrix).
//!
//! A dense fit reads its training rows through a per-column affine map ([`ColumnTransform`])
//! and clips them to norm 1. The scaled rows are an owned copy, which the passes stream
//! fastest, unless the copy would be large ([`COPY_MAX_BYTES`]) and hold more than half the
//! source's rows (appendix B's whole 2^20-row training set at D = 1000 and 1500, 8-12 GB), or
//! be over [`COPY_LARGE_MAX_BYTES`] (its 2^18-2^19-row subsets there): those are read through
//! the map ([`ColumnMap`]) instead, so a run stays within its datasets plus a constant. Either
//! way the values round exactly as the copy holds them. The scaled rows, the row scales and
//! everything computed from them without noise (exact fits, the functional mechanism's
//! polynomial coefficients) depend only on the rows' content in order, the columns and the
//! scaling, so they are memoised under one content key (see
//! [`crate::memo`]): FMsens1 and FMsens2 of a trial share one X^T X, and output perturbation,
//! the `w_distance` reference and LR at the same lambda share one minimiser.
//!
//! The whole training set of a grown split (`first_train`) is read in ascending row order
//! ([`fit_rows`]): every trial's nested order ends in that same set, so its fits (LR's target
//! at 2^20, the functional mechanism's coefficients there) are computed once per run instead
//! of once per trial. Every smaller subset keeps the trial's order, so stored results of the
//! smaller N stay bit for bit.

use super::LogisticModel;
use super::design::{ColumnMap, Design, every_column_in_order};
use super::harness::Scaling;
use super::preprocess::{Preprocessing, RowScaling, scale_rows};
use super::row_caches::{Bounds, KnownBounds, RowDigests, SharedWork};
use crate::data::{Dataset, PublicBounds, SplitRule};
use crate::memo::{Footprint, Key, KeyBuilder};
use ndarray::ArrayView2;
use std::borrow::Cow;
use std::sync::{Arc, Weak};

/// The buffers of dropped copies, kept for the next copies: a fresh page costs this VM far
/// more than the copy's writes (the kernel zeroes it at the first touch: about 11 s of CPU for
/// the 8.4 GB of copies of two appendix-B trials at D = 1000), and a trial makes copies of
/// every N from 2^4 to 2^17-2^20 rows, which the next trial makes again at the same sizes.
/// Bounded like the memo ([`SPARE_MAX_BYTES`]); only buffers of at least [`SPARE_MIN_BYTES`]
/// are kept (the allocator keeps the small ones itself). A buffer's values are overwritten
/// before they are read, so no result depends on which buffer a copy got.
/// They live in the dataset's workspace ([`SharedWork::spare`]).
/// Most recently returned last.
#[derive(Default)]
pub struct Spare(Vec<Vec<f64>>);

/// What the spare buffers may hold together (2 GiB, the dense memo's budget: appendix B's
/// whole ladder of copies at D = 100, 1.7 GB, fits).
const SPARE_MAX_BYTES: usize = 2 << 30;

/// The smallest buffer kept (16 MiB).
const SPARE_MIN_BYTES: usize = 16 << 20;

impl Spare {
    /// The smallest buffer that holds `len` values without wasting more than as many again,
    /// emptied; or a new one.
    fn take(&mut self, len: usize) -> Vec<f64> {
        let fits = |v: &Vec<f64>| v.capacity() >= len && v.capacity() <= 2 * len;
        let best = (0..self.0.len())
            .filter(|&i| fits(&self.0[i]))
            .min_by_key(|&i| self.0[i].capacity());
        match best {
            Some(i) => {
                let mut v = self.0.remove(i);
                v.clear();
                v
            }
            None => Vec::with_capacity(len),
        }
    }

    /// Keeps `v` for a later copy, dropping the buffers returned longest ago past the budget.
    fn put(&mut self, v: Vec<f64>) {
        let bytes = |v: &Vec<f64>| v.capacity() * 8;
        if bytes(&v) < SPARE_MIN_BYTES || bytes(&v) > SPARE_MAX_BYTES {
            return;
        }
        self.0.push(v);
        while self.0.iter().map(bytes).sum::<usize>() > SPARE_MAX_BYTES {
            self.0.remove(0);
        }
    }
}

/// Scaled copies up to this size are always made (1 GiB); a larger one only of at most half
/// the source's rows, and of at most [`COPY_LARGE_MAX_BYTES`]. A copy streams at the memory's
/// bandwidth; the map's fused passes at 0.8x of it in row order (the whole training set) and
/// 0.45-0.6x in a trial's shuffled order (D = 1000, before the grouped rounds), so the map is
/// kept for the sets whose copy would double the run's memory.
pub const COPY_MAX_BYTES: usize = 1 << 30;

/// The largest copy of a subset (2 GiB). Two workers' half-size copies at D = 1500 (2 x 6.3 GB)
/// beside the 12.7 GB of mapped source rows overfilled the 24 GB machine: the kernel dropped
/// the source's pages and read them back at 1.1 GB/s with the CPUs waiting (57% iowait), so
/// past this size a subset is read through the map, from rows that stay in memory.
pub const COPY_LARGE_MAX_BYTES: usize = 2 << 30;

/// Whether `n` rows of `d` columns out of a source of `source_rows` rows get a scaled copy
/// (see [`COPY_MAX_BYTES`], [`COPY_LARGE_MAX_BYTES`]).
fn copies(n: usize, d: usize, source_rows: usize) -> bool {
    let bytes = n * d * 8;
    bytes <= COPY_MAX_BYTES || (2 * n <= source_rows && bytes <= COPY_LARGE_MAX_BYTES)
}

/// Some training rows' scaled values (a copy, or their column map over the source), row
/// scales and memo key.
pub struct SharedDense {
    pub transform: ColumnTransform,
    rows: Vec<u32>,
    copy: Option<ndarray::Array2<f64>>,
    /// The copy's buffer, in values (a spare may hold up to twice the copy).
    capacity: usize,
    scales: Vec<f64>,
    key: Option<Key>,
    /// Where the copy's buffer goes when these rows are dropped (the workspace's spares, if
    /// it is still there).
    work: Weak<SharedWork>,
}

impl Footprint for SharedDense {
    fn bytes(&self) -> usize {
        (self.capacity + self.scales.len()) * 8 + self.rows.len() * 4
    }
}

impl Drop for SharedDense {
    /// The copy's buffer goes to the spares for the next copy ([`SharedWork::spare`]).
    fn drop(&mut self) {
        if let Some(copy) = self.copy.take()
            && let Some(work) = self.work.upgrade()
        {
            let (values, _) = copy.into_raw_vec_and_offset();
            work.spare
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .put(values);
        }
    }
}

impl SharedDense {
    /// The design over the copy, or over `x` (the matrix these rows were read from) through
    /// the column map; rows clipped to norm 1, carrying the memo key.
    pub fn design<'s>(&'s self, x: ArrayView2<'s, f64>) -> Design<'s> {
        let mut design = self.unclipped(x);
        design.set_scales(self.scales.clone());
        if let Some(work) = self.work.upgrade() {
            design = design.memoised_in(&work);
        }
        match self.key {
            Some(key) => design.with_key(key),
            None => design,
        }
    }

    /// The memo key these rows were made under.
    pub fn key(&self) -> Option<Key> {
        self.key
    }

    fn unclipped<'s>(&'s self, x: ArrayView2<'s, f64>) -> Design<'s> {
        let t = &self.transform;
        match &self.copy {
            Some(copy) => Design::dense(copy.view()),
            None => Design::dense_mapped(x, &self.rows, &t.cols, &t.map)
                .expect("one constant per column"),
        }
    }

    /// `rows` of `x` through `transform` (copied unless [`COPY_MAX_BYTES`] or `through_map`
    /// says otherwise), clipped to norm 1 (their scales), under `key`.
    fn new(
        x: ArrayView2<f64>,
        rows: &[u32],
        transform: ColumnTransform,
        key: Option<Key>,
        work: Option<&Arc<SharedWork>>,
        through_map: bool,
    ) -> Self {
        let (cols, map) = (&transform.cols, &transform.map);
        let copy = (copies(rows.len(), cols.len(), x.nrows()) && !through_map).then(|| {
            // Row by row from the source's slices (one ndarray index per value ran at a
            // quarter of the copy's memory speed), each row in one `extend` (a row in chunks
            // of 8 values cost three times the copy's time at 2^20 x 100), the row
            // `COPY_AHEAD` places later fetched while this one is copied: the rows come in a
            // trial's shuffled order, and one row ahead is too near to hide a miss. Each value
            // is a_j x_j + b_j as before.
            let every = every_column_in_order(cols, x.ncols());
            let consts = || map.a.iter().zip(&map.b);
            let len = rows.len() * cols.len();
            let mut values = match work {
                Some(w) => w.spare.lock().unwrap_or_else(|e| e.into_inner()).take(len),
                None => Vec::with_capacity(len),
            };
            for (k, &r) in rows.iter().enumerate() {
                let src = x.row(r as usize);
                match src.as_slice().filter(|_| every) {
                    Some(src) => {
                        let later = row_after(x, rows, k, COPY_AHEAD);
                        for j in (0..later.len()).step_by(8) {
                            super::mapped::fetch_ahead(&[later], j);
                        }
                        let consts = map.a.iter().zip(&map.b);
                        values.extend(src.iter().zip(consts).map(|(&v, (&a, &b))| a * v + b));
                    }
                    None => values.extend(
                        cols.iter()
                            .zip(consts())
                            .map(|(&c, (&a, &b))| a * src[c] + b),
                    ),
                }
            }
            let capacity = values.capacity();
            let copy = ndarray::Array2::from_shape_vec((rows.len(), cols.len()), values)
                .expect("one value per row and column");
            (copy, capacity)
        });
        let (copy, capacity) = copy.unzip();
        let mut shared = SharedDense {
            transform,
            rows: rows.to_vec(),
            copy,
            capacity: capacity.unwrap_or(0),
            scales: Vec::new(),
            key,
            work: work.map_or_else(Weak::new, Arc::downgrade),
        };
        shared.scales = {
            let mut design = shared.unclipped(x.view());
            let _ = scale_rows(&mut design, RowScaling::ClipToUnit);
            design.scales().to_vec()
        };
        shared
    }
}

/// The rows a fit reads, in order: ascending for the whole training set of a grown split
/// (shared by every trial, see the module doc), else `train` as given.
pub fn fit_rows<'r>(data: &Dataset, train: &'r [u32]) -> Cow<'r, [u32]> {
    match data.split {
        SplitRule::Grown { test, .. } if train.len() + test == data.n_rows() => {
            let mut rows = train.to_vec();
            rows.sort_unstable();
            Cow::Owned(rows)
        }
        _ => Cow::Borrowed(train),
    }
}

/// The dense training rows a fit reads and how it scales them: all a scaled design depends on.
pub struct DenseRows<'a> {
    pub x: ArrayView2<'a, f64>,
    /// In the order the fit reads them.
    pub rows: &'a [u32],
    pub features: Option<&'a [usize]>,
    pub scaling: Scaling,
    /// The declared public bounds, when the scaling uses them.
    pub public: Option<&'a PublicBounds>,
    /// The dataset's row digests, when `x` is its feature matrix.
    pub digests: Option<&'a RowDigests>,
    /// The column bounds of the dataset's row sets scaled last, when `x` is its feature matrix.
    pub bounds: Option<&'a KnownBounds>,
    /// Where the scaled rows are memoised, when `x` is the feature matrix of the dataset whose
    /// workspace this is.
    pub work: Option<&'a Arc<SharedWork>>,
    /// Whether new scaled rows are read through their column map, never copied
    /// ([`super::design::Splitting::through_map`]; the same bits either way).
    pub through_map: bool,
}

impl DenseRows<'_> {
    /// The scaled rows (through the memo when `x` is in standard layout, so that its rows can
    /// be hashed as slices).
    pub fn shared(&self) -> Arc<SharedDense> {
        let new = |key, work| {
            let transform = ColumnTransform::fit(self);
            SharedDense::new(self.x, self.rows, transform, key, work, self.through_map)
        };
        let Some(key) = self.key() else {
            return Arc::new(new(None, None));
        };
        // Outside a run's workspace: keyed (the trial records it), computed here.
        let Some(work) = self.work else {
            return Arc::new(new(Some(key), None));
        };
        if let Some(held) = work.last_read.get(key) {
            return held;
        }
        // This thread has moved on to other rows: its last ones go before these are made.
        drop(work.last_read.take());
        let value = work
            .dense
            .get_or_compute(key, || new(Some(key), Some(work)));
        work.last_read.hold(Arc::clone(&value));
        value
    }

    /// The memo key: the rows' content in order, the features, the scaling and its public
    /// bounds, from which the scaled design is derived alone (equal keys mean equal bits).
    /// With the dataset's row `digests`, each row is hashed as its digest (32 bytes, computed
    /// once per dataset and run); without them, as its values, which still costs far less than one
    /// exact fit on them. `None` when `x` is not in standard layout (its rows are not slices).
    pub fn key(&self) -> Option<Key> {
        let x = self.x;
        if !x.is_standard_layout() {
            return None;
        }
        let public = self.public;
        let (lo, hi) = public.map_or((&[][..], &[][..]), |b| (&b.lo[..], &b.hi[..]));
        let settings = |tag: &str| {
            KeyBuilder::new(tag)
                .str(self.scaling.name())
                .u64(u64::from(public.is_some()))
                .f64s(lo)
                .f64s(hi)
                .u64(x.ncols() as u64)
                .u64(u64::from(self.features.is_some()))
                .usizes(self.features.unwrap_or(&[]))
        };
        const BY_DIGESTS: &str = "lr-dense-row-digests";
        Some(match self.digests {
            Some(digests) => digests.set_key(settings(BY_DIGESTS).finish(), self.rows, || {
                let all = digests.of(x);
                settings(BY_DIGESTS)
                    .u32s(self.rows)
                    .digests(self.rows.iter().map(|&r| &all[r as usize]))
                    .finish()
            }),
            None => settings("lr-dense-design")
                .u32s(self.rows)
                .f64_rows(
                    self.rows
                        .iter()
                        .map(|&r| x.row(r as usize).to_slice().expect("standard layout")),
                )
                .finish(),
        })
    }
}

/// A per-column affine map x'_d = a_d x_d + b_d with constants read from the training rows:
/// min-max to [-1, 1] (`Scaling::Thesis`) or division by the largest |x_d| (`ColumnMax`); or,
/// with the dataset's declared public bounds (`Scaling::Public`), min-max to [-1, 1] by those
/// bounds: every constant is public, so the map is per-example and the step is private;
/// without declared bounds, `Scaling::Public` keeps the values (a = 1, b = 0: each value is
/// itself, a -0.0 becoming +0.0), so the rows are only clipped to norm 1.
/// The fit reads the rows through the map ([`ColumnMap`]); the fitted theta is folded back
/// into weights on the original features plus an intercept, so prediction needs no copy.
pub struct ColumnTransform {
    cols: Vec<usize>,
    map: ColumnMap,
    scaling: Scaling,
    public: bool,
}

/// Each column of `cols`'s smallest and largest value over `rows`, row by row (one pass over
/// contiguous rows, not a strided pass per column over shuffled rows); each column folds its
/// rows in their order. When every column is used in order the row is a slice and the folds
/// vectorise: appendix B scans 2^17-2^20 rows of 1000-1500 values per subset, and the
/// indexed loop ran at about 15 cycles a value.
fn column_bounds(x: ArrayView2<f64>, rows: &[u32], cols: &[usize]) -> (Vec<f64>, Vec<f64>) {
    let mut lo = vec![f64::INFINITY; cols.len()];
    let mut hi = vec![f64::NEG_INFINITY; cols.len()];
    fold_column_bounds(x, rows, 0, cols, &mut lo, &mut hi);
    (lo, hi)
}

/// [`column_bounds`], continued from the bounds the dataset remembers of a prefix of `rows`
/// (the same folds in the same order from there, so the same bits), and remembered in turn.
fn column_bounds_known(
    x: ArrayView2<f64>,
    rows: &[u32],
    cols: &[usize],
    known: &KnownBounds,
) -> (Vec<f64>, Vec<f64>) {
    let (lo, hi) = match known.longest_prefix(rows, cols) {
        Some((from, mut lo, mut hi)) => {
            fold_column_bounds(x, rows, from, cols, &mut lo, &mut hi);
            (lo, hi)
        }
        None => column_bounds(x, rows, cols),
    };
    known.remember(Bounds {
        cols: cols.to_vec(),
        rows: rows.to_vec(),
        lo: lo.clone(),
        hi: hi.clone(),
    });
    (lo, hi)
}

/// Folds `rows[from..]` into each column's bounds, row by row.
fn fold_column_bounds(
    x: ArrayView2<f64>,
    rows: &[u32],
    from: usize,
    cols: &[usize],
    lo: &mut [f64],
    hi: &mut [f64],
) {
    let identity = every_column_in_order(cols, x.ncols());
    for (k, &r) in rows.iter().enumerate().skip(from) {
        let row = x.row(r as usize);
        match row.as_slice().filter(|_| identity) {
            Some(row) => fold_bounds(lo, hi, row, next_row(x, rows, k)),
            None => {
                for ((l, h), &c) in lo.iter_mut().zip(hi.iter_mut()).zip(cols) {
                    let v = row[c];
                    (*l, *h) = (l.min(v), h.max(v));
                }
            }
        }
    }
}

/// The row after `rows[k]` as a slice of `x`, for a reader to fetch while it reads `rows[k]`
/// (empty after the last row, or where the row is not contiguous).
fn next_row<'x>(x: ArrayView2<'x, f64>, rows: &[u32], k: usize) -> &'x [f64] {
    row_after(x, rows, k, 1)
}

/// The row `ahead` places after the k-th of `rows` (empty past the end or for a row that is
/// not a slice).
fn row_after<'x>(x: ArrayView2<'x, f64>, rows: &[u32], k: usize, ahead: usize) -> &'x [f64] {
    let row = |q: u32| x.index_axis_move(ndarray::Axis(0), q as usize).to_slice();
    let next = rows.get(k + ahead).and_then(|&q| row(q));
    next.unwrap_or_default()
}

/// How many rows ahead a copy fetches the row it will copy.
const COPY_AHEAD: usize = 8;

/// `lo = min(lo, row)`, `hi = max(hi, row)` entry by entry, compiled for AVX2 where the CPU
/// has it (a third faster than the baseline's two lanes), the `next` row fetched as this one
/// passes ([`super::mapped::fetch_ahead`]: the rows come in a trial's shuffled order).
fn fold_bounds(lo: &mut [f64], hi: &mut [f64], row: &[f64], next: &[f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { fold_bounds_avx2(lo, hi, row, next) };
    }
    fold_bounds_any(lo, hi, row, next)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fold_bounds_avx2(lo: &mut [f64], hi: &mut [f64], row: &[f64], next: &[f64]) {
    fold_bounds_any(lo, hi, row, next)
}

#[inline(always)]
fn fold_bounds_any(lo: &mut [f64], hi: &mut [f64], row: &[f64], next: &[f64]) {
    let lines = lo.chunks_mut(8).zip(hi.chunks_mut(8)).zip(row.chunks(8));
    for (j, ((lo, hi), row)) in lines.enumerate() {
        super::mapped::fetch_ahead(&[next], 8 * j);
        for ((l, h), &v) in lo.iter_mut().zip(hi.iter_mut()).zip(row) {
            (*l, *h) = (l.min(v), h.max(v));
        }
    }
}

impl ColumnTransform {
    fn fit(src: &DenseRows) -> Self {
        let DenseRows {
            x,
            rows,
            features,
            scaling,
            public,
            bounds,
            ..
        } = *src;
        let cols: Vec<usize> = features.map_or_else(|| (0..x.ncols()).collect(), <[usize]>::to_vec);
        let (mut a, mut b) = (
            Vec::with_capacity(cols.len()),
            Vec::with_capacity(cols.len()),
        );
        // Public scaling without declared bounds keeps the values as they are (only the rows
        // are clipped to norm 1): no constant is read from the data.
        let as_given = scaling == Scaling::Public && public.is_none();
        let (lo_of, hi_of) = match public {
            Some(_) => (Vec::new(), Vec::new()),
            None if as_given => (Vec::new(), Vec::new()),
            None => match bounds {
                Some(known) => column_bounds_known(x, rows, &cols, known),
                None => column_bounds(x, rows, &cols),
            },
        };
        for (j, &c) in cols.iter().enumerate() {
            if as_given {
                a.push(1.0);
                b.push(0.0);
                continue;
            }
            let (lo, hi) = match public {
                Some(b) => (b.lo[c], b.hi[c]),
                None => (lo_of[j], hi_of[j]),
            };
            let (ac, bc) = match scaling {
                _ if public.is_some() => (2.0 / (hi - lo), -2.0 * lo / (hi - lo) - 1.0),
                Scaling::Thesis if hi > lo => (2.0 / (hi - lo), -2.0 * lo / (hi - lo) - 1.0),
                Scaling::Thesis => (0.0, 0.0),
                _ => {
                    let m = lo.abs().max(hi.abs());
                    (if m > 0.0 { 1.0 / m } else { 0.0 }, 0.0)
                }
            };
            a.push(ac);
            b.push(bc);
        }
        ColumnTransform {
            cols,
            map: ColumnMap { a, b },
            scaling,
            public: public.is_some(),
        }
    }

    pub fn preprocessing(&self) -> Preprocessing {
        if self.public {
            return Preprocessing {
                description: "min-max of every column to [-1, 1] by the declared public bounds, \
                              rows clipped to norm 1 (per-example)"
                    .into(),
                private: true,
            };
        }
        if self.scaling == Scaling::Public {
            // As `preprocess::scale_rows` describes its `ClipToUnit`.
            return Preprocessing {
                description: "each row divided by max(1, its L2 norm) (per-example)".into(),
                private: true,
            };
        }
        let what = match self.scaling {
            Scaling::Thesis => "min-max of every column to [-1, 1]",
            _ => "every column divided by its largest |value|",
        };
        Preprocessing {
            description: format!("{what} (bounds from the training data), rows clipped to norm 1"),
            private: false,
        }
    }

    /// theta.(a x + b) = (theta a).x + theta.b: weights on the original columns and an intercept.
    pub fn fold_into(&self, mut model: LogisticModel) -> LogisticModel {
        let theta = model.theta.clone();
        model.offset = theta.iter().zip(&self.map.b).map(|(t, b)| t * b).sum();
        model.theta = theta.iter().zip(&self.map.a).map(|(t, a)| t * a).collect();
        model.cols = self.cols.clone();
        model
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// A thread finds the rows it read last even once no memo holds them (another thread's
    /// copies pushed them out), lets go of them when it reads other rows, and hands them on.
    #[test]
    fn a_thread_keeps_the_rows_it_read_last_until_it_reads_others() {
        let x = Array2::from_shape_fn((40, 3), |(i, j)| (i * 3 + j) as f64 * 0.25 - 7.0);
        let (first, other): (Vec<u32>, Vec<u32>) = ((0..20).collect(), (20..40).collect());
        let work = Arc::new(SharedWork::default());
        let of = |rows| DenseRows {
            x: x.view(),
            rows,
            features: None,
            scaling: Scaling::Thesis,
            public: None,
            digests: None,
            bounds: None,
            work: Some(&work),
            through_map: false,
        };
        let read = of(&first).shared();
        work.dense.clear();
        assert!(
            Arc::ptr_eq(&of(&first).shared(), &read),
            "kept by this thread"
        );
        let other_rows = of(&other).shared();
        work.dense.clear();
        let weak = Arc::downgrade(&read);
        drop(read);
        assert!(weak.upgrade().is_none(), "let go once other rows were read");
        let held = work.last_read.take().expect("the other rows");
        assert!(Arc::ptr_eq(&held, &other_rows));
        assert!(
            work.last_read.take().is_none(),
            "taken out of this thread's hands"
        );
        work.last_read.hold(held);
        assert!(
            Arc::ptr_eq(&of(&other).shared(), &other_rows),
            "handed back"
        );
        // The workspace is the rows' last owner: dropping it lets go of them.
        let weak = Arc::downgrade(&other_rows);
        drop(other_rows);
        drop(work);
        assert!(weak.upgrade().is_none(), "dropped with the workspace");
    }

    /// The bounds of the row slices (AVX2 and portable) equal each column's own fold over the
    /// rows in their order, as do those of a column subset (the indexed path); ties of -0 and
    /// +0 included.
    #[test]
    fn column_bounds_fold_each_column_over_the_rows() {
        use rand::Rng as _;
        let mut rng = crate::rng::rng_from(&["column-bounds"]);
        let (n, d) = (300, 37);
        let x = Array2::from_shape_fn((n, d), |(i, j)| match (i + j) % 11 {
            0 => 0.0,
            1 => -0.0,
            _ => rng.r#gen::<f64>() - 0.5,
        });
        let rows: Vec<u32> = (0..n as u32).rev().step_by(3).collect();
        let fold = |c: usize| {
            rows.iter()
                .map(|&r| x[[r as usize, c]])
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
                    (l.min(v), h.max(v))
                })
        };
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let all: Vec<usize> = (0..d).collect();
        let (lo, hi) = column_bounds(x.view(), &rows, &all);
        let want: Vec<(f64, f64)> = all.iter().map(|&c| fold(c)).collect();
        let (wl, wh): (Vec<f64>, Vec<f64>) = want.into_iter().unzip();
        assert_eq!((bits(&lo), bits(&hi)), (bits(&wl), bits(&wh)));
        let (mut pl, mut ph) = (vec![f64::INFINITY; d], vec![f64::NEG_INFINITY; d]);
        for &r in &rows {
            fold_bounds_any(&mut pl, &mut ph, x.row(r as usize).to_slice().unwrap(), &[]);
        }
        assert_eq!((bits(&pl), bits(&ph)), (bits(&wl), bits(&wh)));
        let some = [5, 0, 36, 12];
        let (lo, hi) = column_bounds(x.view(), &rows, &some);
        let (sl, sh): (Vec<f64>, Vec<f64>) = some.iter().map(|&c| fold(c)).unzip();
        assert_eq!((bits(&lo), bits(&hi)), (bits(&sl), bits(&sh)));
    }

    /// A spare buffer serves the smallest copy it fits without wasting more than as many
    /// again, emptied; small buffers are not kept, and past the budget the buffers returned
    /// longest ago go.
    #[test]
    fn a_spare_buffer_serves_the_next_copy_it_fits() {
        let mib = (1 << 20) / 8;
        let mut spare = Spare(Vec::new());
        spare.put(vec![1.0; 8 * mib]);
        assert!(spare.0.is_empty(), "8 MiB: the allocator's to keep");
        let (a, b) = (vec![1.0; 64 * mib], vec![1.0; 32 * mib]);
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        spare.put(a);
        spare.put(b);
        let t = spare.take(40 * mib);
        assert_eq!((t.as_ptr(), t.len()), (pa, 0), "the 64 MiB one, emptied");
        let new = spare.take(70 * mib);
        assert!(new.capacity() >= 70 * mib, "none fits: a new one");
        assert_eq!(spare.0.len(), 1);
        let small = spare.take(15 * mib);
        assert!(small.as_ptr() != pb, "32 MiB wastes over twice 15");
        let fits = spare.take(16 * mib);
        assert_eq!(fits.as_ptr(), pb);
        let big = SPARE_MAX_BYTES / 8 / 3 * 2;
        let (c, d) = (
            Vec::<f64>::with_capacity(big),
            Vec::<f64>::with_capacity(big),
        );
        let pd = d.as_ptr();
        spare.put(c);
        spare.put(d);
        assert_eq!(
            spare.0.len(),
            1,
            "two thirds of the budget each: the older goes"
        );
        assert_eq!(spare.0[0].as_ptr(), pd);
    }

    /// Bounds continued from a remembered prefix are those of the whole fold, bit for bit
    /// (ties of -0 and +0 included, which depend on the order); a set that extends none of
    /// the remembered ones, or of other columns, is folded from its first row.
    #[test]
    fn bounds_continued_from_a_prefix_equal_the_whole_fold() {
        let (n, d) = (400, 19);
        let x = Array2::from_shape_fn((n, d), |(i, j)| match (i * 7 + j) % 5 {
            0 => 0.0,
            1 => -0.0,
            k => (i as f64 * 0.37 + j as f64).sin() * k as f64,
        });
        let order: Vec<u32> = (0..n as u32).map(|i| (i * 151) % n as u32).collect();
        let all: Vec<usize> = (0..d).collect();
        let some = [3, 0, 18];
        let bits = |(l, h): (Vec<f64>, Vec<f64>)| {
            let b = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
            (b(l), b(h))
        };
        let known = KnownBounds::default();
        for cols in [&some[..], &all[..]] {
            for len in [50, 100, 400, 77] {
                let rows = &order[..len];
                let want = bits(column_bounds(x.view(), rows, cols));
                let got = bits(column_bounds_known(x.view(), rows, cols, &known));
                assert_eq!(got, want, "{len} rows of {} columns", cols.len());
            }
        }
        let (longest, _, _) = known.longest_prefix(&order[..300], &all).expect("a prefix");
        assert_eq!(longest, 100, "the 400-row set is no prefix of 300 rows");
        assert!(known.longest_prefix(&order[1..300], &all).is_none());
        let reversed: Vec<u32> = order.iter().rev().copied().collect();
        assert_eq!(
            bits(column_bounds_known(x.view(), &reversed, &all, &known)),
            bits(column_bounds(x.view(), &reversed, &all))
        );
    }

    /// Appendix B's whole 2^20 training set at D = 1000 and 1500 is read through its map, so
    /// no copy doubles the run's memory, and so are its subsets whose copy passes 2 GiB; the
    /// smaller subsets and anything up to 1 GiB are copied (the passes stream a copy fastest).
    #[test]
    fn only_large_copies_of_most_of_the_source_are_avoided() {
        let source = (1 << 20) + 10_000;
        for d in [1000, 1500] {
            assert!(!copies(1 << 20, d, source), "D = {d}: whole set mapped");
            assert!(!copies(1 << 19, d, source), "D = {d}: 2^19 rows mapped");
            assert!(copies(1 << 17, d, source), "D = {d}: 2^17 rows copied");
        }
        assert!(copies(1 << 18, 1000, source), "2.1 GB at D = 1000: copied");
        assert!(!copies(1 << 18, 1500, source), "3.1 GB at D = 1500: mapped");
        assert!(copies(1 << 20, 100, source), "800 MB: copied");
        assert!(
            copies(1 << 17, 1000, 1 << 17),
            "the whole of a 1 GB source: copied"
        );
        assert!(
            !copies(134_218, 1000, 134_218),
            "the whole of a source just over 1 GiB: mapped"
        );
    }

    /// Cells that ask for the row digests at once (a lockstep batch) get one set, hashed once:
    /// the others wait for it. Each is its row's own digest.
    #[test]
    fn concurrent_requests_for_the_row_digests_agree() {
        let x = Array2::from_shape_fn((2000, 30), |(i, j)| (i * 30 + j) as f64 * 0.5);
        let digests = RowDigests::default();
        let gate = std::sync::Barrier::new(4);
        let got: Vec<Vec<[u8; 32]>> = std::thread::scope(|s| {
            let ask = || {
                gate.wait();
                digests.of(x.view()).to_vec()
            };
            let handles: Vec<_> = (0..4).map(|_| s.spawn(ask)).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got.iter().all(|g| *g == got[0]));
        assert!(digests.is_computed());
        let one = crate::memo::row_digest(x.row(1234).to_slice().unwrap());
        assert_eq!(got[0][1234], one);
    }

    /// A row set asked for again, with the same settings, gets its remembered key without
    /// hashing; other rows, another order or other settings are computed, and past
    /// `KNOWN_SETS` the set asked for longest ago is forgotten.
    #[test]
    fn a_row_set_asked_for_again_is_not_hashed_again() {
        let known = RowDigests::default();
        let key = |i: u64| crate::memo::KeyBuilder::new("t").u64(i).finish();
        let hashed = std::cell::Cell::new(0);
        let ask = |settings: u64, rows: &[u32]| {
            known.set_key(key(settings), rows, || {
                hashed.set(hashed.get() + 1);
                key(1000 + settings + 10 * u64::from(rows[0]))
            })
        };
        assert_eq!(ask(1, &[3, 1, 2]), key(1031));
        assert_eq!(ask(1, &[3, 1, 2]), key(1031));
        assert_eq!(hashed.get(), 1);
        assert_eq!(ask(2, &[3, 1, 2]), key(1032));
        assert_eq!(ask(1, &[1, 3, 2]), key(1011));
        assert_eq!(ask(1, &[3, 1]), key(1031));
        assert_eq!(hashed.get(), 4);
        for r in 0..super::super::row_caches::KNOWN_SETS as u32 {
            ask(7, &[100 + r]);
        }
        let before = hashed.get();
        ask(1, &[3, 1, 2]);
        assert_eq!(
            hashed.get(),
            before + 1,
            "forgotten after KNOWN_SETS others"
        );
    }

    /// With the dataset's row digests, a row set's key tells apart what the scaled design
    /// depends on (which rows, in which order, which features, their values) and nothing
    /// else: rows outside the set, or a matrix grown by more rows, leave it as it is.
    #[test]
    fn a_row_set_is_keyed_by_its_rows_digests() {
        let x = Array2::from_shape_fn((50, 3), |(i, j)| (i * 3 + j) as f64);
        let rows: Vec<u32> = (0..40).rev().collect();
        let fewer: Vec<u32> = (0..39).rev().collect();
        let sorted: Vec<u32> = (0..40).collect();
        let at = |x: &Array2<f64>, rows: &[u32], features: Option<&[usize]>, digests| {
            DenseRows {
                x: x.view(),
                rows,
                features,
                scaling: Scaling::Thesis,
                public: None,
                digests,
                bounds: None,
                work: None,
                through_map: false,
            }
            .key()
            .unwrap()
        };
        let known = RowDigests::default();
        assert!(!known.is_computed());
        let key = at(&x, &rows, None, Some(&known));
        assert!(known.is_computed(), "hashed at the first request");
        assert_eq!(at(&x, &rows, None, Some(&known)), key);
        for other in [
            at(&x, &fewer, None, Some(&known)),
            at(&x, &sorted, None, Some(&known)),
            at(&x, &rows, Some(&[0, 2]), Some(&known)),
        ] {
            assert_ne!(other, key);
        }
        // A value inside the set changes the key; one outside it, or more rows, do not.
        let fresh: Vec<RowDigests> = (0..3).map(|_| RowDigests::default()).collect();
        let mut y = x.clone();
        y[[17, 1]] += 1.0;
        assert_ne!(at(&y, &rows, None, Some(&fresh[0])), key);
        let mut y = x.clone();
        y[[45, 1]] += 1.0;
        assert_eq!(at(&y, &rows, None, Some(&fresh[1])), key);
        let grown = Array2::from_shape_fn((80, 3), |(i, j)| (i * 3 + j) as f64);
        assert_eq!(at(&grown, &rows, None, Some(&fresh[2])), key);
        // Without digests the rows' values are hashed: equal rows, equal keys.
        assert_eq!(at(&x, &rows, None, None), at(&x.clone(), &rows, None, None));
    }
}
