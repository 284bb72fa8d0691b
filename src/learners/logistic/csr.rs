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

use crate::data::BinaryMatrix;
use std::cell::RefCell;

thread_local! {
    /// Per-thread scratch indexed by source column (no allocation per pass once sized).
    static SCRATCH: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on this thread's scratch, resized to `len` and zeroed.
pub(super) fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [f64]) -> R) -> R {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        s.clear();
        s.resize(len, 0.0);
        f(&mut s)
    })
}

/// out[i] = sum of table[j] over the on-indices j of source row rows[i], added left to right
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
        let (r0, r1) = (m.row(r4[0] as usize), m.row(r4[1] as usize));
        let (r2, r3) = (m.row(r4[2] as usize), m.row(r4[3] as usize));
        let len = r0.len().min(r1.len()).min(r2.len()).min(r3.len());
        let (mut s0, mut s1, mut s2, mut s3) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        let lockstep = r0[..len]
            .iter()
            .zip(&r1[..len])
            .zip(&r2[..len])
            .zip(&r3[..len]);
        for (((&j0, &j1), &j2), &j3) in lockstep {
            unsafe {
                s0 += *table.get_unchecked(j0 as usize);
                s1 += *table.get_unchecked(j1 as usize);
                s2 += *table.get_unchecked(j2 as usize);
                s3 += *table.get_unchecked(j3 as usize);
            }
        }
        o4[0] = sum_row(&r0[len..], s0);
        o4[1] = sum_row(&r1[len..], s1);
        o4[2] = sum_row(&r2[len..], s2);
        o4[3] = sum_row(&r3[len..], s3);
    }
    for (o, &r) in outs.into_remainder().iter_mut().zip(quads.remainder()) {
        *o = sum_row(m.row(r as usize), 0.0);
    }
}

/// acc[j] += a_i for every on-index j of source row rows[i], rows in order, where
/// a_i = c[i] * scale[i]; returns sum_i a_i (added in row order). Panics unless `acc` covers
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
