//! The dense passes over rows read through a column map ([`super::design::ColumnMap`]), with
//! the map fused into the loop: value j is `a[j] * s[j] + b[j]` for source row `s`, computed
//! where the pass uses it (writing it to a buffer and reading it back ran at a third of the
//! copy's speed). Each value and each sum rounds exactly as the same pass over a copy holding
//! those values ([`dot4`]'s four lanes, X^T c's row-order axpy), so fits are bit for bit the
//! copy's. Eight rows go side by side, so the prefetchers follow eight streams, and the
//! combined passes fetch the next group's rows while they read this one's ([`fetch_ahead`]):
//! at D = 1000 the margins and X^T c run at 0.8x a copy's speed in row order, 0.6x in a
//! trial's shuffled order (a copy would have to be gathered, and held). Lockstep's combined
//! passes ([`dots_each`], [`axpys_each`]) take a group of rows against several vectors at once,
//! over a copy or through the map (applied once per value), with kernels for AVX-512 and for
//! AVX2 ([`Isa`]: the same sums, fewer held at once in AVX2's 16 registers). The AVX2 and
//! AVX-512 paths are written with intrinsics, one register lane per sum, and chosen at run
//! time; the portable path is the definition they keep.

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

/// Margins for several vectors over one group of rows, each row read once:
/// `outs[k * g + r]` is [`dot4`] of row r's values (the row itself or, with
/// `map = Some((a, b))`, `a * row + b`) with `thetas[k]`, bit for bit: each sum keeps its own
/// four lanes and their combination.
///
/// `ahead` are the rows the next call will take: the first vectors' pass over each half of
/// the group fetches the same half of them into L2, a line for each line it reads
/// ([`fetch_ahead`]).
#[inline]
pub fn dots_each(
    rows: &[&[f64]],
    thetas: &[&[f64]],
    map: Option<(&[f64], &[f64])>,
    outs: &mut [f64],
    ahead: &[&[f64]],
) {
    let g = rows.len();
    debug_assert_eq!(outs.len(), g * thetas.len());
    #[cfg(target_arch = "x86_64")]
    if let Some(isa) = Isa::detect() {
        let part = isa.dots_rows();
        for (chunk, (t, out)) in thetas.chunks(4).zip(outs.chunks_mut(4 * g)).enumerate() {
            for (r0, half) in (0..g)
                .step_by(part)
                .map(|r0| (r0, &rows[r0..g.min(r0 + part)]))
            {
                let put = |k: usize, sums: &[f64; 4], out: &mut [f64]| {
                    out[k * g + r0..k * g + r0 + half.len()].copy_from_slice(&sums[..half.len()]);
                };
                let fetch = match chunk {
                    0 => &ahead[r0.min(ahead.len())..ahead.len().min(r0 + part)],
                    _ => &[],
                };
                // SAFETY: the CPU supports `isa` (detected just above).
                unsafe {
                    match *t {
                        [t0, t1, t2, t3] => {
                            let sums = dots_k(isa, half, [t0, t1, t2, t3], map, fetch);
                            sums.iter().enumerate().for_each(|(k, s)| put(k, s, out));
                        }
                        [t0, t1, t2] => {
                            let sums = dots_k(isa, half, [t0, t1, t2], map, fetch);
                            sums.iter().enumerate().for_each(|(k, s)| put(k, s, out));
                        }
                        [t0, t1] => {
                            let sums = dots_k(isa, half, [t0, t1], map, fetch);
                            sums.iter().enumerate().for_each(|(k, s)| put(k, s, out));
                        }
                        [t0] => {
                            let sums = dots_k(isa, half, [t0], map, fetch);
                            sums.iter().enumerate().for_each(|(k, s)| put(k, s, out));
                        }
                        _ => unreachable!("chunks of one to four"),
                    }
                }
            }
        }
        return;
    }
    fetch_starts(ahead);
    dots_each_any(rows, thetas, map, outs)
}

/// The portable [`dots_each`]: its definition, one [`dot4`] (or [`dots_mapped`]) per vector.
fn dots_each_any(
    rows: &[&[f64]],
    thetas: &[&[f64]],
    map: Option<(&[f64], &[f64])>,
    outs: &mut [f64],
) {
    for (out, theta) in outs.chunks_mut(rows.len()).zip(thetas) {
        match map {
            Some((a, b)) => dots_mapped(rows, a, b, theta, out),
            None => {
                for (o, s) in out.iter_mut().zip(rows) {
                    *o = dot4(s, theta);
                }
            }
        }
    }
}

/// The vector extensions the grouped passes are written for, best first.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
enum Isa {
    /// AVX-512F and VL: 32 registers.
    Avx512,
    /// AVX2: 16 registers, so fewer sums held at once.
    Avx2,
}

#[cfg(target_arch = "x86_64")]
impl Isa {
    fn detect() -> Option<Self> {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512vl") {
            Some(Self::Avx512)
        } else if has!("avx2") {
            Some(Self::Avx2)
        } else {
            None
        }
    }

    /// Rows of a [`dots_each`] part: K (at most four) sums of four lanes per row held in
    /// registers beside the K vectors' and the map's (four rows need 16 + 4 + 2 of 32; two
    /// rows 8 + 4 + 2 of 16).
    fn dots_rows(self) -> usize {
        match self {
            Self::Avx512 => 4,
            Self::Avx2 => 2,
        }
    }
}

/// Up to [`Isa::dots_rows`] rows by K vectors of [`dots_each`]: each row's sums, `dot4`'s
/// four lanes and their combination.
///
/// # Safety
/// The CPU supports `isa`.
#[cfg(target_arch = "x86_64")]
unsafe fn dots_k<const K: usize>(
    isa: Isa,
    rows: &[&[f64]],
    t: [&[f64]; K],
    map: Option<(&[f64], &[f64])>,
    ahead: &[&[f64]],
) -> [[f64; 4]; K] {
    let mut n = t.iter().fold(usize::MAX, |n, t| n.min(t.len()));
    if let Some((a, b)) = map {
        n = n.min(a.len()).min(b.len());
    }
    assert!(rows.iter().all(|r| r.len() >= n), "rows of length D");
    // The row count a constant of the loop, so every sum stays in its register (with the
    // count read at run time they went through the stack: 24.7 against 30.5 GB/s in L2).
    // SAFETY: the CPU supports `isa` (the caller's contract).
    let sums = unsafe {
        match (isa, rows) {
            (Isa::Avx512, &[r0, r1, r2, r3]) => dots_kr_avx512([r0, r1, r2, r3], t, map, ahead, n),
            (Isa::Avx512, &[r0, r1, r2]) => dots_kr_avx512([r0, r1, r2], t, map, ahead, n),
            (Isa::Avx512, &[r0, r1]) => dots_kr_avx512([r0, r1], t, map, ahead, n),
            (Isa::Avx512, &[r0]) => dots_kr_avx512([r0], t, map, ahead, n),
            (Isa::Avx2, &[r0, r1]) => dots_kr_avx2([r0, r1], t, map, ahead, n),
            (Isa::Avx2, &[r0]) => dots_kr_avx2([r0], t, map, ahead, n),
            _ => unreachable!("parts of one to Isa::dots_rows rows"),
        }
    };
    // The tail past the last whole register, and the four lanes combined, as `dot4` does.
    let full = n / 4 * 4;
    let mut out = [[0.0; 4]; K];
    for ((out, lanes), theta) in out.iter_mut().zip(&sums).zip(&t) {
        for ((o, lanes), s) in out.iter_mut().zip(lanes).zip(rows) {
            let value = |j: usize| match map {
                Some((a, b)) => a[j] * s[j] + b[j],
                None => s[j],
            };
            let tail: f64 = (full..n).map(|j| value(j) * theta[j]).sum();
            *o = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail;
        }
    }
    out
}

/// The four lanes of each of R rows' sums with K vectors over the first `n / 4 * 4` values of
/// [`dots_k`] (n at most every slice's length), in 256-bit registers: one function per
/// extension, the same body (AVX-512VL's only gain is the registers to hold more sums).
macro_rules! dots_kr {
    ($name:ident, $features:literal) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        fn $name<const K: usize, const R: usize>(
            rows: [&[f64]; R],
            t: [&[f64]; K],
            map: Option<(&[f64], &[f64])>,
            ahead: &[&[f64]],
            n: usize,
        ) -> [[[f64; 4]; 4]; K] {
            use std::arch::x86_64::{
                __m256d, _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_setzero_pd,
                _mm256_storeu_pd,
            };
            let full = n / 4 * 4;
            let mut acc: [[__m256d; R]; K] = [[_mm256_setzero_pd(); R]; K];
            let mut j = 0;
            while j < full {
                // SAFETY: j + 4 <= full <= n <= the length of every slice read (the caller's bound).
                let load = |p: &[f64]| unsafe { _mm256_loadu_pd(p.as_ptr().add(j)) };
                if j % 8 == 0 {
                    fetch_ahead(ahead, j);
                }
                let tj: [__m256d; K] = std::array::from_fn(|k| load(t[k]));
                let consts = map.map(|(a, b)| (load(a), load(b)));
                for (r, s) in rows.iter().enumerate() {
                    let mut v = load(s);
                    if let Some((a, b)) = consts {
                        v = _mm256_add_pd(_mm256_mul_pd(a, v), b);
                    }
                    for (acc, &tk) in acc.iter_mut().zip(&tj) {
                        acc[r] = _mm256_add_pd(acc[r], _mm256_mul_pd(v, tk));
                    }
                }
                j += 4;
            }
            let mut lanes = [[[0.0f64; 4]; 4]; K];
            for (lanes, acc) in lanes.iter_mut().zip(&acc) {
                for (lanes, acc) in lanes.iter_mut().zip(acc) {
                    // SAFETY: `lanes` holds four f64.
                    unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), *acc) };
                }
            }
            lanes
        }
    };
}
dots_kr!(dots_kr_avx512, "avx512f,avx512vl");
dots_kr!(dots_kr_avx2, "avx2");

/// Fetches the cache line holding value `j` of each of `rows` into L2 (a hint: it never
/// faults, and changes no result). The AVX-512 passes call it for the rows of their next
/// group as they read the same offset of their own, so the next group's lines arrive at the
/// pace the pass consumes lines. Rows come in a trial's shuffled order, where the hardware
/// prefetchers start over at every row: summing 2^17 shuffled rows of 1000 values read 13 GB/s
/// on one core without this and 19 GB/s with it (one array streams at 24 GB/s). Fetching the
/// next rows' first lines only, whole rows at once, or into L1 was no faster.
#[inline(always)]
pub(super) fn fetch_ahead(rows: &[&[f64]], j: usize) {
    #[cfg(target_arch = "x86_64")]
    for row in rows {
        if j < row.len() {
            // SAFETY: j < row.len(), and a prefetch is a hint that never faults (SSE is
            // baseline on x86_64).
            unsafe {
                use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
                _mm_prefetch::<_MM_HINT_T1>(row.as_ptr().add(j).cast::<i8>());
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (rows, j);
}

/// The first lines of each of `rows`, for the portable passes, which read a group's rows one
/// vector at a time and so cannot pace [`fetch_ahead`] by one pass.
fn fetch_starts(rows: &[&[f64]]) {
    for j in (0..64).step_by(8) {
        fetch_ahead(rows, j);
    }
}

/// `out += c[r] (a * rows[r] + b)` for the rows in order, block by block of columns: every
/// entry receives its rows' terms in row order, as the tests' reference `axpy_mapped` row after row.
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

/// X^T c for several coefficient vectors over one group of rows, each row read once:
/// `outs[k] += sum_r coefs[k * g + r] * value_r` for the group's g rows in order, where
/// `value_r` is the row itself or, with `map = Some((a, b))`, `a * row + b`. Every entry of
/// every output receives its rows' terms in row order, so each output is bit for bit its own
/// [`axpys_mapped`] (mapped) or its rows' [`axpy_each`] one after another (a copy).
///
/// `ahead` are the rows the next call will take: the first outputs' pass fetches them into
/// L2, a line for each line it reads ([`fetch_ahead`]).
#[inline]
pub fn axpys_each(
    rows: &[&[f64]],
    coefs: &[f64],
    map: Option<(&[f64], &[f64])>,
    outs: &mut [&mut [f64]],
    ahead: &[&[f64]],
) {
    let g = rows.len();
    debug_assert_eq!(coefs.len(), g * outs.len());
    #[cfg(target_arch = "x86_64")]
    if let Some(isa) = Isa::detect() {
        let mut at = 0;
        for chunk in outs.chunks_mut(4) {
            let c = &coefs[at * g..(at + chunk.len()) * g];
            let fetch = if at == 0 { ahead } else { &[] };
            // SAFETY: the CPU supports `isa` (detected just above).
            unsafe {
                match chunk {
                    [o0, o1, o2, o3] => axpys_k(isa, rows, c, map, [o0, o1, o2, o3], fetch),
                    [o0, o1, o2] => axpys_k(isa, rows, c, map, [o0, o1, o2], fetch),
                    [o0, o1] => axpys_k(isa, rows, c, map, [o0, o1], fetch),
                    [o0] => axpys_k(isa, rows, c, map, [o0], fetch),
                    _ => unreachable!("chunks of one to four"),
                }
            }
            at += 4;
        }
        return;
    }
    fetch_starts(ahead);
    axpys_each_any(rows, coefs, map, outs)
}

/// The portable [`axpys_each`]: its definition, one vector at a time.
fn axpys_each_any(
    rows: &[&[f64]],
    coefs: &[f64],
    map: Option<(&[f64], &[f64])>,
    outs: &mut [&mut [f64]],
) {
    let g = rows.len();
    for (k, out) in outs.iter_mut().enumerate() {
        let c = &coefs[k * g..(k + 1) * g];
        match map {
            Some((a, b)) => axpys_mapped(rows, c, a, b, out),
            None => {
                for (row, &cr) in rows.iter().zip(c) {
                    axpy_each(row, &[cr], &mut [&mut **out]);
                }
            }
        }
    }
}

/// K (at most four) outputs of [`axpys_each`]: `isa`'s kernel over the columns its registers
/// cover, then the last few one at a time, each entry's terms in row order.
///
/// # Safety
/// The CPU supports `isa`.
#[cfg(target_arch = "x86_64")]
unsafe fn axpys_k<const K: usize>(
    isa: Isa,
    rows: &[&[f64]],
    coefs: &[f64],
    map: Option<(&[f64], &[f64])>,
    mut outs: [&mut &mut [f64]; K],
    ahead: &[&[f64]],
) {
    let g = rows.len();
    let mut n = outs.iter().fold(usize::MAX, |n, o| n.min(o.len()));
    if let Some((a, b)) = map {
        n = n.min(a.len()).min(b.len());
    }
    assert!(rows.iter().all(|r| r.len() >= n), "rows of length D");
    assert_eq!(coefs.len(), K * g);
    // SAFETY: the CPU supports `isa` (the caller's contract); n is at most every slice's
    // length (asserted above).
    let done = unsafe {
        match isa {
            Isa::Avx512 => axpys_k_avx512(rows, coefs, map, &mut outs, ahead, n),
            Isa::Avx2 => axpys_k_avx2(rows, coefs, map, &mut outs, ahead, n),
        }
    };
    for (k, out) in outs.into_iter().enumerate() {
        for j in done..n {
            for (r, s) in rows.iter().enumerate() {
                let v = match map {
                    Some((a, b)) => a[j] * s[j] + b[j],
                    None => s[j],
                };
                out[j] += coefs[k * g + r] * v;
            }
        }
    }
}

/// Declares a kernel of [`axpys_k`] for the CPU features `$features`: `$name(rows, coefs, map,
/// outs, ahead, n)` adds the group's rows into the K outputs over a prefix of the first `n`
/// columns (n at most every slice's length) and returns the prefix's length; [`axpys_k`] adds
/// the rest. One signature for every extension's body.
macro_rules! axpys_kernel {
    ($(#[$doc:meta])* $name:ident, $features:literal,
     |$rows:ident, $coefs:ident, $map:ident, $outs:ident, $ahead:ident, $n:ident| $body:block) => {
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        fn $name<const K: usize>(
            $rows: &[&[f64]],
            $coefs: &[f64],
            $map: Option<(&[f64], &[f64])>,
            $outs: &mut [&mut &mut [f64]; K],
            $ahead: &[&[f64]],
            $n: usize,
        ) -> usize $body
    };
}

axpys_kernel!(
/// The first `n / 16 * 16` columns of [`axpys_k`], which it returns (n at most every slice's
/// length): for each 16 columns, the K outputs' entries stay in registers (two of eight lanes
/// each) while the group's rows pass, each row's values (mapped once) multiplied into every
/// output; the product and the sum rounded separately, as the one-output kernels do.
axpys_k_avx512, "avx512f", |rows, coefs, map, outs, ahead, n| {
    use std::arch::x86_64::{
        __m512d, _mm512_add_pd, _mm512_loadu_pd, _mm512_mul_pd, _mm512_set1_pd, _mm512_storeu_pd,
    };
    const W: usize = 16;
    let g = rows.len();
    assert!(g <= GROUP, "a group of at most GROUP rows");
    let full = n / W * W;
    // Each row's coefficients broadcast once for all columns (a broadcast takes a shuffle
    // port; a load of the kept register does not).
    let mut spread = [[_mm512_set1_pd(0.0); K]; GROUP];
    for (r, spread) in spread.iter_mut().enumerate().take(g) {
        for (k, v) in spread.iter_mut().enumerate() {
            *v = _mm512_set1_pd(coefs[k * g + r]);
        }
    }
    let mut j = 0;
    while j < full {
        let load = |p: &[f64], h: usize| -> __m512d {
            // SAFETY: j + W <= full <= n <= the length of `p` (the caller's bound).
            unsafe { _mm512_loadu_pd(p.as_ptr().add(j + 8 * h)) }
        };
        fetch_ahead(ahead, j);
        fetch_ahead(ahead, j + 8);
        let consts = map.map(|(a, b)| ([load(a, 0), load(a, 1)], [load(b, 0), load(b, 1)]));
        let mut o: [[__m512d; 2]; K] =
            std::array::from_fn(|k| [load(outs[k], 0), load(outs[k], 1)]);
        for (s, spread) in rows.iter().zip(&spread) {
            let mut v = [load(s, 0), load(s, 1)];
            if let Some((a, b)) = consts {
                for h in 0..2 {
                    v[h] = _mm512_add_pd(_mm512_mul_pd(a[h], v[h]), b[h]);
                }
            }
            for (o, &cv) in o.iter_mut().zip(spread) {
                for h in 0..2 {
                    o[h] = _mm512_add_pd(o[h], _mm512_mul_pd(cv, v[h]));
                }
            }
        }
        for (k, o) in o.iter().enumerate() {
            let out = outs[k].as_mut_ptr();
            for (h, o) in o.iter().enumerate() {
                // SAFETY: j + 8h + 8 <= n <= the output's length.
                unsafe { _mm512_storeu_pd(out.add(j + 8 * h), *o) };
            }
        }
        j += W;
    }
    full
});

axpys_kernel!(
/// [`axpys_k_avx512`] in AVX2's 16 registers, over the first `n / 4 * 4` columns, which it
/// returns: the K outputs' entries for 8 columns (two registers each) held while the group's
/// rows pass, each row's values mapped once, then a step of 4 columns. Every entry adds its
/// rows' terms in row order, the product and the sum rounded separately.
axpys_k_avx2, "avx2", |rows, coefs, map, outs, ahead, n| {
    use std::arch::x86_64::{
        __m256d, _mm256_add_pd, _mm256_loadu_pd, _mm256_mul_pd, _mm256_set1_pd, _mm256_storeu_pd,
    };
    // One step of H registers (4H columns) from column j; j + 4H <= n.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn step<const K: usize, const H: usize>(
        rows: &[&[f64]],
        coefs: &[f64],
        map: Option<(&[f64], &[f64])>,
        outs: &mut [&mut &mut [f64]; K],
        j: usize,
    ) {
        let g = rows.len();
        let load = |p: &[f64], h: usize| -> __m256d {
            // SAFETY: j + 4H <= n <= the length of `p` (the caller's bound).
            unsafe { _mm256_loadu_pd(p.as_ptr().add(j + 4 * h)) }
        };
        let consts: Option<([__m256d; H], [__m256d; H])> = map.map(|(a, b)| {
            (
                std::array::from_fn(|h| load(a, h)),
                std::array::from_fn(|h| load(b, h)),
            )
        });
        let mut o: [[__m256d; H]; K] =
            std::array::from_fn(|k| std::array::from_fn(|h| load(outs[k], h)));
        for (r, s) in rows.iter().enumerate() {
            let mut v: [__m256d; H] = std::array::from_fn(|h| load(s, h));
            if let Some((a, b)) = &consts {
                for h in 0..H {
                    v[h] = _mm256_add_pd(_mm256_mul_pd(a[h], v[h]), b[h]);
                }
            }
            for (k, o) in o.iter_mut().enumerate() {
                let cv = _mm256_set1_pd(coefs[k * g + r]);
                for h in 0..H {
                    o[h] = _mm256_add_pd(o[h], _mm256_mul_pd(cv, v[h]));
                }
            }
        }
        for (out, o) in outs.iter_mut().zip(&o) {
            for (h, o) in o.iter().enumerate() {
                // SAFETY: j + 4h + 4 <= n <= the output's length.
                unsafe { _mm256_storeu_pd(out.as_mut_ptr().add(j + 4 * h), *o) };
            }
        }
    }
    let mut j = 0;
    while j + 8 <= n {
        fetch_ahead(ahead, j);
        step::<K, 2>(rows, coefs, map, outs, j);
        j += 8;
    }
    if j + 4 <= n {
        step::<K, 1>(rows, coefs, map, outs, j);
        j += 4;
    }
    j
});

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
    use crate::rng::{Rng, rng_from};
    use rand::Rng as _;

    /// A value of either sign spanning twelve orders of magnitude.
    fn value(rng: &mut Rng) -> f64 {
        (rng.r#gen::<f64>() - 0.5) * 10f64.powi(rng.gen_range(-6..6))
    }

    /// `k` vectors of `len` [`value`]s.
    fn values(k: usize, len: usize, rng: &mut Rng) -> Vec<Vec<f64>> {
        (0..k)
            .map(|_| (0..len).map(|_| value(rng)).collect())
            .collect()
    }

    /// Margins for several vectors over a group of rows: every sum is its own `dot4` of the
    /// row's values (a copy's, or mapped as `dot4_mapped`), bit for bit, on the dispatched and
    /// the portable code, for one to nine vectors (chunks of four and their remainders), groups
    /// of one to eight rows (halves of four and their remainders), lengths across a register's
    /// edge. One output of `axpy_each` is its own axpy.
    #[test]
    fn dots_each_round_as_one_at_a_time() {
        let mut rng = rng_from(&["each-rows"]);
        for n in [0usize, 1, 3, 4, 5, 8, 13, 64, 67] {
            let vecs = |k: usize, rng: &mut Rng| values(k, n, rng);
            let (rows, ab) = (vecs(GROUP, &mut rng), vecs(2, &mut rng));
            for (g, k) in [(1, 1), (4, 4), (5, 3), (8, 9), (7, 5), (3, 2)] {
                let refs: Vec<&[f64]> = rows[..g].iter().map(Vec::as_slice).collect();
                let thetas = vecs(k, &mut rng);
                let t: Vec<&[f64]> = thetas.iter().map(Vec::as_slice).collect();
                for map in [None, Some((&ab[0][..], &ab[1][..]))] {
                    let want: Vec<u64> = t
                        .iter()
                        .flat_map(|theta| {
                            refs.iter().map(move |s| match map {
                                Some((a, b)) => dot4_mapped(s, a, b, theta).to_bits(),
                                None => dot4(s, theta).to_bits(),
                            })
                        })
                        .collect();
                    let (mut got, mut any) = (vec![0.0; g * k], vec![0.0; g * k]);
                    dots_each(&refs, &t, map, &mut got, &refs);
                    dots_each_any(&refs, &t, map, &mut any);
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), want, "n = {n}, g = {g}, k = {k}");
                    assert_eq!(bits(&any), want, "portable, n = {n}, g = {g}, k = {k}");
                }
            }
            let (row, start) = (vecs(1, &mut rng).remove(0), vecs(1, &mut rng).remove(0));
            let a = value(&mut rng);
            let mut out = start.clone();
            axpy_each(&row, &[a], &mut [&mut out[..]]);
            let one: Vec<f64> = start.iter().zip(&row).map(|(o, v)| o + a * v).collect();
            assert_eq!(out, one);
        }
    }

    /// X^T c for several vectors over a group of rows: each output is bit for bit its own
    /// one-vector pass (mapped: `axpys_mapped`; a copy: `axpy` row after row), for one to nine
    /// vectors, groups of one to eight rows, lengths across a register block's edge (tails of
    /// 1 to 15 columns, one or two masked steps), and nothing past an output's end written.
    #[test]
    fn axpys_each_rounds_as_one_vector_at_a_time() {
        let mut rng = rng_from(&["axpys-each"]);
        for d in [1usize, 15, 16, 17, 28, 40, 261] {
            let vecs = |k: usize, rng: &mut Rng| values(k, d, rng);
            let (rows, ab) = (vecs(GROUP, &mut rng), vecs(2, &mut rng));
            for (g, k) in [(1, 1), (3, 4), (8, 5), (8, 9), (5, 2)] {
                let refs: Vec<&[f64]> = rows[..g].iter().map(Vec::as_slice).collect();
                let coefs: Vec<f64> = (0..k * g).map(|_| value(&mut rng)).collect();
                let start = vecs(k, &mut rng);
                for map in [None, Some((&ab[0][..], &ab[1][..]))] {
                    let mut padded: Vec<Vec<f64>> = start
                        .iter()
                        .map(|o| o.iter().copied().chain([f64::NAN; 16]).collect())
                        .collect();
                    let mut slots: Vec<&mut [f64]> =
                        padded.iter_mut().map(|o| &mut o[..d]).collect();
                    axpys_each(&refs, &coefs, map, &mut slots, &refs);
                    assert!(padded.iter().all(|o| o[d..].iter().all(|v| v.is_nan())));
                    let outs: Vec<Vec<f64>> = padded.iter().map(|o| o[..d].to_vec()).collect();
                    let mut portable = start.clone();
                    let mut slots: Vec<&mut [f64]> =
                        portable.iter_mut().map(Vec::as_mut_slice).collect();
                    axpys_each_any(&refs, &coefs, map, &mut slots);
                    assert_eq!(portable, outs, "portable, d = {d}, g = {g}, k = {k}");
                    for (j, (got, want)) in outs.iter().zip(&start).enumerate() {
                        let mut want = want.clone();
                        let c = &coefs[j * g..(j + 1) * g];
                        match map {
                            Some((a, b)) => axpys_mapped_any(&refs, c, a, b, &mut want),
                            None => {
                                for (s, &cr) in refs.iter().zip(c) {
                                    axpy_each_any(s, &[cr], &mut [&mut want[..]]);
                                }
                            }
                        }
                        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(
                            bits(got),
                            bits(&want),
                            "d = {d}, g = {g}, k = {k}, output {j}"
                        );
                    }
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
        for d in [1usize, 3, 4, 5, 17, 260, 517] {
            let vecs = |k: usize, rng: &mut Rng| values(k, d, rng);
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
