//! The dense passes over rows read through a column map ([`super::design::ColumnMap`]), with
//! the map fused into the loop: value j is `a[j] * s[j] + b[j]` for source row `s`, computed
//! where the pass uses it (writing it to a buffer and reading it back ran at a third of the
//! copy's speed). Each value and each sum rounds exactly as the same pass over a copy holding
//! those values ([`dot4`]'s four lanes, X^T c's row-order axpy), so fits are bit for bit the
//! copy's. Eight rows go side by side, so the prefetchers follow eight streams: at D = 1000
//! the margins and X^T c run at 0.8x a copy's speed in row order, 0.6x in a trial's shuffled
//! order (a copy would have to be gathered, and held). The AVX2 paths are written with
//! intrinsics, one register lane per sum, and chosen at run time; the portable path is the
//! definition they keep.

/// a . b with four independent accumulators (vectorises; the dense margins' inner loop).
#[inline]
pub fn dot4(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 4];
    let mut ca = a.chunks_exact(4);
    let mut cb = b.chunks_exact(4);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for k in 0..4 {
            acc[k] += x[k] * y[k];
        }
    }
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// [`dot4`] of `a` with each of `thetas` into `out`, the row read once: each sum keeps
/// [`dot4`]'s four lanes and their combination, so each is bit for bit its own `dot4`; with
/// AVX2 up to four run interleaved (sixteen independent chains instead of four).
pub fn dot4_each(a: &[f64], thetas: &[&[f64]], out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { dot4_each_avx2(a, thetas, out) };
    }
    dot4_each_any(a, thetas, out)
}

/// [`dot4_each`] with AVX2 intrinsics: each sum's four lanes in one register, the product
/// and the sum rounded separately, as [`dot4`]'s lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot4_each_avx2(a: &[f64], thetas: &[&[f64]], out: &mut [f64]) {
    let mut at = 0;
    for t in thetas.chunks(4) {
        let o = &mut out[at..at + t.len()];
        match *t {
            [t0, t1, t2, t3] => o.copy_from_slice(&dot4_k_avx2(a, [t0, t1, t2, t3])),
            [t0, t1, t2] => o.copy_from_slice(&dot4_k_avx2(a, [t0, t1, t2])),
            [t0, t1] => o.copy_from_slice(&dot4_k_avx2(a, [t0, t1])),
            [t0] => o.copy_from_slice(&dot4_k_avx2(a, [t0])),
            _ => unreachable!("chunks of one to four"),
        }
        at += t.len();
    }
}

/// K sums of [`dot4_each_avx2`], their registers held across the row.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot4_k_avx2<const K: usize>(a: &[f64], t: [&[f64]; K]) -> [f64; K] {
    use std::arch::x86_64::{
        __m256d, _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_setzero_pd, _mm256_storeu_pd,
    };
    let n = t.iter().fold(a.len(), |n, t| n.min(t.len()));
    let full = n / 4 * 4;
    let mut acc: [__m256d; K] = [_mm256_setzero_pd(); K];
    for i in (0..full).step_by(4) {
        // SAFETY: i + 4 <= full <= the length of `a` and of every theta.
        unsafe {
            let x = _mm256_loadu_pd(a.as_ptr().add(i));
            for j in 0..K {
                let y = _mm256_loadu_pd(t[j].as_ptr().add(i));
                acc[j] = _mm256_add_pd(acc[j], _mm256_mul_pd(x, y));
            }
        }
    }
    std::array::from_fn(|j| {
        let mut lanes = [0.0f64; 4];
        // SAFETY: `lanes` holds four doubles.
        unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), acc[j]) };
        let tail: f64 = a[full..n]
            .iter()
            .zip(&t[j][full..n])
            .map(|(x, y)| x * y)
            .sum();
        (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
    })
}

/// The portable [`dot4_each`]: its definition, one [`dot4`] per theta.
#[inline(always)]
fn dot4_each_any(a: &[f64], thetas: &[&[f64]], out: &mut [f64]) {
    for (o, t) in out.iter_mut().zip(thetas) {
        *o = dot4(a, t);
    }
}

/// out_j += c_j * row for each j (X^T c's row-order axpy for several c at once, the row read
/// once), compiled for AVX2 where the CPU has it; each output rounds as its own axpy.
pub fn axpy_each(row: &[f64], coefs: &[f64], outs: &mut [&mut [f64]]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { axpy_each_avx2(row, coefs, outs) };
    }
    axpy_each_any(row, coefs, outs)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn axpy_each_avx2(row: &[f64], coefs: &[f64], outs: &mut [&mut [f64]]) {
    axpy_each_any(row, coefs, outs)
}

#[inline(always)]
fn axpy_each_any(row: &[f64], coefs: &[f64], outs: &mut [&mut [f64]]) {
    for (&a, out) in coefs.iter().zip(outs.iter_mut()) {
        for (o, &v) in out.iter_mut().zip(row) {
            *o += a * v;
        }
    }
}

/// [`dot4`] of the mapped row `a * s + b` with `theta` (all of length D): the definition the
/// grouped passes keep bit for bit.
#[inline(always)]
fn dot4_mapped(s: &[f64], a: &[f64], b: &[f64], theta: &[f64]) -> f64 {
    let n = s.len().min(a.len()).min(b.len()).min(theta.len());
    let (s, a, b, theta) = (&s[..n], &a[..n], &b[..n], &theta[..n]);
    let mut acc = [0.0f64; 4];
    let chunks = s
        .chunks_exact(4)
        .zip(a.chunks_exact(4))
        .zip(b.chunks_exact(4).zip(theta.chunks_exact(4)));
    for ((s, a), (b, t)) in chunks {
        for k in 0..4 {
            acc[k] += (a[k] * s[k] + b[k]) * t[k];
        }
    }
    let full = n / 4 * 4;
    let tail: f64 = (full..n).map(|j| (a[j] * s[j] + b[j]) * theta[j]).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// out += c * (a * s + b), entry by entry: one row of [`axpys_mapped`], as a copy's axpy.
#[cfg(test)]
fn axpy_mapped(c: f64, s: &[f64], a: &[f64], b: &[f64], out: &mut [f64]) {
    let n = out.len().min(s.len()).min(a.len()).min(b.len());
    let (s, a, b, out) = (&s[..n], &a[..n], &b[..n], &mut out[..n]);
    for (o, ((&s, &a), &b)) in out.iter_mut().zip(s.iter().zip(a).zip(b)) {
        *o += c * (a * s + b);
    }
}

/// Rows a pass takes together: their sums advance side by side (one row's dot product is a
/// single chain of dependent adds) and they are eight streams the prefetchers follow at once.
/// Row after row, the fused passes ran at 0.4x a copy's speed at D = 1000; grouped, 0.8x.
pub const GROUP: usize = 8;
/// Columns per block of the portable X^T c: the block's constants and outputs stay in L1 while
/// the group's rows pass.
const BLOCK: usize = 256;

/// `out[r] = dot4_mapped(rows[r], a, b, theta)` for up to [`GROUP`] rows of length D, block by
/// block of columns; each row's four lanes carry over the blocks, so every sum is its own
/// [`dot4_mapped`] bit for bit.
pub fn dots_mapped(rows: &[&[f64]], a: &[f64], b: &[f64], theta: &[f64], out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { dots_mapped_avx2(rows, a, b, theta, out) };
    }
    for (o, s) in out.iter_mut().zip(rows) {
        *o = dot4_mapped(s, a, b, theta);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dots_mapped_avx2(rows: &[&[f64]], a: &[f64], b: &[f64], theta: &[f64], out: &mut [f64]) {
    use std::arch::x86_64::{
        __m256d, _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_setzero_pd, _mm256_storeu_pd,
    };
    let g = rows.len().min(GROUP).min(out.len());
    let n = theta.len().min(a.len()).min(b.len());
    assert!(rows[..g].iter().all(|r| r.len() >= n), "rows of length D");
    let full = n / 4 * 4;
    let mut acc: [__m256d; GROUP] = [_mm256_setzero_pd(); GROUP];
    let mut j = 0;
    while j < full {
        // SAFETY: j + 4 <= full <= n (asserted above).
        let (aj, bj, tj) = unsafe {
            (
                _mm256_loadu_pd(a.as_ptr().add(j)),
                _mm256_loadu_pd(b.as_ptr().add(j)),
                _mm256_loadu_pd(theta.as_ptr().add(j)),
            )
        };
        // The rows' chains side by side, each in its own order.
        for (acc, s) in acc.iter_mut().zip(&rows[..g]) {
            // SAFETY: j + 4 <= full <= n <= the length of every row (asserted above).
            let v = _mm256_add_pd(
                _mm256_mul_pd(aj, unsafe { _mm256_loadu_pd(s.as_ptr().add(j)) }),
                bj,
            );
            *acc = _mm256_add_pd(*acc, _mm256_mul_pd(v, tj));
        }
        j += 4;
    }
    for ((o, acc), s) in out.iter_mut().zip(&acc).zip(&rows[..g]) {
        let mut lanes = [0.0f64; 4];
        // SAFETY: `lanes` holds four f64.
        unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), *acc) };
        let tail: f64 = (full..n).map(|j| (a[j] * s[j] + b[j]) * theta[j]).sum();
        *o = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail;
    }
}

/// `out += c[r] (a * rows[r] + b)` for the rows in order, block by block of columns: every
/// entry receives its rows' terms in row order, as [`axpy_mapped`] row after row.
pub fn axpys_mapped(rows: &[&[f64]], c: &[f64], a: &[f64], b: &[f64], out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { axpys_mapped_avx2(rows, c, a, b, out) };
    }
    axpys_mapped_any(rows, c, a, b, out)
}

/// [`axpys_mapped_any`] with 16 entries in four registers while the group's rows pass: the
/// rows advance side by side (eight streams for the prefetchers) and every entry still adds
/// its rows' terms in row order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn axpys_mapped_avx2(rows: &[&[f64]], c: &[f64], a: &[f64], b: &[f64], out: &mut [f64]) {
    use std::arch::x86_64::{
        __m256d, _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_set1_pd, _mm256_storeu_pd,
    };
    const W: usize = 16;
    let g = rows.len().min(c.len());
    let n = out.len().min(a.len()).min(b.len());
    assert!(rows[..g].iter().all(|r| r.len() >= n), "rows of length D");
    let full = n / W * W;
    let mut j = 0;
    while j < full {
        let load = |p: &[f64], k: usize| -> __m256d {
            // SAFETY: j + W <= full <= n <= the length of `p` (asserted above).
            unsafe { _mm256_loadu_pd(p.as_ptr().add(j + 4 * k)) }
        };
        let (ak, bk) = (
            [0, 1, 2, 3].map(|k| load(a, k)),
            [0, 1, 2, 3].map(|k| load(b, k)),
        );
        let mut o = [0, 1, 2, 3].map(|k| load(out, k));
        for (s, &cr) in rows[..g].iter().zip(c) {
            let cv = _mm256_set1_pd(cr);
            for k in 0..4 {
                let v = _mm256_add_pd(_mm256_mul_pd(ak[k], load(s, k)), bk[k]);
                o[k] = _mm256_add_pd(o[k], _mm256_mul_pd(cv, v));
            }
        }
        for (k, o) in o.iter().enumerate() {
            // SAFETY: j + 4k + 4 <= n <= out.len().
            unsafe { _mm256_storeu_pd(out.as_mut_ptr().add(j + 4 * k), *o) };
        }
        j += W;
    }
    for j in full..n {
        for (s, &cr) in rows[..g].iter().zip(c) {
            out[j] += cr * (a[j] * s[j] + b[j]);
        }
    }
}

#[inline(always)]
fn axpys_mapped_any(rows: &[&[f64]], c: &[f64], a: &[f64], b: &[f64], out: &mut [f64]) {
    let n = out.len().min(a.len()).min(b.len());
    let mut j0 = 0;
    while j0 < n {
        let j1 = (j0 + BLOCK).min(n);
        let (a, b, out) = (&a[j0..j1], &b[j0..j1], &mut out[j0..j1]);
        for (s, &cr) in rows.iter().zip(c) {
            for (o, ((&s, &a), &b)) in out.iter_mut().zip(s[j0..j1].iter().zip(a).zip(b)) {
                *o += cr * (a * s + b);
            }
        }
        j0 = j1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from;
    use rand::Rng as _;

    /// Several thetas against one row: every sum is its own `dot4` and every output its own
    /// axpy, bit for bit, on the dispatched and the portable code, for one to nine vectors
    /// (chunks of four and their remainders) at lengths across a register's edge.
    #[test]
    fn each_rounds_as_one_at_a_time() {
        let mut rng = rng_from(&["each-rows"]);
        let value = |rng: &mut crate::rng::Rng| {
            (rng.r#gen::<f64>() - 0.5) * 10f64.powi(rng.gen_range(-6..6))
        };
        for n in [0usize, 1, 3, 4, 5, 8, 13, 64, 67] {
            for k in 1..=9 {
                let row: Vec<f64> = (0..n).map(|_| value(&mut rng)).collect();
                let thetas: Vec<Vec<f64>> = (0..k)
                    .map(|_| (0..n).map(|_| value(&mut rng)).collect())
                    .collect();
                let t: Vec<&[f64]> = thetas.iter().map(Vec::as_slice).collect();
                let want: Vec<u64> = t.iter().map(|t| dot4(&row, t).to_bits()).collect();
                let (mut got, mut any) = (vec![0.0; k], vec![0.0; k]);
                dot4_each(&row, &t, &mut got);
                dot4_each_any(&row, &t, &mut any);
                assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
                assert_eq!(any.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
                let coefs: Vec<f64> = (0..k).map(|_| value(&mut rng)).collect();
                let mut outs = thetas.clone();
                let mut slots: Vec<&mut [f64]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
                axpy_each(&row, &coefs, &mut slots);
                for ((out, theta), &a) in outs.iter().zip(&thetas).zip(&coefs) {
                    let one: Vec<u64> = theta
                        .iter()
                        .zip(&row)
                        .map(|(o, v)| (o + a * v).to_bits())
                        .collect();
                    assert_eq!(out.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), one);
                }
            }
        }
    }

    /// The grouped passes equal the passes over a mapped copy in every bit (four-lane dots,
    /// row-order axpys), on every code path, at lengths across a block's and a register's edge,
    /// group sizes from one row to [`GROUP`], values spanning twelve orders of magnitude.
    #[test]
    fn fused_map_rounds_as_a_mapped_copy() {
        let mut rng = rng_from(&["mapped-rows"]);
        let value = |rng: &mut crate::rng::Rng| {
            (rng.r#gen::<f64>() - 0.5) * 10f64.powi(rng.gen_range(-6..6))
        };
        for d in [1usize, 3, 4, 5, 17, 260, 517] {
            let vecs = |k: usize, rng: &mut crate::rng::Rng| -> Vec<Vec<f64>> {
                (0..k)
                    .map(|_| (0..d).map(|_| value(rng)).collect())
                    .collect()
            };
            let rows = vecs(GROUP, &mut rng);
            let v = vecs(3, &mut rng);
            let (a, b, theta) = (&v[0], &v[1], &v[2]);
            let c: Vec<f64> = (0..GROUP).map(|_| value(&mut rng)).collect();
            for g in [1, 5, GROUP] {
                let refs: Vec<&[f64]> = rows[..g].iter().map(Vec::as_slice).collect();
                // The copy's passes: dot4 over the mapped values, axpy row after row.
                let mut want_out = theta.clone();
                let mut want_dots = Vec::new();
                for (s, &cr) in refs.iter().zip(&c) {
                    let copy: Vec<f64> = (0..d).map(|j| a[j] * s[j] + b[j]).collect();
                    want_dots.push(dot4(&copy, theta).to_bits());
                    for (o, &x) in want_out.iter_mut().zip(&copy) {
                        *o += cr * x;
                    }
                    let mut one = theta.clone();
                    axpy_mapped(cr, s, a, b, &mut one);
                    assert_eq!(
                        dot4_mapped(s, a, b, theta).to_bits(),
                        dot4(&copy, theta).to_bits()
                    );
                }
                let mut paths: Vec<(&str, Vec<f64>, Vec<f64>)> = Vec::new();
                let (mut dots, mut out) = (vec![0.0; g], theta.clone());
                dots_mapped(&refs, a, b, theta, &mut dots);
                axpys_mapped(&refs, &c, a, b, &mut out);
                paths.push(("chosen", dots, out));
                let mut out = theta.clone();
                axpys_mapped_any(&refs, &c, a, b, &mut out);
                let dots = refs.iter().map(|s| dot4_mapped(s, a, b, theta)).collect();
                paths.push(("portable", dots, out));
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    let (mut dots, mut out) = (vec![0.0; g], theta.clone());
                    // SAFETY: the CPU supports AVX2 (checked just above).
                    unsafe {
                        dots_mapped_avx2(&refs, a, b, theta, &mut dots);
                        axpys_mapped_avx2(&refs, &c, a, b, &mut out);
                    }
                    paths.push(("avx2", dots, out));
                }
                for (path, dots, out) in paths {
                    let bits: Vec<u64> = dots.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(bits, want_dots, "{path} dots, d = {d}, g = {g}");
                    assert_eq!(out, want_out, "{path} axpys, d = {d}, g = {g}");
                }
            }
        }
    }
}
