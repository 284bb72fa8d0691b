//! Catalog checksums, missing files and malformed files through the public loader.

mod common;

use epsilab::data::{Catalog, DataDir, Features, SplitRule};
use epsilab::error::Error;

#[test]
fn a_corrupt_file_fails_its_checksum() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("mushrooms")).unwrap();
    std::fs::write(dir.path().join("mushrooms/mushrooms"), "1 1:1 \n2 2:1 \n").unwrap();
    let err = Catalog::builtin()
        .load("mushrooms", &DataDir(dir.path().into()))
        .unwrap_err();
    assert!(matches!(err, Error::Checksum { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("mushrooms/mushrooms") && msg.contains("f39a4eb6"),
        "{msg}"
    );
}

#[test]
fn a_missing_file_says_where_it_looked_and_how_to_get_data() {
    let dir = tempfile::tempdir().unwrap();
    let err = Catalog::builtin()
        .load("adult", &DataDir(dir.path().into()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("a9a/a9a") && err.contains("EPSILAB_DATA") && err.contains("data fetch"),
        "{err}"
    );
}

#[test]
fn a_malformed_user_dataset_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mine.libsvm"), "1 1:1\n1 2:1\n2 3:x\n").unwrap();
    let spec = "[experiment]\nname = \"m\"\ntrials = 1\nseed = 1\ndatasets = [\"mine\"]\n\
         [dataset.mine]\nsource = \"libsvm\"\ndimension = 3\ntrain = \"mine.libsvm\"\ntrain_fraction = 0.5\n\
         classes = [{ label = 1, name = \"a\" }, { label = 2, name = \"b\" }]\n\
         [[pipeline]]\nname = \"nb\"\nlearner = \"nb\"\n[report]\nkind = \"dataset_summary\"\n";
    let path = common::write_spec(dir.path(), "s.toml", spec);
    let spec = epsilab::spec::Spec::load(&path).unwrap();
    let err = spec
        .catalog
        .load("mine", &DataDir("unused".into()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("mine.libsvm:3:") && err.contains("bad feature value"),
        "{err}"
    );
}

/// Table 3.1 sizes, dimensions and class balance of the six thesis datasets.
#[test]
fn the_six_thesis_datasets_load_with_their_published_shapes() {
    let dir = common::data_dir();
    let catalog = Catalog::builtin();
    for (name, rows, d, split) in [
        ("xwindows", 1800, 600, SplitRule::Fixed { n_train: 900 }),
        (
            "mushrooms",
            8124,
            112,
            SplitRule::Random {
                train_fraction: 0.7,
            },
        ),
        ("adult", 48842, 123, SplitRule::Fixed { n_train: 32561 }),
        (
            "newsgroup1",
            8124,
            100,
            SplitRule::Random {
                train_fraction: 0.7,
            },
        ),
        (
            "newsgroup2",
            6661,
            100,
            SplitRule::Random {
                train_fraction: 0.7,
            },
        ),
        (
            "newsgroup3",
            6661,
            100,
            SplitRule::Random {
                train_fraction: 0.7,
            },
        ),
    ] {
        let ds = catalog.load(name, &dir).unwrap();
        assert_eq!(
            (ds.n_rows(), ds.n_features(), ds.split),
            (rows, d, split),
            "{name}"
        );
        assert!(matches!(ds.features, Features::Binary(_)));
    }
    let all = |n: &str| {
        let ds = catalog.load(n, &dir).unwrap();
        ds.class_sizes(&(0..ds.n_rows() as u32).collect::<Vec<_>>())
    };
    assert_eq!(all("adult"), vec![24720 + 12435, 7841 + 3846]);
    assert_eq!(all("newsgroup1"), vec![4605, 3519]);
    assert_eq!(all("newsgroup2"), vec![1200, 5461]);
    // Newsgroup2 and 3 keep different random 1200-row subsamples of class 3.
    let (a, b) = (
        catalog.load("newsgroup2", &dir).unwrap(),
        catalog.load("newsgroup3", &dir).unwrap(),
    );
    assert_ne!(a.features.as_binary(), b.features.as_binary());
}

/// Every shipped `.gz` file decompresses to the bytes `datasets/SHA256SUMS` lists, every listed
/// file ships, and the catalog pins the same checksums.
#[test]
fn shipped_datasets_match_sha256sums_and_the_catalog() {
    use sha2::{Digest, Sha256};
    let root = common::data_dir().0;
    let sums = std::fs::read_to_string(root.join("SHA256SUMS")).unwrap();
    let mut listed = std::collections::BTreeMap::new();
    for line in sums.lines() {
        let (sum, path) = line.split_once("  ").expect("`SUM  PATH` lines");
        let bytes = epsilab::data::files::read(&root.join(format!("{path}.gz"))).unwrap();
        let actual: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(actual, sum, "{path}");
        listed.insert(path.to_string(), sum.to_string());
    }
    assert_eq!(listed.len(), 14);
    let toml: toml::Table = toml::from_str(epsilab::data::catalog::CATALOG_TOML).unwrap();
    for (name, def) in toml {
        for (path, sum) in def["sha256"].as_table().unwrap() {
            assert_eq!(
                listed.get(path),
                sum.as_str().map(str::to_string).as_ref(),
                "{name}: {path}"
            );
        }
    }
}
