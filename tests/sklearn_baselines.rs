//! The non-private baselines of the real-valued classifiers equal scikit-learn's on the shipped
//! data: the same training rows go to `tests/fixtures/sklearn_baselines.py` (python3 with
//! scikit-learn 1.5) and to epsilab, and the fitted parameters and test predictions are
//! compared (the forest's bootstrap samples go along explicitly). They need python3 with numpy
//! and scikit-learn, which a fresh machine may lack, so they are `#[ignore]`d: `.ci/run` installs
//! `examples/external/requirements.txt` and runs them with
//! `cargo test --test sklearn_baselines -- --ignored`.

mod common;

use epsilab::data::{Catalog, Dataset, Features};
use epsilab::learners::Classifier;
use epsilab::learners::gaussian_nb::{GaussianNbParams, TrainRows};
use linfa::ParamGuard;
use std::path::Path;
use std::process::Command;

/// The dataset `name` and one seeded 70/30 split of it.
fn load(name: &str) -> (Dataset, Vec<u32>, Vec<u32>) {
    let data = Catalog::builtin().load(name, &common::data_dir()).unwrap();
    let split = data.split(&mut epsilab::rng::rng_from(&["sklearn-baselines", name]));
    (data, split.train, split.test)
}

fn dense(data: &Dataset) -> ndarray::ArrayView2<'_, f64> {
    match &data.features {
        Features::Dense(x) => x.view(),
        Features::Binary(_) => panic!("real-valued dataset expected"),
    }
}

/// `rows` of `data` as CSV lines `class,x1,...,xD` (shortest round-trip decimals).
fn write_rows(path: &Path, data: &Dataset, rows: &[u32]) {
    let x = dense(data);
    let mut s = String::new();
    for &r in rows {
        s.push_str(&data.labels[r as usize].to_string());
        for v in x.row(r as usize) {
            s.push_str(&format!(",{v}"));
        }
        s.push('\n');
    }
    std::fs::write(path, s).unwrap();
}

/// Runs the fixture script on the split and parses its JSON answer.
fn sklearn(model: &[&str], data: &Dataset, train: &[u32], test: &[u32]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let (tr, te) = (dir.path().join("train.csv"), dir.path().join("test.csv"));
    write_rows(&tr, data, train);
    write_rows(&te, data, test);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sklearn_baselines.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(model[0])
        .arg(&tr)
        .arg(&te)
        .args(&model[1..])
        .output()
        .expect("python3 with scikit-learn 1.5 is needed for this test");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    let mut out = Vec::new();
    match v {
        serde_json::Value::Array(a) => a.iter().for_each(|e| out.extend(floats(e))),
        n => out.push(n.as_f64().unwrap()),
    }
    out
}

/// Equal to rounding: relative difference below 1e-9 (the sums run in another order).
fn assert_close(ours: &[f64], theirs: &[f64], what: &str) {
    assert_eq!(ours.len(), theirs.len(), "{what}");
    for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
        assert!(
            (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12),
            "{what}[{i}]: {a} vs scikit-learn {b}"
        );
    }
}

/// `gnb` = `GaussianNB()`: means, variances (with var_smoothing 1e-9 of the largest), priors and
/// every test prediction, on breast cancer (30 features) and Adult's six numeric columns.
#[test]
#[ignore = "needs python3 with numpy and scikit-learn (pip install -r examples/external/requirements.txt); run by .ci/run"]
fn gnb_equals_scikit_learn_gaussian_nb() {
    for name in ["breast_cancer", "adult_numeric"] {
        let (data, train, test) = load(name);
        let cols: Vec<usize> = (0..data.n_features()).collect();
        let model = GaussianNbParams::default()
            .check()
            .unwrap()
            .fit_rows(&TrainRows {
                x: dense(&data),
                rows: &train,
                labels: &data.labels,
                n_classes: data.n_classes(),
                cols: &cols,
            })
            .unwrap();
        let theirs = sklearn(&["gnb"], &data, &train, &test);
        assert_close(
            model.theta.as_slice().unwrap(),
            &floats(&theirs["theta"]),
            "theta",
        );
        assert_close(
            model.var.as_slice().unwrap(),
            &floats(&theirs["var"]),
            "var",
        );
        let prior: Vec<f64> = model.log_prior.iter().map(|l| l.exp()).collect();
        assert_close(&prior, &floats(&theirs["prior"]), "prior");
        let ours: Vec<f64> = model
            .predict(&data, &test)
            .unwrap()
            .iter()
            .map(|&c| f64::from(c))
            .collect();
        assert_eq!(ours, floats(&theirs["predictions"]), "{name}");
    }
}

/// `tree` = `DecisionTreeClassifier(max_depth)` (Gini, best splitter): the same depth, number
/// of leaves and every test prediction as one of the trees scikit-learn grows with random_state
/// 0..4. (scikit-learn scans the features in a random order and keeps the first of equally
/// good splits; epsilab keeps the lowest feature.) Depths 1 to 5 on Adult's numeric columns,
/// 1 to 3 on breast cancer: from depth 4 on, this split's breast cancer tree has nodes of 9 to
/// 32 rows where several features give exactly the same Gini score (checked by hand), and
/// scikit-learn picks a higher-numbered one.
#[test]
#[ignore = "needs python3 with numpy and scikit-learn (pip install -r examples/external/requirements.txt); run by .ci/run"]
fn tree_equals_scikit_learn_decision_tree() {
    use epsilab::learners::trees::CartParams;
    for name in ["breast_cancer", "adult_numeric"] {
        let (data, train, test) = load(name);
        let cols: Vec<usize> = (0..data.n_features()).collect();
        let t = TrainRows {
            x: dense(&data),
            rows: &train,
            labels: &data.labels,
            n_classes: data.n_classes(),
            cols: &cols,
        };
        let deepest = if name == "breast_cancer" { 3 } else { 5 };
        for depth in 1..=deepest {
            let cart = CartParams {
                max_depth: depth,
                max_features: None,
            };
            let tree = cart.fit_rows(&t, &mut epsilab::rng::rng_from(&["unused"]));
            let theirs = sklearn(&["tree", &depth.to_string()], &data, &train, &test);
            let what = format!("{name}, depth {depth}");
            let ours: Vec<f64> = tree
                .predict(&data, &test)
                .unwrap()
                .iter()
                .map(|&c| f64::from(c))
                .collect();
            let ours_json = (tree.depth() as u64, tree.n_leaves() as u64, ours);
            let found = theirs["trees"].as_array().unwrap().iter().any(|t| {
                (
                    t["depth"].as_u64().unwrap(),
                    t["leaves"].as_u64().unwrap(),
                    floats(&t["predictions"]),
                ) == ours_json
            });
            assert!(found, "{what}: no scikit-learn tree matches\n{theirs}");
        }
    }
}

/// `forest`'s bagging and voting against scikit-learn, with the random draws passed explicitly:
/// epsilab's forest code (`fit_bagged`, the one `forest` calls) grows 10 trees on its own
/// bootstrap samples with every feature a candidate (max_features = None: scikit-learn's
/// per-split feature draws cannot be reproduced, so `forest`'s sqrt(D) subsets are not what is
/// compared); each sample goes to scikit-learn as the sample weights RandomForestClassifier
/// gives its trees (each training row's count in the sample). Each of our trees makes the same
/// test predictions as one of scikit-learn's trees on that sample (random_state 0..39: ties as in
/// `tree_equals_scikit_learn_decision_tree`, more frequent in a sample's small nodes; with
/// 0..4, breast cancer's tree 3 found no match), and the forest's prediction is the majority vote of
/// those trees' predictions (scikit-learn's forest averages the trees' class probabilities
/// instead: the aggregation is epsilab's own). Depth 3 on breast cancer, 5 on Adult's numeric
/// columns.
#[test]
#[ignore = "needs python3 with numpy and scikit-learn (pip install -r examples/external/requirements.txt); run by .ci/run"]
fn forest_trees_equal_scikit_learn_trees_on_the_same_bootstrap_samples() {
    use epsilab::learners::trees::{CartParams, fit_bagged};
    for (name, depth) in [("breast_cancer", 3), ("adult_numeric", 5)] {
        let (data, train, test) = load(name);
        let cols: Vec<usize> = (0..data.n_features()).collect();
        let t = TrainRows {
            x: dense(&data),
            rows: &train,
            labels: &data.labels,
            n_classes: data.n_classes(),
            cols: &cols,
        };
        let cart = CartParams {
            max_depth: depth,
            max_features: None,
        };
        let mut rng = epsilab::rng::rng_from(&["sklearn-forest", name]);
        let (forest, samples) = fit_bagged(&t, 10, cart, &mut rng);
        let position: std::collections::HashMap<u32, usize> =
            train.iter().enumerate().map(|(i, &r)| (r, i)).collect();
        let bags: Vec<Vec<usize>> = (samples.iter())
            .map(|s| s.iter().map(|r| position[r]).collect())
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let bags_path = dir.path().join("bags.json");
        std::fs::write(&bags_path, serde_json::to_string(&bags).unwrap()).unwrap();
        let args = ["bagged", &depth.to_string(), bags_path.to_str().unwrap()];
        let theirs = sklearn(&args, &data, &train, &test);
        let theirs = theirs["bags"].as_array().unwrap();
        let x = dense(&data);
        let mut votes = vec![vec![0.0; data.n_classes()]; test.len()];
        for (k, tree) in forest.trees.iter().enumerate() {
            let ours: Vec<f64> = (test.iter())
                .map(|&r| f64::from(tree.predict_values(|j| x[[r as usize, tree.cols[j]]])))
                .collect();
            let found = theirs[k]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| floats(p) == ours);
            assert!(
                found,
                "{name}, tree {k}: no scikit-learn tree on its sample matches"
            );
            for (v, &c) in votes.iter_mut().zip(&ours) {
                v[c as usize] += 1.0;
            }
        }
        let majority: Vec<u16> = (votes.iter())
            .map(|v| (0..v.len()).fold(0, |b, c| if v[c] > v[b] { c } else { b }) as u16)
            .collect();
        assert_eq!(forest.predict(&data, &test).unwrap(), majority, "{name}");
        assert!(
            forest.trees.windows(2).any(|w| w[0] != w[1]),
            "{name}: the bootstrap samples grow different trees"
        );
    }
}

/// `svm_rff` with `loss = "logistic"` against scikit-learn with the random features passed
/// explicitly: the map epsilab draws (public seed `map_seed` = 1, gamma 2, D = 50) is handed to
/// `RBFSampler` as its `random_weights_` and `random_offset_`; its features divided by sqrt(2)
/// equal ours to rounding, `LogisticRegression(C = 1/lambda, fit_intercept = False)` on them has
/// the coefficients of epsilab's exact LR (lambda = 1: sum of losses + (lambda/2)||theta||^2) to
/// 1e-6 relative (two solvers' tolerances), and the `svm_rff` kind predicts every test row as
/// scikit-learn does. (scikit-learn has no Huber SVM loss: the Huber default is not compared.)
#[test]
#[ignore = "needs python3 with numpy and scikit-learn (pip install -r examples/external/requirements.txt); run by .ci/run"]
fn svm_rff_equals_rbf_sampler_features_and_logistic_regression() {
    use epsilab::kinds::{CellBudget, GridValues, LEARNERS, find};
    use epsilab::learners::logistic::{LogisticParams, Solver};
    use epsilab::learners::rff::RffMap;
    use epsilab::learners::{FitInput, TrialLog};
    use linfa::traits::Fit;
    for name in ["breast_cancer", "adult_numeric"] {
        let (data, train, test) = load(name);
        let bounds = data.bounds.clone().unwrap();
        let cols: Vec<usize> = (0..data.n_features()).collect();
        let mut public = epsilab::rng::rng_from(&["svm_rff", "map", "1"]);
        let map = RffMap::draw(&bounds.lo, &bounds.hi, 50, 2.0, &mut public);
        let z = map.features(dense(&data), &train, &cols);
        let dir = tempfile::tempdir().unwrap();
        let map_path = dir.path().join("map.json");
        let json = serde_json::json!({ "lo": bounds.lo, "hi": bounds.hi, "b": map.b,
            "w": map.w.rows().into_iter().map(|r| r.to_vec()).collect::<Vec<_>>() });
        std::fs::write(&map_path, json.to_string()).unwrap();
        let theirs = sklearn(
            &["rff", "1", map_path.to_str().unwrap()],
            &data,
            &train,
            &test,
        );
        let first: Vec<f64> = z.rows().into_iter().take(5).flatten().copied().collect();
        assert_close(&first, &floats(&theirs["features"]), "features");
        let y: Vec<usize> = train
            .iter()
            .map(|&r| usize::from(data.labels[r as usize]))
            .collect();
        let ours = LogisticParams::new(1.0)
            .solver(Solver::Newton)
            .check()
            .unwrap()
            .fit(&linfa::Dataset::new(z, ndarray::Array1::from(y)))
            .unwrap();
        for (a, b) in ours.theta.iter().zip(floats(&theirs["coef"])) {
            assert!(
                (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1e-3),
                "{name}: {a} vs {b}"
            );
        }
        let entry = find(LEARNERS, "svm_rff").unwrap();
        let kind = (entry.parse)(
            toml::from_str("gamma = 2\ncomponents = 50\nloss = \"logistic\"\nlambda = 1").unwrap(),
        )
        .unwrap();
        let learner = kind
            .learner(&GridValues::default(), &CellBudget::default())
            .unwrap();
        let input = FitInput {
            data: &data,
            train: &train,
            test: &test,
            counts: None,
            features: None,
            workspace: &(),
        };
        let model = learner.fit(&input, &mut TrialLog::new(1)).unwrap();
        let predicted: Vec<f64> = (model.predict(&data, &test).unwrap().iter())
            .map(|&c| f64::from(c))
            .collect();
        assert_eq!(predicted, floats(&theirs["predictions"]), "{name}");
    }
}
