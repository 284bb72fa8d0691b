//! Thesis Tables A.2/A.3: the top-10 MI words of XWindowsDoc (training rows) with their MI to
//! three decimals and their on-counts per class, on the shipped `datasets/xwindows` files.

use epsilab::counts::ClassCounts;
use epsilab::data::{Catalog, DataDir};
use epsilab::selection::{mutual_information, top_k};
use std::path::Path;

#[test]
fn xwindows_top10_mutual_information_matches_table_a2() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets");
    let data = Catalog::builtin()
        .load("xwindows", &DataDir(dir))
        .expect("load xwindows");
    let vocab: Vec<String> = data
        .feature_names
        .clone()
        .expect("vocabulary")
        .iter()
        .map(|l| l.trim().to_string())
        .collect();
    assert_eq!(vocab.len(), data.n_features());
    let x = data.features.as_binary().expect("binary");
    let train: Vec<u32> = (0..900).collect();
    let counts = ClassCounts::from_rows(x, &data.labels, &train, data.n_classes());
    let mi = mutual_information(&counts).unwrap();

    // (word, MI, N1 of class label 1, N1 of class label 2).
    let table = [
        ("windows", 0.215, 56.0, 288.0),
        ("microsoft", 0.095, 6.0, 107.0),
        ("dos", 0.092, 10.0, 115.0),
        ("motif", 0.078, 80.0, 2.0),
        ("window", 0.067, 137.0, 32.0),
        ("sun", 0.045, 65.0, 7.0),
        ("code", 0.044, 82.0, 15.0),
        ("win", 0.044, 5.0, 59.0),
        ("xterm", 0.040, 40.0, 0.0),
        ("server", 0.040, 74.0, 13.0),
    ];
    // datasets/catalog.toml lists label 1 (X-Windows) then label 2 (MS-Windows).
    let (c1, c2) = (0, 1);
    let mut top: Vec<usize> = top_k(&mi, 10);
    top.sort_by(|&a, &b| mi[b].total_cmp(&mi[a]).then(a.cmp(&b)));
    let got: Vec<&str> = top.iter().map(|&i| vocab[i].as_str()).collect();
    let want: Vec<&str> = table.iter().map(|r| r.0).collect();
    assert_eq!(got, want, "top-10 words in MI order");
    for (word, value, n1, n2) in table {
        let d = vocab.iter().position(|v| v == word).unwrap();
        assert!(
            (mi[d] - value).abs() < 0.0005,
            "{word}: MI {} vs {value}",
            mi[d]
        );
        assert_eq!(
            (counts.on[[c1, d]], counts.on[[c2, d]]),
            (n1, n2),
            "{word}: counts"
        );
    }
    println!("top-10 MI words: {got:?}");
}
