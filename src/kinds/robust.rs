//! Robust-statistics releases (issue 50) and the delta-leak attack: `trimmed_mean_ptr`,
//! `iqr_ptr` (propose-test-release, replace-one), `m_estimator_histogram` (Lei 2011) and
//! `delta_leak` (Ji, Lipton & Elkan 2014). Kernels and proofs: `release::robust`,
//! `privacy::ptr`, docs/privacy.md.
//!
//! A PTR trial records `answered` (1 when the test passed), `distance` (the exact distance to
//! instability, a diagnostic) and `bound` (b); on "no answer" the release is the public
//! `fallback`, so `abs_error` counts the refusal's cost.

use super::release::{bounds_of, need_eps, record, with_clamped};
use super::{
    Axis, Described, OwnBudget, Refusal, ReleaseInput, ReleaseKind, ReleaseOutput, check_open_unit,
    kind, refuse,
};
use crate::error::Result;
use crate::learners::TrialLog;
use crate::privacy::Ledger;
use crate::privacy::ptr::DeltaLeak as DeltaLeakMechanism;
use crate::release::robust::{self, PtrOutcome, PtrParams, Robust};
use serde::Deserialize;

/// The fields every PTR release shares.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ptr<const IQR: bool> {
    /// Public bounds [lo, hi] every value is clamped to.
    bounds: [f64; 2],
    /// Trimmed mean: the fraction trimmed at each end, in (0, 1/2).
    alpha: Option<f64>,
    /// The proposed local-sensitivity bound b as a multiple of (hi - lo)/n.
    propose: f64,
    /// The test's share of eps (the answer spends the rest); default 1/2.
    test_share: Option<f64>,
    /// PTR's delta: the test's failure probability.
    delta: f64,
    /// What "no answer" is reported as; default the midpoint of the bounds (trimmed mean) or
    /// half their width (IQR).
    fallback: Option<f64>,
}

impl Described for Ptr<false> {
    const NAME: &'static str = "trimmed_mean_ptr";
    const ABOUT: &'static str = "the alpha-trimmed mean by propose-test-release (Dwork & Lei 2009): b = propose (hi - lo)/n, test Lap(1/eps_t) on the distance to instability vs ln(1/delta)/eps_t, answer + Lap(b/eps_a) or no answer (the fallback); (eps, delta)-DP, replace-one";
    const FIELDS: &'static [&'static str] = &[
        "bounds",
        "alpha",
        "propose",
        "test_share",
        "delta",
        "fallback",
    ];
}

impl Described for Ptr<true> {
    const NAME: &'static str = "iqr_ptr";
    const ABOUT: &'static str = "the interquartile range x_(ceil(3n/4)) - x_(ceil(n/4)) by propose-test-release (Dwork & Lei 2009's framework, order-statistic sensitivity bounds): (eps, delta)-DP, replace-one";
    const FIELDS: &'static [&'static str] =
        &["bounds", "propose", "test_share", "delta", "fallback"];
}

impl<const IQR: bool> Ptr<IQR> {
    fn params(&self) -> PtrParams {
        let [lo, hi] = self.bounds;
        PtrParams {
            statistic: match self.alpha {
                Some(alpha) if !IQR => Robust::TrimmedMean { alpha },
                _ => Robust::Iqr,
            },
            propose: self.propose,
            test_share: self.test_share.unwrap_or(0.5),
            delta: self.delta,
            fallback: self.fallback.unwrap_or(if IQR {
                0.5 * (hi - lo)
            } else {
                0.5 * (lo + hi)
            }),
        }
    }
}

/// Records a PTR outcome's metrics.
fn record_ptr(out: PtrOutcome, delta: f64, log: &mut TrialLog) {
    record(out.release, log);
    let m = &mut log.metrics;
    m.insert("answered".into(), f64::from(u8::from(out.answered)));
    m.insert("distance".into(), out.distance as f64);
    m.insert("bound".into(), out.bound);
    m.insert("delta".into(), delta);
}

impl<const IQR: bool> ReleaseKind for Ptr<IQR> {
    /// The trimmed mean estimates the location; the IQR a spread.
    fn estimates_location(&self) -> bool {
        !IQR
    }

    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        bounds_of(self.bounds)?;
        match (IQR, self.alpha) {
            (false, Some(a)) if a > 0.0 && a < 0.5 => {}
            (false, _) => return Err(refuse("alpha", "the trimmed mean needs alpha in (0, 1/2)")),
            (true, Some(_)) => return Err(refuse("alpha", "applies only to trimmed_mean_ptr")),
            (true, None) => {}
        }
        if !(self.propose.is_finite() && self.propose > 0.0) {
            return Err(refuse(
                "propose",
                format!("must be > 0, got {}", self.propose),
            ));
        }
        if let Some(s) = self.test_share {
            check_open_unit("test_share", s)?;
        }
        check_open_unit("delta", self.delta)
    }

    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let name = if IQR { "iqr_ptr" } else { "trimmed_mean_ptr" };
        let eps = need_eps(name, input.epsilon)?;
        // Sorted in the reused buffer: the kernel reads order statistics only (issue 52).
        let out = with_clamped(input, self.bounds, true, log, |data, _, log| {
            robust::ptr_release(self.params(), data, eps, &mut log.streams, &mut log.ledger)
        })?;
        record_ptr(out, self.delta, log);
        Ok(ReleaseOutput::default())
    }

    fn check_run(&self, ledger: &mut Ledger) -> Result<()> {
        robust::ptr_public_size(ledger).map(drop)
    }
}

kind! {
    /// Lei's perturbed-histogram M-estimator (Huber location).
    MEstimatorHistogram = "m_estimator_histogram" {
        bounds: [f64; 2],
        /// Number of equal bins; absent: ceil(n^(1/3)) from the run's public n, so the bin
        /// width shrinks with n while each bin's expected count grows.
        bins: Option<usize>,
        /// Huber's tuning constant c, in the data's units.
        huber: f64,
    }
    about: "Lei (2011): Laplace counts over equal public bins (Delta 1 add/remove, 2 replace-one), then Huber's location estimate from the noisy counts (post-processing); pure eps-DP; bins default ceil(n^(1/3)) from the public n",
}

impl MEstimatorHistogram {
    /// Its bins: `bins`, else ceil(N^(1/3)) of the run's public N (a trial's read, and the
    /// preflight's check of it).
    fn bins(&self, ledger: &mut Ledger) -> Result<usize> {
        match self.bins {
            Some(k) => Ok(k),
            None => {
                let n = ledger.public_size("the M-estimator's bins ceil(N^(1/3))")?;
                Ok((n as f64).cbrt().ceil() as usize)
            }
        }
    }
}

impl ReleaseKind for MEstimatorHistogram {
    fn estimates_location(&self) -> bool {
        true
    }

    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        bounds_of(self.bounds)?;
        if self.bins == Some(0) {
            return Err(refuse("bins", "need at least one bin"));
        }
        if !(self.huber.is_finite() && self.huber > 0.0) {
            return Err(refuse("huber", format!("must be > 0, got {}", self.huber)));
        }
        Ok(())
    }

    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let eps = need_eps(Self::NAME, input.epsilon)?;
        let bins = self.bins(&mut log.ledger)?;
        // In row order in the reused buffer: Huber's estimate sums over it (issue 52).
        let r = with_clamped(input, self.bounds, false, log, |data, _, log| {
            let (streams, ledger) = (&mut log.streams, &mut log.ledger);
            robust::m_estimator_histogram(data, bins, self.huber, eps, streams, ledger)
        })?;
        record(r, log);
        log.metrics.insert("bins".into(), bins as f64);
        Ok(ReleaseOutput::default())
    }

    fn check_run(&self, ledger: &mut Ledger) -> Result<()> {
        self.bins(ledger).map(drop)
    }
}

kind! {
    /// Ji, Lipton & Elkan's delta heuristic: publish each record with probability delta.
    DeltaLeak = "delta_leak" {
        delta: f64,
    }
    about: "publishes each record with probability delta: (0, delta)-DP under both relations, yet n delta records leak in expectation (Ji, Lipton & Elkan 2014, why delta < 1/n); records leaked, leaked_analytic = n delta, any_leaked and its 1 - (1 - delta)^n",
}

impl ReleaseKind for DeltaLeak {
    fn validate(&self, _: &[Axis]) -> std::result::Result<(), Refusal> {
        check_open_unit("delta", self.delta)
    }

    /// It spends a delta at epsilon 0, not the grid's epsilon.
    fn private(&self) -> bool {
        false
    }

    /// (0, delta)-DP by its own `delta`: its records are private within that.
    fn own_budget(&self) -> Option<OwnBudget> {
        Some(OwnBudget {
            epsilon: 0.0,
            delta: self.delta,
        })
    }

    fn run(&self, input: &ReleaseInput, log: &mut TrialLog) -> Result<ReleaseOutput> {
        let m = DeltaLeakMechanism::new(self.delta, log.ledger.relation())?;
        let n = input.values.len();
        let leaked = log
            .ledger
            .charge("leak", "each record published with probability delta", m)?
            .publish(n, &mut log.streams.stream("leak"));
        let k = leaked.len() as f64;
        let nd = n as f64 * self.delta;
        let m = &mut log.metrics;
        m.insert("leaked".into(), k);
        m.insert("leaked_analytic".into(), nd);
        m.insert("n_delta".into(), nd);
        m.insert("any_leaked".into(), f64::from(u8::from(k > 0.0)));
        m.insert(
            "any_leaked_analytic".into(),
            1.0 - (1.0 - self.delta).powf(n as f64),
        );
        Ok(ReleaseOutput::default())
    }
}
