//! Reader for the LIBSVM / SVMlight sparse text format, binary or real-valued.
//!
//! `<label> <idx>:<value> ...`, indices from 1 and strictly increasing, tokens separated by any
//! whitespace (the published LIBSVM files have a trailing space). The dimension comes from the
//! caller, never from the largest index seen (a9a.t never uses its last index).
//!
//! Binary files (every value 0 or 1) are stored sparsely. Real values are read only when the
//! dataset declares public bounds (`real = true`): without them a value other than 0/1 is an
//! error, so a real-valued file never reaches a learner that needs binary features by accident.

use super::BinaryMatrix;
use crate::error::{Error, Result};
use std::path::Path;

/// A parsed file: integer labels as written (`+1` reads as 1) and the features.
#[derive(Debug, Clone, PartialEq)]
pub struct LibsvmData {
    pub labels: Vec<i64>,
    pub features: RawFeatures,
}

/// Features as read from a file, before classes are mapped and bounds applied.
#[derive(Debug, Clone, PartialEq)]
pub enum RawFeatures {
    Binary(BinaryMatrix),
    /// Row-major values, `dimension` per row (absent LIBSVM entries are 0).
    Real {
        dimension: usize,
        values: Vec<f64>,
    },
}

impl RawFeatures {
    pub fn n_rows(&self) -> usize {
        match self {
            RawFeatures::Binary(m) => m.n_rows(),
            RawFeatures::Real { dimension, values } => {
                values.len().checked_div(*dimension).unwrap_or(0)
            }
        }
    }
}

/// Reads and parses a file (plain or `.gz`).
pub fn read(path: &Path, dimension: usize, real: bool) -> Result<LibsvmData> {
    let bytes = super::files::read(path).map_err(|e| Error::io(path, e))?;
    parse(&bytes, path, dimension, real)
}

/// Parses file contents; `path` only names the source in errors. `real` reads any finite value
/// (dense rows); otherwise values must be 0 or 1 (sparse rows).
pub fn parse(bytes: &[u8], path: &Path, dimension: usize, real: bool) -> Result<LibsvmData> {
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
    let mut values: Vec<f64> = Vec::new();
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
        if real {
            values.resize(values.len() + dimension, 0.0);
        }
        let row_start = values.len().saturating_sub(dimension);
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
            if !val.is_finite() {
                return Err(fail(format!("feature value in `{tok}` is not finite")));
            }
            if real {
                values[row_start + idx - 1] = val;
            } else if val == 1.0 {
                ones.push((idx - 1) as u32);
            } else if val != 0.0 {
                return Err(fail(format!(
                    "feature value {val} in `{tok}` is not binary (0 or 1); declare public \
                     `bounds` for the dataset to read real-valued features"
                )));
            }
        }
        if !real {
            features.push_row(&ones);
        }
    }
    let features = if real {
        RawFeatures::Real { dimension, values }
    } else {
        RawFeatures::Binary(features)
    };
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
        parse(s.as_bytes(), Path::new("t.libsvm"), 4, false)
    }

    fn binary(d: LibsvmData) -> BinaryMatrix {
        match d.features {
            RawFeatures::Binary(m) => m,
            RawFeatures::Real { .. } => panic!("expected binary rows"),
        }
    }

    #[test]
    fn real_values_are_read_densely_when_asked() {
        let d = parse(b"1 1:0.5 4:-2e3\n-1\n1 2:7\n", Path::new("r"), 4, true).unwrap();
        assert_eq!(d.labels, vec![1, -1, 1]);
        assert_eq!(d.features.n_rows(), 3);
        let RawFeatures::Real { dimension, values } = d.features else {
            panic!("expected real rows")
        };
        assert_eq!(dimension, 4);
        assert_eq!(
            values,
            vec![
                0.5, 0.0, 0.0, -2000.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0, 0.0, 0.0
            ]
        );
    }

    #[test]
    fn non_finite_values_are_refused_even_when_real() {
        for v in ["nan", "inf", "-inf"] {
            let text = format!("1 1:1\n1 2:{v}\n");
            let err = parse(text.as_bytes(), Path::new("r"), 4, true).unwrap_err();
            assert!(err.to_string().starts_with("r:2:"), "{err}");
            assert!(err.to_string().contains("not finite"), "{err}");
        }
    }

    #[test]
    fn parses_trailing_spaces_signs_and_empty_rows() {
        let d = p("+1 1:1 3:1 \n-1 \n2 2:1 4:1\n").unwrap();
        assert_eq!(d.labels, vec![1, -1, 2]);
        let m = binary(d);
        assert_eq!(m.row(0), &[0, 2]);
        assert_eq!(m.row(1), &[] as &[u32]);
        assert_eq!(m.row(2), &[1, 3]);
        assert_eq!(m.n_cols(), 4);
    }

    #[test]
    fn explicit_zero_is_absent() {
        assert_eq!(binary(p("1 4:0\n").unwrap()).row(0), &[] as &[u32]);
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
        let err = parse(b"1 1:1\n\xff\n", Path::new("b"), 2, false).unwrap_err();
        assert!(err.to_string().starts_with("b:2:"), "{err}");
    }
}
