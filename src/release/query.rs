//! Queries on one column of reals with public bounds, and their sensitivities.
//!
//! Every query first clamps the column to the public bounds [lo, hi], a per-value map with
//! public constants that a ledger records as a public step (the count of clamped values, kept
//! in [`Clamped`] for the trial's `clamped` metric, is a statistic of the data: not in it).
//! Then each query states its sensitivity under both relations ([`Relation`]). No sensitivity
//! reads the column's own length: under add/remove that length is private (a neighbour has one
//! row more or less). The mean reads a public n instead (declared by the run, see
//! `privacy::PublicSize`), or is estimated as a noisy sum over a noisy count
//! (`release::composed_average`).
//!
//! | query | add/remove | replace-one |
//! |---|---|---|
//! | count of a predicate | 1 | 1 |
//! | bounded sum | max(\|lo\|, \|hi\|) | hi - lo |
//! | mean over a public n: lo + sum(x - lo) / n | (hi - lo) / n | (hi - lo) / n |
//! | direct average (tutorial Fig. 4) | hi - lo | hi - lo |
//! | median / quantile (global) | hi - lo | hi - lo |
//! | histogram over public bins (L1) | 1 | 2 |
//! | row count (the denominator of the composed average) | 1 | 0 |
//!
//! Mean over a public n: f_n(X) = lo + sum_i (x_i - lo) / n, the mean of X when X has n rows
//! (the run checks that it does). Adding a row x moves the sum by x - lo in [0, hi - lo] and
//! removing one by as much; replacing one moves it by at most hi - lo: sensitivity (hi - lo) / n
//! under both relations, for neighbours of any size (n is a constant of the mechanism). The old
//! (hi - lo) / (n - 1) with n the data's own length gave the two neighbours different noise
//! scales, and no pure epsilon held (issue 46).
//!
//! Direct average: the mean of X moves by |x - mean(X)| / (m + 1) <= hi - lo when a row is added
//! to m rows (m >= 1), so hi - lo covers every neighbour of a non-empty column.
//!
//! The empty column: under add/remove it neighbours every one-row column, so a mechanism that
//! refused it would answer one neighbour and not the other, and no epsilon would hold. The
//! direct average and every quantile therefore answer the bounds' midpoint on no data
//! ([`Bounds::midpoint`]): |x - midpoint| <= (hi - lo) / 2, within their sensitivity hi - lo.
//! Every median, quantile and average release of the crate records that midpoint as its truth
//! on no data, but the mean over a public n, whose formula gives lo + 0/n = lo. (Under
//! replace-one the size is public, and a release may refuse n = 0.)
//!
//! The median and quantiles are order statistics: x_(ceil(p m)) of the m sorted values, so
//! for even m the median is the *lower* median x_(m/2) (the quantity every median release of
//! the crate records as its truth; [`quantile_sorted`]).

use crate::error::{Error, Result};
use crate::privacy::Relation;
use std::borrow::Cow;

/// Public bounds of a column, lo < hi.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    pub lo: f64,
    pub hi: f64,
}

impl Bounds {
    pub fn new(lo: f64, hi: f64) -> Result<Self> {
        if lo.is_finite() && hi.is_finite() && lo < hi {
            Ok(Bounds { lo, hi })
        } else {
            Err(Error::param(
                "bounds",
                format!("need finite lo < hi, got [{lo}, {hi}]"),
            ))
        }
    }

    pub fn width(&self) -> f64 {
        self.hi - self.lo
    }

    /// (lo + hi) / 2: the answer of an average or a quantile on no data (module docs).
    pub fn midpoint(&self) -> f64 {
        // Halved first: lo + hi overflows for bounds near f64::MAX.
        self.lo / 2.0 + self.hi / 2.0
    }

    /// The largest |x| in the bounds: the add/remove sensitivity of a sum.
    pub fn max_abs(&self) -> f64 {
        self.lo.abs().max(self.hi.abs())
    }
}

/// Appends `values` clamped to `bounds` to `out` and returns how many the clamp moved; a NaN
/// is an error naming its row. What [`Clamped::new`] does, into a buffer the caller reuses.
pub fn clamp_into(values: &[f64], bounds: Bounds, out: &mut Vec<f64>) -> Result<usize> {
    let mut clamped = 0;
    for (i, &v) in values.iter().enumerate() {
        if v.is_nan() {
            return Err(Error::param("value", format!("row {i} is NaN")));
        }
        let c = v.clamp(bounds.lo, bounds.hi);
        clamped += usize::from(c != v);
        out.push(c);
    }
    Ok(clamped)
}

/// A column clamped to public bounds, sorted on demand.
#[derive(Debug, Clone, PartialEq)]
pub struct Clamped {
    pub values: Vec<f64>,
    pub bounds: Bounds,
    /// How many values lay outside the bounds and were moved to them.
    pub clamped: usize,
}

impl Clamped {
    /// Clamps `values` to `bounds`; a NaN is an error naming its row.
    pub fn new(values: &[f64], bounds: Bounds) -> Result<Self> {
        let mut out = Vec::with_capacity(values.len());
        let clamped = clamp_into(values, bounds, &mut out)?;
        Ok(Clamped {
            values: out,
            bounds,
            clamped,
        })
    }

    /// [`Clamped::new`] in `buffer`'s allocation, taken (cleared first; left in `buffer` on an
    /// error): a caller that puts `values` back after the release allocates nothing once the
    /// buffer has grown (issue 52).
    pub fn new_in(values: &[f64], bounds: Bounds, buffer: &mut Vec<f64>) -> Result<Self> {
        let mut out = std::mem::take(buffer);
        out.clear();
        match clamp_into(values, bounds, &mut out) {
            Ok(clamped) => Ok(Clamped {
                values: out,
                bounds,
                clamped,
            }),
            Err(e) => {
                *buffer = out;
                Err(e)
            }
        }
    }

    /// Sorts the values ascending in place (`total_cmp`), for the releases that read only
    /// order statistics: [`Clamped::sorted`] then borrows them instead of copying. Sums over
    /// the values would then add in another order, so a release that sums does not call it.
    pub fn sort(&mut self) {
        self.values.sort_unstable_by(f64::total_cmp);
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The values in ascending order (`total_cmp`): borrowed when they already are (after
    /// [`Clamped::sort`]), else a sorted copy. Either way the same bits: values equal under
    /// `total_cmp` are equal bit for bit, so every sort of a column gives one sequence.
    pub fn sorted(&self) -> Cow<'_, [f64]> {
        if self.values.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
            return Cow::Borrowed(&self.values);
        }
        let mut s = self.values.clone();
        s.sort_unstable_by(f64::total_cmp);
        Cow::Owned(s)
    }
}

/// What [`Query::answer_streaming`] returns: the answer on the clamped column, the same query's
/// answer on the raw column (the truth a user sees when the bounds clip the data), and how many
/// values the clamp moved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Streamed {
    pub answer: f64,
    pub unclamped: f64,
    pub clamped: usize,
}

/// How many interleaved partial sums [`lane_sum`] and [`Query::answer_streaming`] keep: the sum
/// vectorises, and its order of additions depends on the length alone (the same bits on every
/// machine and thread count).
const LANES: usize = 4;

/// Σ f(x) over `xs` in [`LANES`] interleaved partial sums, each in row order, added as
/// (s0 + s1) + (s2 + s3), then the tail in row order.
#[inline]
pub fn lane_sum(xs: &[f64], f: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0.0; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for j in 0..LANES {
            acc[j] += f(c[j]);
        }
    }
    tail.iter().fold(combine(acc), |s, &x| s + f(x))
}

#[inline]
fn combine(acc: [f64; LANES]) -> f64 {
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// The lanes of a pass over whole chunks: Σ f(clamp(x)), Σ f(x) and how many values the clamp
/// moved (a NaN counts as moved), each lane over its rows in order.
type Lanes = [[f64; LANES]; 3];

/// One pass over `values`: Σ f(clamp(x)) and Σ f(x), each as [`lane_sum`] adds, and how many
/// values the clamp to `bounds` moved.
fn clamped_and_raw(values: &[f64], bounds: Bounds, f: impl Fn(f64) -> f64) -> (f64, f64, usize) {
    let mut lanes: Lanes = [[0.0; LANES]; 3];
    let chunks = values.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for j in 0..LANES {
            let (x, y) = (c[j], c[j].clamp(bounds.lo, bounds.hi));
            lanes[0][j] += f(y);
            lanes[1][j] += f(x);
            lanes[2][j] += if y != x { 1.0 } else { 0.0 };
        }
    }
    finish(lanes, tail, bounds, f)
}

/// Combines the lanes and adds the tail in row order.
fn finish(lanes: Lanes, tail: &[f64], bounds: Bounds, f: impl Fn(f64) -> f64) -> (f64, f64, usize) {
    let [mut a, mut b, mut m] = lanes.map(combine);
    for &x in tail {
        let y = x.clamp(bounds.lo, bounds.hi);
        a += f(y);
        b += f(x);
        m += if y != x { 1.0 } else { 0.0 };
    }
    (a, b, m as usize)
}

/// [`clamped_and_raw`] with f(x) = x - `offset` (the sum, the mean and the row count), in AVX2
/// registers where the CPU has them: one register per lane set, the same operations per lane in
/// the same order, so the same bits (the compiler's own vectorisation of the loop above shuffled
/// and spilled, at 2.5 times one pass; issue 52).
fn offset_sums(values: &[f64], bounds: Bounds, offset: f64) -> (f64, f64, usize) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        let whole = values.len() / LANES * LANES;
        // SAFETY: the CPU supports AVX2 (checked just above).
        let lanes = unsafe { offset_lanes_avx2(&values[..whole], bounds, offset) };
        return finish(lanes, &values[whole..], bounds, |x| x - offset);
    }
    clamped_and_raw(values, bounds, |x| x - offset)
}

/// The lanes of [`offset_sums`] over `values` (a whole number of chunks). `max(lo, x)` then
/// `min(hi, y)` is `f64::clamp` bit for bit: vmaxpd returns its second operand unless the
/// first is larger (so a NaN or an equal x passes), as clamp keeps x unless x < lo.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn offset_lanes_avx2(values: &[f64], bounds: Bounds, offset: f64) -> Lanes {
    use std::arch::x86_64::*;
    let (lo, hi, off, one) = (
        _mm256_set1_pd(bounds.lo),
        _mm256_set1_pd(bounds.hi),
        _mm256_set1_pd(offset),
        _mm256_set1_pd(1.0),
    );
    let (mut a, mut b, mut m) = (
        _mm256_setzero_pd(),
        _mm256_setzero_pd(),
        _mm256_setzero_pd(),
    );
    for c in values.chunks_exact(LANES) {
        // SAFETY: `c` holds LANES = 4 f64s; the load is unaligned.
        let x = unsafe { _mm256_loadu_pd(c.as_ptr()) };
        let y = _mm256_min_pd(hi, _mm256_max_pd(lo, x));
        a = _mm256_add_pd(a, _mm256_sub_pd(y, off));
        b = _mm256_add_pd(b, _mm256_sub_pd(x, off));
        let moved = _mm256_cmp_pd::<_CMP_NEQ_UQ>(y, x);
        m = _mm256_add_pd(m, _mm256_and_pd(moved, one));
    }
    let mut lanes: Lanes = [[0.0; LANES]; 3];
    for (out, v) in lanes.iter_mut().zip([a, b, m]) {
        // SAFETY: `out` holds LANES = 4 f64s; the store is unaligned.
        unsafe { _mm256_storeu_pd(out.as_mut_ptr(), v) };
    }
    lanes
}

/// A predicate on one value (count queries).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Predicate {
    /// x >= t.
    AtLeast(f64),
    /// x < t.
    Below(f64),
    /// a <= x < b.
    InRange(f64, f64),
}

impl Predicate {
    #[inline]
    pub fn holds(&self, x: f64) -> bool {
        match *self {
            Predicate::AtLeast(t) => x >= t,
            Predicate::Below(t) => x < t,
            Predicate::InRange(a, b) => a <= x && x < b,
        }
    }
}

/// A scalar query on a clamped column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Query {
    Count(Predicate),
    Sum,
    /// The mean over a public n: lo + sum(x - lo) / n (the mean when the column has n rows).
    Mean {
        n: usize,
    },
    /// The tutorial's direct average: Lap(C / eps) with C the bound width (n kept private).
    DirectAverage,
    /// The p-quantile with global sensitivity (p = 1/2: the median).
    Quantile(f64),
    /// The number of rows.
    RowCount,
}

impl Query {
    /// The exact answer on the clamped column (the `truth` of a release).
    pub fn answer(&self, data: &Clamped) -> Result<f64> {
        let xs = &data.values;
        Ok(match *self {
            Query::Count(p) => xs.iter().filter(|&&x| p.holds(x)).count() as f64,
            Query::Sum => lane_sum(xs, |x| x),
            Query::Mean { n } => {
                if n == 0 {
                    return Err(Error::param("n", "the mean over n = 0 rows is undefined"));
                }
                let lo = data.bounds.lo;
                lo + lane_sum(xs, |x| x - lo) / n as f64
            }
            Query::DirectAverage if xs.is_empty() => data.bounds.midpoint(),
            Query::DirectAverage => mean(xs),
            Query::Quantile(p) => quantile_or_midpoint(&data.sorted(), p, data.bounds),
            Query::RowCount => xs.len() as f64,
        })
    }

    /// The answer on `values` clamped to `bounds` and on the raw `values`, computed in one pass
    /// without materialising the clamped column (issue 52: no per-trial copy of n values), with
    /// the pass's count of moved values. `answer` is bit for bit `answer(&Clamped::new(values,
    /// bounds)?)` and `unclamped` the same query's answer on the raw values (a mean offset by
    /// the public `bounds.lo`): each value is clamped as [`Clamped::new`] does and the sums add
    /// in [`lane_sum`]'s order. `None` for the queries that need the values themselves
    /// (quantiles, the blocked direct average) or an empty column; a NaN is the same error as
    /// [`Clamped::new`]'s.
    pub fn answer_streaming(&self, values: &[f64], bounds: Bounds) -> Option<Result<Streamed>> {
        if values.is_empty() || matches!(self, Query::Quantile(_) | Query::DirectAverage) {
            return None;
        }
        let lo = bounds.lo;
        let ((answer, unclamped), clamped, nan) = match *self {
            Query::Count(p) => {
                let (a, b, m) =
                    clamped_and_raw(values, bounds, |x| f64::from(u8::from(p.holds(x))));
                ((a, b), m, values.iter().any(|x| x.is_nan()))
            }
            Query::Sum => {
                let (a, b, m) = offset_sums(values, bounds, 0.0);
                ((a, b), m, a.is_nan())
            }
            Query::Mean { n } if n > 0 => {
                let (a, b, m) = offset_sums(values, bounds, lo);
                let n = n as f64;
                ((lo + a / n, lo + b / n), m, a.is_nan())
            }
            Query::Mean { .. } => {
                return Some(Err(Error::param(
                    "n",
                    "the mean over n = 0 rows is undefined",
                )));
            }
            Query::RowCount => {
                let (a, _, m) = offset_sums(values, bounds, 0.0);
                let n = values.len() as f64;
                ((n, n), m, a.is_nan())
            }
            Query::Quantile(_) | Query::DirectAverage => unreachable!("refused above"),
        };
        // A NaN sum is a NaN row or lanes overflowing to +inf and -inf (huge bounds): only the
        // first is refused; the second is the clamped column's own NaN answer. The column is
        // searched only then: the release is one pass (issue 52).
        if nan && let Some(i) = values.iter().position(|v| v.is_nan()) {
            return Some(Err(Error::param("value", format!("row {i} is NaN"))));
        }
        Some(Ok(Streamed {
            answer,
            unclamped,
            clamped,
        }))
    }

    /// The L1 sensitivity under `relation` for a column with these bounds (of any length: no
    /// query's sensitivity reads the data's own size).
    pub fn sensitivity(&self, relation: Relation, bounds: Bounds) -> f64 {
        match (*self, relation) {
            (Query::Count(_), _) => 1.0,
            (Query::Sum, Relation::AddRemove) => bounds.max_abs(),
            (Query::Sum, Relation::ReplaceOne) => bounds.width(),
            (Query::Mean { n }, _) => bounds.width() / n.max(1) as f64,
            (Query::DirectAverage, _) | (Query::Quantile(_), _) => bounds.width(),
            (Query::RowCount, Relation::AddRemove) => 1.0,
            (Query::RowCount, Relation::ReplaceOne) => 0.0,
        }
    }
}

/// Sum / n with a four-way split of the accumulator (no allocation; vectorises).
#[inline]
pub fn mean(xs: &[f64]) -> f64 {
    mean_by(xs, |x| x)
}

/// [`mean`] of `values` clamped to `bounds` on the fly: bit for bit `mean` of the clamped
/// column (the same values added in the same order), with no copy of it (issue 52). NaN-free
/// input is the caller's to check.
pub fn clamped_mean(values: &[f64], bounds: Bounds) -> f64 {
    mean_by(values, |x| x.clamp(bounds.lo, bounds.hi))
}

/// Σ f(x) / n with [`mean`]'s four accumulators, then the tail summed apart and added.
#[inline]
fn mean_by(xs: &[f64], f: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0.0f64; 4];
    let chunks = xs.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for j in 0..4 {
            acc[j] += f(c[j]);
        }
    }
    let s = (acc[0] + acc[1]) + (acc[2] + acc[3]) + rest.iter().map(|&x| f(x)).sum::<f64>();
    s / xs.len() as f64
}

/// The order statistic x_(ceil(p n)) of ascending data: for p = 1/2 the median for odd n and
/// the lower median x_(n/2) for even n. It is the truth every median and quantile release
/// records (the global- and smooth-sensitivity medians release it plus noise; the
/// exponential mechanism's best outputs for even n are the interval [x_(n/2), x_(n/2 + 1)],
/// whose left end it is).
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    sorted[quantile_rank(sorted.len(), p) - 1]
}

/// [`quantile_sorted`], or the bounds' midpoint on no data (module docs): the truth of every
/// quantile release.
pub fn quantile_or_midpoint(sorted: &[f64], p: f64, bounds: Bounds) -> f64 {
    if sorted.is_empty() {
        bounds.midpoint()
    } else {
        quantile_sorted(sorted, p)
    }
}

/// ceil(p n) clamped to [1, n]: the rank of the p-quantile of n values.
fn quantile_rank(n: usize, p: f64) -> usize {
    ((p * n as f64).ceil() as usize).clamp(1, n)
}

/// [`quantile_sorted`] of `values` (at least one, no NaN) by selection, reordering them in
/// place: O(n), no copy. The same bits as sorting first: the k-th value under `total_cmp` is
/// one bit pattern however the others are ordered.
pub fn quantile_select(values: &mut [f64], p: f64) -> f64 {
    let rank = quantile_rank(values.len(), p);
    *values.select_nth_unstable_by(rank - 1, f64::total_cmp).1
}

/// Counts per public bin: `edges` ascending (k + 1 edges for k bins); a value below the first
/// edge or at/above the last goes to the end bin (the column is clamped to the bounds first).
pub fn histogram(data: &Clamped, edges: &[f64]) -> Result<Vec<f64>> {
    if edges.len() < 2 || !edges.windows(2).all(|w| w[0] < w[1]) {
        return Err(Error::param(
            "bins",
            format!("need at least two strictly ascending edges, got {edges:?}"),
        ));
    }
    let k = edges.len() - 1;
    let mut counts = vec![0.0; k];
    for &x in &data.values {
        let i = edges.partition_point(|&e| e <= x).clamp(1, k) - 1;
        counts[i] += 1.0;
    }
    Ok(counts)
}

/// L1 sensitivity of a histogram: one row moves one count (add/remove) or two (replace-one).
pub fn histogram_sensitivity(relation: Relation) -> f64 {
    relation.doubled_for_replace(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `len` values in [-0.05, 1.2), many outside the bounds [0.1, 0.9] of the tests.
    fn straddling(len: usize) -> Vec<f64> {
        (0..len)
            .map(|i| ((i * 7919) % 1000) as f64 / 800.0 - 0.05)
            .collect()
    }

    /// The one-pass answer equals the clamped column's, bit for bit, for every streaming
    /// query on data that straddles the bounds; quantiles and the empty column decline; a NaN
    /// is refused naming its row.
    #[test]
    fn streaming_answers_match_the_clamped_column_bit_for_bit() {
        let b = Bounds::new(0.1, 0.9).unwrap();
        let xs = straddling(1001);
        let c = Clamped::new(&xs, b).unwrap();
        for q in [
            Query::Count(Predicate::InRange(0.2, 0.5)),
            Query::Sum,
            Query::Mean { n: 1001 },
            Query::RowCount,
        ] {
            let s = q.answer_streaming(&xs, b).unwrap().unwrap();
            assert_eq!(s.answer.to_bits(), q.answer(&c).unwrap().to_bits(), "{q:?}");
            assert_eq!(s.clamped, c.clamped);
            let raw = Clamped {
                values: xs.clone(),
                bounds: b,
                clamped: 0,
            };
            let u = q.answer(&raw).unwrap();
            assert_eq!(s.unclamped.to_bits(), u.to_bits(), "{q:?} unclamped");
        }
        assert!(Query::Quantile(0.5).answer_streaming(&xs, b).is_none());
        assert!(Query::Sum.answer_streaming(&[], b).is_none());
        let err = Query::Sum
            .answer_streaming(&[0.5, f64::NAN], b)
            .unwrap()
            .unwrap_err();
        assert!(err.to_string().contains("row 1"), "{err}");
    }

    /// The AVX2 lanes give the portable loop's bits, sums and count, on values below, at,
    /// inside and above the bounds (signed zeros and an infinity among them), for every length
    /// mod 4; and a NaN is refused naming its row on either path. On a CPU without AVX2 the
    /// lanes' half compares the portable loop with itself, and the test says so.
    #[test]
    fn avx2_lanes_equal_the_portable_loop_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        let avx2 = std::arch::is_x86_feature_detected!("avx2");
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = false;
        if !avx2 {
            eprintln!("no AVX2 on this CPU: the lanes' comparison checks the portable loop only");
        }
        let b = Bounds::new(-0.0, 0.75).unwrap();
        let specials = [-0.0, 0.0, 0.75, f64::INFINITY, -3.5, 0.3, 1e-300, 0.7500001];
        let xs: Vec<f64> = (0..203)
            .map(|i| specials[i % 8] + (i as f64) * 1e-3 * f64::from(u8::from(i % 3 == 0)))
            .collect();
        for len in 199..203 {
            let v = &xs[..len];
            for off in [0.0, -0.0, 0.25] {
                let (a, b2, m) = offset_sums(v, b, off);
                let (pa, pb, pm) = clamped_and_raw(v, b, |x| x - off);
                assert_eq!(
                    (a.to_bits(), b2.to_bits(), m),
                    (pa.to_bits(), pb.to_bits(), pm)
                );
            }
        }
        let mut bad = xs.clone();
        bad[101] = f64::NAN;
        for q in [Query::Sum, Query::Mean { n: 203 }, Query::RowCount] {
            let e = q
                .answer_streaming(&bad, b)
                .unwrap()
                .unwrap_err()
                .to_string();
            assert!(e.contains("row 101"), "{q:?}: {e}");
        }
    }

    /// The streaming clamped mean and the in-place quantile give the clamped column's
    /// `mean` and sorted quantile bit for bit, for every length mod 4.
    #[test]
    fn clamped_mean_and_selected_quantile_match_the_clamped_column() {
        let b = Bounds::new(0.1, 0.9).unwrap();
        let xs = straddling(1003);
        for len in 999..1003 {
            let c = Clamped::new(&xs[..len], b).unwrap();
            let m = clamped_mean(&xs[..len], b);
            assert_eq!(m.to_bits(), mean(&c.values).to_bits(), "{len}");
            for p in [0.1, 0.5, 0.9, 1.0] {
                let mut v = xs[..len].to_vec();
                let want = quantile_sorted(&Clamped::new(&v, b).unwrap().sorted(), p);
                let got = quantile_select(&mut c.values.clone(), p);
                assert_eq!(got.to_bits(), want.to_bits(), "{len} {p}");
                let raw = quantile_select(&mut v, p);
                assert!(!(0.1..=0.9).contains(&raw) || raw == got, "{len} {p}");
            }
        }
    }

    /// A sum that overflows to +inf in one lane and -inf in another is NaN with no NaN in the
    /// column: the streaming pass answers it as the clamped column does (NaN, no error), not
    /// with a refusal naming a row 0 that is not NaN.
    #[test]
    fn an_overflowing_sum_is_not_taken_for_a_nan_row() {
        let b = Bounds::new(-f64::MAX, f64::MAX).unwrap();
        let xs = [f64::MAX, -f64::MAX, 0.0, 0.0].repeat(2);
        let c = Clamped::new(&xs, b).unwrap();
        for q in [Query::Sum, Query::Mean { n: 8 }, Query::RowCount] {
            let want = q.answer(&c).unwrap();
            let s = q.answer_streaming(&xs, b).unwrap();
            let s = s.unwrap_or_else(|e| panic!("{q:?}: {e}"));
            assert_eq!(s.answer.to_bits(), want.to_bits(), "{q:?}");
            assert_eq!(s.clamped, 0, "{q:?}");
        }
    }

    #[test]
    fn clamping_is_counted_and_nan_refused() {
        let b = Bounds::new(0.0, 1.0).unwrap();
        let c = Clamped::new(&[-0.5, 0.2, 1.5, 1.0], b).unwrap();
        assert_eq!(c.values, vec![0.0, 0.2, 1.0, 1.0]);
        assert_eq!(c.clamped, 2);
        let e = Clamped::new(&[0.1, f64::NAN], b).unwrap_err().to_string();
        assert!(e.contains("row 1"), "{e}");
        assert!(Bounds::new(1.0, 1.0).is_err());
    }

    #[test]
    fn answers() {
        let b = Bounds::new(0.0, 10.0).unwrap();
        let c = Clamped::new(&[1.0, 2.0, 3.0, 4.0, 9.0], b).unwrap();
        assert_eq!(
            Query::Count(Predicate::AtLeast(3.0)).answer(&c).unwrap(),
            3.0
        );
        assert_eq!(
            Query::Count(Predicate::InRange(2.0, 4.0))
                .answer(&c)
                .unwrap(),
            2.0
        );
        assert_eq!(Query::Sum.answer(&c).unwrap(), 19.0);
        assert!((Query::Mean { n: 5 }.answer(&c).unwrap() - 3.8).abs() < 1e-12);
        // Over a public n = 4 the sum of offsets from lo is divided by 4, not by the 5 rows.
        assert!((Query::Mean { n: 4 }.answer(&c).unwrap() - 4.75).abs() < 1e-12);
        assert!(Query::Mean { n: 0 }.answer(&c).is_err());
        assert_eq!(Query::Quantile(0.5).answer(&c).unwrap(), 3.0);
        // Even n: the lower median x_(n/2).
        let even = Clamped::new(&[4.0, 1.0, 3.0, 2.0], b).unwrap();
        assert_eq!(Query::Quantile(0.5).answer(&even).unwrap(), 2.0);
        assert_eq!(Query::RowCount.answer(&c).unwrap(), 5.0);
        // No data (add/remove's neighbour of every one-row column): the bounds' midpoint.
        let empty = Clamped::new(&[], b).unwrap();
        for q in [
            Query::DirectAverage,
            Query::Quantile(0.5),
            Query::Quantile(0.9),
        ] {
            assert_eq!(q.answer(&empty).unwrap(), b.midpoint(), "{q:?}");
        }
        assert_eq!(Query::Sum.answer(&empty).unwrap(), 0.0);
        assert_eq!(
            histogram(&c, &[0.0, 2.0, 5.0, 10.0]).unwrap(),
            vec![1.0, 3.0, 1.0]
        );
        assert!(histogram(&c, &[0.0, 0.0]).is_err());
    }
}
