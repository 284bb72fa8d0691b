//! Attack kinds (`attack = "..."` in a pipeline): an adversary consumes releases and outputs a
//! guess of a secret bit; each trial records `success` (1 when the guess is right) beside the
//! analytic success and the DP bound it must stay under. Kernels and proofs: `release::attacks`.

use super::{Axis, Refusal, ReleaseInput, ReleaseKind, ReleaseOutput, kind, refuse};
use crate::error::{Error, Result};
use crate::learners::TrialLog;
use crate::privacy::randomized_response::RandomizedResponse;
use crate::release::attacks::{
    bayes_bound, differencing_bound, differencing_bound_tight, differencing_counts,
    differencing_success, majority_recovery, majority_vote,
};
use rand::Rng;

/// A fair secret bit from the trial's `secret` stream.
fn secret(log: &mut TrialLog) -> bool {
    log.streams.stream("secret").r#gen()
}

kind! {
    /// The review's Table I differencing attack: count(n) - count(n - 1) reveals the last row.
    Differencing = "differencing" {
        /// Whether the curator adds Laplace noise (false: exact counts, no privacy).
        #[serde(default = "yes")]
        noise: bool,
    }
    about: "differencing attack count(n) - count(n-1) on a 0/1 column whose last row is a fair secret bit; counts exact (noise = false: not private) or + Lap(1/eps) each (2 eps, replace-one); success <= e^{2eps}/(1+e^{2eps})",
}

fn yes() -> bool {
    true
}

impl ReleaseKind for Differencing {
    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let alice = secret(log);
        // The two counts read in place, no copy of the column (issue 52): count(n - 1) over
        // the rows before the target, count(n) with the target's bit set to `alice`; whole
        // numbers, so the same as `differencing_table` on the 0/1 table.
        if let Some(&v) = input.values.iter().find(|&&v| v != 0.0 && v != 1.0) {
            return Err(Error::param(
                "data",
                format!("the differencing attack reads a 0/1 column, got {v}"),
            ));
        }
        let Some((_, rows_before)) = input.values.split_last() else {
            return Err(Error::param(
                "data",
                "the differencing attack needs a target row",
            ));
        };
        let (n, before) = (input.values.len(), rows_before.iter().sum::<f64>());
        let all = before + f64::from(u8::from(alice));
        let eps = if self.noise { input.epsilon } else { None };
        let diff = differencing_counts(n, all, before, eps, &mut log.streams, &mut log.ledger)?;
        let guess = diff > 0.5;
        let truth = f64::from(u8::from(alice));
        log.metrics.insert("release".into(), diff);
        log.metrics.insert("truth".into(), truth);
        log.metrics.insert("abs_error".into(), (diff - truth).abs());
        log.metrics
            .insert("success".into(), f64::from(u8::from(guess == alice)));
        let (analytic, bound, tight) = match eps {
            Some(e) => (
                differencing_success(e),
                differencing_bound(e),
                differencing_bound_tight(e),
            ),
            None => (1.0, 1.0, 1.0),
        };
        log.metrics.insert("success_analytic".into(), analytic);
        log.metrics.insert("bound".into(), bound);
        log.metrics.insert("bound_tight".into(), tight);
        Ok(ReleaseOutput::default())
    }

    fn private(&self) -> bool {
        self.noise
    }

    /// count(n) and count(n − 1), each at the grid's ε: 2ε in all.
    fn queries(&self) -> u32 {
        2
    }
}

kind! {
    /// Majority vote over k repeated randomized-response answers of one respondent (classic coins,
    /// eps = ln 3 per answer): one attack per k of `ks`, each about a fresh secret.
    MajorityVote = "majority_vote" {
        ks: Vec<usize>,
    }
    about: "majority vote over k randomized-response answers (coins, ln 3 each) of one secret bit, per k of `ks`: the k answers are (k ln 3)-DP, recovery <= e^{k ln 3}/(1+e^{k ln 3}) (the ledger records every answer)",
}

impl ReleaseKind for MajorityVote {
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        if self.ks.is_empty() || self.ks.contains(&0) {
            return Err(refuse("ks", "give at least one k, each >= 1"));
        }
        Ok(())
    }

    /// Its spend is the answers' (k ln 3 each), not a grid epsilon.
    fn private(&self) -> bool {
        false
    }

    fn run(&self, _: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let rr = RandomizedResponse::classic_coin();
        let mut out = ReleaseOutput::default();
        let mut recovered = Vec::with_capacity(self.ks.len());
        for &k in &self.ks {
            let bit = secret(log);
            let guess = majority_vote(rr, bit, k, &mut log.streams, &mut log.ledger)?;
            recovered.push(f64::from(u8::from(guess == bit)));
        }
        let ks: Vec<f64> = self.ks.iter().map(|&k| k as f64).collect();
        let eps = rr.epsilon();
        out.vectors.insert(
            "analytic".into(),
            self.ks
                .iter()
                .map(|&k| majority_recovery(rr.p_truth(), k))
                .collect(),
        );
        out.vectors.insert(
            "bound".into(),
            ks.iter().map(|k| bayes_bound(k * eps)).collect(),
        );
        out.vectors
            .insert("epsilon_total".into(), ks.iter().map(|k| k * eps).collect());
        out.vectors.insert("recovered".into(), recovered);
        out.vectors.insert("k".into(), ks);
        log.metrics.insert(
            "success".into(),
            out.vectors["recovered"].iter().sum::<f64>() / self.ks.len() as f64,
        );
        Ok(out)
    }
}
