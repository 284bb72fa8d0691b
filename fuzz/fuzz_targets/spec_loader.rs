//! Any text given as a spec: an error or a spec, never a panic. Inline file-backed datasets are
//! loaded too (they fail cleanly on missing files); synthetic ones are not generated, since
//! their size is the user's to choose and generating them only measures memory.
#![no_main]

// The body lives in the library (epsilab::fuzzing) so that `cargo test` replays the corpus
// through the same code (tests/fuzz_corpus.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| epsilab::fuzzing::spec_loader(data));
