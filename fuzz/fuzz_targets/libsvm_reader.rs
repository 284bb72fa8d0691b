//! Any bytes as a LIBSVM file, read as binary and as real-valued: an error naming a line, or
//! rows of the declared dimension, never a panic.
#![no_main]

// The body lives in the library (epsilab::fuzzing) so that `cargo test` replays the corpus
// through the same code (tests/fuzz_corpus.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| epsilab::fuzzing::libsvm_reader(data));
