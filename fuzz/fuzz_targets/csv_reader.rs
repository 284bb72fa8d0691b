//! Any bytes as a CSV file (label by name and by number, binary and real): an error naming a
//! line, or one label per row, never a panic.
#![no_main]

use epsilab::data::catalog::Column;
use epsilab::data::csv_source::{CsvLayout, parse};
use epsilab::data::libsvm::RawFeatures;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
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
                real,
            };
            if let Ok(d) = parse(data, Path::new("fuzz.csv"), &layout) {
                assert_eq!(d.labels.len(), d.features.n_rows());
                if let RawFeatures::Real { dimension, values } = &d.features {
                    assert_eq!(*dimension, d.feature_names.len());
                    assert!(values.iter().all(|v| v.is_finite()));
                }
            }
        }
    }
});
