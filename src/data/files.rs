//! Reading dataset files: plain or gzip-compressed, found in the data directory.
//!
//! A catalog path `a9a/a9a` is read from `a9a/a9a` if that exists, else from `a9a/a9a.gz`
//! (decompressed in memory). Checksums are always of the decompressed bytes, so a file verifies
//! the same whether it is stored compressed or not.

use flate2::read::MultiGzDecoder;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Suffix of a compressed dataset file.
pub const GZ: &str = "gz";

/// The file holding `path`'s content: `path` itself, else `path.gz`; `None` when neither exists.
pub fn locate(path: &Path) -> Option<PathBuf> {
    if path.is_file() {
        return Some(path.to_path_buf());
    }
    let gz = gz_path(path);
    gz.is_file().then_some(gz)
}

/// `path` with `.gz` appended.
pub fn gz_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".");
    s.push(GZ);
    PathBuf::from(s)
}

/// Reads a file, decompressing it when its name ends in `.gz`.
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let bytes = std::fs::read(path)?;
    if path.extension().is_some_and(|e| e == GZ) {
        let mut out = Vec::with_capacity(bytes.len() * 8);
        MultiGzDecoder::new(bytes.as_slice())
            .read_to_end(&mut out)
            .map_err(|e| std::io::Error::new(e.kind(), format!("not a valid gzip file ({e})")))?;
        Ok(out)
    } else {
        Ok(bytes)
    }
}

/// Lower-case hex SHA-256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    super::catalog::hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;

    #[test]
    fn a_gz_file_is_found_and_read_as_its_content() {
        let dir = tempfile::tempdir().unwrap();
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(b"1 1:1\n").unwrap();
        std::fs::write(dir.path().join("d.libsvm.gz"), enc.finish().unwrap()).unwrap();
        let found = locate(&dir.path().join("d.libsvm")).unwrap();
        assert_eq!(found, dir.path().join("d.libsvm.gz"));
        assert_eq!(read(&found).unwrap(), b"1 1:1\n");
        assert!(locate(&dir.path().join("other")).is_none());
    }

    #[test]
    fn a_corrupt_gz_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.gz");
        std::fs::write(&p, b"not gzip at all").unwrap();
        assert!(read(&p).unwrap_err().to_string().contains("gzip"));
    }
}
