//! Choosing lambda: non-private k-fold cross-validation (the thesis) and a private alternative.

use super::LogisticModel;
use super::design::Design;
use super::solver::{Objective, SolverSettings};
use crate::error::{Error, Result};
use crate::privacy::partition::{random_parts, refuses_too_few};
use crate::privacy::{Exponential, Ledger};
use crate::rng::Rng;
use rand::seq::SliceRandom;

/// The thesis's grid {1e-3, 1e-2, ..., 1e5}.
pub const LAMBDA_GRID: [f64; 9] = [1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4, 1e5];

/// Result of a lambda search.
#[derive(Debug, Clone, PartialEq)]
pub struct LambdaChoice {
    pub lambda: f64,
    /// (lambda, score) per grid point: CV accuracy, or validation correct count (private).
    pub scores: Vec<(f64, f64)>,
}

/// Held-out rows classified correctly. The margins pass computes each row's `dot` bit for bit
/// (`design::tests::csr_passes_round_as_the_one_row_loops`), without `dot`'s per-row sum of
/// theta under the +-1 encoding.
fn correct(model_theta: &[f64], design: &Design, y: &[f64]) -> usize {
    let mut z = vec![0.0; design.n_rows()];
    design.margins(model_theta, &mut z);
    z.iter()
        .zip(y)
        .filter(|&(&zi, &yi)| (zi > 0.0) == (yi > 0.0))
        .count()
}

/// How the fits of one fold start along the lambda grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Starts {
    /// Every fit from 0.
    Cold,
    /// Each fold walks the grid from the largest lambda (solution near 0) to the smallest,
    /// starting every fit from the previous one. The relative tolerance refers to grad F(0), so
    /// each fit stops at the same accuracy as a cold start; the minimisers agree with cold
    /// starts to the solver tolerance.
    Warm,
}

/// k-fold cross-validation of non-private LR over `grid` (folds from `rng`; warm or cold starts
/// use the same folds, the same draws from `rng` and the same scores). NOT private: the caller
/// records it with `Ledger::non_private`. Ties go to the larger lambda.
pub fn cross_validate_lambda(
    design: &Design,
    y: &[f64],
    grid: &[f64],
    folds: usize,
    settings: &SolverSettings,
    starts: Starts,
    rng: &mut Rng,
) -> Result<LambdaChoice> {
    cross_validate_path(
        design,
        y,
        grid,
        folds,
        rng,
        |_, _, _, _| Ok(()),
        |d, yy, lambda, (), start| {
            let start = start.filter(|_| starts == Starts::Warm);
            let (t, _) = Objective::regularised(d, yy, lambda).minimise_from(settings, start);
            (t.clone(), t)
        },
    )
}

/// k-fold cross-validation in two passes, for learners whose randomness can be drawn before
/// their fit (output perturbation: the noise vector depends on lambda, N and eps, not on the
/// minimiser). `draw(fold design, labels, lambda, rng)` takes what each fit needs from `rng`,
/// lambda outer, fold inner (the order of [`cross_validate_with`], whose `draw` is the whole
/// fit); then each fold walks the grid from the largest lambda down, `solve(.., drawn, start)`
/// returning (the minimiser to warm-start the next, smaller lambda from, the released theta
/// scored on the validation rows). A start only moves the minimiser within the solver
/// tolerance (relative to grad F(0)), so the scores are those of cold starts. NOT private.
pub fn cross_validate_path<N, D, S>(
    design: &Design,
    y: &[f64],
    grid: &[f64],
    folds: usize,
    rng: &mut Rng,
    mut draw: D,
    mut solve: S,
) -> Result<LambdaChoice>
where
    D: FnMut(&Design, &[f64], f64, &mut Rng) -> Result<N>,
    S: FnMut(&Design, &[f64], f64, &N, Option<&[f64]>) -> (Vec<f64>, Vec<f64>),
{
    let n = design.n_rows();
    let perm = fold_permutation(n, grid, folds, rng)?;
    let fold_data = fold_designs(design, y, &perm, folds);
    let mut noise: Vec<Vec<N>> = Vec::with_capacity(grid.len());
    // Fits here (`cross_validate_with`) alternate between the folds: each fold's design
    // drops what its fit built before the next fold's fit, so that one is held at a time.
    for &lambda in grid {
        let per_fold = fold_data
            .iter()
            .map(|f| {
                let drawn = draw(&f.train, &f.y_train, lambda, rng);
                f.train.release_fit_scratch();
                drawn
            })
            .collect::<Result<Vec<N>>>()?;
        noise.push(per_fold);
    }
    let mut hits = vec![0usize; grid.len()];
    let mut order: Vec<usize> = (0..grid.len()).collect();
    order.sort_by(|&a, &b| grid[b].total_cmp(&grid[a]));
    for (k, f) in fold_data.iter().enumerate() {
        let mut start: Option<Vec<f64>> = None;
        for &g in &order {
            let (t, released) = solve(
                &f.train,
                &f.y_train,
                grid[g],
                &noise[g][k],
                start.as_deref(),
            );
            hits[g] += correct(&released, &f.valid, &f.y_valid);
            start = Some(t);
        }
        f.train.release_fit_scratch();
    }
    Ok(best_of(
        grid.iter()
            .zip(&hits)
            .map(|(&l, &h)| (l, h as f64 / n as f64))
            .collect(),
    ))
}

fn fold_permutation(n: usize, grid: &[f64], folds: usize, rng: &mut Rng) -> Result<Vec<usize>> {
    if folds < 2 || grid.is_empty() {
        return Err(Error::param(
            "folds",
            format!("cross-validation needs at least 2 folds and a non-empty grid (folds {folds})"),
        ));
    }
    if n < folds {
        return Err(Error::param(
            "n_train",
            format!(
                "lambda = \"cv\" splits the training rows into {folds} folds, but the cell has {n} \
                 rows: raise `n_train` or give lambda a number"
            ),
        ));
    }
    let mut perm: Vec<usize> = (0..n).collect();
    perm.shuffle(rng);
    Ok(perm)
}

/// The training and validation rows of one fold, with their labels.
struct FoldDesigns<'a> {
    train: Design<'a>,
    y_train: Vec<f64>,
    valid: Design<'a>,
    y_valid: Vec<f64>,
}

/// Every fold's designs, built once for the whole lambda grid (so a fold design groups its
/// identical examples once, [`Design::grouped_cached`]).
fn fold_designs<'a>(
    design: &Design<'a>,
    y: &[f64],
    perm: &[usize],
    folds: usize,
) -> Vec<FoldDesigns<'a>> {
    (0..folds)
        .map(|f| {
            let (tr, va) = fold(perm, folds, f);
            FoldDesigns {
                train: design.subset(&tr),
                y_train: tr.iter().map(|&i| y[i]).collect(),
                valid: design.subset(&va),
                y_valid: va.iter().map(|&i| y[i]).collect(),
            }
        })
        .collect()
}

/// Training and validation positions of fold `f`.
fn fold(perm: &[usize], folds: usize, f: usize) -> (Vec<usize>, Vec<usize>) {
    let (mut tr, mut va) = (Vec::new(), Vec::new());
    for (p, &i) in perm.iter().enumerate() {
        if p % folds == f {
            va.push(i)
        } else {
            tr.push(i)
        }
    }
    (tr, va)
}

/// The best-scoring grid point; ties go to the larger lambda (the later one in the grid).
fn best_of(scores: Vec<(f64, f64)>) -> LambdaChoice {
    let best = scores
        .iter()
        .fold(scores[0], |b, &s| if s.1 >= b.1 { s } else { b });
    LambdaChoice {
        lambda: best.0,
        scores,
    }
}

/// k-fold cross-validation of any learner over `grid`: `fit(train design, labels, lambda, rng)`
/// returns theta (a private learner fits privately in every fold, as the thesis does), called
/// lambda outer, fold inner. NOT private. Scores are the pooled fold accuracies; ties go to the
/// larger lambda.
pub fn cross_validate_with<F>(
    design: &Design,
    y: &[f64],
    grid: &[f64],
    folds: usize,
    rng: &mut Rng,
    fit: F,
) -> Result<LambdaChoice>
where
    F: FnMut(&Design, &[f64], f64, &mut Rng) -> Result<Vec<f64>>,
{
    cross_validate_path(design, y, grid, folds, rng, fit, |_, _, _, theta, _| {
        (Vec::new(), theta.clone())
    })
}

/// Algorithm 3's selection step: candidate r with probability proportional to
/// exp(eps_select q_r / 2), q_r its validation correct count (sensitivity 1 under both
/// relations), charged to `ledger` as "lambda_selection". Audited on its own in
/// `audit::erm::LambdaSelection`.
pub fn choose_by_score(
    correct_counts: &[f64],
    eps_select: f64,
    rng: &mut Rng,
    ledger: &mut Ledger,
) -> Result<usize> {
    Ok(ledger
        .charge(
            "lambda_selection",
            "exponential mechanism (validation correct count)",
            Exponential::new(1.0, eps_select, ledger.relation())?,
        )?
        .choose(correct_counts, rng))
}

/// How private lambda selection accounts for its two steps, and the selection's epsilon.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tuning {
    /// Chaudhuri et al. 2011's Algorithm 3 as published: the candidates (each on its own part)
    /// and the selection (on the last part) all read disjoint parts, so the whole is the
    /// largest of their epsilons by parallel composition: eps overall when each runs at eps.
    Parallel { eps_select: f64 },
    /// A global budget split between training and selection (SURVEYS.md section 6, condition
    /// (d)): the two steps compose sequentially, their epsilons add.
    Sequential { eps_select: f64 },
}

/// A private choice of lambda and the model it selects (Chaudhuri et al. 2011, section 6,
/// Algorithm 3): split the rows at random into |grid| + 1 disjoint parts, each row
/// independently and uniformly ([`random_parts`]); train candidate r on part r with the
/// private learner `fit` (each part is disjoint, so by parallel composition the candidates
/// together cost the learner's eps); score each on the last part by its number of correct
/// predictions (adding, removing or replacing one validation example changes each score by at
/// most 1: sensitivity 1 under both relations) and pick one by the exponential mechanism with
/// `eps_select` ([`Tuning`]).
///
/// Independent labels, not equal parts: with parts of equal size (cut from a shuffle of the N
/// rows) the sizes follow the private N, and an added example would also move another row
/// from its part into another, changing two parts; with independent labels the other rows' parts
/// have the same law with or without it, which is what parallel composition needs under
/// add/remove. A candidate's fit reads the public N / (|grid| + 1) as its size.
///
/// The released model is the selected candidate. Accounting (`tuning`):
/// * [`Tuning::Parallel`]: one ledger step `train` for the whole algorithm, the parallel
///   composition ([`Ledger::absorb_parallel`]) of each candidate's spend ([`Ledger::composed`])
///   and the selection's: max(eps_train, eps_select). The selection's scores depend on the
///   candidates, released from other parts, which adaptive parallel composition allows: an
///   example in a training part moves one candidate's law by e^eps and nothing else given it;
///   one in the validation part moves only the selection, by e^eps_select for any candidates.
/// * [`Tuning::Sequential`]: the first candidate's training entries (noted as parallel
///   composition, private only when every candidate's are) and an entry "lambda_selection":
///   eps_train + eps_select.
pub fn private_select_lambda<F>(
    design: &Design,
    y: &[f64],
    grid: &[f64],
    tuning: Tuning,
    rng: &mut Rng,
    ledger: &mut Ledger,
    mut fit: F,
) -> Result<(LambdaChoice, LogisticModel)>
where
    F: FnMut(&Design, &[f64], f64, &mut Rng, &mut Ledger) -> Result<LogisticModel>,
{
    let k = grid.len();
    if k == 0 {
        return Err(Error::param(
            "grid",
            "private lambda selection needs a non-empty grid",
        ));
    }
    let n = design.n_rows();
    if refuses_too_few(ledger.relation(), n, k + 1) {
        return Err(Error::param(
            "grid",
            format!("private lambda selection needs N > |grid| under replace-one, got N = {n}"),
        ));
    }
    let (Tuning::Parallel { eps_select } | Tuning::Sequential { eps_select }) = tuning;
    crate::privacy::check_positive("eps_select", eps_select)?;
    let parts = random_parts(n, k + 1, rng);
    let val = design.subset(&parts[k]);
    let yval: Vec<f64> = parts[k].iter().map(|&i| y[i]).collect();
    let mut models = Vec::with_capacity(k);
    let mut scores = Vec::with_capacity(k);
    let mut spend = Spend::new(tuning, ledger);
    for (r, &lambda) in grid.iter().enumerate() {
        let d = design.subset(&parts[r]);
        let yr: Vec<f64> = parts[r].iter().map(|&i| y[i]).collect();
        let mut scratch =
            ledger.scratch_part(k + 1, "one of the random parts of private lambda selection");
        let model = fit(&d, &yr, lambda, rng, &mut scratch)?;
        spend.candidate(scratch, lambda, r)?;
        scores.push((
            lambda,
            correct(model.theta.as_slice().expect("contiguous"), &val, &yval) as f64,
        ));
        models.push(model);
    }
    let q: Vec<f64> = scores.iter().map(|s| s.1).collect();
    let r = spend.select(&q, eps_select, rng, ledger)?;
    Ok((
        LambdaChoice {
            lambda: grid[r],
            scores,
        },
        models.swap_remove(r),
    ))
}

/// Algorithm 3's spend while it runs ([`Tuning`]): the parts' ledger of a parallel
/// composition, or the candidates' ledgers of a sequential split (alike parts, whose first
/// stands for all: [`Ledger::absorb_alike_parts`]).
enum Spend {
    Parallel(Ledger),
    Sequential(Vec<Ledger>),
}

impl Spend {
    fn new(tuning: Tuning, ledger: &Ledger) -> Self {
        match tuning {
            Tuning::Parallel { .. } => Spend::Parallel(ledger.scratch()),
            Tuning::Sequential { .. } => Spend::Sequential(Vec::new()),
        }
    }

    /// Candidate `r`'s fit at `lambda`, whose steps `scratch` holds.
    fn candidate(&mut self, scratch: Ledger, lambda: f64, r: usize) -> Result<()> {
        match self {
            Spend::Parallel(parts) => {
                let label = format!("candidate lambda = {lambda} on part {}", r + 1);
                parts.record(scratch.composed("train", &label)?)
            }
            Spend::Sequential(parts) => {
                parts.push(scratch);
                Ok(())
            }
        }
    }

    /// The selection among the candidates' correct counts `q`, and the whole spend recorded
    /// in `ledger`.
    fn select(
        self,
        q: &[f64],
        eps_select: f64,
        rng: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<usize> {
        let k = q.len();
        match self {
            Spend::Parallel(mut parts) => {
                let r = choose_by_score(q, eps_select, rng, &mut parts)?;
                let label = format!(
                    "Algorithm 3 (Chaudhuri et al. 2011): {k} candidates, one per lambda, each \
                     trained on its own random part, and the exponential mechanism on part {}; \
                     parallel composition",
                    k + 1
                );
                ledger.absorb_parallel(parts, "train", &label)?;
                Ok(r)
            }
            Spend::Sequential(parts) => {
                let note = format!(
                    "parallel composition: {k} candidates (one per lambda) each trained on its own disjoint part"
                );
                ledger.absorb_alike_parts(parts, &note)?;
                choose_by_score(q, eps_select, rng, ledger)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Laplace;
    use crate::rng::rng_from;

    /// The ledger of Algorithm 3 split sequentially (ε 0.5 per candidate, 0.25 to select) on
    /// erm's toy rows, with the candidate at λ = `short` stopped short of its minimiser.
    fn sequential_ledger(short: Option<f64>) -> Ledger {
        let mut ledger = Ledger::default();
        let mut rng = rng_from(&["select-sequential"]);
        let tuning = Tuning::Sequential { eps_select: 0.25 };
        let fit = |d: &Design, _: &[f64], lambda: f64, _: &mut Rng, l: &mut Ledger| {
            l.charge("train", "laplace", Laplace::new(1.0, 0.5, l.relation())?)?;
            if short == Some(lambda) {
                l.void_last("solver stopped early");
            }
            Ok(LogisticModel::new(vec![0.0; d.dim()], None, d))
        };
        let (x, y) = super::super::erm::toy_rows(40);
        let grid = [1.0, 2.0, 3.0];
        let design = Design::dense(x.view());
        private_select_lambda(&design, &y, &grid, tuning, &mut rng, &mut ledger, fit).unwrap();
        ledger
    }

    /// Algorithm 3 split sequentially states one candidate's training spend plus the
    /// selection's, and is private only when every candidate's fit is.
    #[test]
    fn sequential_tuning_is_private_only_when_every_candidate_is() {
        let all = sequential_ledger(None);
        assert_eq!(all.total_epsilon(), 0.75);
        assert!(all.is_private_within(Some(0.75)), "{all:?}");
        let short = sequential_ledger(Some(2.0));
        assert_eq!(short.total_epsilon(), 0.75);
        assert!(!short.is_private_within(Some(0.75)), "{short:?}");
    }
}
