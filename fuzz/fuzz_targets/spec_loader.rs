//! Any text given as a spec: an error or a spec, never a panic. Inline file-backed datasets are
//! loaded too (they fail cleanly on missing files); synthetic ones are not generated, since
//! their size is the user's to choose and generating them only measures memory.
#![no_main]

use epsilab::data::{DataDir, DatasetDef};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(spec) = epsilab::spec::Spec::parse(text, Path::new("fuzz.toml")) {
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
});
