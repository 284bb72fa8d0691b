//! `learner = "svm_rff" | "svm_rff_output" | "svm_rff_objective"`: a kernel SVM by random
//! Fourier features (`learners::rff`) and the linear learners of the LR harness on them
//! (Chaudhuri, Monteleoni & Sarwate 2011, section 6): exact, output perturbation or objective
//! perturbation, with the Huber SVM loss (default, h = 0.5) or the logistic loss. The map is
//! drawn from a public seed (`map_seed`) with public `gamma` and `components` D, the same for
//! every trial; its rows have norm <= 1, so the linear learners' sensitivities hold unchanged.

use super::erm::LossName;
use super::gaussian_nb::public_bounds;
use super::logistic::{check_lambda_rule, lr_learner};
use super::{Axis, CellBudget, Described, GridValues, LearnerKind, Refusal, refuse};
use crate::data::{Dataset, Features, SplitRule};
use crate::error::Result;
use crate::learners::gaussian_nb::dense;
use crate::learners::logistic::design::check_two_classes;
use crate::learners::logistic::{
    LambdaRule, Loss, LrKind, PrivateLrMethod, Scaling, SolverSettings,
};
use crate::learners::rff::RffMap;
use crate::learners::{Classifier, FitInput, Learner, TrialLog};
use serde::Deserialize;

/// `svm_rff`: the exact minimiser on the features (non-private reference).
pub type SvmRff = Rff<0>;
/// `svm_rff_output`: output perturbation on the features.
pub type SvmRffOutput = Rff<1>;
/// `svm_rff_objective`: objective perturbation on the features.
pub type SvmRffObjective = Rff<2>;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rff<const M: u8> {
    /// The RBF kernel's gamma on the inputs scaled to [0, 1] by their public bounds.
    gamma: f64,
    /// Number of features D (default 100).
    components: Option<usize>,
    /// `huber` (default) or `logistic`.
    loss: Option<LossName>,
    /// A number, `"cv"` (non-private), `"private"` (private kinds) or a grid axis.
    lambda: Option<LambdaRule>,
    /// The public seed of the map (default 1).
    map_seed: Option<u64>,
}

impl<const M: u8> Described for Rff<M> {
    const NAME: &'static str = ["svm_rff", "svm_rff_output", "svm_rff_objective"][M as usize];
    const ABOUT: &'static str = [
        "random Fourier features (public seed, gamma, D; rows of norm <= 1) + the exact Huber SVM or LR (non-private reference)",
        "random Fourier features + output perturbation, Delta = 1/lambda (add/remove) or 2/lambda (replace-one) on the features (eps-DP)",
        "random Fourier features + objective perturbation (Chaudhuri et al. 2011), c = 1 (Huber) or 1/4 (logistic) (eps-DP)",
    ][M as usize];
    const FIELDS: &'static [&'static str] = &["gamma", "components", "loss", "lambda", "map_seed"];
}

impl<const M: u8> LearnerKind for Rff<M> {
    fn private(&self) -> bool {
        M > 0
    }

    fn axes(&self) -> &'static [Axis] {
        &[Axis::Lambda]
    }

    fn validate(&self, grid: &[Axis]) -> std::result::Result<(), Refusal> {
        if !(self.gamma.is_finite() && self.gamma > 0.0) {
            return Err(refuse(
                "gamma",
                format!("must be finite and > 0, got {}", self.gamma),
            ));
        }
        if self.components == Some(0) {
            return Err(refuse("components", "must be at least 1"));
        }
        check_lambda_rule(self.lambda, grid, true, M > 0)
    }

    fn selects_lambda_privately(&self) -> bool {
        self.lambda == Some(LambdaRule::Private)
    }

    fn learner(&self, at: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        let kind = match M {
            0 => LrKind::NonPrivate,
            1 => LrKind::Private(PrivateLrMethod::Output),
            _ => LrKind::Private(PrivateLrMethod::Objective),
        };
        let loss = match self.loss.unwrap_or(LossName::Huber) {
            LossName::Logistic => Loss::Logistic,
            LossName::Huber => Loss::HUBER_SVM,
        };
        let settings = SolverSettings::default();
        let scaling = Some(Scaling::Public);
        let linear = lr_learner(kind, loss, settings, self.lambda, scaling, at, budget)?;
        Ok(Box::new(RffFit {
            gamma: self.gamma,
            components: self.components.unwrap_or(100),
            map_seed: self.map_seed.unwrap_or(1),
            linear,
        }))
    }

    fn cost(&self) -> u64 {
        self.components.unwrap_or(100) as u64
    }
}

/// One cell's learner: the map's public settings and the linear learner on its features.
#[derive(Debug)]
struct RffFit {
    gamma: f64,
    components: usize,
    map_seed: u64,
    linear: Box<dyn Learner>,
}

impl Learner for RffFit {
    fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
        let data = input.data;
        let all: Vec<usize> = (0..data.n_features()).collect();
        let cols = input.features.unwrap_or(&all).to_vec();
        let b = public_bounds(data)?;
        let lo: Vec<f64> = cols.iter().map(|&c| b.lo[c]).collect();
        let hi: Vec<f64> = cols.iter().map(|&c| b.hi[c]).collect();
        let seed = self.map_seed.to_string();
        let mut public = crate::rng::rng_from(&["svm_rff", "map", &seed]);
        let map = RffMap::draw(&lo, &hi, self.components, self.gamma, &mut public);
        log.ledger.public(
            "features",
            "random Fourier features",
            "a per-example map of public seed, gamma, D and bounds; rows of norm <= 1",
        );
        let features = mapped(data, &map, input.train, &cols)?;
        let rows: Vec<u32> = (0..input.train.len() as u32).collect();
        let inner = FitInput {
            data: &features,
            train: &rows,
            test: &[],
            counts: None,
            features: None,
            workspace: &(),
        };
        let linear = self.linear.fit(&inner, log)?;
        Ok(Box::new(RffModel { map, cols, linear }))
    }

    fn check_data(&self, data: &Dataset) -> Result<()> {
        dense(data)?;
        public_bounds(data)?;
        check_two_classes(data)
    }
}

/// The features of `rows` of `data` as a dataset of their own (rows in that order, their labels).
fn mapped(data: &Dataset, map: &RffMap, rows: &[u32], cols: &[usize]) -> Result<Dataset> {
    let z = map.features(dense(data)?, rows, cols);
    Ok(Dataset::new(
        data.name.clone(),
        data.title.clone(),
        Features::Dense(z.into()),
        rows.iter().map(|&r| data.labels[r as usize]).collect(),
        data.class_names.clone(),
        SplitRule::Fixed {
            n_train: rows.len(),
        },
    ))
}

/// A fitted kernel SVM: the map, the input columns, the linear model on the features.
struct RffModel {
    map: RffMap,
    cols: Vec<usize>,
    linear: Box<dyn Classifier>,
}

impl Classifier for RffModel {
    fn predict(&self, data: &Dataset, rows: &[u32]) -> Result<Vec<u16>> {
        let features = mapped(data, &self.map, rows, &self.cols)?;
        let all: Vec<u32> = (0..rows.len() as u32).collect();
        self.linear.predict(&features, &all)
    }
}
