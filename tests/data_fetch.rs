//! `epsilab data fetch` against a local HTTP server started by each test (127.0.0.1 only; no
//! outside network): success, checksum mismatch, 404 and connection refused.

use epsilab::data::Catalog;
use epsilab::data::fetch::{fetch, fetch_url};
use epsilab::error::Error;
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

const BODY: &[u8] = b"y,a\n1,0.5\n0,2.5\n1,1.5\n0,0.5\n";

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Serves `/data.csv` with BODY and answers 404 to anything else; returns the base URL.
fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            reader.read_line(&mut request).unwrap();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                    break;
                }
            }
            let path = request.split_whitespace().nth(1).unwrap_or("");
            let (status, body): (&str, &[u8]) = if path == "/data.csv" {
                ("200 OK", BODY)
            } else {
                ("404 Not Found", b"no such file")
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body);
        }
    });
    format!("http://{addr}")
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_verified_download_lands_in_the_cache_and_is_not_fetched_twice() {
    let base = serve();
    let cache = tempfile::tempdir().unwrap();
    let url = format!("{base}/data.csv");
    let got = fetch(&url, Some(&sha(BODY)), cache.path(), &Catalog::builtin()).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, cache.path().join("data.csv"));
    assert!(!got[0].cached);
    assert_eq!(std::fs::read(cache.path().join("data.csv")).unwrap(), BODY);
    assert_eq!(entries(cache.path()), vec!["data.csv"]);
    // An ordinary file (0644), not the temporary file's 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(cache.path().join("data.csv")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o644);
    }
    // Upper-case checksums are accepted; the cached copy is reused.
    let again = fetch_url(&url, &got[0].path, &sha(BODY).to_uppercase()).unwrap();
    assert!(again.cached);
}

#[test]
fn a_checksum_mismatch_names_both_checksums_and_leaves_nothing() {
    let base = serve();
    let cache = tempfile::tempdir().unwrap();
    let wrong = "0".repeat(64);
    let err = fetch(
        &format!("{base}/data.csv"),
        Some(&wrong),
        cache.path(),
        &Catalog::builtin(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::Fetch { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains(&wrong) && msg.contains(&sha(BODY)), "{msg}");
    assert!(
        entries(cache.path()).is_empty(),
        "temporary file left: {:?}",
        entries(cache.path())
    );
}

#[test]
fn a_404_is_a_clear_error() {
    let base = serve();
    let cache = tempfile::tempdir().unwrap();
    let err = fetch_url(
        &format!("{base}/missing.csv"),
        &cache.path().join("missing.csv"),
        &sha(BODY),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("missing.csv") && err.contains("HTTP 404"),
        "{err}"
    );
    assert!(entries(cache.path()).is_empty());
}

#[test]
fn a_refused_connection_is_a_clear_error() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cache = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/data.csv");
    let err = fetch_url(&url, &cache.path().join("data.csv"), &sha(BODY)).unwrap_err();
    assert!(matches!(err, Error::Fetch { .. }), "{err}");
    assert!(err.to_string().contains(&url), "{err}");
    assert!(!cache.path().join("data.csv").exists());
}

#[test]
fn bad_requests_are_refused_before_any_download() {
    let cache = tempfile::tempdir().unwrap();
    let catalog = Catalog::builtin();
    let no_sum = fetch("http://127.0.0.1:9/x.csv", None, cache.path(), &catalog)
        .unwrap_err()
        .to_string();
    assert!(no_sum.contains("--sha256"), "{no_sum}");
    let bad_sum = fetch(
        "http://127.0.0.1:9/x.csv",
        Some("abc"),
        cache.path(),
        &catalog,
    )
    .unwrap_err()
    .to_string();
    assert!(bad_sum.contains("64 hex digits"), "{bad_sum}");
    let shipped = fetch("adult", None, cache.path(), &catalog)
        .unwrap_err()
        .to_string();
    assert!(
        shipped.contains("ship") && shipped.contains("datasets/"),
        "{shipped}"
    );
    let unknown = fetch("nonsense", None, cache.path(), &catalog)
        .unwrap_err()
        .to_string();
    assert!(
        unknown.contains("not a URL") && unknown.contains("xwindows"),
        "{unknown}"
    );
}

#[test]
fn a_catalog_dataset_with_urls_fetches_each_file_against_its_checksum() {
    let base = serve();
    let cache = tempfile::tempdir().unwrap();
    let def: epsilab::data::DatasetDef = toml::from_str(&format!(
        "source = \"csv\"\ntrain = \"mine/data.csv\"\ntrain_fraction = 0.5\nlabel = \"y\"\n\
         bounds = [0, 3]\nclasses = [{{ label = 0, name = \"a\" }}, {{ label = 1, name = \"b\" }}]\n\
         sha256 = {{ \"mine/data.csv\" = \"{}\" }}\n\
         urls = {{ \"mine/data.csv\" = \"{base}/data.csv\" }}\n",
        sha(BODY)
    ))
    .unwrap();
    let mut catalog = Catalog::builtin();
    catalog.insert("mine", def, None);
    let got = fetch("mine", None, cache.path(), &catalog).unwrap();
    assert_eq!(got[0].path, cache.path().join("mine/data.csv"));
    // The fetched file is then found through the data directory like a shipped one.
    let ds = catalog
        .load("mine", &epsilab::data::DataDir(cache.path().into()))
        .unwrap();
    assert_eq!(ds.n_rows(), 4);
}
