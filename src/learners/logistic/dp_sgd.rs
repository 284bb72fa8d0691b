//! Noisy gradient descent and DP-SGD for linear classifiers (logistic loss, or the Huber SVM
//! loss of Chaudhuri, Monteleoni & Sarwate 2011), with the (ε, δ) from the RDP accountant.
//!
//! Each step t = 1 … K:
//! 1. B_t: every training example independently with probability q (Poisson sampling; q = 1
//!    is noisy full-batch gradient descent, B_t = all examples).
//! 2. g_t = Σ_{i ∈ B_t} clip_C(∇ℓ_i(θ)) + N(0, σ² C² I), clip_C(v) = v min(1, C/‖v‖).
//! 3. θ ← θ − η (g_t / (q N) + (λ/N) θ): the noisy mean gradient (normalised by the expected
//!    batch size q N) plus the gradient of the regulariser (λ/(2N))‖θ‖², so with σ → 0 and C
//!    large the iteration minimises the same objective as the non-private learner,
//!    J(θ) = (1/N) Σ ℓ_i + (λ/(2N)) ‖θ‖² (thesis λ).
//!
//! N is the run's *public* training-set size (`Ledger::public_size`), never the number of rows
//! handed in: q = min(1, B/N), the step count ⌈epochs/q⌉, the default δ = 1/N² and the update's
//! 1/(qN) and λ/N all read it, so they are the same on both neighbours (under add/remove the
//! rows' own count differs by one between them). The Poisson sample still draws over the rows
//! present.
//!
//! The model released is θ_K.
//!
//! Privacy statement (OpenDP-shaped):
//! * Domain: training sets of (x, y), y in {−1, +1}, any ‖x‖ (clipping bounds each gradient).
//! * Relation: add/remove one example (the ledger's). Each clipped gradient has norm ≤ C, so
//!   adding or removing one example moves the clipped sum by at most C: L2 sensitivity C.
//!   Replace-one is supported for q = 1 only: sensitivity 2C (remove then add), accounted as
//!   noise multiplier σ/2.
//! * Measure: (ε, δ)-DP, from Rényi DP of the K-fold adaptive composition of the
//!   Poisson-subsampled Gaussian (`privacy::accountant`), δ = 1/N² unless given. A target ε is met by
//!   the smallest σ the accountant's bisection finds.
//! * Proof sketch: step t is the subsampled Gaussian mechanism applied to the clipped sum at
//!   θ_{t−1}, a function of earlier outputs only; the accountant bounds the composition; the
//!   update and the released θ_K are post-processing. N (declared), q, C, η, λ, K are public.
//!
//! The noise is drawn only through the ledger handle of [`AccountedGaussian`], charged once for
//! the whole plan with the accountant's (ε, δ) before the first step; the per-step work
//! allocates nothing.

use super::LogisticModel;
use super::design::Design;
pub use super::loss::Loss;
use crate::error::{Error, Result};
use crate::privacy::accountant::{
    Guarantee, SubsampledGaussian, default_delta, noise_multiplier_for,
};
use crate::privacy::{AccountedGaussian, Charge, Ledger, LedgerEntry, PublicSize, Relation};
use crate::rng::{Rng, rng_from};
use linfa::ParamGuard;
use linfa::dataset::{AsSingleTargets, DatasetBase};
use linfa::traits::{Fit, PredictInplace};
use ndarray::{Array1, ArrayBase, Data, Ix2};
use rand::Rng as _;

/// How much noise: a multiplier σ, or a target ε for which the accountant finds σ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoiseLevel {
    Multiplier(f64),
    Epsilon(f64),
}

/// Which examples a step uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// Every example (noisy full-batch gradient descent, q = 1).
    Full,
    /// Poisson sampling with rate q in (0, 1].
    Rate(f64),
    /// Poisson sampling with rate min(1, B/N) for an expected batch size B.
    ExpectedBatch(usize),
}

/// How long to train.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Length {
    Steps(u64),
    /// ⌈epochs / q⌉ steps.
    Epochs(f64),
}

/// What a spec fixes of a noisy-GD / DP-SGD run; ε (from the cell's budget), λ and the loss
/// come from the pipeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgdPlan {
    pub sampling: Sampling,
    pub length: Length,
    pub clip: f64,
    pub learning_rate: f64,
    /// δ (default 1/N²).
    pub delta: Option<f64>,
}

impl SgdPlan {
    /// The parameters at target ε with thesis λ and `loss`.
    pub fn params(&self, epsilon: f64, lambda: f64, loss: Loss) -> DpSgdParams {
        let p = DpSgdParams::dp_sgd(epsilon)
            .loss(loss)
            .sampling(self.sampling)
            .length(self.length)
            .clip(self.clip)
            .learning_rate(self.learning_rate)
            .lambda(lambda);
        match self.delta {
            Some(d) => p.delta(d),
            None => p,
        }
    }
}

/// Declares the validated parameters `$valid` with the fields of both lists, and on their
/// builder `$params` a setter for each field of `set` (one list for a field and its setter).
macro_rules! valid_params {
    ($(#[$attr:meta])* $valid:ident, $params:ident,
     set { $($(#[$sdoc:meta])* $set:ident: $st:ty),* $(,)? }
     other { $($(#[$odoc:meta])* $other:ident: $ot:ty),* $(,)? }) => {
        $(#[$attr])*
        pub struct $valid {
            $($(#[$sdoc])* $set: $st,)*
            $($(#[$odoc])* $other: $ot,)*
        }

        setters!($params { $($(#[$sdoc])* $set: $st),* });
    };
}

valid_params!(
    /// Validated parameters of noisy GD / DP-SGD.
    #[derive(Debug, Clone, PartialEq)]
    DpSgdValidParams, DpSgdParams,
    set {
        loss: Loss,
        /// Clipping norm C.
        clip: f64,
        sampling: Sampling,
        length: Length,
        learning_rate: f64,
        /// Thesis λ of the regulariser (λ/(2N)) ‖θ‖²; 0 for none.
        lambda: f64,
        /// Seed of the stream used by linfa's `Fit` (the harness passes its own streams).
        seed: u64,
    }
    other {
        noise: NoiseLevel,
        delta: Option<f64>,
        /// The public N of linfa's `Fit` (the harness reads the run's from its ledger).
        public_n: Option<usize>,
    }
);

/// Noisy gradient descent / DP-SGD parameters (linfa style: builder → `check` → `Fit`).
#[derive(Debug, Clone, PartialEq)]
pub struct DpSgdParams(DpSgdValidParams);

impl DpSgdParams {
    /// DP-SGD at a target ε: expected batch 256, 10 epochs, C = 1, η = 1, λ = 1, logistic
    /// loss, δ = 1/N².
    pub fn dp_sgd(epsilon: f64) -> Self {
        DpSgdParams(DpSgdValidParams {
            loss: Loss::Logistic,
            noise: NoiseLevel::Epsilon(epsilon),
            delta: None,
            clip: 1.0,
            sampling: Sampling::ExpectedBatch(256),
            length: Length::Epochs(10.0),
            learning_rate: 1.0,
            lambda: 1.0,
            seed: 0,
            public_n: None,
        })
    }

    /// Noisy full-batch gradient descent at a target ε: 100 steps, otherwise as [`Self::dp_sgd`].
    pub fn noisy_gd(epsilon: f64) -> Self {
        Self::dp_sgd(epsilon)
            .sampling(Sampling::Full)
            .length(Length::Steps(100))
    }

    /// A fixed noise multiplier σ instead of a target ε (the ε is then reported).
    pub fn noise_multiplier(mut self, sigma: f64) -> Self {
        self.0.noise = NoiseLevel::Multiplier(sigma);
        self
    }

    pub fn epsilon(mut self, epsilon: f64) -> Self {
        self.0.noise = NoiseLevel::Epsilon(epsilon);
        self
    }

    /// δ (default 1/N²).
    pub fn delta(mut self, delta: f64) -> Self {
        self.0.delta = Some(delta);
        self
    }
}

impl DpSgdParams {
    /// The training-set size N, declared public, for linfa's `Fit` (which refuses to run
    /// without it: q, the step count, δ and the update read N, and the data's own row count
    /// is private under add/remove).
    pub fn public_n(mut self, n: usize) -> Self {
        self.0.public_n = Some(n);
        self
    }
}

fn positive(name: &str, v: f64) -> Result<()> {
    crate::privacy::check_positive(name, v)
}

impl ParamGuard for DpSgdParams {
    type Checked = DpSgdValidParams;
    type Error = Error;

    fn check_ref(&self) -> Result<&DpSgdValidParams> {
        let p = &self.0;
        match p.noise {
            NoiseLevel::Multiplier(s) => positive("noise_multiplier", s)?,
            NoiseLevel::Epsilon(e) => positive("epsilon", e)?,
        }
        if let Some(d) = p.delta {
            crate::privacy::accountant::rdp::check_delta(d)?;
        }
        positive("clip", p.clip)?;
        positive("learning_rate", p.learning_rate)?;
        if !(p.lambda.is_finite() && p.lambda >= 0.0) {
            return Err(Error::param(
                "lambda",
                format!("must be finite and >= 0, got {}", p.lambda),
            ));
        }
        if let Loss::Huber { h } = p.loss {
            positive("h", h)?;
        }
        match p.sampling {
            Sampling::Rate(q) if !(q > 0.0 && q <= 1.0) => {
                return Err(Error::param(
                    "sampling_rate",
                    format!("must be in (0, 1], got {q}"),
                ));
            }
            Sampling::ExpectedBatch(0) => {
                return Err(Error::param("batch_size", "must be at least 1"));
            }
            _ => {}
        }
        match p.length {
            Length::Steps(0) => return Err(Error::param("steps", "must be at least 1")),
            Length::Epochs(e) => positive("epochs", e)?,
            Length::Steps(_) => {}
        }
        Ok(p)
    }

    fn check(self) -> Result<DpSgdValidParams> {
        self.check_ref()?;
        Ok(self.0)
    }
}

/// A fitted model with its accounting: the (ε, δ) spent, the σ used and the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct DpSgdFit {
    pub model: LogisticModel,
    /// The accountant's guarantee for the plan (under the ledger's relation).
    pub guarantee: Guarantee,
    /// The plan run: noise multiplier σ, sampling rate q, steps K.
    pub plan: SubsampledGaussian,
    /// The entry recorded in the ledger.
    pub entry: LedgerEntry,
}

impl DpSgdValidParams {
    /// Sampling rate q for N examples.
    pub fn sampling_rate(&self, n: usize) -> f64 {
        match self.sampling {
            Sampling::Full => 1.0,
            Sampling::Rate(q) => q,
            Sampling::ExpectedBatch(b) => (b as f64 / n as f64).min(1.0),
        }
    }

    /// Steps K for N examples.
    pub fn steps(&self, n: usize) -> u64 {
        match self.length {
            Length::Steps(k) => k,
            Length::Epochs(e) => ((e / self.sampling_rate(n)).ceil() as u64).max(1),
        }
    }

    /// The plan (σ, q, K) for N examples under `relation`, and its guarantee: σ given, or the
    /// smallest σ meeting the target ε. Under replace-one (q = 1 only) the sensitivity is 2C.
    /// The run's public N and the plan it gives under the ledger's relation: what a fit reads
    /// of the run (the preflight checks it at every ε before anything runs).
    pub fn public_plan(&self, ledger: &mut Ledger) -> Result<(usize, SubsampledGaussian)> {
        let n = ledger.public_size(&self.reads_of_n())?;
        Ok((n, self.plan(n, ledger.relation())?.0))
    }

    /// What of this run reads N, for the ledger's size step: the update's 1/(qN) and weight
    /// decay λ/N, and what does for its sampling, length and δ (noisy GD's q = 1 and fixed
    /// step count read nothing).
    fn reads_of_n(&self) -> String {
        let batch = matches!(self.sampling, Sampling::ExpectedBatch(_));
        let mut reads = Vec::new();
        if batch {
            reads.push("sampling rate q = B/N");
            if matches!(self.length, Length::Epochs(_)) {
                reads.push("step count epochs/q");
            }
        }
        if self.delta.is_none() {
            reads.push("delta = 1/N^2");
        }
        let (name, update) = match self.sampling {
            Sampling::Full => ("noisy GD's", "update 1/N"),
            _ => ("DP-SGD's", "update 1/(qN)"),
        };
        reads.push(update);
        format!("{name} {} and weight decay lambda/N", reads.join(", "))
    }

    pub fn plan(&self, n: usize, relation: Relation) -> Result<(SubsampledGaussian, Guarantee)> {
        let q = self.sampling_rate(n);
        let k = self.steps(n);
        let delta = self.delta.unwrap_or_else(|| default_delta(n));
        // The accountant sees σ / (sensitivity / C): σ/2 under replace-one.
        let scale = match relation {
            Relation::AddRemove => 1.0,
            Relation::ReplaceOne => 2.0,
        };
        match self.noise {
            NoiseLevel::Multiplier(sigma) => {
                let plan = SubsampledGaussian::new(sigma, q, k)?;
                let g = plan.for_relation(relation)?.epsilon(delta)?;
                Ok((plan, g))
            }
            NoiseLevel::Epsilon(eps) => {
                // Refuses a subsampled replace-one plan before searching.
                SubsampledGaussian::new(1.0, q, k)?.for_relation(relation)?;
                let (sigma_eff, g) = noise_multiplier_for(eps, q, k, delta)?;
                Ok((SubsampledGaussian::new(sigma_eff * scale, q, k)?, g))
            }
        }
    }

    /// Trains on a design with labels in {−1, +1}, drawing batches and noise from `rng`, and
    /// records the (ε, δ) step in `ledger`; N is the ledger's public size (recorded there).
    pub fn fit_design(
        &self,
        design: &Design,
        y: &[f64],
        rng: &mut Rng,
        ledger: &mut Ledger,
    ) -> Result<DpSgdFit> {
        // Any number of rows, none included: under add/remove no data neighbours one row, and
        // a step over an empty batch is noise alone (N, q and the steps are public).
        let rows = design.n_rows();
        if y.len() != rows {
            return Err(Error::param(
                "design",
                format!("need one label per row ({rows} rows, {} labels)", y.len()),
            ));
        }
        let relation = ledger.relation();
        let (n, plan) = self.public_plan(ledger)?;
        let delta = self.delta.unwrap_or_else(|| default_delta(n));
        let mechanism = AccountedGaussian::new(plan, self.clip, delta, relation)?;
        let guarantee = mechanism.guarantee();
        let label = format!(
            "{} ({}; Gaussian noise, noise multiplier {:.4}, clip C = {}, q = {:.6}, {} steps; RDP accountant)",
            if plan.sampling_rate == 1.0 {
                "noisy gradient descent"
            } else {
                "DP-SGD"
            },
            self.loss.describe(),
            plan.noise_multiplier,
            self.clip,
            plan.sampling_rate,
            plan.steps
        );
        let mut noise = ledger.charge("train", &label, mechanism)?;
        noise.note(format!(
            "Rényi DP of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019) at order {}, composed over {} steps, (ε, δ) by Balle et al. 2020",
            guarantee.order, plan.steps
        ));
        let mut run = DpSgdRun::new(design, y, self, plan.sampling_rate, n);
        for _ in 0..plan.steps {
            run.step(rng, &mut noise);
        }
        let entry = ledger
            .entries
            .last()
            .cloned()
            .expect("the charge recorded it");
        Ok(DpSgdFit {
            model: LogisticModel::new(run.theta, None, design),
            guarantee,
            plan,
            entry,
        })
    }
}

/// The state of one training run: the iterate and the buffers every step reuses (the step
/// itself allocates nothing).
#[derive(Debug)]
pub struct DpSgdRun<'d, 'a> {
    design: &'d Design<'a>,
    y: &'d [f64],
    /// ‖x_i‖ for every row (computed once).
    norms: Vec<f64>,
    pub theta: Vec<f64>,
    grad: Vec<f64>,
    batch: Vec<u32>,
    /// x_i . θ of the batch's rows, in batch order.
    margins: Vec<f64>,
    loss: Loss,
    clip: f64,
    q: f64,
    /// ln(1 − q), for the geometric gaps of Poisson sampling.
    ln_1mq: f64,
    learning_rate: f64,
    /// λ/N, N public.
    decay: f64,
    /// 1/(qN), N public.
    norm: f64,
}

impl<'d, 'a> DpSgdRun<'d, 'a> {
    /// A run from θ = 0 with sampling rate `q` for the public size `n_public` (the noise comes
    /// from the charge each step is given).
    pub fn new(
        design: &'d Design<'a>,
        y: &'d [f64],
        params: &DpSgdValidParams,
        q: f64,
        n_public: usize,
    ) -> Self {
        let n = design.n_rows();
        let expected = (q * n as f64).ceil() as usize;
        // Room for a batch well above its mean, so steps rarely grow it or its margins.
        let room = expected + 8 * (expected as f64).sqrt() as usize + 16;
        DpSgdRun {
            design,
            y,
            norms: (0..n).map(|i| design.row_norm(i)).collect(),
            theta: vec![0.0; design.dim()],
            grad: vec![0.0; design.dim()],
            batch: Vec::with_capacity(room),
            margins: Vec::with_capacity(room),
            loss: params.loss,
            clip: params.clip,
            q,
            ln_1mq: (-q).ln_1p(),
            learning_rate: params.learning_rate,
            decay: params.lambda / n_public.max(1) as f64,
            norm: 1.0 / (q * n_public.max(1) as f64),
        }
    }

    /// Poisson sample: each row independently with probability q, by geometric gaps
    /// (P(gap = k) = (1 − q)^k q), so a step costs O(batch), not O(N).
    fn sample_batch(&mut self, rng: &mut Rng) {
        self.batch.clear();
        let n = self.y.len() as u64;
        if self.q >= 1.0 {
            self.batch.extend(0..n as u32);
            return;
        }
        let mut next: u64 = 0;
        loop {
            // u in (0, 1]: ln u is finite.
            let u = 1.0 - rng.r#gen::<f64>();
            // floor of a quotient >= 0, as the integer cast truncates it (and saturates far
            // past n): the same gaps as `floor()`, which x86-64's baseline calls in libm.
            let gap = (u.ln() / self.ln_1mq) as u64;
            if gap >= n - next {
                return;
            }
            next += gap;
            self.batch.push(next as u32);
            next += 1;
        }
    }

    /// grad = Σ_{i in batch} clip_C(∇ℓ_i(θ)) (no noise). θ is fixed for the step, so the
    /// batch's margins are computed first, side by side ([`Design::dots`]).
    fn clipped_sum(&mut self) {
        self.grad.iter_mut().for_each(|g| *g = 0.0);
        self.design
            .dots(&self.batch, &self.theta, &mut self.margins);
        for (&i, &margin) in self.batch.iter().zip(&self.margins) {
            let i = i as usize;
            let yi = self.y[i];
            let d = self.loss.derivative(yi * margin);
            // ∇ℓ_i = d y_i x_i, of norm |d| ‖x_i‖.
            let norm = d.abs() * self.norms[i];
            let factor = if norm > self.clip {
                self.clip / norm
            } else {
                1.0
            };
            if d != 0.0 {
                self.design.axpy(i, d * yi * factor, &mut self.grad);
            }
        }
    }

    /// grad = the step's released sum: a Poisson batch's clipped gradients plus N(0, σ²C² I),
    /// drawn through the ledger handle `noise`.
    fn noisy_gradient(&mut self, rng: &mut Rng, noise: &mut Charge<'_, AccountedGaussian>) {
        self.sample_batch(rng);
        self.clipped_sum();
        for g in &mut self.grad {
            *g += noise.sample(rng);
        }
    }

    /// One step: sample, clipped sum, Gaussian noise (through `noise`), update.
    pub fn step(&mut self, rng: &mut Rng, noise: &mut Charge<'_, AccountedGaussian>) {
        self.noisy_gradient(rng, noise);
        let (eta, decay, norm) = (self.learning_rate, self.decay, self.norm);
        for (t, g) in self.theta.iter_mut().zip(&self.grad) {
            *t -= eta * (g * norm + decay * *t);
        }
    }

    /// The rows of the last step's batch.
    pub fn batch(&self) -> &[u32] {
        &self.batch
    }
}

impl<D, T> Fit<ArrayBase<D, Ix2>, T, Error> for DpSgdValidParams
where
    D: Data<Elem = f64>,
    T: AsSingleTargets<Elem = usize>,
{
    type Object = DpSgdFit;

    /// Fits under add/remove neighbours with the declared [`DpSgdParams::public_n`]; the
    /// ledger entry is in the returned [`DpSgdFit`].
    fn fit(&self, dataset: &DatasetBase<ArrayBase<D, Ix2>, T>) -> Result<DpSgdFit> {
        let y = super::targets_pm1(dataset.targets())?;
        let design = Design::dense(dataset.records().view());
        let mut rng = rng_from(&["dp_sgd", &self.seed.to_string()]);
        let size = self
            .public_n
            .map(|n| PublicSize::new(n, "declared by DpSgdParams::public_n"));
        let mut ledger = Ledger::default().with_public_size(size);
        self.fit_design(&design, &y, &mut rng, &mut ledger)
    }
}

impl<D: Data<Elem = f64>> PredictInplace<ArrayBase<D, Ix2>, Array1<usize>> for DpSgdFit {
    fn predict_inplace(&self, x: &ArrayBase<D, Ix2>, y: &mut Array1<usize>) {
        self.model.predict_inplace(x, y)
    }

    fn default_target(&self, x: &ArrayBase<D, Ix2>) -> Array1<usize> {
        Array1::zeros(x.nrows())
    }
}

#[cfg(test)]
mod tests;
