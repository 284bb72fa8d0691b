//! Random disjoint parts for parallel composition (partitioned NB, private lambda selection,
//! averaging on disjoint blocks, subsample-and-aggregate).
//!
//! Every row gets an independent uniform label in 0..k. Parallel composition needs the
//! partition's law not to depend on the data: under add/remove, with labels drawn independently,
//! the rows of X have the same law of parts whether or not the added example is there, and the
//! example sits in exactly one part, so k mechanisms each eps-DP on their own part are together
//! eps-DP. Parts of equal size cut from a shuffle would not do: their sizes follow the private
//! number of rows, and adding one example moves another row across a part boundary, changing two
//! parts (one by a replacement) instead of one. Under replace-one the labels are per position, so
//! the replaced example and its replacement share a part.

use super::Relation;
use crate::rng::Rng;
use rand::Rng as _;

/// Whether a run may refuse `n` rows as too few for `k` parts: only under replace-one, where N
/// is public. Under add/remove a refusal at N = k - 1 against an answer at N = k would tell the
/// neighbours apart; there a part may be empty (as it may at any N, the labels being random),
/// and a mechanism on an empty part gives its answer on no data.
pub fn refuses_too_few(relation: Relation, n: usize, k: usize) -> bool {
    relation == Relation::ReplaceOne && n < k
}

/// Positions 0..n split into `k` parts by independent uniform labels (drawn in row order).
pub fn random_parts(n: usize, k: usize, rng: &mut Rng) -> Vec<Vec<usize>> {
    let mut parts = vec![Vec::with_capacity(n / k.max(1) + 1); k];
    for i in 0..n {
        parts[rng.gen_range(0..k)].push(i);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_from;

    /// Every position lands in exactly one part, and each part's share is 1/k (chi-square at
    /// level 0.001 over 20,000 rows and 4 parts: statistic < 16.27, 3 degrees of freedom).
    #[test]
    fn parts_are_disjoint_and_uniform() {
        let (n, k) = (20_000, 4);
        let parts = random_parts(n, k, &mut rng_from(&["partition-test"]));
        let mut seen = vec![0u8; n];
        for p in &parts {
            for &i in p {
                seen[i] += 1;
            }
        }
        assert!(seen.iter().all(|&c| c == 1));
        let e = n as f64 / k as f64;
        let chi: f64 = parts.iter().map(|p| (p.len() as f64 - e).powi(2) / e).sum();
        assert!(chi < 16.27, "{chi}");
    }
}
