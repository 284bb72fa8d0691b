//! The functional mechanism's trimming step at large D: x = sum over the eigenpairs (l, v) of a
//! symmetric matrix with l above a floor of v (v . b) / l, without forming an eigenvector.
//!
//! A = Q T Q^T by Householder reflections (Q never formed: each reflector is kept as its
//! vector), then T = Z L Z^T by implicit QR sweeps with Wilkinson shifts. Every eigenvector
//! matrix is a product of reflections and rotations, so Z^T Q^T b is those reflections and
//! rotations applied to b in turn (O(D) per reflection, O(1) per rotation), and Q Z u the same
//! in reverse. What is left is the reduction, 4/3 D^3 multiply-adds done in one sweep of the
//! trailing matrix per column: D = 1500 in about a fifth of the 2.5 s nalgebra's
//! `SymmetricEigen` took, which also accumulated every rotation into a D x D matrix.
//!
//! The arithmetic is fixed: sums run in eight interleaved partial sums combined in one order,
//! no product is fused with a sum, and the same code is compiled for AVX-512, AVX2 and plain
//! x86-64 (chosen at run time), so every machine gets the same bits.

/// Sums of eight interleaved partial sums, combined in a fixed order.
const LANES: usize = 8;

/// sum_k a_k b_k as eight partial sums, each in index order, combined pairwise.
#[inline(always)]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut s = [0.0f64; LANES];
    let body = n - n % LANES;
    for (ca, cb) in a[..body]
        .chunks_exact(LANES)
        .zip(b[..body].chunks_exact(LANES))
    {
        for q in 0..LANES {
            s[q] += ca[q] * cb[q];
        }
    }
    for k in body..n {
        s[k - body] += a[k] * b[k];
    }
    ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]))
}

/// x = sum_{l_k > floor} v_k (v_k . b) / l_k over the eigenpairs (l_k, v_k) of the symmetric
/// d x d matrix `a` (row-major, both triangles), floor = `rel_floor` max_k |l_k|, and the
/// number of eigenvalues at or below the floor: the minimiser of (1/2) x^T A x - b . x on the
/// span of A's eigenvectors whose eigenvalues exceed the floor.
pub fn solve_on_positive_eigenspace(
    a: &[f64],
    d: usize,
    b: &[f64],
    rel_floor: f64,
) -> (Vec<f64>, usize) {
    assert_eq!(a.len(), d * d);
    assert_eq!(b.len(), d);
    if d == 0 {
        return (Vec::new(), 0);
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return unsafe { solve_avx512(a, d, b, rel_floor) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { solve_avx2(a, d, b, rel_floor) };
        }
    }
    solve_any(a, d, b, rel_floor)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn solve_avx512(a: &[f64], d: usize, b: &[f64], rel_floor: f64) -> (Vec<f64>, usize) {
    solve_any(a, d, b, rel_floor)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn solve_avx2(a: &[f64], d: usize, b: &[f64], rel_floor: f64) -> (Vec<f64>, usize) {
    solve_any(a, d, b, rel_floor)
}

#[inline(always)]
fn solve_any(a: &[f64], d: usize, b: &[f64], rel_floor: f64) -> (Vec<f64>, usize) {
    // Scaled to entries of at most 1, so no square below under- or overflows.
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if scale == 0.0 || !scale.is_finite() {
        return (vec![0.0; d], d);
    }
    let mut m: Vec<f64> = a.iter().map(|v| v / scale).collect();
    let mut t = Tridiagonal::new(d);
    t.reduce(&mut m, d);
    let mut g = b.to_vec();
    t.apply_qt(&m, d, &mut g);
    let rotations = t.diagonalise(&mut g);
    let top = t.diag.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let mut trimmed = 0;
    for (gk, &lk) in g.iter_mut().zip(&t.diag) {
        if lk <= rel_floor * top {
            trimmed += 1;
            *gk = 0.0;
        } else {
            *gk /= lk * scale;
        }
    }
    rotations.apply_z(&mut g);
    t.apply_q(&m, d, &mut g);
    (g, trimmed)
}

/// T's diagonal and off-diagonal, and the reflectors' coefficients: reflector k is
/// I - tau_k v v^T on indices k+1..d, its v (v_0 = 1) kept in row k of the reduced matrix.
struct Tridiagonal {
    diag: Vec<f64>,
    off: Vec<f64>,
    tau: Vec<f64>,
}

impl Tridiagonal {
    fn new(d: usize) -> Self {
        Tridiagonal {
            diag: vec![0.0; d],
            off: vec![0.0; d.saturating_sub(1)],
            tau: vec![0.0; d.saturating_sub(2)],
        }
    }

    /// Reduces `m` (d x d, row-major; only the upper triangle is read) to T = Q^T M Q. Column
    /// k's reflection updates the trailing upper triangle in one sweep that also forms the
    /// next column's product p = tau A v, each row while it is in cache: half the matrix is
    /// read and written per column.
    #[inline(always)]
    fn reduce(&mut self, m: &mut [f64], d: usize) {
        if d == 1 {
            self.diag[0] = m[0];
            return;
        }
        let mut p = vec![0.0; d];
        let mut w = vec![0.0; d];
        // Column 0's reflector (read from row 0, by symmetry) and its product p = tau A v.
        let (mut beta, mut tau) = (m[1], 0.0);
        if d >= 3 {
            (beta, tau) = reflect(&mut m[1..d]);
            if tau != 0.0 {
                let (head, rows) = m.split_at_mut(d);
                let v = &head[1..d];
                let acc = &mut p[1..];
                for (r, row) in rows.chunks_exact(d).enumerate() {
                    symmetric_row_product(&row[1 + r..], v, r, acc);
                }
                acc.iter_mut().for_each(|x| *x *= tau);
            }
        }
        for k in 0..d.saturating_sub(2) {
            let len = d - k - 1;
            self.diag[k] = m[k * d + k];
            self.off[k] = beta;
            self.tau[k] = tau;
            let (head, rows) = m.split_at_mut((k + 2) * d);
            let (above, next) = head.split_at_mut((k + 1) * d);
            let v = &above[k * d + k + 1..(k + 1) * d];
            let next = &mut next[k + 1..];
            // Row k+1 first: w = p - (tau/2)(p . v) v and A <- A - v w^T - w v^T.
            if tau != 0.0 {
                let pv = &p[k + 1..];
                let half = 0.5 * tau * dot(pv, v);
                for ((wc, &pc), &vc) in w[..len].iter_mut().zip(pv).zip(v) {
                    *wc = pc - half * vc;
                }
                update_row(next, v, &w[..len], 0);
            }
            // Column k+1's reflector from the updated row (none for a single entry).
            let next_tau;
            (beta, next_tau) = if len >= 3 {
                reflect(&mut next[1..])
            } else {
                (next[1], 0.0)
            };
            // The rows below, from their diagonal: the update, then their part of the next
            // product (p's entries for this column are all in w by now).
            let vn = &next[1..];
            let acc = &mut p[k + 2..];
            acc.iter_mut().for_each(|x| *x = 0.0);
            for (r, row) in rows.chunks_exact_mut(d).enumerate() {
                let row = &mut row[k + 2 + r..];
                if tau != 0.0 {
                    update_row(row, &v[1..], &w[1..len], r);
                }
                if next_tau != 0.0 {
                    symmetric_row_product(row, vn, r, acc);
                }
            }
            acc.iter_mut().for_each(|x| *x *= next_tau);
            tau = next_tau;
        }
        self.diag[d - 2] = m[(d - 2) * d + d - 2];
        self.diag[d - 1] = m[(d - 1) * d + d - 1];
        self.off[d - 2] = beta;
    }

    /// g <- Q^T g: the reflectors in order.
    fn apply_qt(&self, m: &[f64], d: usize, g: &mut [f64]) {
        for (k, &tau) in self.tau.iter().enumerate() {
            reflect_vector(&m[k * d + k + 1..(k + 1) * d], tau, &mut g[k + 1..]);
        }
    }

    /// g <- Q g: the reflectors in reverse.
    fn apply_q(&self, m: &[f64], d: usize, g: &mut [f64]) {
        for (k, &tau) in self.tau.iter().enumerate().rev() {
            reflect_vector(&m[k * d + k + 1..(k + 1) * d], tau, &mut g[k + 1..]);
        }
    }

    /// Diagonalises T in place (its eigenvalues left in `diag`) by implicit QR sweeps with
    /// Wilkinson shifts, T <- R T R^T for each rotation R, applying every R to `g` as it
    /// goes (so g ends as Z^T g) and keeping them for [`Rotations::apply_z`].
    fn diagonalise(&mut self, g: &mut [f64]) -> Rotations {
        let (a, e) = (&mut self.diag, &mut self.off);
        let n = a.len();
        let mut rot = Rotations::default();
        if n < 2 {
            return rot;
        }
        let negligible = |e: f64, x: f64, y: f64| e.abs() <= f64::EPSILON * (x.abs() + y.abs());
        let mut end = n - 1;
        // A symmetric tridiagonal converges in a few sweeps per eigenvalue; the cap only
        // stops a runaway on non-finite input.
        let mut sweeps = 0;
        while end > 0 && sweeps < 50 * n {
            if negligible(e[end - 1], a[end - 1], a[end]) {
                e[end - 1] = 0.0;
                end -= 1;
                continue;
            }
            let mut start = end - 1;
            while start > 0 && !negligible(e[start - 1], a[start - 1], a[start]) {
                start -= 1;
            }
            if start > 0 {
                e[start - 1] = 0.0;
            }
            sweeps += 1;
            rot.sweeps.push((start, end));
            // The shift: the eigenvalue of T's trailing 2 x 2 nearer its last diagonal entry.
            let (am, an, em) = (a[end - 1], a[end], e[end - 1]);
            let half = 0.5 * (am - an);
            let root = (half * half + em * em).sqrt();
            let mu = an - em * em / (half + if half >= 0.0 { root } else { -root });
            let (mut x, mut z) = (a[start] - mu, e[start]);
            for i in start..end {
                let j = i + 1;
                let r = (x * x + z * z).sqrt();
                let (c, s) = if r == 0.0 { (1.0, 0.0) } else { (x / r, z / r) };
                if i > start {
                    e[i - 1] = r;
                }
                let (ai, aj, ei) = (a[i], a[j], e[i]);
                let (cc, ss, cs) = (c * c, s * s, c * s);
                a[i] = cc * ai + 2.0 * cs * ei + ss * aj;
                a[j] = ss * ai - 2.0 * cs * ei + cc * aj;
                e[i] = cs * (aj - ai) + (cc - ss) * ei;
                if j < end {
                    x = e[i];
                    z = s * e[j];
                    e[j] *= c;
                }
                let (gi, gj) = (g[i], g[j]);
                g[i] = c * gi + s * gj;
                g[j] = c * gj - s * gi;
                rot.cs.push((c, s));
            }
        }
        rot
    }
}

/// The rotations of [`Tridiagonal::diagonalise`] in order: sweep (start, end) rotated
/// coordinates (i, i+1) for i = start..end, one (c, s) each.
#[derive(Default)]
struct Rotations {
    sweeps: Vec<(usize, usize)>,
    cs: Vec<(f64, f64)>,
}

impl Rotations {
    /// u <- Z u = R_1^T ... R_m^T u: the transposed rotations in reverse.
    fn apply_z(&self, u: &mut [f64]) {
        let mut at = self.cs.len();
        for &(start, end) in self.sweeps.iter().rev() {
            for i in (start..end).rev() {
                at -= 1;
                let (c, s) = self.cs[at];
                let (ui, uj) = (u[i], u[i + 1]);
                u[i] = c * ui - s * uj;
                u[i + 1] = s * ui + c * uj;
            }
        }
    }
}

/// Row r of the trailing upper triangle, from its diagonal (`row`), less its part of
/// v w^T + w v^T: `row[c] -= v_r w_(r+c) + w_r v_(r+c)`.
#[inline(always)]
fn update_row(row: &mut [f64], v: &[f64], w: &[f64], r: usize) {
    let (vr, wr) = (v[r], w[r]);
    for ((x, &wc), &vc) in row.iter_mut().zip(&w[r..]).zip(&v[r..]) {
        *x -= vr * wc + wr * vc;
    }
}

/// Row r's part of A v from the upper triangle (`row` from its diagonal): acc_r gains
/// row . v_(r..) and each later acc_(r+c) gains `row[c] v_r`, so every acc_i sums its terms
/// in row order.
#[inline(always)]
fn symmetric_row_product(row: &[f64], v: &[f64], r: usize, acc: &mut [f64]) {
    acc[r] += dot(row, &v[r..]);
    let vr = v[r];
    for (a, &x) in acc[r + 1..].iter_mut().zip(&row[1..]) {
        *a += x * vr;
    }
}

/// Householder reflector of x (length >= 2), LAPACK's convention: (I - tau v v^T) x = beta e_1
/// with v_0 = 1; v is written over x. tau = 0 (no reflection, beta = x_0) when x_1.. = 0.
fn reflect(x: &mut [f64]) -> (f64, f64) {
    let alpha = x[0];
    let tail = dot(&x[1..], &x[1..]);
    if tail == 0.0 {
        return (alpha, 0.0);
    }
    let norm = (alpha * alpha + tail).sqrt();
    let beta = if alpha >= 0.0 { -norm } else { norm };
    let tau = (beta - alpha) / beta;
    let inv = 1.0 / (alpha - beta);
    x[0] = 1.0;
    x[1..].iter_mut().for_each(|v| *v *= inv);
    (beta, tau)
}

/// y <- (I - tau v v^T) y.
fn reflect_vector(v: &[f64], tau: f64, y: &mut [f64]) {
    if tau == 0.0 {
        return;
    }
    let f = tau * dot(v, y);
    for (yk, &vk) in y.iter_mut().zip(v) {
        *yk -= f * vk;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::logistic::linalg::{
        random_symmetric, solve_on_eigenpairs, symmetric_eigen,
    };
    use crate::rng::rng_from;
    use rand::Rng as _;

    /// The minimiser from the Jacobi decomposition's eigenpairs: the reference.
    fn by_jacobi(a: &[f64], d: usize, b: &[f64], rel_floor: f64) -> (Vec<f64>, usize) {
        let (vals, v) = symmetric_eigen(a, d);
        solve_on_eigenpairs(&vals, &v, d, b, rel_floor)
    }

    fn assert_close(x: &[f64], y: &[f64], what: &str) {
        let scale = y.iter().fold(1e-300f64, |m, v| m.max(v.abs()));
        for (i, (a, b)) in x.iter().zip(y).enumerate() {
            assert!((a - b).abs() <= 1e-9 * scale, "{what}: [{i}] {a} vs {b}");
        }
    }

    /// Indefinite random matrices at sizes with and without the reduction's edge cases (1, 2
    /// and 3 rows, remainders of the eight partial sums): the Jacobi decomposition's answer,
    /// to rounding, with the same eigenvalues trimmed. Scaled by 10^6 so that the floor and
    /// the solution are checked on the matrix's own scale.
    #[test]
    fn matches_the_jacobi_decomposition() {
        let mut rng = rng_from(&["eigenspace-jacobi"]);
        for d in [1usize, 2, 3, 4, 7, 9, 30, 31, 64, 120] {
            let a: Vec<f64> = random_symmetric(d, &mut rng)
                .into_iter()
                .map(|v| v * 1e6)
                .collect();
            let b: Vec<f64> = (0..d).map(|_| rng.r#gen::<f64>() - 0.5).collect();
            let (x, trimmed) = solve_on_positive_eigenspace(&a, d, &b, 1e-12);
            let (want, want_trimmed) = by_jacobi(&a, d, &b, 1e-12);
            assert_eq!(trimmed, want_trimmed, "d = {d}");
            assert_close(&x, &want, &format!("d = {d}"));
        }
    }

    /// A matrix built with exact zero and negative eigenvalues: those are trimmed (the zeros
    /// come out at rounding level, under the 1e-12 floor) and the answer lives on the
    /// positive eigenvectors only.
    #[test]
    fn trims_zero_and_negative_eigenvalues() {
        let mut rng = rng_from(&["eigenspace-trim"]);
        let d = 40;
        let (_, v) = symmetric_eigen(&random_symmetric(d, &mut rng), d);
        let vals: Vec<f64> = (0..d)
            .map(|k| match k % 4 {
                0 => 0.0,
                1 => -(k as f64),
                _ => 1.0 + k as f64,
            })
            .collect();
        let mut a = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..d {
                a[i * d + j] = (0..d).map(|k| v[i * d + k] * vals[k] * v[j * d + k]).sum();
            }
        }
        // Exactly symmetric, as the mechanism's matrix is.
        for i in 0..d {
            for j in 0..i {
                a[i * d + j] = a[j * d + i];
            }
        }
        let b: Vec<f64> = (0..d).map(|_| rng.r#gen::<f64>() - 0.5).collect();
        let (x, trimmed) = solve_on_positive_eigenspace(&a, d, &b, 1e-12);
        assert_eq!(trimmed, d / 2);
        // The exact spectrum: the positive eigenvalues, no floor.
        let (want, _) = solve_on_eigenpairs(&vals, &v, d, &b, 0.0);
        assert_close(&x, &want, "built spectrum");
    }

    /// The dispatched (AVX-512 or AVX2) code and the plain x86-64 code give the same bits.
    #[test]
    fn every_code_path_gives_the_same_bits() {
        let mut rng = rng_from(&["eigenspace-bits"]);
        for d in [5usize, 17, 90] {
            let a = random_symmetric(d, &mut rng);
            let b: Vec<f64> = (0..d).map(|_| rng.r#gen::<f64>() - 0.5).collect();
            let (x, t) = solve_on_positive_eigenspace(&a, d, &b, 1e-12);
            let (y, u) = solve_any(&a, d, &b, 1e-12);
            assert_eq!(t, u);
            for (p, q) in x.iter().zip(&y) {
                assert_eq!(p.to_bits(), q.to_bits(), "d = {d}");
            }
        }
    }
}
