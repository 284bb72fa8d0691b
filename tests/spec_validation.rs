//! Bad specs are refused with the file, the field and the reason.

mod common;

use epsilab::spec::Spec;
use std::path::Path;

const GOOD: &str = r#"
[experiment]
name = "ok"
trials = 2
seed = 1
datasets = ["xwindows"]
[grid]
epsilon = [0.1, 1]
[[pipeline]]
name = "p"
learner = "private_nb"
[report]
x = "epsilon"
"#;

fn err(text: &str) -> String {
    Spec::parse(text, Path::new("specs/bad.toml"))
        .unwrap_err()
        .to_string()
}

#[test]
fn the_reference_spec_is_valid() {
    let spec = Spec::parse(GOOD, Path::new("ok.toml")).unwrap();
    assert_eq!(spec.experiment.trials, 2);
}

#[test]
fn invalid_specs_name_file_field_and_reason() {
    let cases: Vec<(String, &str, &str)> = vec![
        (
            GOOD.replace("[0.1, 1]", "[0.1, 0]"),
            "grid.epsilon[1]",
            "> 0",
        ),
        (GOOD.replace("[0.1, 1]", "[-0.5]"), "grid.epsilon[0]", "> 0"),
        (
            GOOD.replace("[0.1, 1]", "[nan]"),
            "grid.epsilon[0]",
            "finite",
        ),
        (
            GOOD.replace("[0.1, 1]", "[inf]"),
            "grid.epsilon[0]",
            "finite",
        ),
        (
            GOOD.replace("\"private_nb\"", "\"kernel_svm\""),
            "pipeline[0].learner",
            "unknown learner `kernel_svm`",
        ),
        (
            GOOD.replace("\"xwindows\"", "\"xwindow\""),
            "experiment.datasets[0]",
            "unknown dataset",
        ),
        (
            GOOD.replace("trials = 2", "trials = 0"),
            "experiment.trials",
            "at least 1",
        ),
        (
            GOOD.replace("trials = 2", "trials = \"many\""),
            "experiment.trials`: line 4, column 10",
            "expected u32",
        ),
        (
            GOOD.replace("seed = 1", "seed = 1\ncolour = \"red\""),
            "experiment.colour`: line 6, column 1",
            "unknown field `colour`",
        ),
        (
            GOOD.replace("x = \"epsilon\"", "x = \"epsilon\"\nlog_x = \"yes\""),
            "report.log_x`: line 14",
            "expected a boolean",
        ),
        (
            GOOD.replace(
                "[grid]",
                "[dataset.toy]\nsource = \"toy_gaussian\"\nbounds = [\n  [0, 1],\n]\n[grid]",
            ),
            "dataset.toy.bounds`: line 9",
            "unknown field `bounds`",
        ),
        (
            // Per-feature bounds of another count than the declared features: refused before
            // the file is read.
            GOOD.replace("[\"xwindows\"]", "[\"pat\"]").replace(
                "[grid]",
                "[dataset.pat]\nsource = \"csv\"\ntrain = \"p.csv\"\ntrain_fraction = 0.5\n\
                 label = \"y\"\nfeatures = [\"age\", \"bmi\"]\nclasses = [{ label = 1, name = \"one\" }]\n\
                 bounds = [[18, 100]]\n[grid]",
            ),
            "dataset.pat.bounds`",
            "lists 1 [lo, hi] pairs for 2 features",
        ),
        (
            // A wrong type in a `source`-tagged table: the field's line, not the header's.
            GOOD.replace(
                "[grid]",
                "[dataset.toy]\nsource = \"toy_gaussian\"\n\ndimension = \"two\"\n[grid]",
            ),
            "dataset.toy.dimension`: line 10",
            "invalid type",
        ),
        (
            // A line of array values (`["xwindows"],`) is not a table header.
            GOOD.replace("[\"xwindows\"]", "[\n  [\"xwindows\"],\n]"),
            "field `experiment`: line 7",
            "invalid type",
        ),
        (
            GOOD.replace("name = \"ok\"", "name = \"../up\""),
            "experiment.name",
            "letters",
        ),
        (
            GOOD.replace(
                "learner = \"private_nb\"",
                "learner = \"private_nb\"\nbudget = { train = 0.7, selection = 0.2 }",
            ),
            "pipeline[0].budget",
            "sum to 1",
        ),
        (
            GOOD.replace(
                "learner = \"private_nb\"",
                "learner = \"private_nb\"\nthreshold = \"q30\"",
            ),
            "pipeline[0].threshold",
            "quantile",
        ),
        (
            GOOD.replace(
                "learner = \"private_nb\"",
                "learner = \"nb\"\nthreshold = 3",
            ),
            "pipeline[0].threshold",
            "does not apply",
        ),
        (
            GOOD.replace("[grid]\nepsilon = [0.1, 1]", ""),
            "grid.epsilon",
            "needs an epsilon axis",
        ),
        (
            GOOD.replace("x = \"epsilon\"", "x = \"lambda\""),
            "report.x",
            "not a grid axis",
        ),
        (
            GOOD.replace("name = \"p\"", "name = \"\""),
            "pipeline[0].name",
            "empty",
        ),
        (
            format!("{GOOD}\n[[pipeline]]\nname = \"p\"\nlearner = \"nb\"\n"),
            "pipeline[1].name",
            "earlier pipeline",
        ),
        (
            "[experiment]\nname = \"x\"".to_string(),
            "line",
            "missing field",
        ),
        (
            GOOD.replace("x = \"epsilon\"", "x = \"epsilon\"\nfont_pt = 40"),
            "report.font_pt",
            "40 is outside 4..=30",
        ),
        (
            GOOD.replace(
                "x = \"epsilon\"",
                "x = \"epsilon\"\nwidth_in = 3\nheight_in = 0.5",
            ),
            "report.height_in",
            "0.5 is outside 1..=20",
        ),
    ];
    for (text, field, reason) in cases {
        let e = err(&text);
        assert!(e.starts_with("specs/bad.toml: field `"), "{e}");
        assert!(e.contains(field), "`{e}` should name {field}");
        assert!(e.contains(reason), "`{e}` should say {reason}");
    }
}

/// A TOML syntax error is shown as the position it is. Outside every table (a malformed
/// header, a top-level value) that is never a field named `line L, column C`; inside one the
/// parser stops past the key at fault (an unclosed `trials = [2` fails on `seed`'s line), so
/// naming the key there would name the wrong one.
#[test]
fn a_syntax_error_is_a_position_not_a_field() {
    let unclosed = GOOD.replace("trials = 2", "trials = [2");
    let missing_value = format!("{GOOD}[[pipeline]]\nname = \"q\"\nlearner = \"nb\"\nalpha = \n");
    for (text, at, reason) in [
        (
            unclosed.as_str(),
            "specs/bad.toml:5: column 1",
            "invalid array",
        ),
        (
            missing_value.as_str(),
            "specs/bad.toml:17: column 9",
            "invalid string",
        ),
        (
            "[experiment\nname = \"x\"\n",
            "specs/bad.toml:1: column 12",
            "invalid table header",
        ),
        (
            "x = [experiment]\n",
            "specs/bad.toml:1: column 6",
            "invalid array",
        ),
    ] {
        let e = err(text);
        assert!(e.contains(at) && e.contains(reason), "{e}");
        assert!(!e.contains("field `"), "{e}");
    }
}

#[test]
fn missing_spec_file_is_an_io_error_naming_it() {
    let e = Spec::load(Path::new("no/such/spec.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("no/such/spec.toml:"), "{e}");
}

#[test]
fn every_shipped_spec_is_valid() {
    let mut n = 0;
    for entry in std::fs::read_dir("experiments").unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            Spec::load(&p).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 3);
}

#[test]
fn selection_and_logistic_fields_are_validated() {
    let sel = GOOD.replace(
        "learner = \"private_nb\"",
        "learner = \"private_nb\"\nselection = \"mask\"\nfeatures = 5",
    );
    let lr = GOOD.replace(
        "learner = \"private_nb\"",
        "learner = \"lr_objective\"\nlambda = \"cv\"",
    );
    let cases: Vec<(String, &str, &str)> = vec![
        (
            sel.clone(),
            "pipeline[0].budget.selection",
            "positive share",
        ),
        (
            sel.replace("\"mask\"", "\"magic\""),
            "pipeline[0].selection",
            "unknown selector",
        ),
        (
            sel.replace("features = 5", ""),
            "pipeline[0].features",
            "needs T",
        ),
        (
            sel.replace("selection = \"mask\"", "selection = \"sparse\""),
            "pipeline[0].sparse_threshold",
            "public threshold",
        ),
        (
            GOOD.replace(
                "learner = \"private_nb\"",
                "learner = \"private_nb\"\nscore = \"count\"",
            ),
            "pipeline[0].score",
            "only with a `selection`",
        ),
        (
            sel.replace(
                "features = 5",
                "features = 5\nbudget = { selection = 0.5, train = 0.6 }",
            ),
            "pipeline[0].budget",
            "sum to 1",
        ),
        (
            lr.replace("lambda = \"cv\"", ""),
            "pipeline[0].lambda",
            "needs lambda",
        ),
        // A missing field is named, not the only field given (was `pipeline[0].components`).
        (
            GOOD.replace(
                "learner = \"private_nb\"",
                "learner = \"pca_analyze_gauss\"\ncomponents = 2",
            ),
            "pipeline[0].delta",
            "missing field `delta`",
        ),
        (
            lr.replace("lambda = \"cv\"", "lambda = -1"),
            "pipeline[0].lambda",
            "> 0",
        ),
        (
            lr.replace("lambda = \"cv\"", "lambda = \"best\""),
            "line",
            "\"cv\" or \"private\"",
        ),
        (
            lr.replace(
                "lambda = \"cv\"",
                "lambda = 1\nbudget = { train = 0.8, lambda = 0.2 }",
            ),
            "pipeline[0].budget.lambda",
            "only for lambda = \"private\"",
        ),
        (
            lr.replace("lambda = \"cv\"", "lambda = 1\nthreshold = 3"),
            "pipeline[0].threshold",
            "does not apply",
        ),
        (
            GOOD.replace(
                "learner = \"private_nb\"",
                "probe = \"mi_sorted\"\nalpha = 1",
            ),
            "pipeline[0].alpha",
            "does not apply to probe",
        ),
        (
            GOOD.replace("learner = \"private_nb\"", "probe = \"nope\""),
            "pipeline[0].probe",
            "unknown probe",
        ),
    ];
    for (text, field, reason) in cases {
        let e = err(&text);
        assert!(e.contains(field), "`{e}` should name {field}");
        assert!(e.contains(reason), "`{e}` should say {reason}");
    }
    let ok = sel.replace(
        "features = 5",
        "features = 5\nbudget = { selection = 0.5, train = 0.5 }",
    );
    Spec::parse(&ok, Path::new("ok.toml")).unwrap();
    Spec::parse(&lr, Path::new("ok.toml")).unwrap();
}

/// The spec hash pins stored results to the spec: it must depend on the trial-defining text
/// only — not on comments, formatting, `[report]`, `[paper]`, or the code's struct layout.
#[test]
fn the_spec_hash_depends_on_the_trials_only() {
    const PINNED_HASH: &str = "d43e53e6000b2d279b26b650c58f290d2de9726d235067b56c50f8936e59040f";
    use epsilab::spec::spec_hash;
    let h = spec_hash(GOOD);
    // Pinned: a change here invalidates every stored result; do it only on purpose.
    assert_eq!(h, PINNED_HASH);
    assert_eq!(h.len(), 64);
    let reformatted = format!(
        "# a comment\n{}",
        GOOD.replace("trials = 2", "trials    =    2 # two")
    );
    assert_eq!(spec_hash(&reformatted), h);
    assert_eq!(
        spec_hash(&GOOD.replace("x = \"epsilon\"", "x = \"epsilon\"\nlog_x = true")),
        h
    );
    assert_eq!(spec_hash(&format!("{GOOD}\n[paper]\nsource = \"x\"\n")), h);
    assert_ne!(spec_hash(&GOOD.replace("seed = 1", "seed = 2")), h);
    assert_ne!(spec_hash(&GOOD.replace("[0.1, 1]", "[0.1, 2]")), h);
    assert_eq!(Spec::parse(GOOD, Path::new("a.toml")).unwrap().hash, h);
}

/// A repeated grid value or dataset would run (and store) the same cells twice.
#[test]
fn duplicate_axis_values_are_refused() {
    let cases: Vec<(String, &str)> = vec![
        (GOOD.replace("[0.1, 1]", "[1, 1]"), "grid.epsilon[1]"),
        (GOOD.replace("[0.1, 1]", "[1, 0.1, 1.0]"), "grid.epsilon[2]"),
        (
            GOOD.replace("[grid]", "[grid]\nthreshold = [\"q65\", 0, \"q65\"]"),
            "grid.threshold[2]",
        ),
        (
            GOOD.replace("[grid]", "[grid]\nfeatures = [5, 5]"),
            "grid.features[1]",
        ),
        (
            GOOD.replace("[grid]", "[grid]\nlambda = [0.5, 0.5]"),
            "grid.lambda[1]",
        ),
        (
            GOOD.replace("[grid]", "[grid]\nn_train = [10, 20, 10]"),
            "grid.n_train[2]",
        ),
        (
            GOOD.replace("[\"xwindows\"]", "[\"xwindows\", \"xwindows\"]"),
            "experiment.datasets[1]",
        ),
    ];
    for (text, field) in cases {
        let e = err(&text);
        assert!(
            e.starts_with("specs/bad.toml: field `") && e.contains(field),
            "{field}: {e}"
        );
        assert!(e.contains("twice") || e.contains("repeats"), "{e}");
    }
}

#[test]
fn a_cycle_of_nb_proxy_sources_is_refused() {
    let text = GOOD.replace("[\"xwindows\"]", "[\"a\"]")
        + "[dataset.a]\nsource = \"nb_proxy\"\nof = \"b\"\ntrain = 10\ntest = 10\n\
           [dataset.b]\nsource = \"nb_proxy\"\nof = \"a\"\ntrain = 10\ntest = 10\n";
    let e = err(&text);
    assert!(
        e.contains("dataset.b.of") && e.contains("a -> b -> a"),
        "{e}"
    );
}

/// `[experiment] neighbours`: add/remove by default, replace-one on request, anything else
/// refused naming the file, the field and both choices.
#[test]
fn neighbours_relation_is_chosen_and_validated() {
    use epsilab::privacy::Relation;
    let default = Spec::parse(GOOD, Path::new("ok.toml")).unwrap();
    assert_eq!(default.experiment.neighbours, Relation::AddRemove);
    let with = |v: &str| GOOD.replace("seed = 1\n", &format!("seed = 1\nneighbours = {v}\n"));
    let replace = Spec::parse(&with("\"replace_one\""), Path::new("ok.toml")).unwrap();
    assert_eq!(replace.experiment.neighbours, Relation::ReplaceOne);
    let add = Spec::parse(&with("\"add_remove\""), Path::new("ok.toml")).unwrap();
    assert_eq!(add.experiment.neighbours, Relation::AddRemove);
    for bad in ["\"bounded\"", "\"replace-one\"", "1"] {
        let e = err(&with(bad));
        assert!(e.contains("specs/bad.toml"), "{e}");
        assert!(e.contains("neighbours") || e.contains("line 6"), "{e}");
        if bad.starts_with('"') {
            assert!(
                e.contains("\"add_remove\" or \"replace_one\"") && e.contains(bad),
                "{e}"
            );
        }
    }
    // A misspelt key is an unknown field.
    let e = err(&GOOD.replace("seed = 1\n", "seed = 1\nneighbors = \"add_remove\"\n"));
    assert!(e.contains("neighbors"), "{e}");
}

/// A replace-one trial log calibrates Algorithm 1 for 2D and states the relation per step.
#[test]
fn a_replace_one_trial_doubles_the_nb_sensitivity_and_states_it() {
    use epsilab::counts::ClassCounts;
    use epsilab::learners::{PrivateNbParams, TrialLog};
    use epsilab::privacy::Relation;
    use linfa::ParamGuard;
    let spec = Spec::parse(
        &GOOD.replace("seed = 1\n", "seed = 1\nneighbours = \"replace_one\"\n"),
        Path::new("ok.toml"),
    )
    .unwrap();
    let counts = ClassCounts {
        class: vec![3.0, 2.0],
        on: ndarray::array![[2.0, 1.0, 0.0], [0.0, 2.0, 1.0]],
    };
    let p = PrivateNbParams::new(0.5).check().unwrap();
    for (relation, sens) in [
        (Relation::AddRemove, 3.0),
        (spec.experiment.neighbours, 6.0),
    ] {
        let mut log = TrialLog::with_relation(1, relation);
        let mut rng = log.streams.stream("t");
        let fit = p
            .fit_counts(&counts, None, &mut rng, &mut log.ledger)
            .unwrap();
        assert_eq!(fit.sensitivity, sens);
        assert_eq!(log.ledger.entries[0].sensitivity, Some(sens));
        assert_eq!(log.ledger.entries[0].relation, relation.describe());
    }
}

const RELEASE: &str = r#"
[experiment]
name = "ok"
trials = 2
seed = 1
datasets = ["u"]
[dataset.u]
source = "uniform"
n = 100
[grid]
epsilon = [0.1, 1]
[[pipeline]]
name = "mean"
release = "laplace"
query = "mean"
bounds = [0, 1]
[report]
x = "epsilon"
"#;

#[test]
fn release_and_attack_fields_are_validated() {
    if let Err(e) = Spec::parse(RELEASE, Path::new("ok.toml")) {
        panic!("{e}");
    }
    let cases: Vec<(String, &str, &str)> = vec![
        (
            RELEASE.replace("\"laplace\"", "\"laplase\""),
            "pipeline[0].release",
            "unknown release `laplase`",
        ),
        (
            RELEASE.replace("bounds = [0, 1]", "bounds = [1, 0]"),
            "pipeline[0].bounds",
            "lo < hi",
        ),
        (
            RELEASE.replace("bounds = [0, 1]", "bounds = [0, 1]\ndelta = 1e-5"),
            "pipeline[0].delta",
            "does not apply to release `laplace`",
        ),
        (
            RELEASE.replace("\"laplace\"", "\"gaussian\""),
            "pipeline[0].delta",
            "needs a delta",
        ),
        (
            RELEASE.replace("query = \"mean\"", "query = \"mode\""),
            "pipeline[0].query",
            "unknown variant",
        ),
        (
            RELEASE.replace("bounds = [0, 1]", "bounds = [0, 1]\np = 0.3"),
            "pipeline[0].p",
            "query = \"quantile\"",
        ),
        (
            RELEASE.replace("bounds = [0, 1]", "bounds = [0, 1]\nat_least = 0.5"),
            "pipeline[0].at_least",
            "applies only to query = \"count\"",
        ),
        (
            RELEASE.replace("bounds = [0, 1]", "bounds = [0, 1]\ntolerance = -1"),
            "pipeline[0].tolerance",
            "> 0",
        ),
        (
            RELEASE.replace(
                "release = \"laplace\"\nquery = \"mean\"",
                "release = \"composed_average\"\nsum_share = 1",
            ),
            "pipeline[0].sum_share",
            "(0, 1)",
        ),
        (
            RELEASE.replace(
                "release = \"laplace\"\nquery = \"mean\"\nbounds = [0, 1]",
                "release = \"histogram\"\nbounds = [0, 1]\nbins = [0.5, 0.2]",
            ),
            "pipeline[0].bins",
            "ascending",
        ),
        (
            RELEASE.replace(
                "release = \"laplace\"\nquery = \"mean\"\nbounds = [0, 1]",
                "attack = \"majority_vote\"\nks = []",
            ),
            "pipeline[0].ks",
            "at least one k",
        ),
        (
            RELEASE.replace(
                "release = \"laplace\"\nquery = \"mean\"\nbounds = [0, 1]",
                "attack = \"differencing\"\nbounds = [0, 1]",
            ),
            "pipeline[0].bounds",
            "does not apply to attack `differencing`",
        ),
        (
            RELEASE.replace("n = 100", "n = 100\nalpha = 2"),
            "dataset.u.alpha`: line 10",
            "unknown field `alpha`",
        ),
        (
            RELEASE
                .replace("[grid]\nepsilon = [0.1, 1]\n", "")
                .replace("x = \"epsilon\"", ""),
            "grid.epsilon",
            "release `laplace` runs a mechanism",
        ),
    ];
    for (text, field, reason) in cases {
        let e = err(&text);
        assert!(e.starts_with("specs/bad.toml"), "{e}");
        assert!(e.contains(field), "`{e}` should name {field}");
        assert!(e.contains(reason), "`{e}` should say {reason}");
    }
}

/// A metric named only in a `[[report.view]]` is shown, so the costly
/// optional metrics behind it are recorded; a metric named nowhere is not.
#[test]
fn a_metric_named_only_in_a_view_is_shown() {
    let view = format!(
        "{GOOD}[[report.view]]\nname = \"w\"\nx = \"epsilon\"\nmetrics = [\"w_distance\"]\n"
    );
    let spec = Spec::parse(&view, Path::new("view.toml")).unwrap();
    assert!(spec.shows_metric("w_distance"));
    assert!(!spec.shows_metric("sampling_error"));
    let plain = Spec::parse(GOOD, Path::new("ok.toml")).unwrap();
    assert!(!plain.shows_metric("w_distance"));
}

/// `[report] histograms_at` selects the histograms' trials by grid value: a key that is not a
/// grid axis or a value not on it selected no trial and drew empty histograms in silence; a
/// selection without histograms, or histograms outside a figure report, were ignored.
#[test]
fn histograms_off_the_grid_or_ignored_are_refused() {
    let with =
        |report: &str| GOOD.replace("x = \"epsilon\"", &format!("x = \"epsilon\"\n{report}"));
    let hist = "histograms = [\"test_accuracy\"]\n";
    for (report, field, reason) in [
        (
            format!("{hist}histograms_at = {{ epsilon = 0.3 }}"),
            "report.histograms_at.epsilon",
            "0.3 is not a value of grid.epsilon (0.1, 1.0): no trial would be drawn",
        ),
        (
            format!("{hist}histograms_at = {{ eps = 0.1 }}"),
            "report.histograms_at.eps",
            "`eps` is not a grid axis of this spec (axes: epsilon)",
        ),
        (
            format!("{hist}histograms_at = {{ epsilon = \"0.1\" }}"),
            "report.histograms_at.epsilon",
            "\"0.1\" is not a value of grid.epsilon",
        ),
        (
            "histograms_at = { epsilon = 0.1 }".into(),
            "report.histograms_at",
            "selects the trials of `histograms`, which names no metric",
        ),
        (
            format!("{hist}kind = \"dataset_summary\""),
            "report.histograms",
            "applies only to figure reports",
        ),
    ] {
        let e = err(&with(&report));
        assert!(
            e.starts_with(&format!("specs/bad.toml: field `{field}`: {reason}")),
            "{report}: {e}"
        );
    }
    // On the grid (1 and 1.0 are one value): accepted.
    for at in ["epsilon = 1", "epsilon = 1.0", "epsilon = 0.1"] {
        let text = with(&format!("{hist}histograms_at = {{ {at} }}"));
        Spec::parse(&text, Path::new("ok.toml")).unwrap_or_else(|e| panic!("{at}: {e}"));
    }
}

/// An empty grid axis makes no cell: the run passed with 0 trials. Every axis is refused alike
/// (`epsilon = []` already was).
#[test]
fn an_empty_grid_axis_is_refused() {
    for axis in ["n_train", "lambda", "features", "threshold", "epsilon"] {
        let text = GOOD.replace(
            "epsilon = [0.1, 1]",
            &format!("epsilon = [0.1, 1]\n{axis} = []"),
        );
        let text = if axis == "epsilon" {
            GOOD.replace("[0.1, 1]", "[]")
        } else {
            text
        };
        let e = err(&text);
        assert!(
            e.starts_with("specs/bad.toml: field `grid.")
                && e.contains(&format!("`grid.{axis}`"))
                && e.contains("at least one value"),
            "{axis}: {e}"
        );
    }
}

/// A spec on one inline definition `def` (the `[dataset.d]` body) with a release-free
/// reference pipeline; `Err` is the refusal's text.
fn with_dataset(def: &str) -> Result<Spec, String> {
    let text = format!(
        "[experiment]\nname = \"d\"\ntrials = 1\nseed = 1\ndatasets = [\"d\"]\n\
         [dataset.d]\n{def}\n[grid]\nepsilon = [1]\n[[pipeline]]\nname = \"p\"\n\
         learner = \"private_nb\"\n[report]\nx = \"epsilon\"\n"
    );
    Spec::parse(&text, Path::new("specs/bad.toml")).map_err(|e| e.to_string())
}

/// Synthetic sources' parameters are refused when the spec is read, naming the field: a
/// probability outside [0, 1] (it was clamped), a jitter that takes one there, a margin that
/// is NaN, infinite or negative, no training or test rows (caught mid-run), and sizes whose
/// data would not fit in memory (an allocation failure aborted the run).
#[test]
fn synthetic_source_parameters_are_refused_by_field() {
    let nb = |theta: &str, rest: &str| {
        format!(
            "source = \"nb_sampled\"\ndimension = 4\ntheta = {theta}\ntrain = 20\ntest = 20\n{rest}"
        )
    };
    let ball = |rest: &str| {
        format!("source = \"logistic_ball\"\ndimension = 3\ntrain = 20\ntest = 20\n{rest}")
    };
    let toy = |train: &str, test: &str, dim: &str| {
        format!("source = \"toy_gaussian\"\ndimension = {dim}\ntrain = {train}\ntest = {test}")
    };
    let cases = [
        (nb("[1.5, 0.5]", ""), "dataset.d.theta[0]", "[0, 1]"),
        (nb("[0.5, nan]", ""), "dataset.d.theta[1]", "[0, 1]"),
        (nb("[0.5, -0.1]", ""), "dataset.d.theta[1]", "[0, 1]"),
        (
            nb("[0.5, 0.5]", "jitter = -0.1"),
            "dataset.d.jitter",
            "[0, 1]",
        ),
        (
            nb("[0.5, 0.5]", "jitter = nan"),
            "dataset.d.jitter",
            "[0, 1]",
        ),
        (
            nb("[0.5, 0.5]", "jitter = 1.5"),
            "dataset.d.jitter",
            "[0, 1]",
        ),
        // 0.95 (1 + 0.1) > 1 under the default jitter.
        (nb("[0.95, 0.5]", ""), "dataset.d.jitter", "at most"),
        (
            nb("[0.5, 0.5]", "").replace("train = 20", "train = 0"),
            "dataset.d.train",
            "at least 1",
        ),
        (
            nb("[0.5, 0.5]", "").replace("test = 20", "test = 0"),
            "dataset.d.test",
            "at least 1",
        ),
        (ball("signal = nan"), "dataset.d.signal", "finite and >= 0"),
        (ball("signal = inf"), "dataset.d.signal", "finite and >= 0"),
        (ball("signal = -1"), "dataset.d.signal", "finite and >= 0"),
        (toy("0", "10", "2"), "dataset.d.train", "at least 1"),
        (toy("10", "0", "2"), "dataset.d.test", "at least 1"),
        (toy("10", "10", "0"), "dataset.d.dimension", "at least 1"),
        (toy("100000000000", "10", "2"), "dataset.d.train", "rows"),
        (
            toy("100000", "100000", "100000000"),
            "dataset.d.dimension",
            "2^34",
        ),
        (toy("100000000", "10", "1000"), "dataset.d.train", "2^34"),
        (
            ball("").replace("dimension = 3", "dimension = 100000000000"),
            "dataset.d.dimension",
            "2^34",
        ),
    ];
    for (def, field, reason) in cases {
        let e = with_dataset(&def).unwrap_err();
        assert!(
            e.starts_with(&format!("specs/bad.toml: field `{field}`: ")) && e.contains(reason),
            "{def}\n{e}"
        );
    }
    // The limits admit what they should: the edge of each range.
    for def in [
        nb("[1, 0]", "jitter = 0"),
        nb("[0.5, 0.5]", "jitter = 1"),
        ball("signal = 0"),
        toy("1", "1", "1"),
    ] {
        assert!(with_dataset(&def).is_ok(), "{def}");
    }
}

/// A `sha256` key that names none of a dataset's files was never checked: refused by field,
/// for each file source. The shipped catalog's definitions have none (two named a vocabulary
/// their dataset does not read).
#[test]
fn a_checksum_of_a_file_the_dataset_lacks_is_refused() {
    let sum = format!("\"{}\"", "0".repeat(64));
    let classes = "classes = [{ label = 1, name = \"a\" }, { label = 2, name = \"b\" }]";
    let cases = [
        format!(
            "source = \"libsvm\"\ntrain = \"a.svm\"\ntest = \"a.t\"\ndimension = 3\n{classes}\n\
             sha256 = {{ \"a.svm\" = {sum}, \"b.svm\" = {sum} }}"
        ),
        format!(
            "source = \"csv\"\ntrain = \"a.svm\"\ntrain_fraction = 0.5\nlabel = \"y\"\n{classes}\n\
             sha256 = {{ \"b.svm\" = {sum} }}"
        ),
        format!(
            "source = \"csv_column\"\nfile = \"a.svm\"\ncolumn = 1\nsha256 = {{ \"b.svm\" = {sum} }}"
        ),
    ];
    for def in cases {
        let e = with_dataset(&def).unwrap_err();
        assert!(
            e.starts_with("specs/bad.toml: field `dataset.d.sha256.\"b.svm\"`: `b.svm` is not a file of this dataset (its files: a.svm")
                && e.contains("its checksum would never be checked"),
            "{def}\n{e}"
        );
    }
    let catalog = epsilab::data::Catalog::builtin();
    for name in catalog.names() {
        let problem = catalog.get(name).and_then(|d| d.problem());
        assert_eq!(problem, None, "datasets/catalog.toml: {name}");
    }
}

/// A repeated feature column, class name or class label is refused by field: the feature was
/// used twice, and two classes of one label gave a misleading "label 0 is not among the
/// dataset's classes (1, 1)" once the file was read.
#[test]
fn repeated_features_and_classes_are_refused_by_field() {
    let csv = |features: &str, classes: &str| {
        format!(
            "source = \"csv\"\ntrain = \"data.csv\"\ntrain_fraction = 0.7\nlabel = \"y\"\n\
             features = {features}\nbounds = [0, 100]\nclasses = {classes}"
        )
    };
    let two = "[{ label = 0, name = \"no\" }, { label = 1, name = \"yes\" }]";
    let cases = [
        (
            csv("[\"age\", \"age\", \"bmi\"]", two),
            "dataset.d.features[1]",
            "repeats features[0]",
        ),
        (
            csv(
                "[\"age\", \"bmi\"]",
                "[{ label = 0, name = \"yes\" }, { label = 1, name = \"yes\" }]",
            ),
            "dataset.d.classes[1].name",
            "`yes`",
        ),
        (
            csv(
                "[\"age\", \"bmi\"]",
                "[{ label = 1, name = \"no\" }, { label = 1, name = \"yes\" }]",
            ),
            "dataset.d.classes[1].label",
            "label `1`",
        ),
        // A number and its text spelling match the same rows.
        (
            csv(
                "[\"age\", \"bmi\"]",
                "[{ label = 1, name = \"no\" }, { label = \"1\", name = \"yes\" }]",
            ),
            "dataset.d.classes[1].label",
            "label `1`",
        ),
    ];
    for (def, field, reason) in cases {
        let e = with_dataset(&def).unwrap_err();
        assert!(
            e.starts_with(&format!("specs/bad.toml: field `{field}`: ")) && e.contains(reason),
            "{def}\n{e}"
        );
    }
    let libsvm = "source = \"libsvm\"\ntrain = \"a.svm\"\ntrain_fraction = 0.5\ndimension = 3\n\
                  classes = [{ label = 1, name = \"a\" }, { label = 1, name = \"b\" }]";
    let e = with_dataset(libsvm).unwrap_err();
    assert!(e.contains("field `dataset.d.classes[1].label`"), "{e}");
    assert!(with_dataset(&csv("[\"age\", \"bmi\"]", two)).is_ok());
}

/// An external program's `timeout_s` above a year (1e300 panicked converting to a `Duration`
/// in every worker) is refused when the spec is read.
#[test]
fn an_external_timeout_above_a_year_is_refused() {
    let text = |t: &str| {
        GOOD.replace(
            "learner = \"private_nb\"",
            &format!("learner = \"external\"\ncommand = [\"python3\", \"x.py\"]\ntimeout_s = {t}"),
        )
    };
    for t in ["1e300", "inf", "3.2e7"] {
        let e = err(&text(t));
        assert!(
            e.contains("field `pipeline[0].timeout_s`") && e.contains("at most 31536000"),
            "{t}: {e}"
        );
    }
    assert!(Spec::parse(&text("31536000"), Path::new("ok.toml")).is_ok());
}

/// A value of the wrong shape for a field that takes one of several forms names the forms,
/// not serde's internal enum (`bounds = [[18, 90, 3]]` said "untagged enum BoundsDef").
#[test]
fn a_wrongly_shaped_bounds_or_lambda_names_the_forms_it_takes() {
    let csv = "source = \"csv\"\ntrain = \"d.csv\"\ntrain_fraction = 0.7\nlabel = \"y\"\n\
               classes = [{ label = 0, name = \"a\" }, { label = 1, name = \"b\" }]\n";
    let e = with_dataset(&format!("{csv}bounds = [[18, 90, 3]]")).unwrap_err();
    assert!(e.contains("[lo, hi] pair"), "{e}");
    assert!(!e.contains("untagged"), "{e}");
    let lr = GOOD.replace("learner = \"private_nb\"", "learner = \"lr\"\nlambda = []");
    let e = Spec::parse(&lr, Path::new("specs/bad.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("per_example"), "{e}");
    assert!(!e.contains("untagged"), "{e}");
}
