//! Any text given as a spec: an error or a spec, never a panic. Inline datasets are loaded too
//! (synthetic ones are generated; file-backed ones fail cleanly on missing files).
#![no_main]

use epsilab::data::DataDir;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(spec) = epsilab::spec::Spec::parse(text, Path::new("fuzz.toml")) {
        let dir = DataDir("/nonexistent-epsilab-fuzz".into());
        for name in &spec.experiment.datasets {
            let _ = spec.catalog.load(name, &dir);
        }
    }
});
