//! Models built from several fits: averaging m private models (sequential: each on all rows at
//! ε/m; parallel: each on its own disjoint block at ε) and subsample-and-aggregate (Smith
//! 2011: k disjoint blocks, exact fits, coefficients clipped to a public box, noisy mean).
//!
//! Blocks: every row gets an independent uniform block label from the trial's stream, so the
//! partition does not depend on the data, and adding, removing or replacing one example
//! changes the content of exactly one block (under both relations).
//!
//! Privacy statements:
//! * Sequential averaging: m releases at ε/m each compose sequentially to ε (m ledger
//!   entries); the average is post-processing.
//! * Parallel averaging: each block's release is ε-DP and depends only on its block; one
//!   example is in one block, so the m releases together are ε-DP (parallel composition; the
//!   ledger records the first block's entries with that note, private only when every
//!   block's are: [`crate::privacy::Ledger::absorb_alike_parts`]). A block's fit that reads a
//!   size reads the public N / m ([`crate::privacy::PublicSize::part`]), as private lambda
//!   selection's parts do. (A per-example λ is resolved from the run's N before the blocks.)
//! * Subsample-and-aggregate: domain and relation the ledger's; released: the mean of the k
//!   clipped block estimates plus L2-mechanism noise. One example changes one block estimate,
//!   whose clipped value moves within the box [−B, B]^D of L2 diameter 2B√D, so the mean moves
//!   by at most 2B√D/k: L2 sensitivity 2B√D/k, noise β = 2B√D/(k ε), pure ε-DP (the L2
//!   mechanism's proof). The block fits are exact and need no noise.

use crate::error::{Error, Result};
use crate::privacy::partition::refuses_too_few;
use crate::privacy::{L2Mechanism, Ledger};
use crate::rng::Rng;

/// How the models are combined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ensemble {
    /// m models on all rows, each at ε/m.
    Sequential(usize),
    /// m models on m disjoint blocks, each at ε.
    Parallel(usize),
    /// k exact fits on k disjoint blocks, each coordinate clipped to [−bound, bound], mean plus
    /// L2 noise.
    SubsampleAggregate { blocks: usize, bound: f64 },
}

impl Ensemble {
    pub fn describe(&self) -> String {
        match self {
            Ensemble::Sequential(m) => format!("average of {m} models at eps/{m} each"),
            Ensemble::Parallel(m) => format!("average of {m} models on disjoint blocks"),
            Ensemble::SubsampleAggregate { blocks, bound } => {
                format!("subsample-and-aggregate, {blocks} blocks, box [-{bound}, {bound}]")
            }
        }
    }
}

pub use crate::privacy::partition::random_parts as random_blocks;

/// The coordinate-wise mean of equal-length vectors.
fn mean(models: &[Vec<f64>]) -> Vec<f64> {
    let m = models.len() as f64;
    let mut out = vec![0.0; models.first().map_or(0, Vec::len)];
    for t in models {
        out.iter_mut().zip(t).for_each(|(o, v)| *o += v / m);
    }
    out
}

/// `k` blocks of the `n` rows by independent labels, each with the scratch ledger its fit
/// records in, sized to the public N / k (`what` names the blocks in its note). Refused under
/// replace-one below k rows ([`refuses_too_few`]).
fn blocks(
    n: usize,
    k: usize,
    what: &str,
    rng: &mut Rng,
    ledger: &Ledger,
) -> Result<Vec<(Vec<usize>, Ledger)>> {
    if refuses_too_few(ledger.relation(), n, k) {
        return Err(Error::param(
            "models",
            format!("{k} blocks need at least {k} training rows, got {n}"),
        ));
    }
    Ok(random_blocks(n, k, rng)
        .into_iter()
        .map(|b| (b, ledger.scratch_part(k, what)))
        .collect())
}

/// Runs the ensemble: `fit(rows, epsilon or None for an exact fit, rng, ledger)` returns θ on
/// the given positions (all rows: `None`). Records every spend in `ledger`.
pub fn fit_ensemble<F>(
    ensemble: Ensemble,
    n: usize,
    epsilon: f64,
    rng: &mut Rng,
    ledger: &mut Ledger,
    mut fit: F,
) -> Result<Vec<f64>>
where
    F: FnMut(Option<&[usize]>, Option<f64>, &mut Rng, &mut Ledger) -> Result<Vec<f64>>,
{
    match ensemble {
        Ensemble::Sequential(m) => {
            let models = (0..m)
                .map(|_| fit(None, Some(epsilon / m as f64), rng, ledger))
                .collect::<Result<Vec<_>>>()?;
            Ok(mean(&models))
        }
        Ensemble::Parallel(m) => {
            let what = "one of the disjoint blocks of parallel averaging";
            let mut models = Vec::with_capacity(m);
            let mut parts = Vec::with_capacity(m);
            for (b, mut scratch) in blocks(n, m, what, rng, ledger)? {
                models.push(fit(Some(&b), Some(epsilon), rng, &mut scratch)?);
                parts.push(scratch);
            }
            let note = format!("parallel composition: {m} models, each on its own disjoint block");
            ledger.absorb_alike_parts(parts, &note)?;
            Ok(mean(&models))
        }
        Ensemble::SubsampleAggregate { blocks: k, bound } => {
            let what = "one of the blocks of subsample-and-aggregate";
            let mut models = Vec::with_capacity(k);
            for (b, mut scratch) in blocks(n, k, what, rng, ledger)? {
                let mut t = fit(Some(&b), None, rng, &mut scratch)?;
                t.iter_mut().for_each(|v| *v = v.clamp(-bound, bound));
                models.push(t);
            }
            let mut theta = mean(&models);
            let d = theta.len() as f64;
            let sensitivity = 2.0 * bound * d.sqrt() / k as f64;
            let mech = L2Mechanism::new(sensitivity, epsilon, ledger.relation())?;
            let label = format!(
                "l2 mechanism on the mean of {k} clipped block estimates (subsample-and-aggregate, box [-{bound}, {bound}])"
            );
            let noise = ledger
                .charge("train", &label, mech)?
                .sample(theta.len(), rng);
            theta.iter_mut().zip(&noise).for_each(|(t, z)| *t += z);
            Ok(theta)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Laplace;
    use crate::rng::rng_from;

    /// Parallel averaging states one block's spend, and is private only when every block's
    /// fit is: a second block whose fit stopped short of its minimiser withdraws the guarantee.
    #[test]
    fn parallel_averaging_is_private_only_when_every_block_is() {
        let run = |short_block: Option<usize>| {
            let mut ledger = Ledger::default();
            let mut block = 0;
            let fit = |_: Option<&[usize]>, eps: Option<f64>, _: &mut Rng, l: &mut Ledger| {
                let lap = Laplace::new(1.0, eps.expect("private"), l.relation())?;
                l.charge("train", "laplace", lap)?;
                if short_block == Some(block) {
                    l.void_last("solver stopped early");
                }
                block += 1;
                Ok(vec![0.0])
            };
            let mut rng = rng_from(&["ensemble-parallel"]);
            fit_ensemble(Ensemble::Parallel(3), 30, 0.5, &mut rng, &mut ledger, fit).unwrap();
            ledger
        };
        let all = run(None);
        assert_eq!((all.entries.len(), all.total_epsilon()), (1, 0.5));
        assert!(all.is_private_within(Some(0.5)), "{all:?}");
        let short = run(Some(1));
        assert_eq!(short.total_epsilon(), 0.5);
        assert!(!short.is_private_within(Some(0.5)), "{short:?}");
    }

    /// A block's fit reads the public N / m (parallel averaging) or N / k
    /// (subsample-and-aggregate), never the run's whole N, and never the block's own size.
    #[test]
    fn a_block_fit_reads_the_public_size_of_a_block() {
        for (ensemble, parts) in [
            (Ensemble::Parallel(3), 3),
            (
                Ensemble::SubsampleAggregate {
                    blocks: 4,
                    bound: 1.0,
                },
                4,
            ),
        ] {
            let mut ledger = Ledger::default()
                .with_public_size(Some(crate::privacy::PublicSize::new(1000, "declared here")));
            let mut read = Vec::new();
            let fit = |_: Option<&[usize]>, eps: Option<f64>, _: &mut Rng, l: &mut Ledger| {
                read.push(l.public_size("the test's per-block parameter")?);
                if let Some(eps) = eps {
                    l.charge("train", "laplace", Laplace::new(1.0, eps, l.relation())?)?;
                }
                Ok(vec![0.0])
            };
            let mut rng = rng_from(&["ensemble-size"]);
            fit_ensemble(ensemble, 30, 0.5, &mut rng, &mut ledger, fit).unwrap();
            assert_eq!(read, vec![1000 / parts; parts], "{ensemble:?}");
        }
    }
}
