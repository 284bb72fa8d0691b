//! Any bytes as a CSV file (label by name and by number, binary and real): an error naming a
//! line, or one label per row, never a panic.
#![no_main]

// The body lives in the library (epsilab::fuzzing) so that `cargo test` replays the corpus
// through the same code (tests/fuzz_corpus.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| epsilab::fuzzing::csv_reader(data));
