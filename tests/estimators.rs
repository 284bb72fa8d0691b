//! Regression, PCA and k-means (issue 49): the non-private baselines equal scikit-learn's
//! `Ridge`, `PCA` and `KMeans` (from the same start) to rounding, and the data refusals.

mod common;

use epsilab::data::catalog::{Catalog, DataDir};
use epsilab::learners::estimators::{kmeans, linreg, pca, unit_box, unit_targets};
use ndarray::{Array1, Array2};
use std::process::Command;

fn load(name: &str) -> epsilab::data::Dataset {
    Catalog::builtin().load(name, &DataDir::shipped()).unwrap()
}

fn write_matrix(path: &std::path::Path, x: &Array2<f64>) {
    let text: String = x
        .rows()
        .into_iter()
        .map(|r| {
            r.iter()
                .map(|v| format!("{v:e}"))
                .collect::<Vec<_>>()
                .join(",")
                + "\n"
        })
        .collect();
    std::fs::write(path, text).unwrap();
}

/// Runs `script` with python3 in `dir` and parses its stdout as rows of numbers.
fn python(dir: &std::path::Path, script: &str) -> Vec<Vec<f64>> {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(|v| v.trim().parse().unwrap()).collect())
        .collect()
}

fn all_rows(n: usize) -> Vec<u32> {
    (0..n as u32).collect()
}

#[test]
#[ignore = "needs python3 with numpy and scikit-learn (pip install -r examples/external/requirements.txt); run by .ci/run"]
fn ridge_equals_scikit_learn_ridge_on_the_scaled_diabetes_design() {
    let data = load("diabetes");
    let rows = all_rows(data.n_rows());
    let z = linreg::design(&data, &rows).unwrap();
    let (t, _) = unit_targets(&data, &rows).unwrap();
    let w = linreg::ridge(&z, &t, 1.0);
    let dir = tempfile::tempdir().unwrap();
    write_matrix(&dir.path().join("z.csv"), &z);
    write_matrix(
        &dir.path().join("t.csv"),
        &t.clone().insert_axis(ndarray::Axis(1)),
    );
    let got = python(
        dir.path(),
        "import numpy as np; from sklearn.linear_model import Ridge\n\
         z=np.loadtxt('z.csv',delimiter=','); t=np.loadtxt('t.csv',delimiter=',')\n\
         w=Ridge(alpha=1.0,fit_intercept=False,solver='cholesky').fit(z,t).coef_\n\
         print(','.join(repr(float(v)) for v in w))",
    );
    for (a, b) in w.iter().zip(&got[0]) {
        assert!((a - b).abs() < 1e-9, "{w} vs {:?}", got[0]);
    }
}

#[test]
#[ignore = "needs python3 with numpy and scikit-learn (pip install -r examples/external/requirements.txt); run by .ci/run"]
fn pca_equals_scikit_learn_pca_on_the_scaled_digits() {
    let data = load("digits");
    let rows = all_rows(data.n_rows());
    let u = unit_box(&data, &rows).unwrap();
    let mean = u.mean_axis(ndarray::Axis(0)).unwrap();
    let c = &u - &mean;
    let v = pca::top_k(&c.t().dot(&c), 5);
    let dir = tempfile::tempdir().unwrap();
    write_matrix(&dir.path().join("u.csv"), &u);
    let got = python(
        dir.path(),
        "import numpy as np; from sklearn.decomposition import PCA\n\
         u=np.loadtxt('u.csv',delimiter=',')\n\
         for c in PCA(5,svd_solver='full').fit(u).components_: print(','.join(repr(float(x)) for x in c))",
    );
    for (k, want) in got.iter().enumerate() {
        // Eigenvectors are defined up to sign.
        let want = Array1::from(want.clone());
        let dot = v.column(k).dot(&want);
        let diff = &v.column(k) - &(dot.signum() * &want);
        assert!(diff.iter().all(|x| x.abs() < 1e-8), "component {k}: {diff}");
    }
}

#[test]
#[ignore = "needs python3 with numpy and scikit-learn (pip install -r examples/external/requirements.txt); run by .ci/run"]
fn lloyd_equals_scikit_learn_kmeans_from_the_same_start() {
    let data = load("digits");
    let rows = all_rows(data.n_rows());
    let u = unit_box(&data, &rows).unwrap();
    let mut rng = epsilab::rng::rng_from(&["estimators test", "kmeans"]);
    let start = kmeans::row_start(&u, 10, &mut rng);
    let centres = kmeans::lloyd(&u, start.clone());
    let dir = tempfile::tempdir().unwrap();
    write_matrix(&dir.path().join("u.csv"), &u);
    write_matrix(&dir.path().join("s.csv"), &start);
    let got = python(
        dir.path(),
        "import numpy as np; from sklearn.cluster import KMeans\n\
         u=np.loadtxt('u.csv',delimiter=','); s=np.loadtxt('s.csv',delimiter=',')\n\
         m=KMeans(10,init=s,n_init=1,algorithm='lloyd',tol=0.0,max_iter=300).fit(u)\n\
         for c in m.cluster_centers_: print(','.join(repr(float(x)) for x in c))",
    );
    for (k, want) in got.iter().enumerate() {
        for (a, b) in centres.row(k).iter().zip(want) {
            assert!((a - b).abs() < 1e-9, "centre {k}: {a} vs {b}");
        }
    }
}

#[test]
fn the_adjusted_rand_index_is_one_for_equal_partitions_and_low_for_unrelated_ones() {
    let a = [0, 0, 1, 1, 2, 2];
    assert_eq!(kmeans::adjusted_rand_index(&a, &[5, 5, 3, 3, 4, 4]), 1.0);
    // scikit-learn 1.5.2's adjusted_rand_score on the same pairs of labellings.
    let x = kmeans::adjusted_rand_index(&a, &[0, 1, 0, 1, 0, 1]);
    assert!((x + 0.36363636363636365).abs() < 1e-12, "{x}");
    let y = kmeans::adjusted_rand_index(&[0, 0, 1, 1, 2, 2, 0, 1], &[0, 0, 1, 1, 1, 2, 0, 2]);
    assert!((y - 0.42857142857142855).abs() < 1e-12, "{y}");
}

#[test]
fn regression_learners_refuse_data_without_a_target_and_a_target_with_classes() {
    let digits = load("digits");
    let err = unit_targets(&digits, &[0, 1]).unwrap_err().to_string();
    assert!(
        err.contains("target_bounds") && err.contains("digits"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("r.csv"), "x,y\n1,2\n2,oops\n").unwrap();
    let spec = r#"
[experiment]
name = "r"
trials = 1
seed = 1
datasets = ["r"]
[dataset.r]
source = "csv"
train = "r.csv"
train_fraction = 0.5
label = "y"
bounds = [0.0, 3.0]
target_bounds = [0.0, 5.0]
[[pipeline]]
name = "ridge"
learner = "linreg"
[grid]
n_train = [2]
[report]
x = "n_train"
metrics = ["r2"]
"#;
    let path = dir.path().join("r.toml");
    std::fs::write(&path, spec).unwrap();
    let s = epsilab::spec::Spec::load(&path).unwrap();
    let err = s
        .catalog
        .load("r", &DataDir(dir.path().into()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`oops` (row 2 of") && err.contains("r.csv"),
        "{err}"
    );
    let with_classes = spec.replace(
        "target_bounds = [0.0, 5.0]",
        "target_bounds = [0.0, 5.0]\nclasses = [{ label = 1, name = \"a\" }]",
    );
    std::fs::write(&path, with_classes).unwrap();
    let s = epsilab::spec::Spec::load(&path).unwrap();
    let err = s
        .catalog
        .load("r", &DataDir(dir.path().into()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("leave `classes`"), "{err}");
}

/// The shipped wine file loads as the catalog states: 178 rows of 13 bounded columns, 3
/// cultivars, its checksum verified by the loader.
#[test]
fn wine_loads_with_its_bounds_and_three_classes() {
    let data = load("wine");
    assert_eq!(data.n_rows(), 178);
    assert_eq!(data.n_features(), 13);
    assert_eq!(data.n_classes(), 3);
    let u = unit_box(&data, &all_rows(178)).unwrap();
    assert!(u.iter().all(|v| (-1.0..=1.0).contains(v)));
}

/// A grid's `n_train` below k-means' `clusters`: the non-private fit, which starts from
/// `clusters` distinct training rows (it panicked in `rand::seq::index::sample` once), refuses
/// with an error naming both. The private fits release their centres at any size (under
/// add/remove N is private: an error on one neighbour and centres on the other would break
/// every ε) and record no `kmeans_cost`, which needs that reference; at k rows they record it.
#[test]
fn kmeans_with_fewer_training_rows_than_clusters_refuses_only_the_non_private_fit() {
    let dir = tempfile::tempdir().unwrap();
    for learner in ["kmeans", "kmeans_dp_lloyd", "kmeans_sample_aggregate"] {
        let spec = format!(
            r#"
[experiment]
name = "km"
trials = 1
seed = 1
datasets = ["m"]
[dataset.m]
source = "gaussian_mixture"
dimension = 2
clusters = 4
train = 100
test = 20
seed = 1
[grid]
epsilon = [1]
n_train = [3, 4]
[[pipeline]]
name = "km"
learner = "{learner}"
clusters = 4
[report]
x = "epsilon"
"#
        );
        let path = common::write_spec(dir.path(), "km.toml", &spec);
        let s = epsilab::spec::Spec::load(&path).unwrap();
        let out = dir.path().join(learner);
        let run = epsilab::runner::run(&s, &common::run_options(&out, 1));
        if learner == "kmeans" {
            let err = run.unwrap_err().to_string();
            assert!(
                err.contains("`clusters`") && err.contains("`n_train`") && err.contains("has 3"),
                "{learner}: {err}"
            );
            continue;
        }
        run.unwrap();
        let records = epsilab::store::read_dir_records(&out.join("km")).unwrap();
        assert_eq!(records.len(), 2, "{learner}");
        for r in &records {
            let scored = r.metrics.contains_key("kmeans_cost");
            assert_eq!(
                scored,
                r.n_train == 4,
                "{learner} at n_train = {}",
                r.n_train
            );
        }
    }
}
