//! Reader for the LIBSVM / SVMlight sparse text format with binary values.
//!
//! `<label> <idx>:<value> ...`, indices from 1 and strictly increasing, tokens separated by any
//! whitespace (the published LIBSVM files have a trailing space). The dimension comes from the
//! caller, never from the largest index seen (a9a.t never uses its last index).

use super::BinaryMatrix;
use crate::error::{Error, Result};
use std::path::Path;

/// A parsed file: integer labels as written (`+1` reads as 1) and the binary features.
#[derive(Debug, Clone, PartialEq)]
pub struct LibsvmData {
    pub labels: Vec<i64>,
    pub features: BinaryMatrix,
}

/// Reads and parses a file.
pub fn read(path: &Path, dimension: usize) -> Result<LibsvmData> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse(&bytes, path, dimension)
}

/// Parses file contents; `path` only names the source in errors.
pub fn parse(bytes: &[u8], path: &Path, dimension: usize) -> Result<LibsvmData> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::Parse {
        path: path.into(),
        line: 1 + bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count(),
        reason: "not UTF-8 text".into(),
    })?;
    let mut labels = Vec::new();
    let mut features = BinaryMatrix::new(dimension);
    let mut ones: Vec<u32> = Vec::new();
    for (lineno, line) in text.lines().enumerate() {
        let fail = |reason: String| Error::Parse {
            path: path.into(),
            line: lineno + 1,
            reason,
        };
        let mut tokens = line.split_whitespace();
        let Some(label) = tokens.next() else {
            continue;
        };
        labels.push(parse_label(label).ok_or_else(|| fail(format!("bad label `{label}`")))?);
        ones.clear();
        let mut last = 0usize;
        for tok in tokens {
            let (idx, val) = tok
                .split_once(':')
                .ok_or_else(|| fail(format!("expected `index:value`, found `{tok}`")))?;
            let idx: usize = idx
                .parse()
                .map_err(|_| fail(format!("bad feature index in `{tok}`")))?;
            if idx == 0 || idx > dimension {
                return Err(fail(format!(
                    "feature index {idx} outside 1..={dimension} in `{tok}`"
                )));
            }
            if idx <= last {
                return Err(fail(format!(
                    "feature indices must increase along the line: {idx} after {last}"
                )));
            }
            last = idx;
            let val: f64 = val
                .parse()
                .map_err(|_| fail(format!("bad feature value in `{tok}`")))?;
            if val == 1.0 {
                ones.push((idx - 1) as u32);
            } else if val != 0.0 {
                return Err(fail(format!(
                    "feature value {val} in `{tok}` is not binary (0 or 1)"
                )));
            }
        }
        features.push_row(&ones);
    }
    Ok(LibsvmData { labels, features })
}

fn parse_label(s: &str) -> Option<i64> {
    let v: f64 = s.parse().ok()?;
    (v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15).then_some(v as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<LibsvmData> {
        parse(s.as_bytes(), Path::new("t.libsvm"), 4)
    }

    #[test]
    fn parses_trailing_spaces_signs_and_empty_rows() {
        let d = p("+1 1:1 3:1 \n-1 \n2 2:1 4:1\n").unwrap();
        assert_eq!(d.labels, vec![1, -1, 2]);
        assert_eq!(d.features.row(0), &[0, 2]);
        assert_eq!(d.features.row(1), &[] as &[u32]);
        assert_eq!(d.features.row(2), &[1, 3]);
        assert_eq!(d.features.n_cols(), 4);
    }

    #[test]
    fn explicit_zero_is_absent() {
        assert_eq!(p("1 4:0\n").unwrap().features.row(0), &[] as &[u32]);
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        for (text, needle) in [
            ("1 1:1\nx 1:1\n", "bad label"),
            ("1 1:1\n1 11\n", "index:value"),
            ("1 1:1\n1 0:1\n", "outside"),
            ("1 1:1\n1 5:1\n", "outside"),
            ("1 1:1\n1 3:1 2:1\n", "increase"),
            ("1 1:1\n1 2:1 2:1\n", "increase"),
            ("1 1:1\n1 2:0.5\n", "not binary"),
            ("1 1:1\n1 2:abc\n", "bad feature value"),
            ("1 1:1\n1.5 2:1\n", "bad label"),
        ] {
            let err = p(text).unwrap_err().to_string();
            assert!(err.starts_with("t.libsvm:2:"), "{err}");
            assert!(err.contains(needle), "{err} should mention {needle}");
        }
    }

    #[test]
    fn non_utf8_is_an_error() {
        let err = parse(b"1 1:1\n\xff\n", Path::new("b"), 2).unwrap_err();
        assert!(err.to_string().starts_with("b:2:"), "{err}");
    }
}
