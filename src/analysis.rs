//! Analysis probes: the quantities the thesis plots that are not accuracies (mutual
//! information per feature, keep probabilities, perturbed scores, sensitivities, top-feature
//! tables). Figure 2.1's noise samples are a release (`kinds::release::PNormSamples`). A probe
//! runs in place of a learner and records named vectors.
//!
//! Probes that show exact statistics of the data are labelled non-private in the ledger; probes
//! that run a mechanism record its spend like any learner.

use crate::counts::ClassCounts;
use crate::error::{Error, Result};
use crate::kinds::{Described, Registered};
use crate::learners::logistic::mechanisms::objective_branch;
use crate::learners::{PrivateNbParams, TrialLog};
use crate::privacy::{Laplace, Ledger};
use crate::selection::scores::{
    count_scores, count_sensitivity, mi_from_parameters, mi_sensitivity, mutual_information,
    thesis_mi_sensitivity,
};
use crate::selection::{keep_probabilities, top_k};
use linfa::ParamGuard;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Debug;

/// Declares the probes (structs without fields), their descriptions and [`PROBES`]; each
/// probe's `record` is written beside it below.
macro_rules! probes {
    ($($ty:ident: $name:literal, spends = $spends:literal, $(reads_n = $reads:expr,)? $about:literal;)*) => {
        $(
            #[derive(Debug, Clone, Deserialize)]
            #[serde(deny_unknown_fields)]
            pub struct $ty {}

            impl Described for $ty {
                const NAME: &'static str = $name;
                const ABOUT: &'static str = $about;
                const FIELDS: &'static [&'static str] = &[];
            }

            impl ProbeKind for $ty {
                fn spends(&self) -> bool {
                    $spends
                }

                fn run(&self, input: &ProbeInput, log: &mut TrialLog) -> Result<ProbeOutput> {
                    let mut out = ProbeOutput::default();
                    self.record(input, &mut out, log)?;
                    Ok(out)
                }

                fn check_run(&self, _ledger: &mut Ledger) -> Result<()> {
                    $(_ledger.public_size($reads)?;)?
                    Ok(())
                }
            }
        )*

        /// The probes a spec may name (`probe = "..."`).
        pub const PROBES: &[Registered<dyn ProbeKind>] = &[$(probe::<$ty>()),*];
    };
}

probes! {
    MiSorted: "mi_sorted", spends = false,
        "mutual information of every feature, sorted descending (F3.4/3.13; not private)";
    MiThresholded: "mi_thresholded", spends = true,
        "MI per feature and whether one Algorithm 1 run at eps thresholded it (F3.5)";
    MiSensitivity: "mi_sensitivity", spends = false,
        "Delta_I(N) for N = 2 .. 10^6 (F3.9; analytic)";
    PerturbedMi: "perturbed_mi", spends = true, reads_n = ALGORITHM_3_READS_N,
        "true MI against Algorithm 2's and Algorithm 3's perturbed MI at eps (F3.10)";
    KeepProbability: "keep_probability", spends = true,
        "Algorithm 4 keep probability vs score, MI and count scores, T = `features`, eps0 = eps/T (F3.11/3.12/3.18; not private)";
    ScoreComparison: "score_comparison", spends = false,
        "normalised MI against the normalised count score per feature (F3.16; not private)";
    TopFeatures: "top_features", spends = false,
        "the top features by MI with their per-class on-counts (Tables A.2/A.3; not private)";
    ObjectiveBranch: "objective_branch", spends = true,
        "Algorithm 7's branch per lambda in {1e-3..1e5} at eps: eps', Delta = 0 or not (Table 4.1; analytic)";
}

/// An analysis probe: runs in place of a learner and records named vectors.
pub trait ProbeKind: Debug + Send + Sync {
    /// Whether it runs a mechanism (and so takes the grid's epsilon and spends it).
    fn spends(&self) -> bool;
    fn run(&self, input: &ProbeInput, log: &mut TrialLog) -> Result<ProbeOutput>;
    /// Checks, before anything runs, what it reads of the run: the public N (through
    /// `ledger`, a scratch ledger with the cell's relation and public size;
    /// [`crate::kinds::LearnerKind::check_run`]).
    fn check_run(&self, _ledger: &mut Ledger) -> Result<()> {
        Ok(())
    }
}

/// What Algorithm 3's perturbed MI reads the public N for.
const ALGORITHM_3_READS_N: &str = "Algorithm 3's MI sensitivity h(1/N) + 1/N";

crate::kinds::registrar!(probe: ProbeKind);

/// What a probe may read.
pub struct ProbeInput<'a> {
    pub counts: &'a ClassCounts,
    /// Feature names of the dataset, if known.
    pub feature_names: Option<&'a [String]>,
    /// The probe's budget (grid epsilon), if it runs a mechanism.
    pub epsilon: Option<f64>,
    /// T for probes that need it.
    pub features: Option<usize>,
}

/// What a probe records.
#[derive(Debug, Default)]
pub struct ProbeOutput {
    pub vectors: BTreeMap<String, Vec<f64>>,
    /// Names of the features a probe lists (`top_features`).
    pub feature_names: Option<Vec<String>>,
}

impl ProbeOutput {
    fn put(&mut self, name: &str, v: Vec<f64>) {
        self.vectors.insert(name.to_string(), v);
    }
}

fn need_eps(name: &str, eps: Option<f64>) -> Result<f64> {
    eps.filter(|e| e.is_finite() && *e > 0.0)
        .ok_or_else(|| Error::param("epsilon", format!("probe `{name}` needs an epsilon > 0")))
}

/// What the probes built on Algorithm 1 start from: their epsilon (refused unless > 0), the
/// exact MI per feature and Algorithm 1's checked parameters at that epsilon.
fn algorithm1(
    name: &str,
    input: &ProbeInput,
) -> Result<(f64, Vec<f64>, <PrivateNbParams as ParamGuard>::Checked)> {
    let eps = need_eps(name, input.epsilon)?;
    let mi = mutual_information(input.counts)?;
    Ok((eps, mi, PrivateNbParams::new(eps).check()?))
}

fn normalised(xs: &[f64]) -> Vec<f64> {
    let max = xs.iter().cloned().fold(f64::MIN_POSITIVE, f64::max);
    xs.iter().map(|x| x / max).collect()
}

/// Records the two scores of every feature, MI and the count score, each divided by its
/// largest value (`mi_score`, `count_score`: the axes the keep-probability and score-comparison
/// figures share), and returns them as computed.
fn put_scores(c: &ClassCounts, out: &mut ProbeOutput) -> Result<(Vec<f64>, Vec<f64>)> {
    let mi = mutual_information(c)?;
    let counts = count_scores(c)?;
    out.put("mi_score", normalised(&mi));
    out.put("count_score", normalised(&counts));
    Ok((mi, counts))
}

/// Labels the probe's output non-private in the ledger: it shows `what`, exact statistics of
/// the training data.
fn shows_exact(log: &mut TrialLog, what: &str) {
    log.ledger.non_private(
        "analysis",
        what,
        "shows exact statistics of the training data",
    );
}

impl MiSorted {
    fn record(&self, input: &ProbeInput, out: &mut ProbeOutput, log: &mut TrialLog) -> Result<()> {
        let mut mi = mutual_information(input.counts)?;
        mi.sort_by(|a, b| b.total_cmp(a));
        shows_exact(log, "exact MI");
        out.put("mi", mi);
        Ok(())
    }
}

impl MiThresholded {
    fn record(&self, input: &ProbeInput, out: &mut ProbeOutput, log: &mut TrialLog) -> Result<()> {
        let c = input.counts;
        let (eps, mi, p) = algorithm1(Self::NAME, input)?;
        let mut rng = log.streams.stream("analysis/algorithm1");
        let mut release = log.ledger.scratch();
        let noisy = p.release_counts(c, None, &mut rng, &mut release)?;
        log.ledger
            .absorb(release.renamed("analysis", "laplace (Algorithm 1 counts)"))?;
        shows_exact(log, "exact MI");
        let t = p.threshold().value(noisy.scale, eps);
        let off = noisy.off.as_ref().ok_or_else(|| {
            Error::param("release", "probe `mi_thresholded` needs the on/off release")
        })?;
        let clipped: Vec<f64> = (0..c.n_features())
            .map(|d| {
                let any = (0..c.n_classes()).any(|k| noisy.on[[k, d]] < t || off[[k, d]] < t);
                f64::from(u8::from(any))
            })
            .collect();
        out.put("feature", (1..=c.n_features()).map(|d| d as f64).collect());
        out.put("mi", mi);
        out.put("thresholded", clipped);
        Ok(())
    }
}

impl MiSensitivity {
    fn record(&self, _: &ProbeInput, out: &mut ProbeOutput, log: &mut TrialLog) -> Result<()> {
        let ns: Vec<f64> = (0..=50)
            .map(|i| 10f64.powf(0.3 + i as f64 * 0.114))
            .map(f64::round)
            .collect();
        // Figure 3.9 plots the thesis's bound; the smoothed score's proven one beside it.
        out.put(
            "delta_i",
            ns.iter().map(|&n| thesis_mi_sensitivity(n)).collect(),
        );
        let relation = log.ledger.relation();
        out.put(
            "delta_i_smoothed",
            ns.iter().map(|&n| mi_sensitivity(n, relation)).collect(),
        );
        out.put("n", ns);
        log.ledger
            .non_private("analysis", "none (analytic)", "a function of N only");
        Ok(())
    }
}

impl PerturbedMi {
    fn record(&self, input: &ProbeInput, out: &mut ProbeOutput, log: &mut TrialLog) -> Result<()> {
        let c = input.counts;
        let (eps, mi, p) = algorithm1(Self::NAME, input)?;
        // Algorithm 2: MI of the Algorithm 1 noisy model.
        let mut rng = log.streams.stream("analysis/algorithm2");
        let fit = p.fit_counts(c, None, &mut rng, &mut log.ledger)?;
        let prior: Vec<f64> = fit.model.log_prior.iter().map(|l| l.exp()).collect();
        out.put("alg2_mi", mi_from_parameters(&fit.model.theta, &prior));
        // Algorithm 3: MI + Lap(D Delta_I / eps).
        let n = log.ledger.public_size(ALGORITHM_3_READS_N)?;
        let sens = c.n_features() as f64 * mi_sensitivity(n as f64, log.ledger.relation());
        let lap = Laplace::new(sens, eps, log.ledger.relation())?;
        let mut rng = log.streams.stream("analysis/algorithm3");
        let mut lap = log
            .ledger
            .charge("analysis", "laplace (Algorithm 3 scores)", lap)?;
        out.put(
            "alg3_mi",
            mi.iter().map(|&v| v + lap.sample(&mut rng)).collect(),
        );
        shows_exact(log, "exact MI");
        out.put("true_mi", mi);
        Ok(())
    }
}

impl KeepProbability {
    fn record(&self, input: &ProbeInput, out: &mut ProbeOutput, log: &mut TrialLog) -> Result<()> {
        let c = input.counts;
        let eps = need_eps(Self::NAME, input.epsilon)?;
        let t = input
            .features
            .ok_or_else(|| Error::param("features", "probe `keep_probability` needs T"))?;
        let eps0 = eps / t as f64;
        let relation = log.ledger.relation();
        let (mi, counts) = put_scores(c, out)?;
        out.put(
            "mi_keep",
            keep_probabilities(&mi, t, eps0, mi_sensitivity(c.total(), relation))?,
        );
        out.put(
            "count_keep",
            keep_probabilities(&counts, t, eps0, count_sensitivity(relation))?,
        );
        shows_exact(log, "none (analytic keep probabilities)");
        Ok(())
    }
}

impl ScoreComparison {
    fn record(&self, input: &ProbeInput, out: &mut ProbeOutput, log: &mut TrialLog) -> Result<()> {
        put_scores(input.counts, out)?;
        shows_exact(log, "exact scores");
        Ok(())
    }
}

impl TopFeatures {
    fn record(&self, input: &ProbeInput, out: &mut ProbeOutput, log: &mut TrialLog) -> Result<()> {
        let c = input.counts;
        let mi = mutual_information(c)?;
        let k = input.features.unwrap_or(10).min(mi.len());
        let mut top = top_k(&mi, k);
        top.sort_by(|&a, &b| mi[b].total_cmp(&mi[a]).then(a.cmp(&b)));
        out.feature_names = input
            .feature_names
            .map(|n| top.iter().map(|&d| n[d].clone()).collect());
        out.put("feature", top.iter().map(|&d| d as f64 + 1.0).collect());
        out.put("mi", top.iter().map(|&d| mi[d]).collect());
        for k in 0..c.n_classes() {
            out.put(
                &format!("on_class{}", k + 1),
                top.iter().map(|&d| c.on[[k, d]]).collect(),
            );
        }
        shows_exact(log, "exact MI and counts");
        Ok(())
    }
}

impl ObjectiveBranch {
    fn record(&self, input: &ProbeInput, out: &mut ProbeOutput, log: &mut TrialLog) -> Result<()> {
        let eps = need_eps(Self::NAME, input.epsilon)?;
        let n = input.counts.total() as usize;
        let grid = crate::learners::logistic::LAMBDA_GRID;
        let branches: Vec<_> = grid
            .iter()
            .map(|&l| objective_branch(l, eps, n, log.ledger.relation()))
            .collect();
        out.put("lambda", grid.to_vec());
        let direct = branches.iter().map(|b| f64::from(u8::from(b.direct)));
        out.put("direct", direct.collect());
        out.put("eps_prime", branches.iter().map(|b| b.eps_prime).collect());
        out.put("delta", branches.iter().map(|b| b.delta).collect());
        log.ledger.non_private(
            "analysis",
            "none (analytic)",
            "a function of lambda, eps and N only",
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn counts() -> ClassCounts {
        ClassCounts {
            class: vec![100.0, 100.0],
            on: array![[90.0, 50.0, 10.0], [10.0, 50.0, 20.0]],
        }
    }

    fn run_probe(name: &str, input: &ProbeInput, log: &mut TrialLog) -> Result<ProbeOutput> {
        let entry = crate::kinds::find(PROBES, name)
            .ok_or_else(|| Error::param("probe", format!("unknown probe `{name}`")))?;
        (entry.parse)(toml::Table::new())
            .map_err(|e| Error::param("probe", e))?
            .run(input, log)
    }

    #[test]
    fn probes_read_no_fields() {
        crate::kinds::testing::fields_match_structs(PROBES);
    }

    #[test]
    fn every_listed_probe_runs() {
        for name in PROBES.iter().map(|p| p.name) {
            let mut log = sized_log();
            let input = ProbeInput {
                counts: &counts(),
                feature_names: None,
                epsilon: Some(1.0),
                features: Some(1),
            };
            let out = run_probe(name, &input, &mut log).unwrap();
            assert!(!out.vectors.is_empty(), "{name}");
            assert!(
                !log.ledger.entries.is_empty(),
                "{name} must say what it spent"
            );
        }
    }

    #[test]
    fn top_features_are_sorted_by_mi_with_their_counts() {
        let mut log = TrialLog::new(1);
        let input = ProbeInput {
            counts: &counts(),
            feature_names: None,
            epsilon: None,
            features: Some(2),
        };
        let out = run_probe("top_features", &input, &mut log).unwrap();
        assert_eq!(out.vectors["feature"], vec![1.0, 3.0]);
        assert_eq!(out.vectors["on_class1"], vec![90.0, 10.0]);
        assert_eq!(out.vectors["on_class2"], vec![10.0, 20.0]);
        assert!(out.vectors["mi"][0] > out.vectors["mi"][1]);
        assert!(!log.ledger.is_private_within(Some(1.0)));
    }

    #[test]
    fn mechanisms_in_probes_need_a_budget_and_record_it() {
        let mut log = sized_log();
        let input = ProbeInput {
            counts: &counts(),
            feature_names: None,
            epsilon: None,
            features: None,
        };
        assert!(run_probe("perturbed_mi", &input, &mut log).is_err());
        assert!(run_probe("no_such_probe", &input, &mut log).is_err());
        let input = ProbeInput {
            counts: &counts(),
            feature_names: None,
            epsilon: Some(0.5),
            features: None,
        };
        run_probe("perturbed_mi", &input, &mut log).unwrap();
        assert!(
            (log.ledger.total_epsilon() - 1.0).abs() < 1e-12,
            "Algorithms 2 and 3 each spend 0.5"
        );
        // Algorithm 3's sensitivity reads the run's public N, recorded as such; without one
        // the probe refuses to run.
        let n = counts().total();
        assert!(
            log.ledger
                .entries
                .iter()
                .any(|e| e.name == "size" && e.mechanism == format!("public constant N = {n}"))
        );
        let e = run_probe("perturbed_mi", &input, &mut TrialLog::new(1)).unwrap_err();
        assert!(e.to_string().contains("public_n"), "{e}");
    }

    /// A trial log whose public N is the test counts' total.
    fn sized_log() -> TrialLog {
        let mut log = TrialLog::new(1);
        let n = counts().total() as usize;
        log.ledger
            .set_public_size(Some(crate::privacy::PublicSize::new(n, "the test's")));
        log
    }
}
