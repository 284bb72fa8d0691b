//! `learner = "tree" | "forest" | "private_random_tree" | "private_forest"`: decision trees on
//! real-valued features (`learners::trees`, `learners::random_trees`).

use super::gaussian_nb::{public_bounds, train_rows};
use super::{CellBudget, Described, GridValues, LearnerKind, Refusal, refuse};
use crate::data::Dataset;
use crate::error::Result;
use crate::learners::gaussian_nb::{Bounds, dense};
use crate::learners::private_id3::PrivateId3Params;
use crate::learners::random_trees::{Ensemble, MAX_DEPTH, RandomTreesParams};
use crate::learners::trees::{CartParams, fit_forest};
use crate::learners::{Classifier, FitInput, Learner, TrialLog};
use serde::Deserialize;

const TREE: u8 = 0;
const FOREST: u8 = 1;
const RANDOM_TREE: u8 = 2;
const PRIVATE_FOREST: u8 = 3;

/// `tree`: CART as scikit-learn's DecisionTreeClassifier.
pub type Tree = TreeKind<TREE>;
/// `forest`: bagged CART trees, sqrt(D) features per split.
pub type Forest = TreeKind<FOREST>;
/// `private_random_tree`: Jagannathan et al. 2009.
pub type PrivateRandomTree = TreeKind<RANDOM_TREE>;
/// `private_forest`: diffprivlib's RandomForestClassifier.
pub type PrivateForest = TreeKind<PRIVATE_FOREST>;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeKind<const K: u8> {
    /// Depth limit (default 5, diffprivlib's).
    max_depth: Option<usize>,
    /// Number of trees (default 10, diffprivlib's `n_estimators`); not for `tree`.
    trees: Option<usize>,
}

impl<const K: u8> Described for TreeKind<K> {
    const NAME: &'static str =
        ["tree", "forest", "private_random_tree", "private_forest"][K as usize];
    const ABOUT: &'static str = [
        "CART, Gini split rule, as scikit-learn's DecisionTreeClassifier (non-private reference)",
        "bagged CART trees, sqrt(D) features per split (non-private reference)",
        "random trees on all rows, Lap leaf x class counts at eps/trees each (eps-DP, sensitivity 1)",
        "random trees on disjoint random parts, each leaf's class by the exponential mechanism at eps (eps-DP, parallel composition)",
    ][K as usize];
    const FIELDS: &'static [&'static str] = match K {
        TREE => &["max_depth"],
        _ => &["max_depth", "trees"],
    };
}

impl<const K: u8> LearnerKind for TreeKind<K> {
    fn private(&self) -> bool {
        K >= RANDOM_TREE
    }

    fn validate(&self, _grid: &[super::Axis]) -> std::result::Result<(), Refusal> {
        if self.trees == Some(0) {
            return Err(refuse("trees", "must be at least 1"));
        }
        match self.max_depth {
            Some(d) if d > MAX_DEPTH => {
                Err(refuse("max_depth", format!("at most {MAX_DEPTH}, got {d}")))
            }
            _ => Ok(()),
        }
    }

    fn cost(&self) -> u64 {
        self.trees.unwrap_or(10) as u64
    }

    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        let (max_depth, trees) = (self.max_depth.unwrap_or(5), self.trees.unwrap_or(10));
        let epsilon = if K >= RANDOM_TREE {
            budget.train_of(Self::NAME)?
        } else {
            0.0
        };
        let private = RandomTreesParams {
            epsilon,
            trees,
            max_depth,
        };
        if K >= RANDOM_TREE {
            private.check()?;
        }
        Ok(Box::new(TreeFit::<K> { private }))
    }
}

/// One cell's tree learner.
#[derive(Debug)]
struct TreeFit<const K: u8> {
    /// The settings (epsilon 0 for the non-private ones).
    private: RandomTreesParams,
}

impl<const K: u8> Learner for TreeFit<K> {
    fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
        let data = input.data;
        let all: Vec<usize> = (0..data.n_features()).collect();
        let t = train_rows(input, &all)?;
        t.check()?;
        let p = self.private;
        let mut structure = log.streams.stream("train/tree_structure");
        if K < RANDOM_TREE {
            let what = TreeKind::<K>::NAME;
            log.ledger.non_private(
                "train",
                "none (exact splits and leaf counts)",
                &format!("non-private {what} reference"),
            );
            return Ok(if K == TREE {
                let cart = CartParams {
                    max_depth: p.max_depth,
                    max_features: None,
                };
                Box::new(cart.fit_rows(&t, &mut structure))
            } else {
                Box::new(fit_forest(&t, p.trees, p.max_depth, &mut structure))
            });
        }
        let b = public_bounds(data)?;
        let bounds = Bounds {
            lo: &b.lo,
            hi: &b.hi,
        };
        let mut noise = log.streams.stream("train/tree_noise");
        let ledger = &mut log.ledger;
        let ensemble = if K == RANDOM_TREE {
            Ensemble::Jagannathan
        } else {
            Ensemble::Forest
        };
        let fit = p.fit(ensemble, &t, &bounds, &mut structure, &mut noise, ledger)?;
        Ok(Box::new(fit))
    }

    fn check_data(&self, data: &Dataset) -> Result<()> {
        dense(data)?;
        if K >= RANDOM_TREE {
            public_bounds(data)?;
        }
        Ok(())
    }
}

/// `private_id3`: Friedman & Schuster's private ID3 (`learners::private_id3`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivateId3 {
    /// Public depth limit (default 5); the budget is split over its depths.
    max_depth: Option<usize>,
    /// Equal-width bins of each feature's public range (default 4).
    bins: Option<usize>,
}

impl Described for PrivateId3 {
    const NAME: &'static str = "private_id3";
    const ABOUT: &'static str = "Friedman & Schuster's private ID3 on features cut into equal-width public bins: per depth, Lap node sizes and Lap leaf counts or an exponential-mechanism split (max operator), eps / (2 (depth + 1)) each (eps-DP, sensitivity 1; 2 replace-one)";
    const FIELDS: &'static [&'static str] = &["max_depth", "bins"];
}

impl PrivateId3 {
    fn params(&self, epsilon: f64) -> PrivateId3Params {
        PrivateId3Params {
            epsilon,
            max_depth: self.max_depth.unwrap_or(5),
            bins: self.bins.unwrap_or(4),
        }
    }
}

impl LearnerKind for PrivateId3 {
    fn private(&self) -> bool {
        true
    }

    fn validate(&self, _grid: &[super::Axis]) -> std::result::Result<(), Refusal> {
        let p = self.params(1.0);
        if p.bins < 2 {
            return Err(refuse("bins", "must be at least 2"));
        }
        p.check().map_err(|e| refuse("max_depth", e.to_string()))
    }

    fn learner(&self, _: &GridValues, budget: &CellBudget) -> Result<Box<dyn Learner>> {
        let p = self.params(budget.train_of(Self::NAME)?);
        p.check()?;
        Ok(Box::new(Id3Fit(p)))
    }
}

/// One cell's private ID3 learner.
#[derive(Debug)]
struct Id3Fit(PrivateId3Params);

impl Learner for Id3Fit {
    fn fit(&self, input: &FitInput, log: &mut TrialLog) -> Result<Box<dyn Classifier>> {
        let data = input.data;
        let all: Vec<usize> = (0..data.n_features()).collect();
        let t = train_rows(input, &all)?;
        let b = public_bounds(data)?;
        let bounds = Bounds {
            lo: &b.lo,
            hi: &b.hi,
        };
        let mut noise = log.streams.stream("train/id3_noise");
        Ok(Box::new(self.0.fit(
            &t,
            &bounds,
            &mut noise,
            &mut log.ledger,
        )?))
    }

    fn check_data(&self, data: &Dataset) -> Result<()> {
        dense(data)?;
        public_bounds(data).map(|_| ())
    }
}
