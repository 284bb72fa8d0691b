//! The dense weighted Gram matrix's inner kernel: one block of rows added into the upper
//! triangle of h = sum_i a_i x_i x_i^T, with every entry rounding exactly as the row-by-row
//! loop `h[k][l] += (a_i x_ik) x_il` (rows in order, the product and the sum rounded
//! separately, never fused).
//!
//! The plain loop streams a triangle row from memory for every example row: two loads and a
//! store per update, bound at about 5 G updates/s per core. Here a tile of entries stays in
//! registers while the block's rows pass through it from packed panels, so an update costs one
//! multiply and one add. Each addition waits for the previous one into the same register, so
//! the tile must hold enough of them to keep the adders busy: with AVX-512, 16 triangle rows
//! by 8 columns (sixteen registers, each row's weight read straight into its multiply) reach
//! 24 G updates/s on one core at D = 1000 and 1500, against 21.5 and 19.6 G/s for the 4 x 8
//! tile the portable path uses, and about 29 G/s for the CPU's unfused peak. With AVX2 (16
//! registers) the tile is 6 x 8: each row's two vectors serve six triangle rows instead of four.
//! IEEE multiplies and adds round the same at any vector width and in any tile, so every path
//! gives the same bits.

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
    add_rows(Isa::detected(), panels, block, coef, d, h, None);
}

/// [`add_block`] with the triangle's rows below `cut` and from `cut` on added side by side
/// (`rayon::join`, so a thread of the pool that is idle takes the second part). Each entry
/// still adds the same terms in the same order: the bits are [`add_block`]'s.
pub fn add_block_split(
    panels: &mut Panels,
    block: &[f64],
    coef: &[f64],
    d: usize,
    h: &mut [f64],
    cut: usize,
) {
    add_rows(Isa::detected(), panels, block, coef, d, h, Some(cut.min(d)));
}

/// The instructions the tiles run on, chosen once per block from what the CPU has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Isa {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Isa {
    fn detected() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// Triangle rows `from..to` of the block into `h`, which starts at triangle row `from`.
    fn bands(self, band: &Band, wp: &mut Vec<f64>, h: &mut [f64], from: usize, to: usize) {
        match self {
            // SAFETY: the portable tiles need no CPU feature.
            Isa::Portable => unsafe { band_rows::<Portable, 4>(band, wp, h, from, to) },
            // SAFETY: `detected` chose AVX2 only where the CPU supports it.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { bands_avx2(band, wp, h, from, to) },
            // SAFETY: `detected` chose AVX-512 only where the CPU supports it.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { bands_avx512(band, wp, h, from, to) },
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn bands_avx512(band: &Band, wp: &mut Vec<f64>, h: &mut [f64], from: usize, to: usize) {
    // SAFETY: this function runs only where the CPU supports AVX-512F.
    unsafe { band_rows::<Avx512, 16>(band, wp, h, from, to) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn bands_avx2(band: &Band, wp: &mut Vec<f64>, h: &mut [f64], from: usize, to: usize) {
    // SAFETY: this function runs only where the CPU supports AVX2.
    unsafe { band_rows::<Avx2, 6>(band, wp, h, from, to) }
}

/// A block's rows packed so a tile reads its rows' values contiguously: column tile j as
/// `xp[j][r][0..L]`; a_r x_rk (once per block: every tile of triangle row k multiplies by it)
/// row-major in `weighted`, and for the triangle rows of one band as `wp[r][0..R]` (`wp2` for
/// the second part of a split block). Held by the caller for a whole Gram matrix, so the
/// blocks allocate nothing.
#[derive(Debug, Default)]
pub struct Panels {
    xp: Vec<f64>,
    weighted: Vec<f64>,
    wp: Vec<f64>,
    wp2: Vec<f64>,
}

/// `v` resized to `len` (its contents are about to be overwritten).
fn sized(v: &mut Vec<f64>, len: usize) -> &mut [f64] {
    v.resize(len, 0.0);
    &mut v[..len]
}

/// A register tile: `R` triangle rows by `L` columns of `h` held in registers while a
/// block's rows pass, each entry adding its rows' terms in row order, product and sum
/// rounded separately.
trait Tiles {
    /// The tile's R x [`L`] entries plus the block's terms: row q's entries are
    /// `h[q * d..q * d + L]` (`h` starts at the tile's first entry, rows `d` apart); `x` is
    /// the packed column tile (`x[r][0..L]`), `w` the rows' a_r x_rk for these k
    /// (`w[r][0..R]`).
    ///
    /// # Safety
    /// The CPU must support the kernel's instructions.
    unsafe fn tile<const R: usize>(x: &[f64], w: &[f64], h: &mut [f64], d: usize);
}

/// Columns per tile, in every kernel.
const L: usize = 8;

/// 4 x 8 tiles in plain Rust, which the compiler keeps in registers (eight AVX2 ones).
struct Portable;

impl Tiles for Portable {
    #[inline(always)]
    unsafe fn tile<const R: usize>(x: &[f64], w: &[f64], h: &mut [f64], d: usize) {
        let mut acc = [[0.0f64; 8]; R];
        for (q, a) in acc.iter_mut().enumerate() {
            a.copy_from_slice(&h[q * d..q * d + 8]);
        }
        for (x, w) in x.chunks_exact(8).zip(w.chunks_exact(R)) {
            for (a, &ak) in acc.iter_mut().zip(w) {
                for (v, &xl) in a.iter_mut().zip(x) {
                    *v += ak * xl;
                }
            }
        }
        for (q, a) in acc.iter().enumerate() {
            h[q * d..q * d + 8].copy_from_slice(a);
        }
    }
}

/// The register tiles written with intrinsics: `V` vectors of `8 / V` lanes per triangle row
/// (so R x V accumulators), each block row's V vectors loaded once and multiplied by every
/// triangle row's weight, broadcast inside its multiply; the product and the sum rounded
/// separately, as the plain loop rounds them.
macro_rules! register_tiles {
    ($ty:ident, $features:literal, $vectors:literal,
     $zero:ident, $load:ident, $store:ident, $add:ident, $mul:ident, $set1:ident) => {
        #[cfg(target_arch = "x86_64")]
        impl Tiles for $ty {
            #[target_feature(enable = $features)]
            #[inline]
            unsafe fn tile<const R: usize>(x: &[f64], w: &[f64], h: &mut [f64], d: usize) {
                use std::arch::x86_64::*;
                const LANES: usize = 8 / $vectors;
                let m = w.len() / R;
                assert!(x.len() == m * 8 && w.len() == m * R);
                assert!((R - 1) * d + 8 <= h.len());
                let hp = h.as_mut_ptr();
                let mut acc = [[$zero(); $vectors]; R];
                for (q, a) in acc.iter_mut().enumerate() {
                    for (v, a) in a.iter_mut().enumerate() {
                        // SAFETY: q * d + 8 <= h.len() (asserted above).
                        *a = unsafe { $load(hp.add(q * d + v * LANES)) };
                    }
                }
                let (xp, wp) = (x.as_ptr(), w.as_ptr());
                for r in 0..m {
                    // SAFETY: r < m, and x holds m rows of 8, w m rows of R (asserted above).
                    unsafe {
                        let mut x = [$zero(); $vectors];
                        for (v, x) in x.iter_mut().enumerate() {
                            *x = $load(xp.add(r * 8 + v * LANES));
                        }
                        for (q, a) in acc.iter_mut().enumerate() {
                            let wq = $set1(*wp.add(r * R + q));
                            for (a, &x) in a.iter_mut().zip(&x) {
                                *a = $add(*a, $mul(wq, x));
                            }
                        }
                    }
                }
                for (q, a) in acc.iter().enumerate() {
                    for (v, a) in a.iter().enumerate() {
                        // SAFETY: as for the loads.
                        unsafe { $store(hp.add(q * d + v * LANES), *a) };
                    }
                }
            }
        }
    };
}

/// 6 x 8 tiles in AVX2 registers: twelve accumulators, the row's two vectors and a broadcast
/// make the sixteen. Against the 4 x 8 tile a packed row is read once per six triangle rows
/// instead of four (on a Zen 3 core without AVX-512, `lr_gram` took 0.82-0.99 of the 4 x 8
/// tile's time, median 0.93, in 15 interleaved pairs; four bands sharing each read of a column
/// tile, 24 rows of `h` per column, took 1.3-1.5 times as long).
#[cfg(target_arch = "x86_64")]
struct Avx2;

register_tiles!(
    Avx2,
    "avx2",
    2,
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_add_pd,
    _mm256_mul_pd,
    _mm256_set1_pd
);

/// 16 x 8 tiles in AVX-512 registers: sixteen accumulators of the 32, and each row's weight
/// read straight into its multiply (an embedded broadcast; a separate broadcast per two
/// multiplies, as a 8 x 16 tile takes, competes with them for the same pipes and ran at 17 G
/// updates/s). Written with intrinsics: the compiler spreads a plain-Rust tile of sixteen
/// rows over gathers and scatters, sixteen times slower.
#[cfg(target_arch = "x86_64")]
struct Avx512;

register_tiles!(
    Avx512,
    "avx512f",
    1,
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_add_pd,
    _mm512_mul_pd,
    _mm512_set1_pd
);

/// Packs the block ([`Panels`]), then adds it into the triangle's rows on `isa`: all of them,
/// or those below `cut` and the rest side by side.
fn add_rows(
    isa: Isa,
    panels: &mut Panels,
    block: &[f64],
    coef: &[f64],
    d: usize,
    h: &mut [f64],
    cut: Option<usize>,
) {
    debug_assert_eq!(block.len(), coef.len() * d);
    debug_assert_eq!(h.len(), d * d);
    // Every tile is 8 columns wide.
    let (m, l) = (coef.len(), 8);
    let tiles = d.div_ceil(l);
    let Panels {
        xp,
        weighted,
        wp,
        wp2,
    } = panels;
    let xp = sized(xp, tiles * m * l);
    for (r, row) in block.chunks_exact(d).enumerate() {
        for (j, x) in row.chunks(l).enumerate() {
            let to = &mut xp[(j * m + r) * l..(j * m + r + 1) * l];
            to[..x.len()].copy_from_slice(x);
            to[x.len()..].fill(0.0);
        }
    }
    let weighted = sized(weighted, m * d);
    for ((w, row), &c) in weighted
        .chunks_exact_mut(d)
        .zip(block.chunks_exact(d))
        .zip(coef)
    {
        for (w, &v) in w.iter_mut().zip(row) {
            *w = c * v;
        }
    }
    let band = Band {
        weighted,
        xp,
        m,
        d,
        tiles,
    };
    match cut {
        Some(cut) if 0 < cut && cut < d => {
            let (below, rest) = h.split_at_mut(cut * d);
            rayon::join(
                || isa.bands(&band, wp, below, 0, cut),
                || isa.bands(&band, wp2, rest, cut, d),
            );
        }
        _ => isa.bands(&band, wp, h, 0, d),
    }
}

/// Triangle rows `from..to` in tiles of `K` rows by [`L`] columns, the last (to - from) mod K
/// rows in bands of 8 and 4 (those smaller than K) and then of 1 ([`Band::add`] runs a last
/// column tile narrower than L on a padded copy); `h` starts at triangle row `from`.
///
/// # Safety
/// The CPU must support `T`'s instructions.
#[inline(always)]
unsafe fn band_rows<T: Tiles, const K: usize>(
    band: &Band,
    wp: &mut Vec<f64>,
    h: &mut [f64],
    from: usize,
    to: usize,
) {
    let mut k0 = from;
    // SAFETY (each band): the caller guarantees T's instructions.
    while k0 + K <= to {
        unsafe { band.add::<T, K>(wp, h, k0, from) };
        k0 += K;
    }
    while K > 8 && k0 + 8 <= to {
        unsafe { band.add::<T, 8>(wp, h, k0, from) };
        k0 += 8;
    }
    while k0 + 4 <= to {
        unsafe { band.add::<T, 4>(wp, h, k0, from) };
        k0 += 4;
    }
    while k0 < to {
        unsafe { band.add::<T, 1>(wp, h, k0, from) };
        k0 += 1;
    }
}

/// One block's packed rows, shared by its bands of triangle rows.
struct Band<'a> {
    weighted: &'a [f64],
    /// Column tiles, the last one zero-padded to the full width when L does not divide d.
    xp: &'a [f64],
    m: usize,
    d: usize,
    tiles: usize,
}

impl Band<'_> {
    /// Triangle rows k0..k0 + R of `h`, which starts at triangle row `base`: their a_r x_rk
    /// packed into `wp`, then every tile from the one holding column k0. A last tile narrower
    /// than L runs on a padded copy of its entries: its padding columns add a_r x_rk * 0 to
    /// lanes that are dropped.
    ///
    /// # Safety
    /// The CPU must support `T`'s instructions.
    #[inline(always)]
    unsafe fn add<T: Tiles, const R: usize>(
        &self,
        wp: &mut Vec<f64>,
        h: &mut [f64],
        k0: usize,
        base: usize,
    ) {
        let (m, d, l) = (self.m, self.d, L);
        let row = k0 - base;
        let wp = sized(wp, m * R);
        for (w, row) in wp.chunks_exact_mut(R).zip(self.weighted.chunks_exact(d)) {
            w.copy_from_slice(&row[k0..k0 + R]);
        }
        let full = d / l;
        for j in k0 / l..full {
            let x = &self.xp[j * m * l..(j + 1) * m * l];
            // SAFETY: the caller guarantees T's instructions.
            unsafe { T::tile::<R>(x, wp, &mut h[row * d + j * l..], d) };
        }
        if full < self.tiles {
            let (l0, width) = (full * l, d - full * l);
            let mut padded = [0.0; PADDED];
            let padded = &mut padded[..R * l];
            for (q, p) in padded.chunks_exact_mut(l).enumerate() {
                p[..width].copy_from_slice(&h[(row + q) * d + l0..(row + q + 1) * d]);
            }
            let x = &self.xp[full * m * l..(full + 1) * m * l];
            // SAFETY: the caller guarantees T's instructions.
            unsafe { T::tile::<R>(x, wp, padded, l) };
            for (q, p) in padded.chunks_exact(l).enumerate() {
                h[(row + q) * d + l0..(row + q + 1) * d].copy_from_slice(&p[..width]);
            }
        }
    }
}

/// Room for the largest tile (16 x 8).
const PADDED: usize = 128;

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

    /// Every code path (portable, AVX2, AVX-512 and the one chosen at run time, each whole and
    /// split across two threads) equals the plain loop in every upper-triangle bit, over sizes with and without remainders of rows
    /// and columns for every tile shape (4 x 8, 6 x 8 and 16 x 8), values spanning twelve orders of
    /// magnitude (another summation order would show), zero weights and zero entries, and a
    /// triangle already holding earlier blocks' sums.
    #[test]
    fn tiles_round_as_the_row_by_row_loop() {
        let mut rng = rng_from(&["gram-tiles"]);
        // One scratch for every size, as across a Gram matrix's blocks (it grows and shrinks).
        let mut panels = Panels::default();
        let (_, pool) = crate::learners::logistic::design::one_and_two_thread_pools();
        for d in [1usize, 3, 4, 7, 8, 9, 13, 16, 20, 33, 47] {
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
                let mut paths = Vec::new();
                let mut h = start.clone();
                add_block(&mut panels, &block, &coef, d, &mut h);
                paths.push(("chosen".to_string(), h));
                let mut isas = vec![Isa::Portable];
                #[cfg(target_arch = "x86_64")]
                {
                    if std::arch::is_x86_feature_detected!("avx2") {
                        isas.push(Isa::Avx2);
                    }
                    if std::arch::is_x86_feature_detected!("avx512f") {
                        isas.push(Isa::Avx512);
                    }
                }
                for isa in isas {
                    // Whole, and split on the two threads at a tile edge and off one.
                    for cut in [None, Some(d / 3), Some(16), Some(d - 1)] {
                        let mut h = start.clone();
                        pool.install(|| add_rows(isa, &mut panels, &block, &coef, d, &mut h, cut));
                        paths.push((format!("{isa:?} cut {cut:?}"), h));
                    }
                }
                for (path, h) in &paths {
                    for k in 0..d {
                        for l in k..d {
                            assert_eq!(
                                h[k * d + l].to_bits(),
                                want[k * d + l].to_bits(),
                                "{path} d={d} n={n} ({k},{l})"
                            );
                        }
                    }
                }
            }
        }
    }
}
