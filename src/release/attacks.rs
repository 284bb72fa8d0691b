//! Attacks: adversaries that consume releases and output a guess, scored by success rate.
//!
//! * [`differencing`]: the review's Table I (Li, "differential privacy in machine learning",
//!   section II-A): count(i) = number of 1s ("diagnosis = 1") among the first i rows; an
//!   adversary who knows Alice is row 5 computes count(5) - count(4). Without noise the
//!   difference is her bit (success 1); with each count released through Laplace(1/eps) the
//!   adversary guesses 1 when the difference exceeds 1/2.
//! * [`majority_vote`]: one respondent answers the same question k times through randomized
//!   response with fresh coins; the adversary takes the majority answer. The k answers are
//!   (k eps)-DP (k ln 3 for the coin version), and the recovery rate climbs to 1 with k.
//!
//! **The bound e^{2 eps} / (1 + e^{2 eps}).** If M is eps'-DP for the pair of datasets that
//! differ in the target's bit, any guess g = A(M(X)) with equal priors on the bit succeeds with
//! probability at most e^{eps'} / (1 + e^{eps'}) (the hypothesis-testing view of DP:
//! Wasserman & Zhou 2010, Thm. 2.4; Kairouz, Oh & Viswanath 2015, Thm. 2.1):
//! P(g = 1 | b = 1) <= e^{eps'} P(g = 1 | b = 0) and P(g = 0 | b = 0) <= e^{eps'} P(g = 0 | b = 1);
//! adding them with a = P(g = 1 | b = 1), c = P(g = 0 | b = 0) gives
//! a + c <= e^{eps'} (2 - a - c), i.e. (a + c) / 2 <= e^{eps'} / (1 + e^{eps'}). The two count
//! queries each spend eps (global sensitivity 1), so sequential composition gives eps' = 2 eps:
//! the review's bound. Since count(4) does not involve row 5, the pair is in fact eps-DP for
//! Alice's bit, and the tighter e^eps / (1 + e^eps) also holds ([`differencing_bound_tight`]).
//! The differencing adversary's exact success is 1 - e^{-eps/2} (2 + eps/2) / 4
//! ([`differencing_success`]), below both.

use crate::error::Result;
use crate::privacy::randomized_response::RandomizedResponse;
use crate::privacy::{Laplace, Ledger, Relation};
use crate::rng::Streams;
use rand::Rng;

/// The review's Table I ("Medical dataset"), with the extraction's duplicated Jack row
/// removed so that Alice is row 5 as the text's count(5) - count(4) requires.
pub const TABLE_I: [(&str, u8); 5] = [
    ("Tom", 0),
    ("Diego", 1),
    ("Jack", 1),
    ("Henry", 0),
    ("Alice", 1),
];

/// count(i): the number of 1s among the first i rows of `results`.
pub fn prefix_count(results: &[u8], i: usize) -> f64 {
    results[..i].iter().map(|&r| f64::from(r)).sum()
}

/// Table I's results column with Alice's (row 5) bit set to `alice`.
pub fn table_with_alice(alice: bool) -> [u8; 5] {
    let mut t = TABLE_I.map(|(_, r)| r);
    t[4] = u8::from(alice);
    t
}

/// One differencing attack on Table I with Alice's bit `alice`: the curator answers count(5)
/// and count(4), each through Laplace(1/eps) from its own stream (count sensitivity 1 under
/// replace-one, the relation of "Alice's bit changes"; `ledger` must be for it), or exactly
/// when `epsilon` is None (recorded as non-private); the adversary guesses "Alice = 1" when
/// count(5) - count(4) > 1/2. Returns the guess.
pub fn differencing(
    alice: bool,
    epsilon: Option<f64>,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<bool> {
    Ok(differencing_table(&table_with_alice(alice), epsilon, streams, ledger)? > 0.5)
}

/// The released difference count(n) - count(n - 1) on a 0/1 column of n rows (the target is
/// the last row), each count through Laplace(1/eps) as in [`differencing`].
pub fn differencing_table(
    table: &[u8],
    epsilon: Option<f64>,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<f64> {
    let n = table.len();
    if n == 0 {
        return Err(no_target());
    }
    let (all, before) = (prefix_count(table, n), prefix_count(table, n - 1));
    differencing_counts(n, all, before, epsilon, streams, ledger)
}

/// The error for a column without the target's row.
fn no_target() -> crate::error::Error {
    crate::error::Error::param(
        "data",
        "the differencing attack needs at least one row (the target)",
    )
}

/// [`differencing_table`] from its two exact counts over n rows: `all` = count(n) and
/// `before` = count(n - 1) (whole numbers, so any order of adding the rows gives them); n = 0
/// is refused as there.
pub fn differencing_counts(
    n: usize,
    mut all: f64,
    mut before: f64,
    epsilon: Option<f64>,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<f64> {
    if n == 0 {
        return Err(no_target());
    }
    let (last, prior) = (format!("count({n})"), format!("count({})", n - 1));
    match epsilon {
        Some(eps) => {
            let noise = Laplace::new(1.0, eps, Relation::ReplaceOne)?;
            all += ledger
                .charge(&last, "laplace", noise)?
                .sample(&mut streams.stream(&last));
            before += ledger
                .charge(&prior, "laplace", noise)?
                .sample(&mut streams.stream(&prior));
        }
        None => {
            ledger.non_private(&last, "none (exact count)", "answered without noise");
            ledger.non_private(&prior, "none (exact count)", "answered without noise");
        }
    }
    Ok(all - before)
}

/// The differencing adversary's exact success rate with Laplace(1/eps) on both counts:
/// P(L5 - L4 < 1/2) where the difference of two Lap(b) has tail e^{-t/b} (2 + t/b) / 4.
pub fn differencing_success(epsilon: f64) -> f64 {
    let t = 0.5 * epsilon;
    1.0 - (-t).exp() * (2.0 + t) / 4.0
}

/// The review's bound for two eps-DP count queries: e^{2 eps} / (1 + e^{2 eps}).
pub fn differencing_bound(epsilon: f64) -> f64 {
    bayes_bound(2.0 * epsilon)
}

/// The bound for Alice's bit alone (count(4) does not involve her): e^eps / (1 + e^eps).
pub fn differencing_bound_tight(epsilon: f64) -> f64 {
    bayes_bound(epsilon)
}

/// Largest success of any guess of one bit with equal priors from an eps-DP release.
pub fn bayes_bound(epsilon: f64) -> f64 {
    1.0 / (1.0 + (-epsilon).exp())
}

/// One majority-vote attack: k answers about `secret` through `rr` (one ledger step that
/// records k eps; `ledger` must be replace-one), each with fresh coins from the `answers`
/// stream; the adversary guesses the majority answer (a fair coin from the `tie` stream).
pub fn majority_vote(
    rr: RandomizedResponse,
    secret: bool,
    k: usize,
    streams: &mut Streams,
    ledger: &mut Ledger,
) -> Result<bool> {
    let mut rng = streams.stream("answers");
    let mut charge = ledger.charge("answers", "randomized response", rr)?;
    let yes = (0..k).filter(|_| charge.respond(secret, &mut rng)).count();
    Ok(match (2 * yes).cmp(&k) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => streams.stream("tie").r#gen(),
    })
}

/// Exact recovery rate of the majority vote over k answers with truth probability p:
/// P(Bin(k, p) > k/2) + P(Bin(k, p) = k/2) / 2 (terms summed in log space).
pub fn majority_recovery(p: f64, k: usize) -> f64 {
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    let mut log_choose = 0.0; // ln C(k, j), updated as j grows
    let mut total = 0.0;
    for j in 0..=k {
        if j > 0 {
            log_choose += ((k - j + 1) as f64).ln() - (j as f64).ln();
        }
        let term = (log_choose + j as f64 * lp + (k - j) as f64 * lq).exp();
        match (2 * j).cmp(&k) {
            std::cmp::Ordering::Greater => total += term,
            std::cmp::Ordering::Equal => total += 0.5 * term,
            std::cmp::Ordering::Less => {}
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_exact_attack() {
        assert_eq!(prefix_count(&table_with_alice(true), 5), 3.0);
        assert_eq!(prefix_count(&table_with_alice(true), 4), 2.0);
        let mut s = Streams::new(1);
        let mut l = Ledger::new(Relation::ReplaceOne);
        for alice in [false, true] {
            assert_eq!(differencing(alice, None, &mut s, &mut l).unwrap(), alice);
        }
        assert!(!l.is_private_within(Some(1.0)));
        assert!(differencing(true, Some(0.0), &mut s, &mut l).is_err());
        let mut l = Ledger::new(Relation::ReplaceOne);
        differencing(true, Some(0.5), &mut s, &mut l).unwrap();
        assert!(l.is_private_within(Some(1.0)) && l.total_epsilon() == 1.0);
        let mut add = Ledger::new(Relation::AddRemove);
        assert!(differencing(true, Some(0.5), &mut s, &mut add).is_err());
    }

    /// The counts' entry point refuses n = 0 rows as the table's does (it named count(n - 1)
    /// by subtracting from n: an overflow panic).
    #[test]
    fn differencing_counts_refuse_no_rows() {
        let mut l = Ledger::new(Relation::ReplaceOne);
        let mut s = Streams::new(1);
        let err = differencing_counts(0, 0.0, 0.0, None, &mut s, &mut l).unwrap_err();
        assert!(err.to_string().contains("at least one row"), "{err}");
        assert_eq!(
            differencing_counts(1, 1.0, 0.0, None, &mut s, &mut l).unwrap(),
            1.0
        );
    }

    #[test]
    fn analytic_success_is_below_both_bounds() {
        for eps in [0.01, 0.1, 0.693, 1.0, 1.0986, 2.0, 5.0] {
            let s = differencing_success(eps);
            assert!(s > 0.5 && s <= differencing_bound_tight(eps), "{eps}");
            assert!(differencing_bound_tight(eps) <= differencing_bound(eps));
        }
        assert!((differencing_success(1e-9) - 0.5).abs() < 1e-9);
        assert!(differencing_success(60.0) > 1.0 - 1e-11);
    }

    #[test]
    fn majority_recovery_closed_forms() {
        assert!((majority_recovery(0.75, 1) - 0.75).abs() < 1e-15);
        // k = 2: P(both true) + P(one true) / 2 = p^2 + p q = p.
        assert!((majority_recovery(0.75, 2) - 0.75).abs() < 1e-15);
        // k = 3: p^3 + 3 p^2 q.
        let want = 0.75f64.powi(3) + 3.0 * 0.75f64.powi(2) * 0.25;
        assert!((majority_recovery(0.75, 3) - want).abs() < 1e-15);
        assert!(majority_recovery(0.75, 1001) > 1.0 - 1e-12);
        for k in [1, 3, 11, 101] {
            assert!(majority_recovery(0.75, k) <= bayes_bound(k as f64 * 3f64.ln()) + 1e-12);
        }
    }
}
