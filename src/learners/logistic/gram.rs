//! The dense weighted Gram matrix's inner kernel: one block of rows added into the upper
//! triangle of h = sum_i a_i x_i x_i^T, with every entry rounding exactly as the row-by-row
//! loop `h[k][l] += (a_i x_ik) x_il` (rows in order, the product and the sum rounded
//! separately, never fused).
//!
//! The plain loop streams a triangle row from memory for every example row: two loads and a
//! store per update, bound at about 5 G updates/s per core. Here a tile of 4 x 8 entries stays
//! in registers while the block's rows pass through it from packed panels, so an update costs
//! one multiply and one add (4.7 -> 16 G updates/s on one core at D = 1000). The same function
//! is compiled for AVX-512 and AVX2 and chosen at run time; IEEE multiplies and adds round the
//! same at any vector width, so every path gives the same bits.

/// Entries per tile: `K` triangle rows by `L` columns.
const K: usize = 4;
const L: usize = 8;

/// Adds the rows of `block` (row-major, `coef.len()` rows of `d` values), row r weighted by
/// `coef[r]`, into the upper triangle of `h` (d x d, row-major). Entries below the diagonal
/// inside a diagonal tile receive terms too; the caller mirrors the upper triangle over them.
///
/// A zero weight or a zero x_ik adds (+-0) x_il = +-0 to an entry that is never -0 (it starts
/// at +0, and round-to-nearest never rounds a sum to -0 unless both terms are -0), so the
/// plain loop's skip of such terms is not needed for the same bits (the values are finite).
///
/// `panels` is the packing scratch, reused across the blocks of one Gram matrix.
pub fn add_block(panels: &mut Panels, block: &[f64], coef: &[f64], d: usize, h: &mut [f64]) {
    debug_assert_eq!(block.len(), coef.len() * d);
    debug_assert_eq!(h.len(), d * d);
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return unsafe { add_block_avx512(panels, block, coef, d, h) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { add_block_avx2(panels, block, coef, d, h) };
        }
    }
    add_block_any(panels, block, coef, d, h)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn add_block_avx512(panels: &mut Panels, block: &[f64], coef: &[f64], d: usize, h: &mut [f64]) {
    add_block_any(panels, block, coef, d, h)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn add_block_avx2(panels: &mut Panels, block: &[f64], coef: &[f64], d: usize, h: &mut [f64]) {
    add_block_any(panels, block, coef, d, h)
}

/// A block's rows packed so a tile reads its rows' values contiguously: column tile j as
/// `xp[j][r][0..L]`; a_r x_rk (once per block: every tile of triangle row k multiplies by it)
/// row-major in `weighted`, and by triangle rows of K as `wp[t][r][0..K]`. Held by the
/// caller for a whole Gram matrix, so the blocks allocate nothing.
#[derive(Debug, Default)]
pub struct Panels {
    xp: Vec<f64>,
    weighted: Vec<f64>,
    wp: Vec<f64>,
}

/// `v` resized to `len` (its contents are about to be overwritten).
fn sized(v: &mut Vec<f64>, len: usize) -> &mut [f64] {
    v.resize(len, 0.0);
    &mut v[..len]
}

#[inline(always)]
fn add_block_any(panels: &mut Panels, block: &[f64], coef: &[f64], d: usize, h: &mut [f64]) {
    let m = coef.len();
    let (tiles, ktiles) = (d / L, d / K);
    let xp = sized(&mut panels.xp, tiles * m * L);
    for (r, row) in block.chunks_exact(d).enumerate() {
        for (j, x) in row[..tiles * L].chunks_exact(L).enumerate() {
            xp[(j * m + r) * L..(j * m + r + 1) * L].copy_from_slice(x);
        }
    }
    let weighted = sized(&mut panels.weighted, m * d);
    for ((w, row), &c) in weighted
        .chunks_exact_mut(d)
        .zip(block.chunks_exact(d))
        .zip(coef)
    {
        for (w, &v) in w.iter_mut().zip(row) {
            *w = c * v;
        }
    }
    let wp = sized(&mut panels.wp, ktiles * m * K);
    for (r, row) in weighted.chunks_exact(d).enumerate() {
        for (t, w) in row[..ktiles * K].chunks_exact(K).enumerate() {
            wp[(t * m + r) * K..(t * m + r + 1) * K].copy_from_slice(w);
        }
    }
    let (xp, weighted) = (&*xp, &*weighted);
    for t in 0..ktiles {
        let k0 = t * K;
        let w = &wp[t * m * K..(t + 1) * m * K];
        for j in k0 / L..tiles {
            tile::<K>(&xp[j * m * L..(j + 1) * m * L], w, d, h, k0, j * L);
        }
        tail_columns::<K>(block, weighted, d, h, k0, (tiles * L).max(k0));
    }
    // The last d mod K triangle rows: their a_r x_rk one row at a time, reusing `wp`.
    for k0 in ktiles * K..d {
        let w = sized(&mut panels.wp, m);
        for (w, row) in w.iter_mut().zip(weighted.chunks_exact(d)) {
            *w = row[k0];
        }
        for j in k0 / L..tiles {
            tile::<1>(&xp[j * m * L..(j + 1) * m * L], w, d, h, k0, j * L);
        }
        tail_columns::<1>(block, weighted, d, h, k0, (tiles * L).max(k0));
    }
}

/// Entries (k0..k0 + R) x (l0..l0 + L) of `h` plus the block's terms, held in registers while
/// the block's rows pass: `x` is the packed column tile, `w` the rows' a_r x_rk for these k.
#[inline(always)]
fn tile<const R: usize>(x: &[f64], w: &[f64], d: usize, h: &mut [f64], k0: usize, l0: usize) {
    let mut acc = [[0.0f64; L]; R];
    for (q, a) in acc.iter_mut().enumerate() {
        a.copy_from_slice(&h[(k0 + q) * d + l0..(k0 + q) * d + l0 + L]);
    }
    for (x, w) in x.chunks_exact(L).zip(w.chunks_exact(R)) {
        for (a, &ak) in acc.iter_mut().zip(w) {
            for (v, &xl) in a.iter_mut().zip(x) {
                *v += ak * xl;
            }
        }
    }
    for (q, a) in acc.iter().enumerate() {
        h[(k0 + q) * d + l0..(k0 + q) * d + l0 + L].copy_from_slice(a);
    }
}

/// Triangle rows k0..k0 + R at the columns from `from` that no full tile covers, one entry at
/// a time.
#[inline(always)]
fn tail_columns<const R: usize>(
    block: &[f64],
    weighted: &[f64],
    d: usize,
    h: &mut [f64],
    k0: usize,
    from: usize,
) {
    for l in from..d {
        for q in 0..R {
            let mut v = h[(k0 + q) * d + l];
            for (row, wrow) in block.chunks_exact(d).zip(weighted.chunks_exact(d)) {
                v += wrow[k0 + q] * row[l];
            }
            h[(k0 + q) * d + l] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from;
    use rand::Rng as _;

    /// The plain loop the kernel must round exactly as (with its skips of zero terms).
    fn plain(block: &[f64], coef: &[f64], d: usize, h: &mut [f64]) {
        for (row, &a) in block.chunks_exact(d).zip(coef) {
            for k in 0..d {
                let ak = a * row[k];
                if ak == 0.0 {
                    continue;
                }
                for l in k..d {
                    h[k * d + l] += ak * row[l];
                }
            }
        }
    }

    /// Both code paths equal the plain loop in every upper-triangle bit, over sizes with and
    /// without remainders of rows and columns, values spanning twelve orders of magnitude
    /// (another summation order would show), zero weights and zero entries, and a triangle
    /// already holding earlier blocks' sums.
    #[test]
    fn tiles_round_as_the_row_by_row_loop() {
        let mut rng = rng_from(&["gram-tiles"]);
        // One scratch for every size, as across a Gram matrix's blocks (it grows and shrinks).
        let mut panels = Panels::default();
        for d in [1usize, 3, 4, 7, 8, 9, 13, 33] {
            for n in [1usize, 5, 64] {
                let value = |rng: &mut crate::rng::Rng| {
                    if rng.gen_bool(0.1) {
                        0.0
                    } else {
                        (rng.r#gen::<f64>() - 0.5) * 10f64.powi(rng.gen_range(-6..6))
                    }
                };
                let block: Vec<f64> = (0..n * d).map(|_| value(&mut rng)).collect();
                let coef: Vec<f64> = (0..n).map(|_| value(&mut rng).abs()).collect();
                let start: Vec<f64> = (0..d * d).map(|_| value(&mut rng)).collect();
                let mut want = start.clone();
                plain(&block, &coef, d, &mut want);
                let mut any = start.clone();
                add_block_any(&mut panels, &block, &coef, d, &mut any);
                let mut chosen = start.clone();
                add_block(&mut panels, &block, &coef, d, &mut chosen);
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    let mut avx2 = start;
                    // SAFETY: the CPU supports AVX2 (checked just above).
                    unsafe { add_block_avx2(&mut panels, &block, &coef, d, &mut avx2) };
                    assert_eq!(avx2, chosen, "AVX2 path d={d} n={n}");
                }
                for k in 0..d {
                    for l in k..d {
                        let w = want[k * d + l].to_bits();
                        assert_eq!(
                            any[k * d + l].to_bits(),
                            w,
                            "portable d={d} n={n} ({k},{l})"
                        );
                        assert_eq!(
                            chosen[k * d + l].to_bits(),
                            w,
                            "chosen d={d} n={n} ({k},{l})"
                        );
                    }
                }
            }
        }
    }
}
