//! Any bytes as a LIBSVM file, read as binary and as real-valued: an error naming a line, or
//! rows of the declared dimension, never a panic.
#![no_main]

use epsilab::data::libsvm::{RawFeatures, parse};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    for real in [false, true] {
        if let Ok(d) = parse(data, Path::new("fuzz.libsvm"), 8, real) {
            assert_eq!(d.labels.len(), d.features.n_rows());
            if let RawFeatures::Real { values, .. } = &d.features {
                assert!(values.iter().all(|v| v.is_finite()));
            }
        }
    }
});
