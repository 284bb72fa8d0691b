//! Deterministic, independent random streams.
//!
//! A seed is the SHA-256 of length-prefixed parts (never `std::hash`, whose output may change
//! between Rust versions), so a trial's randomness depends only on *what* it is — spec seed,
//! dataset, pipeline, grid point, trial index — and not on thread scheduling. Within a trial every
//! mechanism call asks [`Streams::stream`] for a fresh, labelled stream; asking twice for the same
//! label yields two different streams, so no stream is ever reused.

use rand::SeedableRng;
use rand_pcg::Pcg64;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The random number generator used everywhere (PCG-XSL-RR 128/64).
pub type Rng = Pcg64;

/// SHA-256 of the length-prefixed parts: distinct part lists never collide by concatenation.
pub fn digest(parts: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    h.finalize().into()
}

/// A 64-bit seed derived from the parts (the first eight bytes of [`digest`]).
pub fn derive_seed(parts: &[&str]) -> u64 {
    let d = digest(parts);
    u64::from_le_bytes(d[..8].try_into().expect("eight bytes"))
}

/// An RNG seeded with the full 256-bit digest of the parts (state and stream increment).
pub fn rng_from(parts: &[&str]) -> Rng {
    Pcg64::from_seed(digest(parts))
}

/// Hands out independent labelled streams for one trial.
#[derive(Debug, Clone)]
pub struct Streams {
    seed: u64,
    issued: BTreeMap<String, u32>,
}

impl Streams {
    pub fn new(seed: u64) -> Self {
        Streams {
            seed,
            issued: BTreeMap::new(),
        }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// A new stream for one mechanism call; the n-th request for a label gets the n-th stream.
    pub fn stream(&mut self, label: &str) -> Rng {
        let n = self.issued.entry(label.to_string()).or_insert(0);
        let rng = rng_from(&[&self.seed.to_string(), label, &n.to_string()]);
        *n += 1;
        rng
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng as _;

    #[test]
    fn seeds_are_stable_across_releases() {
        // Pinned value: changing the derivation silently changes every published result.
        assert_eq!(
            derive_seed(&["42", "xwindows"]),
            derive_seed(&["42", "xwindows"])
        );
        assert_ne!(derive_seed(&["4", "2x"]), derive_seed(&["42", "x"]));
        assert_eq!(derive_seed(&[]), 0x141c_fc98_42c4_b0e3);
    }

    #[test]
    fn repeated_labels_get_fresh_streams() {
        let mut s = Streams::new(7);
        let a: u64 = s.stream("laplace").r#gen();
        let b: u64 = s.stream("laplace").r#gen();
        let mut t = Streams::new(7);
        let a2: u64 = t.stream("laplace").r#gen();
        assert_ne!(a, b);
        assert_eq!(a, a2);
    }
}
