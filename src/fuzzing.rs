//! The bodies of the fuzz targets (`fuzz/fuzz_targets/`), here so that cargo-fuzz and the
//! corpus replay test (`tests/fuzz_corpus.rs`, run by `cargo test`) call the same code: every
//! input kept in `fuzz/corpus/` is replayed in CI without cargo-fuzz or a nightly toolchain.
//! Each function panics only where the property it checks fails.

use crate::data::catalog::Column;
use crate::data::csv_source::{CsvLayout, parse as parse_csv};
use crate::data::libsvm::{RawFeatures, parse as parse_libsvm};
use crate::data::{DataDir, DatasetDef};
use std::path::Path;

/// Any bytes as a CSV file (label by name and by number, binary and real): an error naming a
/// line, or one label per row, never a panic.
pub fn csv_reader(data: &[u8]) {
    let by_name = Column::Name("y".into());
    let by_number = Column::Number(1);
    let picked = [Column::Number(2), Column::Name("b".into())];
    for (label, features, header) in [
        (&by_name, None, true),
        (&by_number, None, false),
        (&by_number, Some(&picked[..]), true),
    ] {
        for real in [false, true] {
            let layout = CsvLayout {
                label,
                features,
                header,
                delimiter: b',',
                delimiter_field: true,
                real,
            };
            if let Ok(d) = parse_csv(data, Path::new("fuzz.csv"), &layout) {
                assert_eq!(d.labels.len(), d.features.n_rows());
                if let RawFeatures::Real { dimension, values } = &d.features {
                    assert_eq!(*dimension, d.feature_names.len());
                    assert!(values.iter().all(|v| v.is_finite()));
                }
            }
        }
    }
}

/// Any bytes as a LIBSVM file, read as binary and as real-valued: an error naming a line, or
/// rows of the declared dimension, never a panic.
pub fn libsvm_reader(data: &[u8]) {
    for real in [false, true] {
        if let Ok(d) = parse_libsvm(data, Path::new("fuzz.libsvm"), 8, real) {
            assert_eq!(d.labels.len(), d.features.n_rows());
            if let RawFeatures::Real { values, .. } = &d.features {
                assert!(values.iter().all(|v| v.is_finite()));
            }
        }
    }
}

/// Any text given as a spec: an error or a spec, never a panic. Inline file-backed datasets are
/// loaded too (they fail cleanly on missing files); synthetic ones are not generated, since
/// their size is the user's to choose and generating them only measures memory.
pub fn spec_loader(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(spec) = crate::spec::Spec::parse(text, Path::new("fuzz.toml")) {
        let dir = DataDir("/nonexistent-epsilab-fuzz".into());
        for name in &spec.experiment.datasets {
            if matches!(
                spec.catalog.get(name),
                Some(DatasetDef::Libsvm(_) | DatasetDef::Csv(_))
            ) {
                let _ = spec.catalog.load(name, &dir);
            }
        }
    }
}

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// The targets by name (the names of `fuzz/fuzz_targets/` and `fuzz/corpus/`).
pub const TARGETS: [(&str, Target); 3] = [
    ("csv_reader", csv_reader),
    ("libsvm_reader", libsvm_reader),
    ("spec_loader", spec_loader),
];
