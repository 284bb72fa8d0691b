//! Reader for users' CSV datasets: one label column and numeric feature columns.
//!
//! Values must be 0/1 unless the dataset declares public `bounds` (`real = true`), like LIBSVM
//! files. Every error names the file, line and column.

use super::libsvm::RawFeatures;
use super::{BinaryMatrix, catalog::Column};
use crate::error::{Error, Result};
use std::path::Path;

/// A parsed CSV file: the label cell of each row (trimmed) and the chosen feature columns.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvData {
    pub labels: Vec<String>,
    pub features: RawFeatures,
    /// Names of the feature columns (from the header, else `column N`).
    pub feature_names: Vec<String>,
}

/// How to read the columns.
#[derive(Debug, Clone, Copy)]
pub struct CsvLayout<'a> {
    pub label: &'a Column,
    /// Feature columns in order; `None` = every column but the label.
    pub features: Option<&'a [Column]>,
    pub header: bool,
    pub delimiter: u8,
    /// Whether `delimiter` is the dataset's `delimiter` field (a `csv` source; a `csv_column`
    /// file is read with commas).
    pub delimiter_field: bool,
    pub real: bool,
}

/// Parses file contents; `path` only names the source in errors.
pub fn parse(bytes: &[u8], path: &Path, layout: &CsvLayout) -> Result<CsvData> {
    let fail = |line: usize, reason: String| Error::Parse {
        path: path.into(),
        line,
        reason,
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(layout.delimiter)
        .flexible(false)
        .from_reader(bytes);
    let mut records = reader.byte_records();
    let mut record = csv::ByteRecord::new();
    let mut next = |record: &mut csv::ByteRecord| -> Result<Option<usize>> {
        match records.next() {
            None => Ok(None),
            Some(Ok(r)) => {
                let line = r.position().map_or(0, |p| p.line() as usize);
                *record = r;
                Ok(Some(line))
            }
            Some(Err(e)) => {
                let line = e.position().map_or(0, |p| p.line() as usize);
                Err(fail(line, format!("malformed CSV: {}", csv_reason(&e))))
            }
        }
    };
    let Some(first_line) = next(&mut record)? else {
        return Err(fail(1, "empty file: no header and no rows".into()));
    };
    let width = record.len();
    if width == 1 {
        return Err(fail(first_line, one_column(&record[0], layout)));
    }
    let header: Option<Vec<String>> = layout.header.then(|| {
        record
            .iter()
            .map(|c| String::from_utf8_lossy(c).trim().to_string())
            .collect()
    });
    let (label_col, cols, feature_names) = columns(layout, header.as_deref(), width, |reason| {
        fail(first_line, reason)
    })?;

    let mut rows = Rows {
        layout,
        cols: &cols,
        label_col,
        header: header.as_deref(),
        labels: Vec::new(),
        values: Vec::new(),
        binary: BinaryMatrix::new(cols.len()),
        ones: Vec::with_capacity(cols.len()),
    };
    let mut pending = (!layout.header).then_some(first_line);
    loop {
        let line = match pending.take() {
            Some(l) => l,
            None => match next(&mut record)? {
                Some(l) => l,
                None => break,
            },
        };
        if record.len() == 1 && record[0].iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        rows.push(&record, line)
            .map_err(|reason| fail(line, reason))?;
    }
    let (labels, features) = rows.finish();
    Ok(CsvData {
        labels,
        features,
        feature_names,
    })
}

/// The rows read so far, and how to read one.
struct Rows<'a> {
    layout: &'a CsvLayout<'a>,
    cols: &'a [usize],
    label_col: usize,
    header: Option<&'a [String]>,
    labels: Vec<String>,
    values: Vec<f64>,
    binary: BinaryMatrix,
    /// The current row's on-features (binary data).
    ones: Vec<u32>,
}

impl Rows<'_> {
    /// Reads the row `record` on line `line`, or says why it cannot.
    fn push(&mut self, record: &csv::ByteRecord, line: usize) -> std::result::Result<(), String> {
        let cell = |c: usize| -> std::result::Result<&str, String> {
            std::str::from_utf8(&record[c])
                .map(str::trim)
                .map_err(|_| format!("column {}: not UTF-8 text", c + 1))
        };
        self.labels.push(cell(self.label_col)?.to_string());
        self.ones.clear();
        for (j, &c) in self.cols.iter().enumerate() {
            let text = cell(c)?;
            let name = || match self.header {
                Some(h) => format!("column {} (`{}`)", c + 1, h[c]),
                None => format!("column {}", c + 1),
            };
            // A header read as data: `csv_column` reads no header unless told (`csv` does).
            let hint = match (line, self.header) {
                (1, None) => " (if the first line names the columns, set `header = true`)",
                _ => "",
            };
            let v: f64 = text
                .parse()
                .map_err(|_| format!("{}: `{text}` is not a number{hint}", name()))?;
            if !v.is_finite() {
                return Err(format!("{}: `{text}` is not finite", name()));
            }
            if self.layout.real {
                self.values.push(v);
            } else if v == 1.0 {
                self.ones.push(j as u32);
            } else if v != 0.0 {
                return Err(format!(
                    "{}: value {v} is not binary (0 or 1); declare public `bounds` for the \
                     dataset to read real-valued features",
                    name()
                ));
            }
        }
        if !self.layout.real {
            self.binary.push_row(&self.ones);
        }
        Ok(())
    }

    /// The labels and features read.
    fn finish(self) -> (Vec<String>, RawFeatures) {
        let features = if self.layout.real {
            let dimension = self.cols.len();
            RawFeatures::Real {
                dimension,
                values: self.values,
            }
        } else {
            RawFeatures::Binary(self.binary)
        };
        (self.labels, features)
    }
}

/// Why a first line of one field cannot be read: the label and a feature need two columns, so
/// the file is most likely split by another delimiter than the one used (a label "not in the
/// header" would blame the wrong thing).
fn one_column(field: &[u8], layout: &CsvLayout) -> String {
    let shown = |d: u8| match d {
        b'\t' => "\\t".to_string(),
        d => (d as char).to_string(),
    };
    let mut text = format!(
        "the first line has only one column when split at the delimiter `{}`, but a label \
         and a feature need two",
        shown(layout.delimiter)
    );
    if layout.delimiter_field {
        text += ": check the dataset's `delimiter` (default \",\")";
    }
    let seen = [b',', b';', b'\t', b'|']
        .into_iter()
        .find(|&d| d != layout.delimiter && field.contains(&d));
    if let Some(d) = seen {
        text += &format!(
            "; the line holds `{}`: is the file `{}`-separated?",
            shown(d),
            shown(d)
        );
    }
    text
}

/// The label column, the feature columns and their names, resolved against the first line
/// (`width` fields, `header` if the file has one); `fail` makes an error at that line.
fn columns(
    layout: &CsvLayout,
    header: Option<&[String]>,
    width: usize,
    fail: impl Fn(String) -> Error,
) -> Result<(usize, Vec<usize>, Vec<String>)> {
    let resolve = |c: &Column, what: &str| -> Result<usize> {
        match c {
            Column::Number(n) if *n >= 1 && *n <= width => Ok(n - 1),
            Column::Number(n) => Err(fail(format!("{what} column {n} is outside 1..={width}"))),
            Column::Name(name) => match header {
                Some(h) => h.iter().position(|x| x == name).ok_or_else(|| {
                    fail(format!(
                        "{what} column `{name}` is not in the header ({})",
                        h.join(", ")
                    ))
                }),
                None => Err(fail(format!(
                    "{what} column `{name}` given by name but the file has no header (header = false)"
                ))),
            },
        }
    };
    let label_col = resolve(layout.label, "label")?;
    let cols: Vec<usize> = match layout.features {
        Some(f) => f
            .iter()
            .map(|c| resolve(c, "feature"))
            .collect::<Result<_>>()?,
        None => (0..width).filter(|&c| c != label_col).collect(),
    };
    if cols.is_empty() {
        return Err(fail("no feature columns".into()));
    }
    // Named and numbered entries can name one column twice (`"age"` and 1): it would be one
    // feature counted twice.
    if let Some((i, j)) =
        (0..cols.len()).find_map(|i| Some((i, cols[..i].iter().position(|&c| c == cols[i])?)))
    {
        return Err(fail(format!(
            "`features` lists column {} twice (entries {} and {})",
            cols[i] + 1,
            j + 1,
            i + 1
        )));
    }
    if cols.contains(&label_col) {
        return Err(fail("the label column is also a feature column".into()));
    }
    let feature_names = cols
        .iter()
        .map(|&c| match header {
            Some(h) => h[c].clone(),
            None => format!("column {}", c + 1),
        })
        .collect();
    Ok((label_col, cols, feature_names))
}

fn csv_reason(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("{len} fields where earlier rows have {expected_len}"),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout<'a>(label: &'a Column, real: bool) -> CsvLayout<'a> {
        CsvLayout {
            label,
            features: None,
            header: true,
            delimiter: b',',
            delimiter_field: true,
            real,
        }
    }

    #[test]
    fn reads_a_header_named_label_and_real_features() {
        let label = Column::Name("y".into());
        let d = parse(
            b"a,y,b\n0.5,yes,2\n-1,no,3e2\n",
            Path::new("t.csv"),
            &layout(&label, true),
        )
        .unwrap();
        assert_eq!(d.labels, vec!["yes", "no"]);
        assert_eq!(d.feature_names, vec!["a", "b"]);
        assert_eq!(
            d.features,
            RawFeatures::Real {
                dimension: 2,
                values: vec![0.5, 2.0, -1.0, 300.0]
            }
        );
    }

    #[test]
    fn binary_without_bounds_and_numbered_columns_without_header() {
        let label = Column::Number(3);
        let mut l = layout(&label, false);
        l.header = false;
        let d = parse(b"1,0,a\n0,1,b\n", Path::new("t.csv"), &l).unwrap();
        assert_eq!(d.labels, vec!["a", "b"]);
        let RawFeatures::Binary(m) = d.features else {
            panic!("binary expected")
        };
        assert_eq!(m.row(0), &[0]);
        assert_eq!(m.row(1), &[1]);
    }

    #[test]
    fn bad_cells_name_file_line_and_column() {
        let label = Column::Name("y".into());
        for (text, real, needle) in [
            (
                "a,y\n1,p\nx,q\n",
                true,
                "t.csv:3: column 1 (`a`): `x` is not a number",
            ),
            (
                "a,y\n1,p\n0.5,q\n",
                false,
                "t.csv:3: column 1 (`a`): value 0.5 is not binary",
            ),
            (
                "a,y\n1,p\n1,q,3\n",
                true,
                "t.csv:3: malformed CSV: 3 fields",
            ),
            (
                "a,y\n1,p\nnan,q\n",
                true,
                "t.csv:3: column 1 (`a`): `nan` is not finite",
            ),
            ("", true, "t.csv:1: empty file"),
            (
                "a,b\n1,2\n",
                true,
                "label column `y` is not in the header (a, b)",
            ),
            (
                "a;y\n1;2\n",
                true,
                "t.csv:1: the first line has only one column when split at the delimiter `,`, \
                 but a label and a feature need two: check the dataset's `delimiter` (default \
                 \",\"); the line holds `;`: is the file `;`-separated?",
            ),
        ] {
            let err = parse(text.as_bytes(), Path::new("t.csv"), &layout(&label, real))
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{err} should contain {needle}");
        }
    }
}
