//! k-means: Lloyd's algorithm from k seeded training rows (non-private), the SuLQ private
//! Lloyd iteration (Blum, Dwork, McSherry & Nissim 2005): noisy counts and sums per cluster,
//! and sample and aggregate (Nissim, Raskhodnikova & Smith 2007): Lloyd on public blocks, the
//! blocks' centres averaged with Laplace noise.
//!
//! Points are the features in `[-1, 1]^d` through their public bounds. Metrics: the test rows'
//! cost (squared distance to the nearest centre) relative to a non-private Lloyd fit on the same
//! training rows (`kmeans_cost`), and the adjusted Rand index of the test rows' clusters
//! against their classes (`ari`) when the data has more than one class. The reference fit only
//! feeds that metric; nothing of it is released. With fewer training rows than clusters there is
//! no reference: the private fits still release their centres (under add/remove N is private,
//! and an answer on one neighbour against an error on the other would break every ε) and
//! record no `kmeans_cost`; the non-private fit, which is the reference, refuses.

use super::{Estimator, Scored, check_real, unit_box};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::learners::{Classifier, FitInput, Learner, TrialLog};
use crate::privacy::{Laplace, Ledger};
use crate::rng::Rng;
use ndarray::{Array2, ArrayView1};
use rand::Rng as _;
use rand::seq::index::sample;
use std::collections::BTreeMap;

/// Lloyd iterations of the non-private fit at most (it stops when no assignment changes).
pub const MAX_ITER: usize = 300;

/// Fitted centres (rows) and the non-private reference's (if the training set has k rows),
/// both in `[-1, 1]^d`.
#[derive(Debug, Clone, PartialEq)]
pub struct Centres {
    pub centres: Array2<f64>,
    pub reference: Option<Array2<f64>>,
}

/// The index of the centre nearest `x` and its squared distance.
pub fn nearest(centres: &Array2<f64>, x: ArrayView1<f64>) -> (usize, f64) {
    let mut best = (0, f64::INFINITY);
    for (c, centre) in centres.rows().into_iter().enumerate() {
        let d: f64 = centre.iter().zip(x).map(|(a, b)| (a - b) * (a - b)).sum();
        if d < best.1 {
            best = (c, d);
        }
    }
    best
}

/// Σ over points of the squared distance to the nearest centre.
pub fn cost(centres: &Array2<f64>, points: &Array2<f64>) -> f64 {
    points
        .rows()
        .into_iter()
        .map(|x| nearest(centres, x).1)
        .sum()
}

/// Lloyd's algorithm from `start` until no assignment changes (or [`MAX_ITER`]); a cluster
/// left empty keeps its centre.
pub fn lloyd(points: &Array2<f64>, mut centres: Array2<f64>) -> Array2<f64> {
    let mut assigned: Vec<usize> = vec![usize::MAX; points.nrows()];
    for _ in 0..MAX_ITER {
        let mut changed = false;
        for (i, x) in points.rows().into_iter().enumerate() {
            let c = nearest(&centres, x).0;
            changed |= assigned[i] != c;
            assigned[i] = c;
        }
        if !changed {
            break;
        }
        let (sums, counts) = cluster_sums(points, &assigned, centres.nrows());
        for (c, &n) in counts.iter().enumerate() {
            if n > 0.0 {
                let mean = &sums.row(c) / n;
                centres.row_mut(c).assign(&mean);
            }
        }
    }
    centres
}

/// The non-private reference fit the private centres are scored against: Lloyd from k seeded
/// training rows; `None` with fewer rows than clusters (see the module doc).
fn reference(u: &Array2<f64>, k: usize, log: &mut TrialLog) -> Option<Array2<f64>> {
    let mut start = log.streams.stream("kmeans_start");
    (u.nrows() >= k).then(|| lloyd(u, row_start(u, k, &mut start)))
}

/// Per-cluster sums (rows) and counts of the assigned points.
fn cluster_sums(points: &Array2<f64>, assigned: &[usize], k: usize) -> (Array2<f64>, Vec<f64>) {
    let mut sums = Array2::zeros((k, points.ncols()));
    let mut counts = vec![0.0; k];
    for (x, &c) in points.rows().into_iter().zip(assigned) {
        sums.row_mut(c).scaled_add(1.0, &x);
        counts[c] += 1.0;
    }
    (sums, counts)
}

/// k distinct rows of `points`, chosen by `rng` (the seeded start of the non-private fit);
/// the caller makes sure there are k.
pub fn row_start(points: &Array2<f64>, k: usize, rng: &mut Rng) -> Array2<f64> {
    let picked = sample(rng, points.nrows(), k).into_vec();
    points.select(ndarray::Axis(0), &picked)
}

impl Estimator for Centres {
    fn score(&self, data: &Dataset, rows: &[u32]) -> Result<BTreeMap<String, f64>> {
        let u = unit_box(data, rows)?;
        let mut out = BTreeMap::new();
        if let Some(reference) = &self.reference {
            let ratio = cost(&self.centres, &u) / cost(reference, &u);
            out.insert("kmeans_cost".to_string(), ratio);
            // The excess over the reference, for scaling laws on a log axis.
            out.insert("kmeans_excess_cost".to_string(), ratio - 1.0);
        }
        if data.n_classes() > 1 {
            let clusters: Vec<usize> = u
                .rows()
                .into_iter()
                .map(|x| nearest(&self.centres, x).0)
                .collect();
            let classes: Vec<usize> = rows
                .iter()
                .map(|&i| data.labels[i as usize] as usize)
                .collect();
            out.insert("ari".into(), adjusted_rand_index(&clusters, &classes));
        }
        Ok(out)
    }
}

/// The adjusted Rand index of two labellings (Hubert & Arabie 1985): 1 for identical
/// partitions, about 0 for independent ones.
pub fn adjusted_rand_index(a: &[usize], b: &[usize]) -> f64 {
    let (ka, kb) = (
        a.iter().max().map_or(0, |m| m + 1),
        b.iter().max().map_or(0, |m| m + 1),
    );
    let mut table = vec![0.0f64; ka * kb];
    for (&x, &y) in a.iter().zip(b) {
        table[x * kb + y] += 1.0;
    }
    let pairs = |n: f64| n * (n - 1.0) / 2.0;
    let index: f64 = table.iter().map(|&n| pairs(n)).sum();
    let rows: f64 = (0..ka)
        .map(|i| pairs(table[i * kb..(i + 1) * kb].iter().sum()))
        .sum();
    let cols: f64 = (0..kb)
        .map(|j| pairs((0..ka).map(|i| table[i * kb + j]).sum()))
        .sum();
    let expected = rows * cols / pairs(a.len() as f64);
    let max = (rows + cols) / 2.0;
    if max == expected {
        return 1.0;
    }
    (index - expected) / (max - expected)
}

/// One cell's k-means: non-private Lloyd, or the private Lloyd iteration at ε over
/// `iterations` steps.
#[derive(Debug, Clone, Copy)]
pub struct KMeansFit {
    pub clusters: usize,
    /// `None`: non-private; else (ε, iterations).
    pub private: Option<(f64, usize)>,
}

impl Learner for KMeansFit {
    fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
        let u = unit_box(input.data, input.train)?;
        let reference = reference(&u, self.clusters, log);
        let centres = match self.private {
            None => {
                log.ledger.non_private(
                    "train",
                    "none (exact Lloyd iterations)",
                    "non-private k-means reference",
                );
                // Not private, so its training set's size may decide: it needs k rows.
                reference.clone().ok_or_else(|| Error::Data {
                    dataset: input.data.name.clone(),
                    reason: format!(
                        "non-private k-means starts from {} training rows (`clusters`), but \
                         the cell has {} (`n_train`)",
                        self.clusters,
                        u.nrows()
                    ),
                })?
            }
            Some((epsilon, iterations)) => {
                let mut public = log.streams.stream("dp_lloyd_start");
                let mut rng = log.streams.stream("dp_lloyd_noise");
                let begin = box_start(self.clusters, u.ncols(), &mut public);
                dp_lloyd(&u, begin, (epsilon, iterations), &mut log.ledger, &mut rng)?
            }
        };
        Ok(Box::new(Scored(Box::new(Centres { centres, reference }))))
    }

    fn check_data(&self, data: &Dataset) -> Result<()> {
        check_real(data)?;
        if self.clusters > data.n_rows() / 2 {
            return Err(Error::Data {
                dataset: data.name.clone(),
                reason: format!(
                    "k-means asks for {} clusters of {} rows",
                    self.clusters,
                    data.n_rows()
                ),
            });
        }
        Ok(())
    }
}

/// k centres uniform in `[-1, 1]^d` (a data-independent start).
pub fn box_start(k: usize, d: usize, rng: &mut Rng) -> Array2<f64> {
    Array2::from_shape_simple_fn((k, d), || rng.gen_range(-1.0..=1.0))
}

/// The SuLQ private Lloyd iteration, ε-DP by basic composition of its T releases at ε/T.
///
/// * Domain: training sets of points in `[-1, 1]^d` (public bounds).
/// * Release t: for each cluster of the current (public) centres, the count of its points and
///   the sum of their coordinates. One point is in one cluster: add/remove L1 sensitivity
///   1 + d (its count and its coordinates, each at most 1 in absolute value); replace-one twice.
/// * Mechanism: Laplace((1 + d) / (ε/T)) on every count and sum coordinate.
/// * Post-processing: centre = noisy sum / max(noisy count, 1), clipped to the box.
pub fn dp_lloyd(
    points: &Array2<f64>,
    centres: Array2<f64>,
    (epsilon, iterations): (f64, usize),
    ledger: &mut Ledger,
    rng: &mut Rng,
) -> Result<Array2<f64>> {
    let step = lloyd_step(epsilon, iterations, centres.ncols());
    lloyd_iterations(
        points,
        centres,
        (step, iterations),
        ledger,
        rng,
        &mut |_, _| {},
    )
}

/// Each of [`dp_lloyd`]'s T releases: (ε/T, add/remove L1 sensitivity 1 + d).
pub fn lloyd_step(epsilon: f64, iterations: usize, d: usize) -> (f64, f64) {
    (epsilon / iterations as f64, 1.0 + d as f64)
}

/// [`dp_lloyd`]'s T releases at `step` (ε, sensitivity) each, showing each release's noisy
/// sums and counts to `observe` before they become the next centres. The audit runs it at
/// [`lloyd_step`] (the correct row) and at wrong steps (its planted mutants).
pub fn lloyd_iterations(
    points: &Array2<f64>,
    mut centres: Array2<f64>,
    (step, iterations): ((f64, f64), usize),
    ledger: &mut Ledger,
    rng: &mut Rng,
    observe: &mut dyn FnMut(&Array2<f64>, &[f64]),
) -> Result<Array2<f64>> {
    let (k, d) = centres.dim();
    for _ in 0..iterations {
        let (sums, counts) = lloyd_release(points, &centres, step, ledger, rng)?;
        observe(&sums, &counts);
        for cl in 0..k {
            let n = counts[cl].max(1.0);
            for j in 0..d {
                centres[[cl, j]] = (sums[[cl, j]] / n).clamp(-1.0, 1.0);
            }
        }
    }
    Ok(centres)
}

/// One private Lloyd release: the noisy per-cluster coordinate sums and counts of `points`
/// assigned to their nearest of `centres`, Laplace at (ε, `sensitivity` under add/remove,
/// doubled for replace-one).
pub fn lloyd_release(
    points: &Array2<f64>,
    centres: &Array2<f64>,
    (epsilon, sensitivity): (f64, f64),
    ledger: &mut Ledger,
    rng: &mut Rng,
) -> Result<(Array2<f64>, Vec<f64>)> {
    let assigned: Vec<usize> = points
        .rows()
        .into_iter()
        .map(|x| nearest(centres, x).0)
        .collect();
    let (mut sums, mut counts) = cluster_sums(points, &assigned, centres.nrows());
    let relation = ledger.relation();
    let lap = Laplace::new(relation.doubled_for_replace(sensitivity), epsilon, relation)?;
    let mut c = ledger.charge("train", "laplace (private Lloyd: counts and sums)", lap)?;
    for (cl, n) in counts.iter_mut().enumerate() {
        *n += c.sample(rng);
        for v in sums.row_mut(cl) {
            *v += c.sample(rng);
        }
    }
    Ok((sums, counts))
}

/// Sample and aggregate (Nissim, Raskhodnikova & Smith 2007) for k-means, pure ε-DP: the
/// training rows split into m public blocks, non-private Lloyd on each, the blocks' centres
/// averaged with Laplace noise.
///
/// * Blocks: row i goes to block h(salt, i) mod m, h a fixed mixing function of the row's
///   identity (its index in the dataset) and a salt from a public stream, never of its values
///   or of N: adding or removing a row changes one block and leaves the others' rows as they
///   were.
/// * Each block: Lloyd from k of its rows chosen by the block's own public stream (a block of
///   fewer than k rows outputs k centres at the origin); its centres, clamped to
///   `[-1, 1]^d`, sorted by their projection on a public random direction (a canonical order
///   that needs no other block, since cluster labels are arbitrary).
/// * Aggregator: the mean over the m blocks of each (centre rank, coordinate), a k × d matrix.
///   One row changes one block's output, each entry by at most 2: add/remove L1 sensitivity
///   2kd/m; replace-one twice that (the removed and the added row may lie in two blocks).
/// * Mechanism: Laplace(2kd / (m ε)) on each entry; then clamped to the box (post-processing).
///
/// Why the mean and not NRS's smooth-sensitivity "centre of attention": the mean has a global
/// sensitivity and a one-line proof; it pays for it when the blocks disagree on the order of
/// their centres (then the averaged centres blur the clusters).
#[derive(Debug, Clone, Copy)]
pub struct SampleAggregateFit {
    pub clusters: usize,
    pub blocks: usize,
    pub epsilon: f64,
}

impl Learner for SampleAggregateFit {
    fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
        let u = unit_box(input.data, input.train)?;
        let reference = reference(&u, self.clusters, log);
        let salt: u64 = log.streams.stream("sa_blocks").r#gen();
        let mut public = log.streams.stream("sa_direction");
        let direction: Vec<f64> = (0..u.ncols())
            .map(|_| rand_distr::Distribution::sample(&rand_distr::StandardNormal, &mut public))
            .collect();
        let mut outputs = Vec::with_capacity(self.blocks);
        for rows in blocks(input.train, salt, self.blocks) {
            let points = u.select(ndarray::Axis(0), &rows);
            // Each block's own stream: its start does not depend on another block's size.
            let mut stream = log.streams.stream("sa_block_start");
            outputs.push(block_centres(
                &points,
                self.clusters,
                &direction,
                &mut stream,
            ));
        }
        let sensitivity = aggregate_sensitivity(self.clusters, u.ncols(), self.blocks);
        let mut rng = log.streams.stream("sa_noise");
        let centres = aggregate_release(
            &outputs,
            (self.epsilon, sensitivity),
            &mut log.ledger,
            &mut rng,
        )?
        .mapv(|v| v.clamp(-1.0, 1.0));
        Ok(Box::new(Scored(Box::new(Centres { centres, reference }))))
    }

    fn check_data(&self, data: &Dataset) -> Result<()> {
        KMeansFit {
            clusters: self.clusters,
            private: None,
        }
        .check_data(data)
    }
}

/// The positions (in `train`) of each block's rows: row `train[p]` goes to block
/// `mix(train[p] ⊕ salt) mod m`.
pub fn blocks(train: &[u32], salt: u64, m: usize) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); m];
    for (p, &id) in train.iter().enumerate() {
        out[(mix(u64::from(id) ^ salt) % m as u64) as usize].push(p);
    }
    out
}

/// SplitMix64's finaliser: a fixed bijection of u64 that spreads nearby ids.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// One block's k centres: Lloyd from k of its rows, clamped to the box and sorted by their
/// projection on `direction`; k centres at the origin for a block of fewer than k rows.
pub fn block_centres(
    points: &Array2<f64>,
    k: usize,
    direction: &[f64],
    rng: &mut Rng,
) -> Array2<f64> {
    if points.nrows() < k {
        return Array2::zeros((k, points.ncols()));
    }
    let centres = lloyd(points, row_start(points, k, rng)).mapv(|v| v.clamp(-1.0, 1.0));
    let key = |c: usize| {
        centres
            .row(c)
            .iter()
            .zip(direction)
            .map(|(a, b)| a * b)
            .sum::<f64>()
    };
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| key(a).total_cmp(&key(b)));
    centres.select(ndarray::Axis(0), &order)
}

/// The aggregator's add/remove L1 sensitivity: 2kd/m (see [`SampleAggregateFit`]).
pub fn aggregate_sensitivity(k: usize, d: usize, m: usize) -> f64 {
    2.0 * (k * d) as f64 / m as f64
}

/// The aggregator's release: the mean of the blocks' k × d outputs plus Laplace at (ε,
/// `sensitivity` under add/remove, doubled for replace-one) on each entry. The audit calls it
/// with a wrong sensitivity to plant its mutant.
pub fn aggregate_release(
    outputs: &[Array2<f64>],
    (epsilon, sensitivity): (f64, f64),
    ledger: &mut Ledger,
    rng: &mut Rng,
) -> Result<Array2<f64>> {
    let mut mean = Array2::zeros(outputs[0].dim());
    for o in outputs {
        mean += o;
    }
    mean /= outputs.len() as f64;
    let relation = ledger.relation();
    let lap = Laplace::new(relation.doubled_for_replace(sensitivity), epsilon, relation)?;
    let mut c = ledger.charge(
        "train",
        "laplace (sample and aggregate: mean of block centres)",
        lap,
    )?;
    mean.mapv_inplace(|v| v + c.sample(rng));
    Ok(mean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Relation;
    use crate::rng::rng_from;
    use ndarray::array;

    /// The proof's premise: adding a row (a new id) leaves every other row in its block.
    #[test]
    fn adding_a_row_changes_one_block_only() {
        let ids: Vec<u32> = (0..500).collect();
        let before = blocks(&ids, 7, 10);
        let mut grown = ids.clone();
        grown.push(10_000);
        let after = blocks(&grown, 7, 10);
        let changed = (0..10).filter(|&b| before[b] != after[b]).count();
        assert_eq!(changed, 1);
        // The blocks are used: no block of 500 rows in 10 is empty.
        assert!(before.iter().all(|b| b.len() > 20), "{before:?}");
    }

    #[test]
    fn block_centres_are_sorted_by_the_public_direction_and_small_blocks_are_the_origin() {
        let points = array![[-0.9, 0.0], [-0.8, 0.1], [0.8, 0.0], [0.9, -0.1]];
        let mut rng = rng_from(&["test", "block"]);
        let c = block_centres(&points, 2, &[1.0, 0.0], &mut rng);
        assert!(c[[0, 0]] < 0.0 && c[[1, 0]] > 0.0, "{c}");
        let c = block_centres(&points, 2, &[-1.0, 0.0], &mut rng);
        assert!(c[[0, 0]] > 0.0 && c[[1, 0]] < 0.0, "{c}");
        let few = block_centres(
            &points.slice(ndarray::s![..1, ..]).to_owned(),
            2,
            &[1.0, 0.0],
            &mut rng,
        );
        assert_eq!(few, Array2::<f64>::zeros((2, 2)));
    }

    #[test]
    fn the_aggregate_is_the_blocks_mean_at_huge_epsilon() {
        let outputs = vec![array![[-1.0, 0.0]], array![[1.0, 0.5]]];
        let mut ledger = Ledger::new(Relation::AddRemove);
        let mut rng = rng_from(&["test", "aggregate"]);
        let s = aggregate_sensitivity(1, 2, 2);
        assert_eq!(s, 2.0);
        let m = aggregate_release(&outputs, (1e9, s), &mut ledger, &mut rng).unwrap();
        assert!(
            (m[[0, 0]] - 0.0).abs() < 1e-6 && (m[[0, 1]] - 0.25).abs() < 1e-6,
            "{m}"
        );
        assert!(ledger.is_private_within(Some(1e9)));
    }
}
