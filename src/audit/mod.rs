//! Empirical epsilon audit ("privacy you can check", issue 5).
//!
//! For a mechanism M claimed eps-DP and a pair of neighbouring datasets (X, X' = X plus one
//! example under add/remove, or X with one example replaced under replace-one; each audit states
//! its [`Relation`]), the audit runs M `trials` times on each side with independent seeded streams and
//! reduces every output to a scalar statistic s (chosen per mechanism, usually the
//! likelihood-ratio statistic of the worst-case neighbours, so that a threshold event is the
//! Neyman–Pearson optimal test). Then, as in DP-Sniper (Bichsel et al. 2021) and jax_privacy's
//! auditing:
//!
//! 1. **Event selection** on the first half of each side's samples: over threshold events
//!    E = {s >= tau} and E = {s < tau} (tau ranging over the observed values or their
//!    quantiles) and both directions (X over X' and X' over X), pick the event with the largest
//!    first-half lower bound.
//! 2. **Held-out estimate** on the second half: k_num of n draws in E under the numerator side,
//!    k_den of n under the other; with exact one-sided Clopper–Pearson bounds at level 0.025
//!    each (joint 95% by the union bound),
//!    eps_lb = ln(p_lower(k_num, n) / p_upper(k_den, n)), clamped at 0.
//!
//! Because the event is fixed before the second half is looked at, eps_lb is a valid 95% lower
//! bound on the true epsilon of M: a correct mechanism exceeds its claim with probability at
//! most 5% (this chance is attained only when the event is exactly tight, as for Laplace), and a
//! mutant whose real epsilon is well above the claim is caught once the trials suffice.
//!
//! Extension point: implement [`Auditable`] for a new mechanism (its [`Claim`] and one `run`),
//! or, when a run needs nothing but its claim, give [`row`] (or [`with_mutant`], a correct row
//! and its planted mutant) the claim and a run function; add it to its module's `all`
//! ([`mechanisms::all`] gathers them). The logistic-regression audits live in [`logistic`], the
//! ERM and release-layer ones in [`erm`] and [`release`], and those on add/remove neighbours of
//! different sizes (every release, every size-dependent parameter) in [`sizes`], each with its
//! own `all`. A row's claim names the registered kinds it runs (`.covers(&["learner:NAME"])`);
//! [`coverage`] checks that every private kind has a correct row and a mutant.

pub mod classifiers;
pub mod coverage;
pub mod erm;
pub mod erm_sgd;
pub mod estimators;
pub mod estimators_gaussian;
pub mod logistic;
pub mod mechanisms;
pub mod pipeline;
pub mod release;
pub mod robust;
pub mod sizes;

use crate::error::{Error, Result};
use crate::privacy::{Charge, Ledger, Mechanism, Relation};
use crate::rng::{Rng, rng_from};
use serde::Serialize;
use statrs::distribution::{Beta, ContinuousCDF};

pub use mechanisms::all;

/// Which of the two neighbouring datasets a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The base dataset X.
    X,
    /// The neighbour X': X plus one example (add/remove) or X with one example replaced.
    XPrime,
}

impl Side {
    /// `x` on side X, `x_prime` on side X'.
    pub fn pick<'a, T: ?Sized>(self, x: &'a T, x_prime: &'a T) -> &'a T {
        match self {
            Side::X => x,
            Side::XPrime => x_prime,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Side::X => "X",
            Side::XPrime => "X'",
        }
    }
}

/// What an audit row claims: its name, the epsilon and relation of the mechanism's guarantee,
/// whether it is a planted mutant, and the neighbours it runs on. One value per row, so the
/// table, `--mechanism NAME` and the verdict read the same statement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Claim {
    /// Short unique name (used by `epsilab audit --mechanism NAME`).
    pub name: &'static str,
    /// The epsilon the mechanism claims (pure eps-DP under `relation`, or (eps, delta)-DP).
    pub epsilon: f64,
    /// The delta of an (eps, delta) claim (0 for pure eps-DP). The held-out bound is then
    /// ln((p_lower(k_num) - delta) / p_upper(k_den)): an (eps, delta)-DP mechanism has
    /// P[E | num] <= e^eps P[E | den] + delta for every event.
    pub delta: f64,
    /// The neighbouring relation of the claim and of the pair X, X'.
    pub relation: Relation,
    /// True for a planted known-bad variant the audit must catch.
    pub mutant: bool,
    /// For an ablation variant that weakens privacy: the factor by which its real epsilon
    /// exceeds the claim on these neighbours, as the variant states it. The audit's lower bound
    /// must then lie above the claim and at most this factor times it.
    pub stated_excess: Option<f64>,
    /// What X and X' are and which statistic is reported.
    pub neighbours: &'static str,
    /// The registered kinds the row runs, as a spec names them (`"learner:lr_output"`,
    /// `"selection:mask"`, `"release:laplace"`): through the kind's own code or the mechanism
    /// it calls. [`coverage`] requires every private kind to be covered by a correct row and a
    /// mutant; a row auditing a primitive no kind calls as such covers none.
    pub covers: &'static [&'static str],
}

impl Claim {
    /// A correct mechanism claimed `epsilon`-DP under add/remove.
    pub fn new(name: &'static str, epsilon: f64, neighbours: &'static str) -> Self {
        Claim {
            name,
            epsilon,
            delta: 0.0,
            relation: Relation::AddRemove,
            mutant: false,
            stated_excess: None,
            neighbours,
            covers: &[],
        }
    }

    /// The same claim, its row running the registered `kinds` (`"learner:lr_output"`, ...).
    pub fn covers(self, kinds: &'static [&'static str]) -> Self {
        Claim {
            covers: kinds,
            ..self
        }
    }

    /// An (eps, `delta`)-DP claim.
    pub fn with_delta(self, delta: f64) -> Self {
        Claim { delta, ..self }
    }

    /// The same claim under `relation`.
    pub fn under(self, relation: Relation) -> Self {
        Claim { relation, ..self }
    }

    /// A planted mutant if `mutant`.
    pub fn mutant(self, mutant: bool) -> Self {
        Claim { mutant, ..self }
    }

    /// The planted mutant `name` instead, if `mutant`.
    pub fn or_mutant(self, mutant: bool, name: &'static str) -> Self {
        if mutant {
            Claim { name, ..self }.mutant(true)
        } else {
            self
        }
    }

    /// A weakening variant whose real epsilon is at most `factor` times the claim (when given).
    pub fn stated_excess(self, factor: Option<f64>) -> Self {
        Claim {
            stated_excess: factor,
            ..self
        }
    }
}

/// A mechanism with a claimed epsilon and a pair of worst-case neighbours, ready to be audited.
///
/// `run` must draw all its randomness from `rng` (the audit hands each side its own seeded
/// stream and calls `run` repeatedly on it) and return one scalar statistic of the output.
/// Implementations must be cheap to call many times.
pub trait Auditable: Sync {
    /// What the row claims and on which neighbours.
    fn claim(&self) -> Claim;
    /// One run of the mechanism on `side`; returns the scalar statistic of its output.
    fn run(&self, side: Side, rng: &mut Rng) -> f64;
}

/// An audit row whose runs need nothing but its [`Claim`] (its `mutant` flag, its epsilon):
/// the claim and one function of (claim, side, rng). Most rows are one; a row that carries
/// more (precomputed exact outputs, a choice of pair) implements [`Auditable`] itself.
pub struct Row<F> {
    claim: Claim,
    run: F,
}

/// A boxed [`Row`]: `run(&claim, side, rng)` returns one run's statistic.
pub fn row<F>(claim: Claim, run: F) -> Box<dyn Auditable>
where
    F: Fn(&Claim, Side, &mut Rng) -> f64 + Sync + 'static,
{
    Box::new(Row { claim, run })
}

/// A correct row and its planted mutant `mutant` (the same claim otherwise), both running
/// `run`: how most modules list their rows.
pub fn with_mutant<F>(claim: Claim, mutant: &'static str, run: F) -> [Box<dyn Auditable>; 2]
where
    F: Fn(&Claim, Side, &mut Rng) -> f64 + Sync + Clone + 'static,
{
    [
        row(claim, run.clone()),
        row(claim.or_mutant(true, mutant), run),
    ]
}

impl<F: Fn(&Claim, Side, &mut Rng) -> f64 + Sync> Auditable for Row<F> {
    fn claim(&self) -> Claim {
        self.claim
    }
    fn run(&self, side: Side, rng: &mut Rng) -> f64 {
        (self.run)(&self.claim, side, rng)
    }
}

/// Runs `draw` on a charge of `mechanism` in a fresh ledger under the mechanism's own relation:
/// each audited run is a release of its own, with its own accounting.
pub fn with_charge<M: Mechanism, T>(
    label: &str,
    mechanism: M,
    draw: impl FnOnce(&mut Charge<'_, M>) -> T,
) -> T {
    let mut ledger = Ledger::new(mechanism.privacy_map().relation);
    let mut charge = ledger
        .charge("audit", label, mechanism)
        .expect("same relation");
    draw(&mut charge)
}

/// The distinguishing event chosen on the first half.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Event {
    /// Threshold tau.
    pub threshold: f64,
    /// True for {s >= tau}, false for {s < tau}.
    pub above: bool,
    /// True if the numerator side (the more likely one) is X'.
    pub x_prime_over_x: bool,
}

/// One audit's result.
#[derive(Debug, Clone, Serialize)]
pub struct AuditResult {
    pub mechanism: String,
    pub claimed: f64,
    /// The delta of an (eps, delta) claim; absent for pure eps-DP.
    #[serde(skip_serializing_if = "is_zero")]
    pub claimed_delta: f64,
    /// Clopper–Pearson 95% lower bound on epsilon from the held-out half.
    pub lower_bound: f64,
    /// Runs per side (half used to choose the event, half to estimate).
    pub trials: usize,
    pub mutant: bool,
    /// The neighbouring relation of the claim and of the audited pair (`add_remove`, ...).
    pub relation: String,
    /// lower_bound > claimed.
    pub caught: bool,
    /// caught for a mutant, !caught for a correct mechanism; for a weakening variant also
    /// lower_bound <= claimed x stated_excess.
    pub ok: bool,
    /// A weakening ablation variant's stated factor real eps / claimed eps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stated_excess: Option<f64>,
    pub neighbours: String,
    pub event: Event,
    /// Held-out frequencies of the event on the numerator and denominator sides.
    pub p_num: f64,
    pub p_den: f64,
    pub seed: u64,
}

/// Confidence level of the reported lower bound.
pub const CONFIDENCE: f64 = 0.95;

/// Exact one-sided Clopper–Pearson lower bound at level `a` for k successes in n trials:
/// the a-quantile of Beta(k, n - k + 1) (0 when k = 0).
pub fn clopper_pearson_lower(k: usize, n: usize, a: f64) -> f64 {
    if k == 0 {
        return 0.0;
    }
    Beta::new(k as f64, (n - k + 1) as f64)
        .expect("positive shapes")
        .inverse_cdf(a)
}

/// Exact one-sided Clopper–Pearson upper bound at level `a`: the (1 - a)-quantile of
/// Beta(k + 1, n - k) (1 when k = n).
pub fn clopper_pearson_upper(k: usize, n: usize, a: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    Beta::new((k + 1) as f64, (n - k) as f64)
        .expect("positive shapes")
        .inverse_cdf(1.0 - a)
}

/// ln(p_lower(k_num) / p_upper(k_den)) at one-sided level a each, clamped at 0.
pub fn epsilon_lower_bound(k_num: usize, k_den: usize, n: usize, a: f64) -> f64 {
    epsilon_lower_bound_with_delta(k_num, k_den, n, a, 0.0)
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// [`epsilon_lower_bound`] for an (eps, delta) claim: ln((p_lower(k_num) - delta) /
/// p_upper(k_den)), clamped at 0 (delta = 0 gives the pure bound).
pub fn epsilon_lower_bound_with_delta(
    k_num: usize,
    k_den: usize,
    n: usize,
    a: f64,
    delta: f64,
) -> f64 {
    let lo = clopper_pearson_lower(k_num, n, a) - delta;
    let hi = clopper_pearson_upper(k_den, n, a);
    if lo <= 0.0 {
        return 0.0;
    }
    (lo / hi).ln().max(0.0)
}

/// Number of sorted values >= tau.
fn count_at_least(sorted: &[f64], tau: f64) -> usize {
    sorted.len() - sorted.partition_point(|&v| v < tau)
}

/// Candidate thresholds: every distinct value if there are few, else 400 pooled quantiles.
fn candidates(a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    pooled.sort_by(f64::total_cmp);
    pooled.dedup();
    const MAX: usize = 400;
    if pooled.len() <= MAX {
        return pooled;
    }
    (1..MAX)
        .map(|i| pooled[i * pooled.len() / MAX])
        .collect::<Vec<_>>()
}

/// Counts of the event among sorted samples.
fn event_count(sorted: &[f64], e: &Event) -> usize {
    let ge = count_at_least(sorted, e.threshold);
    if e.above { ge } else { sorted.len() - ge }
}

/// Chooses the event with the largest lower bound on the first halves (sorted).
fn choose_event(x: &[f64], xp: &[f64], a: f64) -> Event {
    let n = x.len();
    let mut best = (
        f64::NEG_INFINITY,
        Event {
            threshold: 0.0,
            above: true,
            x_prime_over_x: true,
        },
    );
    for tau in candidates(x, xp) {
        for above in [true, false] {
            for x_prime_over_x in [true, false] {
                let e = Event {
                    threshold: tau,
                    above,
                    x_prime_over_x,
                };
                let (num, den) = if x_prime_over_x { (xp, x) } else { (x, xp) };
                let kn = event_count(num, &e);
                let kd = event_count(den, &e);
                // Cheap screen before the exact bound: the point estimate must beat the best.
                if kn == 0 || ((kn as f64) / (kd.max(1) as f64)).ln() <= best.0 {
                    continue;
                }
                let lb = epsilon_lower_bound(kn, kd, n, a);
                if lb > best.0 {
                    best = (lb, e);
                }
            }
        }
    }
    best.1
}

/// Audits one mechanism with `trials` runs per side (at least 2), seeded by `seed`.
pub fn audit(m: &dyn Auditable, trials: usize, seed: u64) -> Result<AuditResult> {
    if trials < 2 {
        return Err(Error::param(
            "trials",
            format!("need at least 2 runs per side, got {trials}"),
        ));
    }
    let claim = m.claim();
    let sample = |side: Side| -> (Vec<f64>, Vec<f64>) {
        let mut rng = rng_from(&["audit", &seed.to_string(), claim.name, side.label()]);
        let all: Vec<f64> = (0..trials).map(|_| m.run(side, &mut rng)).collect();
        let half = trials / 2;
        let mut first = all[..half].to_vec();
        let mut second = all[half..2 * half].to_vec();
        first.sort_by(f64::total_cmp);
        second.sort_by(f64::total_cmp);
        (first, second)
    };
    let (x1, x2) = sample(Side::X);
    let (xp1, xp2) = sample(Side::XPrime);
    let a = (1.0 - CONFIDENCE) / 2.0;
    let event = choose_event(&x1, &xp1, a);
    let (num, den) = if event.x_prime_over_x {
        (&xp2, &x2)
    } else {
        (&x2, &xp2)
    };
    let n = num.len();
    let kn = event_count(num, &event);
    let kd = event_count(den, &event);
    let lower_bound = epsilon_lower_bound_with_delta(kn, kd, n, a, claim.delta);
    let claimed = claim.epsilon;
    let caught = lower_bound > claimed;
    let stated_excess = claim.stated_excess;
    let consistent = stated_excess.is_none_or(|k| lower_bound <= claimed * k * (1.0 + 1e-9));
    Ok(AuditResult {
        mechanism: claim.name.to_string(),
        claimed,
        claimed_delta: claim.delta,
        lower_bound,
        trials,
        mutant: claim.mutant,
        relation: claim.relation.key().to_string(),
        caught,
        ok: caught == claim.mutant && consistent,
        stated_excess,
        neighbours: claim.neighbours.to_string(),
        event,
        p_num: kn as f64 / n as f64,
        p_den: kd as f64 / n as f64,
        seed,
    })
}

/// Audits every mechanism of [`mechanisms::all`] (in parallel; results in registry order).
pub fn audit_all(trials: usize, seed: u64) -> Result<Vec<AuditResult>> {
    audit_each(&all(), trials, seed)
}

/// Audits each of `ms` (in parallel; results in the given order).
pub fn audit_each(ms: &[Box<dyn Auditable>], trials: usize, seed: u64) -> Result<Vec<AuditResult>> {
    use rayon::prelude::*;
    ms.par_iter()
        .map(|m| audit(m.as_ref(), trials, seed))
        .collect()
}

/// Audits the mechanism called `name`.
pub fn audit_named(name: &str, trials: usize, seed: u64) -> Result<AuditResult> {
    let ms = all();
    let m = ms.iter().find(|m| m.claim().name == name).ok_or_else(|| {
        let names: Vec<&str> = ms.iter().map(|m| m.claim().name).collect();
        Error::param(
            "mechanism",
            format!("unknown mechanism `{name}`; known: {}", names.join(", ")),
        )
    })?;
    audit(m.as_ref(), trials, seed)
}

/// At most 4 decimals, trailing zeros dropped (an accountant's 0.99999999953 prints as 1).
fn short(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A readable table of results.
pub fn table(results: &[AuditResult]) -> String {
    let mut s = format!(
        "{:<44} {:<11} {:>8} {:>12} {:>8} {:>6} {:>6} {:>4} stated (not eps-DP variants)\n",
        "mechanism", "relation", "claimed", "lower_bound", "trials", "mutant", "caught", "ok"
    );
    for r in results {
        let stated = match r.stated_excess {
            None if r.claimed_delta > 0.0 => {
                format!("(eps, delta)-DP, delta = {:e}", r.claimed_delta)
            }
            None => String::new(),
            Some(k) if k.is_infinite() => "NOT eps-DP: no finite eps".into(),
            Some(k) => format!("NOT eps-DP: real eps <= {k} x claimed = {}", k * r.claimed),
        };
        s.push_str(&format!(
            "{:<44} {:<11} {:>8} {:>12.4} {:>8} {:>6} {:>6} {:>4} {stated}\n",
            r.mechanism,
            r.relation,
            short(r.claimed),
            r.lower_bound,
            r.trials,
            r.mutant,
            r.caught,
            if r.ok { "ok" } else { "FAIL" }
        ));
    }
    s
}

#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;
