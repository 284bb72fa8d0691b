//! The binary design's passes over the shared CSR rows, written for instruction-level
//! parallelism without changing a single rounding: every sum adds the same terms in the same
//! order as the plain one-row-at-a-time loop, so fits stay bit for bit what they were.
//!
//! * [`gather_sums`] (margins): a row's sum of `table[j]` over its on-indices is one chain of
//!   dependent additions; four rows run side by side, four independent chains.
//! * [`scatter_sums`] (X^T c): each output entry receives its rows' terms in row order.
//! * Columns outside a design's selection read (and receive) through a table indexed by
//!   source column: unused columns read +0.0, which leaves a sum that started at +0.0 exactly
//!   as it was (such a sum is never -0.0), and their received terms are dropped.

use crate::data::{BinaryMatrix, zip_four};
use std::cell::RefCell;

thread_local! {
    // Not cross-trial state: [`zeroed`] clears and zeroes a buffer before each use, so only
    // its capacity outlives a pass and no result depends on an earlier cell's values.
    /// Per-thread scratch indexed by source column (no allocation per pass once sized).
    static SCRATCH: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
    /// Per-thread row-indexed scratch for [`scatter_sums_hot`]'s terms a_i (its caller may
    /// hold [`SCRATCH`]).
    static ROW_SCRATCH: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on this thread's scratch, resized to `len` and zeroed.
pub(super) fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [f64]) -> R) -> R {
    zeroed(&SCRATCH, len, f)
}

/// Runs `f` on the thread-local buffer `key`, resized to `len` and zeroed.
fn zeroed<R>(
    key: &'static std::thread::LocalKey<RefCell<Vec<f64>>>,
    len: usize,
    f: impl FnOnce(&mut [f64]) -> R,
) -> R {
    key.with(|s| {
        let mut s = s.borrow_mut();
        s.clear();
        s.resize(len, 0.0);
        f(&mut s)
    })
}

/// `out[i]` = sum of `table[j]` over the on-indices j of source row `rows[i]`, added left to right
/// from +0.0. Panics unless `table` covers every column of `m`.
pub(super) fn gather_sums(m: &BinaryMatrix, rows: &[u32], table: &[f64], out: &mut [f64]) {
    assert!(table.len() >= m.n_cols() && out.len() == rows.len());
    // SAFETY (every get_unchecked below): on-indices are < n_cols <= table.len()
    // (BinaryMatrix invariant, asserted above).
    let sum_row = |row: &[u32], mut s: f64| {
        for &j in row {
            s += unsafe { *table.get_unchecked(j as usize) };
        }
        s
    };
    let mut quads = rows.chunks_exact(4);
    let mut outs = out.chunks_exact_mut(4);
    for (r4, o4) in (&mut quads).zip(&mut outs) {
        let (r, len) = m.four_rows(r4);
        let (mut s0, mut s1, mut s2, mut s3) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        for [j0, j1, j2, j3] in zip_four(r, len) {
            unsafe {
                s0 += *table.get_unchecked(j0 as usize);
                s1 += *table.get_unchecked(j1 as usize);
                s2 += *table.get_unchecked(j2 as usize);
                s3 += *table.get_unchecked(j3 as usize);
            }
        }
        o4[0] = sum_row(&r[0][len..], s0);
        o4[1] = sum_row(&r[1][len..], s1);
        o4[2] = sum_row(&r[2][len..], s2);
        o4[3] = sum_row(&r[3][len..], s3);
    }
    for (o, &r) in outs.into_remainder().iter_mut().zip(quads.remainder()) {
        *o = sum_row(m.row(r as usize), 0.0);
    }
}

/// `acc[j] += a_i` for every on-index j of source row `rows[i]`, rows in order, where
/// `a_i = c[i] * scale[i]`; returns sum_i a_i (added in row order). Panics unless `acc` covers
/// every column of `m`.
pub(super) fn scatter_sums(
    m: &BinaryMatrix,
    rows: &[u32],
    scale: &[f64],
    c: &[f64],
    acc: &mut [f64],
) -> f64 {
    assert!(acc.len() >= m.n_cols());
    let mut total = 0.0;
    for ((&r, &ci), &si) in rows.iter().zip(c).zip(scale) {
        let a = ci * si;
        total += a;
        for &j in m.row(r as usize) {
            // SAFETY: on-indices are < n_cols <= acc.len() (asserted above).
            unsafe { *acc.get_unchecked_mut(j as usize) += a };
        }
    }
    total
}

/// [`scatter_sums`] on two threads, split by output column at `split`: each entry still
/// receives its rows' terms in row order, so the result is bit for bit the one-thread pass.
/// `cut[i][0]` is the number of row i's on-indices below `split` (rows are ascending), so
/// neither half tests an index.
pub(super) fn scatter_sums_halves(
    m: &BinaryMatrix,
    rows: &[u32],
    cut: &[[u32; 2]],
    scale: &[f64],
    c: &[f64],
    acc: &mut [f64],
    split: usize,
) -> f64 {
    assert!(acc.len() >= m.n_cols() && split <= m.n_cols() && cut.len() == rows.len());
    let (lo, hi) = acc.split_at_mut(split);
    let terms = || {
        rows.iter()
            .zip(cut)
            .zip(c.iter().zip(scale))
            .map(|((&r, k), (&ci, &si))| (m.row(r as usize).split_at(k[0] as usize), ci * si))
    };
    let (total, ()) = rayon::join(
        || {
            let mut total = 0.0;
            for ((low, _), a) in terms() {
                total += a;
                for &j in low {
                    // SAFETY: j < split = lo.len() (cut's definition).
                    unsafe { *lo.get_unchecked_mut(j as usize) += a };
                }
            }
            total
        },
        || {
            for ((_, high), a) in terms() {
                for &j in high {
                    // SAFETY: split <= j < n_cols <= acc.len(), so j - split < hi.len().
                    unsafe { *hi.get_unchecked_mut(j as usize - split) += a };
                }
            }
        },
    );
    total
}

/// Rows `k0..` of the upper triangle of sum_i a_i b_i b_i^T, a_i = w_i s_i^2 (rows with
/// a_i = 0 skipped), every source column a parameter (`d = n_cols`): for each row i, the
/// pairs `(row[p], row[q])`, q >= p, for p in `part(i, row)`, whose first index must lie in
/// `k0..k0 + h.len() / d`. One add per pair, each entry receiving its rows' terms in row
/// order, so the triangle's rows split across threads add bit for bit what one pass adds.
/// Returns sum_i a_i.
pub(super) fn gram_pairs(
    m: &BinaryMatrix,
    rows: &[u32],
    scale: &[f64],
    w: &[f64],
    h: &mut [f64],
    k0: usize,
    part: impl Fn(usize, &[u32]) -> std::ops::Range<usize>,
) -> f64 {
    let d = m.n_cols();
    assert!(h.len().is_multiple_of(d));
    let mut total = 0.0;
    for (i, ((&wi, &si), &r)) in w.iter().zip(scale).zip(rows).enumerate() {
        let a = wi * si * si;
        if a == 0.0 {
            continue;
        }
        total += a;
        let row = m.row(r as usize);
        for p in part(i, row) {
            let k = row[p] as usize - k0;
            let hk = &mut h[k * d..(k + 1) * d];
            for &l in &row[p..] {
                // SAFETY: on-indices are < n_cols = d = hk.len() (BinaryMatrix invariant).
                unsafe { *hk.get_unchecked_mut(l as usize) += a };
            }
        }
    }
    total
}

/// [`gram_pairs`] for a design on a subset of the source columns: each row's on-indices are
/// mapped to parameters through `col_map` (`unused` dropped) and sorted, once per row, and the
/// pairs of the mapped row add into the `d x d` upper triangle as the identity pass adds
/// them. Each entry receives one term per row, in row order, as in a pass that maps every
/// pair: the same bits, without two lookups per pair. Returns sum_i a_i.
#[allow(clippy::too_many_arguments)]
pub(super) fn gram_pairs_mapped(
    m: &BinaryMatrix,
    rows: &[u32],
    scale: &[f64],
    w: &[f64],
    h: &mut [f64],
    d: usize,
    col_map: &[u32],
    unused: u32,
) -> f64 {
    assert!(h.len() == d * d && col_map.len() >= m.n_cols());
    let mut mapped: Vec<u32> = Vec::new();
    let mut total = 0.0;
    for ((&wi, &si), &r) in w.iter().zip(scale).zip(rows) {
        let a = wi * si * si;
        if a == 0.0 {
            continue;
        }
        total += a;
        mapped.clear();
        mapped.extend(
            m.row(r as usize)
                .iter()
                .map(|&j| col_map[j as usize])
                .filter(|&k| k != unused),
        );
        if !mapped.is_sorted() {
            mapped.sort_unstable();
        }
        for (p, &k) in mapped.iter().enumerate() {
            let hk = &mut h[k as usize * d..(k as usize + 1) * d];
            for &l in &mapped[p..] {
                // SAFETY: mapped parameters are < d = hk.len() (col_map's range).
                unsafe { *hk.get_unchecked_mut(l as usize) += a };
            }
        }
    }
    total
}

/// A binary design's rows split for X^T c ([`scatter_sums_hot`]): the used columns on in at
/// least 1 in `HOT_SHARE` rows, each with the positions of its rows, and every row's other
/// used on-indices (unused columns receive nothing: their sums are never read). In the
/// row-by-row scatter a column on in most rows is one long chain of adds through memory, each
/// waiting for the previous row's store (a9a's most frequent column is on in 95% of its
/// rows); summed column by column, the chain stays in a register and four columns run side
/// by side. About one copy of the rows' structure: a fit builds it and its design drops it
/// ([`super::design::Design::release_fit_scratch`]).
#[derive(Debug)]
pub(super) struct HotColumns {
    /// Hot source columns, longest first (so that the four summed side by side are alike).
    cols: Vec<u32>,
    /// Positions of column `cols[k]`'s rows: `pos[ptr[k]..ptr[k + 1]]`, ascending.
    ptr: Vec<usize>,
    pos: Vec<u32>,
    /// Row i's other used on-indices: `cold[cold_ptr[i]..cold_ptr[i + 1]]`.
    cold_ptr: Vec<u32>,
    cold: Vec<u32>,
    /// The source matrix's column count.
    n_source_cols: usize,
}

/// A column is hot when on in at least 1/16 of the rows.
const HOT_SHARE: usize = 16;

impl HotColumns {
    /// The split of `rows` over the `used` columns, or `None` when no column is hot (or the
    /// rows hold 2^32 on-indices or more: positions and offsets are u32).
    pub(super) fn new(m: &BinaryMatrix, rows: &[u32], used: impl Fn(u32) -> bool) -> Option<Self> {
        let mut count = vec![0usize; m.n_cols()];
        for &r in rows {
            for &j in m.row(r as usize) {
                count[j as usize] += 1;
            }
        }
        if count.iter().sum::<usize>() >= u32::MAX as usize {
            return None;
        }
        for (j, c) in count.iter_mut().enumerate() {
            if !used(j as u32) {
                *c = 0;
            }
        }
        let min = (rows.len() / HOT_SHARE).max(1);
        let mut cols: Vec<u32> = (0..m.n_cols() as u32)
            .filter(|&j| count[j as usize] >= min)
            .collect();
        if cols.is_empty() {
            return None;
        }
        cols.sort_by_key(|&j| (std::cmp::Reverse(count[j as usize]), j));
        let mut slot = vec![usize::MAX; m.n_cols()];
        let mut ptr = vec![0; cols.len() + 1];
        for (k, &j) in cols.iter().enumerate() {
            slot[j as usize] = k;
            ptr[k + 1] = ptr[k] + count[j as usize];
        }
        let mut fill = ptr[..cols.len()].to_vec();
        let mut pos = vec![0u32; ptr[cols.len()]];
        let (mut cold_ptr, mut cold) = (Vec::with_capacity(rows.len() + 1), Vec::new());
        cold_ptr.push(0);
        for (i, &r) in rows.iter().enumerate() {
            for &j in m.row(r as usize) {
                match slot[j as usize] {
                    usize::MAX if used(j) => cold.push(j),
                    usize::MAX => {}
                    k => {
                        pos[fill[k]] = i as u32;
                        fill[k] += 1;
                    }
                }
            }
            cold_ptr.push(cold.len() as u32);
        }
        Some(HotColumns {
            cols,
            ptr,
            pos,
            cold_ptr,
            cold,
            n_source_cols: m.n_cols(),
        })
    }

    /// How many columns are hot.
    #[cfg(test)]
    pub(super) fn n_cols(&self) -> usize {
        self.cols.len()
    }

    fn positions(&self, k: usize) -> &[u32] {
        &self.pos[self.ptr[k]..self.ptr[k + 1]]
    }
}

/// [`scatter_sums`] through a [`HotColumns`] split of the same rows: the cold on-indices are
/// scattered row by row, each hot column summed over its rows in row order, so every used
/// entry of `acc` receives the same terms in the same order as in [`scatter_sums`]: bit for
/// bit (unused entries stay as they were).
pub(super) fn scatter_sums_hot(hot: &HotColumns, scale: &[f64], c: &[f64], acc: &mut [f64]) -> f64 {
    let n = c.len();
    assert!(hot.cold_ptr.len() == n + 1 && scale.len() >= n && acc.len() >= hot.n_source_cols);
    zeroed(&ROW_SCRATCH, n, |terms| {
        let (cold_ptr, cold) = (&hot.cold_ptr[..], &hot.cold[..]);
        let mut total = 0.0;
        for (i, ((ai, &ci), &si)) in terms.iter_mut().zip(c).zip(scale).enumerate() {
            let a = ci * si;
            *ai = a;
            total += a;
            for &j in &cold[cold_ptr[i] as usize..cold_ptr[i + 1] as usize] {
                // SAFETY: cold on-indices are < n_source_cols <= acc.len() (asserted above).
                unsafe { *acc.get_unchecked_mut(j as usize) += a };
            }
        }
        let a: &[f64] = terms;
        // SAFETY: positions are < n = a.len() (the split was built from n rows).
        let get = |p: u32| unsafe { *a.get_unchecked(p as usize) };
        let mut k = 0;
        while k + 4 <= hot.cols.len() {
            let l = [0, 1, 2, 3].map(|q| hot.positions(k + q));
            let len = l.iter().map(|x| x.len()).min().unwrap_or(0);
            let j = [0, 1, 2, 3].map(|q| hot.cols[k + q] as usize);
            let (mut s0, mut s1, mut s2, mut s3) = (acc[j[0]], acc[j[1]], acc[j[2]], acc[j[3]]);
            for [p0, p1, p2, p3] in zip_four(l, len) {
                s0 += get(p0);
                s1 += get(p1);
                s2 += get(p2);
                s3 += get(p3);
            }
            for (q, s) in [s0, s1, s2, s3].into_iter().enumerate() {
                acc[j[q]] = l[q][len..].iter().fold(s, |s, &p| s + get(p));
            }
            k += 4;
        }
        for (k, &j) in hot.cols.iter().enumerate().skip(k) {
            let s = &mut acc[j as usize];
            *s = hot.positions(k).iter().fold(*s, |s, &p| s + get(p));
        }
        total
    })
}
