//! `epsilab data fetch`: download a dataset file into a cache folder, verified by SHA-256.
//!
//! The body is streamed into a temporary file beside the target while it is hashed; only a file
//! whose checksum matches is renamed (atomically) to its final name, so the cache never holds
//! a partial or wrong file under a dataset's name.

use super::catalog::{Catalog, DatasetDef};
use super::files;
use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Environment variable overriding the cache folder.
pub const CACHE_ENV: &str = "EPSILAB_CACHE";

/// Default cache folder: `$EPSILAB_CACHE`, else `$XDG_CACHE_HOME/epsilab`, else
/// `$HOME/.cache/epsilab`.
pub fn default_cache() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var(CACHE_ENV)
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("epsilab")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("epsilab")))
}

/// One file fetched (or found already cached with the right checksum).
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    pub url: String,
    pub path: PathBuf,
    pub bytes: u64,
    /// True when the file was already in the cache with the expected checksum.
    pub cached: bool,
}

/// Fetches `source`: a URL (needs `sha256`), or the name of a catalog dataset whose definition
/// lists `urls` (each file is checked against the catalog's own SHA-256).
pub fn fetch(
    source: &str,
    sha256: Option<&str>,
    cache: &Path,
    catalog: &Catalog,
) -> Result<Vec<Fetched>> {
    if source.contains("://") {
        let expected = sha256.ok_or_else(|| {
            Error::param(
                "--sha256",
                "a URL needs the SHA-256 of the file (compute it once with `sha256sum`)",
            )
        })?;
        let name = file_name_of(source)?;
        return Ok(vec![fetch_url(source, &cache.join(name), expected)?]);
    }
    let def = catalog.get(source).ok_or_else(|| Error::Data {
        dataset: source.into(),
        reason: format!(
            "not a URL and not a catalog dataset; known: {}",
            catalog.names().collect::<Vec<_>>().join(", ")
        ),
    })?;
    let (urls, sums) = match def {
        DatasetDef::Libsvm(d) => (&d.urls, &d.sha256),
        DatasetDef::Csv(d) => (&d.urls, &d.sha256),
        _ => {
            return Err(Error::Data {
                dataset: source.into(),
                reason: "is synthetic: it is generated, there is nothing to fetch".into(),
            });
        }
    };
    if urls.is_empty() {
        return Err(Error::Data {
            dataset: source.into(),
            reason: "has no download URL in the catalog: its files ship with epsilab in \
                     `datasets/` (see datasets/README.md). To fetch your own file, give its URL \
                     and checksum: epsilab data fetch URL --sha256 HEX"
                .into(),
        });
    }
    let mut out = Vec::new();
    for (rel, url) in urls {
        let expected = sums.get(rel).ok_or_else(|| Error::Data {
            dataset: source.into(),
            reason: format!("`urls` lists {rel} but `sha256` has no checksum for it"),
        })?;
        out.push(fetch_url(url, &cache.join(rel), expected)?);
    }
    Ok(out)
}

/// The last path segment of a URL (query and fragment removed).
fn file_name_of(url: &str) -> Result<String> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let after_host = path.split_once("://").map_or(path, |(_, r)| r);
    match after_host
        .split_once('/')
        .map(|(_, p)| p.rsplit('/').next().unwrap_or(""))
    {
        Some(n) if !n.is_empty() && n != "." && n != ".." => Ok(n.to_string()),
        _ => Err(Error::Fetch {
            url: url.into(),
            reason: "the URL does not end in a file name".into(),
        }),
    }
}

/// Copies `reader` into `tmp`, hashing as it goes: the SHA-256 (hex) and the byte count.
fn download(
    mut reader: impl Read,
    tmp: &tempfile::NamedTempFile,
    fail: &dyn Fn(String) -> Error,
) -> Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut writer = std::io::BufWriter::new(tmp.as_file());
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| fail(format!("download interrupted after {total} bytes: {e}")))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        writer
            .write_all(&buf[..n])
            .map_err(|e| Error::io(tmp.path(), e))?;
        total += n as u64;
    }
    writer.flush().map_err(|e| Error::io(tmp.path(), e))?;
    Ok((super::catalog::hex(&hasher.finalize()), total))
}

/// Downloads `url` to `target` unless it is already there with checksum `expected`.
pub fn fetch_url(url: &str, target: &Path, expected: &str) -> Result<Fetched> {
    let expected = expected.trim().to_ascii_lowercase();
    if expected.len() != 64 || !expected.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::param(
            "--sha256",
            format!("`{expected}` is not a SHA-256 (64 hex digits)"),
        ));
    }
    if target.is_file() {
        let bytes = std::fs::read(target).map_err(|e| Error::io(target, e))?;
        if files::sha256_hex(&bytes) == expected {
            return Ok(Fetched {
                url: url.into(),
                path: target.into(),
                bytes: bytes.len() as u64,
                cached: true,
            });
        }
    }
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let fail = |reason: String| Error::Fetch {
        url: url.into(),
        reason,
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_body(Some(Duration::from_secs(120)))
        .build()
        .into();
    let mut response = agent.get(url).call().map_err(|e| {
        fail(match e {
            ureq::Error::StatusCode(code) => format!("the server answered HTTP {code}"),
            e => e.to_string(),
        })
    })?;
    let tmp = tempfile::Builder::new()
        .prefix(".fetch-")
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    let (actual, total) = download(response.body_mut().as_reader(), &tmp, &fail)?;
    if actual != expected {
        // Dropping `tmp` deletes the partial file.
        return Err(fail(format!(
            "checksum mismatch: expected SHA-256 {expected}, got {actual} ({total} bytes); \
             nothing was written to {}",
            target.display()
        )));
    }
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io(tmp.path(), e))?;
    tmp.persist(target)
        .map_err(|e| Error::io(target, e.error))?;
    // The temporary file was created 0600; a cached dataset is an ordinary shared file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o644))
            .map_err(|e| Error::io(target, e))?;
    }
    Ok(Fetched {
        url: url.into(),
        path: target.into(),
        bytes: total,
        cached: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_come_from_the_url_path() {
        assert_eq!(
            file_name_of("http://h:1/a/b/data.csv?x=1").unwrap(),
            "data.csv"
        );
        assert!(file_name_of("http://h:1/").is_err());
        assert!(file_name_of("http://h:1").is_err());
    }
}
