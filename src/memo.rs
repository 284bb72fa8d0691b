//! No work done twice: results that do not depend on a trial's noise (preprocessed designs,
//! exact non-private minimisers) are computed once per [`Key`] and shared across the cells of
//! a run, across its trials (a fixed train/test split gives every trial the same design) and
//! across worker threads.
//!
//! A key is the SHA-256 of everything the result depends on: the content of the rows read
//! (not a pointer or a name, so two datasets with the same name never collide), the
//! preprocessing, labels, lambda, tolerance and solver. A computation is a pure function of its
//! key, so a cached result is bit for bit the one the cell would compute itself, whichever
//! thread or trial computed it first; trials record the keys they used (`shared` in
//! `trials.jsonl`), never whether they hit, which depends on scheduling.
//!
//! Each key holds a `OnceLock` in a `Mutex<BTreeMap>`: the map lock is held only to find or
//! insert the slot, and threads asking for a key while it is computed wait for that one
//! computation. Memory is bounded: a memo holding more than its byte budget is emptied (values
//! in use live on through their `Arc`), so a run stays within its datasets plus a constant.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

/// SHA-256 of what a shared result depends on.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key([u8; 32]);

impl fmt::Display for Key {
    /// The first 16 bytes in hex: what trials record.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in &self.0[..16] {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

/// Builds a [`Key`]: every part is written with its length or a fixed width, so different
/// inputs never concatenate to the same bytes.
#[derive(Clone)]
pub struct KeyBuilder(Sha256);

impl KeyBuilder {
    /// A key of kind `what` (e.g. "lr-design").
    pub fn new(what: &str) -> Self {
        KeyBuilder(Sha256::new()).str(what)
    }

    pub fn str(self, s: &str) -> Self {
        self.bytes(s.as_bytes())
    }

    pub fn bytes(mut self, b: &[u8]) -> Self {
        self.0.update((b.len() as u64).to_le_bytes());
        self.0.update(b);
        self
    }

    pub fn u64(mut self, v: u64) -> Self {
        self.0.update(v.to_le_bytes());
        self
    }

    /// By its bits: -0.0 and 0.0 differ, as they may in a computation.
    pub fn f64(self, v: f64) -> Self {
        self.u64(v.to_bits())
    }

    pub fn key(mut self, k: &Key) -> Self {
        self.0.update(k.0);
        self
    }

    pub fn u32s(mut self, v: &[u32]) -> Self {
        self.0.update((v.len() as u64).to_le_bytes());
        for x in v {
            self.0.update(x.to_le_bytes());
        }
        self
    }

    /// A sequence of u32 slices (e.g. the on-indices of a binary matrix's rows), each with its
    /// length; bytes go to the hash in 4 KiB blocks, so this runs at SHA-256's speed.
    pub fn u32_rows<'r>(self, rows: impl IntoIterator<Item = &'r [u32]>) -> Self {
        self.rows_in_blocks(rows, |n| (n as u32).to_le_bytes(), u32::to_le_bytes)
    }

    /// A sequence of f64 rows (e.g. a dense matrix's rows), each with its length, by their
    /// bits; in 4 KiB blocks like [`Self::u32_rows`].
    pub fn f64_rows<'r>(self, rows: impl IntoIterator<Item = &'r [f64]>) -> Self {
        self.rows_in_blocks(
            rows,
            |n| (n as u64).to_le_bytes(),
            |v| v.to_bits().to_le_bytes(),
        )
    }

    /// Each row's length then its values, `W` bytes each, through a 4 KiB buffer (the bytes
    /// hashed are those of one update per value), then the number of rows.
    fn rows_in_blocks<'r, T: Copy + 'r, const W: usize>(
        mut self,
        rows: impl IntoIterator<Item = &'r [T]>,
        len: fn(usize) -> [u8; W],
        bytes: fn(T) -> [u8; W],
    ) -> Self {
        let mut buf = [0u8; 4096];
        let mut used = 0;
        let mut put = |h: &mut Sha256, b: [u8; W]| {
            if used + W > buf.len() {
                h.update(&buf[..used]);
                used = 0;
            }
            buf[used..used + W].copy_from_slice(&b);
            used += W;
        };
        let mut count = 0u64;
        for row in rows {
            put(&mut self.0, len(row.len()));
            for &v in row {
                put(&mut self.0, bytes(v));
            }
            count += 1;
        }
        self.0.update(&buf[..used]);
        self.u64(count)
    }

    pub fn usizes(mut self, v: &[usize]) -> Self {
        self.0.update((v.len() as u64).to_le_bytes());
        for &x in v {
            self.0.update((x as u64).to_le_bytes());
        }
        self
    }

    pub fn f64s(mut self, v: &[f64]) -> Self {
        self.0.update((v.len() as u64).to_le_bytes());
        for x in v {
            self.0.update(x.to_bits().to_le_bytes());
        }
        self
    }

    pub fn finish(self) -> Key {
        Key(self.0.finalize().into())
    }
}

/// A value's approximate heap size, for the memo's budget.
pub trait Footprint {
    fn bytes(&self) -> usize;
}

type Slot<V> = Arc<OnceLock<Arc<V>>>;

/// A keyed, thread-safe store of results computed once per key (see the module doc).
pub struct Memo<V> {
    slots: Mutex<(BTreeMap<Key, Slot<V>>, usize)>,
    budget: usize,
}

impl<V: Footprint> Memo<V> {
    /// An empty memo emptied whenever it holds more than `budget` bytes.
    pub const fn new(budget: usize) -> Self {
        Memo {
            slots: Mutex::new((BTreeMap::new(), 0)),
            budget,
        }
    }

    /// The value of `key`, computing it with `compute` if no thread has (concurrent callers of
    /// one key wait for the first). `compute` must be a pure function of the key.
    pub fn get_or_compute(&self, key: Key, compute: impl FnOnce() -> V) -> Arc<V> {
        let slot = {
            let mut guard = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(guard.0.entry(key).or_default())
        };
        let mut fresh = None;
        let value = slot.get_or_init(|| {
            let v = Arc::new(compute());
            fresh = Some(v.bytes());
            v
        });
        if let Some(bytes) = fresh {
            let mut guard = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            guard.1 += bytes + 64;
            if guard.1 > self.budget {
                guard.0.clear();
                guard.1 = 0;
            }
        }
        Arc::clone(value)
    }

    /// The value of `key` if it has been computed and is still held.
    pub fn get(&self, key: &Key) -> Option<Arc<V>> {
        let guard = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        guard.0.get(key).and_then(|s| s.get().cloned())
    }

    /// Number of keys held (computed or being computed).
    pub fn len(&self) -> usize {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every held value (values in use live on through their `Arc`).
    pub fn clear(&self) {
        let mut guard = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        guard.0.clear();
        guard.1 = 0;
    }
}

impl Footprint for Vec<f64> {
    fn bytes(&self) -> usize {
        self.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Row sequences hash the same bytes as one update per length and value (the 4 KiB blocks
    /// only batch them), so keys recorded before the blocks stay valid.
    #[test]
    fn row_sequences_hash_one_value_at_a_time() {
        let rows: Vec<Vec<u32>> = (0..900u32).map(|i| (0..i % 9).collect()).collect();
        let mut e = KeyBuilder::new("t");
        for row in &rows {
            e.0.update((row.len() as u32).to_le_bytes());
            row.iter().for_each(|v| e.0.update(v.to_le_bytes()));
        }
        let got = KeyBuilder::new("t").u32_rows(rows.iter().map(Vec::as_slice));
        assert_eq!(got.finish(), e.u64(900).finish());
        let dense: Vec<Vec<f64>> = rows
            .iter()
            .map(|r| r.iter().map(|&v| f64::from(v) * 0.5).collect())
            .collect();
        let mut e = KeyBuilder::new("t");
        for row in &dense {
            e.0.update((row.len() as u64).to_le_bytes());
            row.iter()
                .for_each(|v| e.0.update(v.to_bits().to_le_bytes()));
        }
        let got = KeyBuilder::new("t").f64_rows(dense.iter().map(Vec::as_slice));
        assert_eq!(got.finish(), e.u64(900).finish());
    }
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn key(i: u64) -> Key {
        KeyBuilder::new("test").u64(i).finish()
    }

    #[test]
    fn keys_separate_their_parts() {
        let a = KeyBuilder::new("k").str("ab").str("c").finish();
        let b = KeyBuilder::new("k").str("a").str("bc").finish();
        assert_ne!(a, b);
        let z = KeyBuilder::new("k").f64(0.0).finish();
        assert_ne!(z, KeyBuilder::new("k").f64(-0.0).finish());
        assert_eq!(z, KeyBuilder::new("k").f64(0.0).finish());
        assert_ne!(
            KeyBuilder::new("k").u32s(&[1, 2]).finish(),
            KeyBuilder::new("k").u32s(&[1]).u32s(&[2]).finish()
        );
        assert_eq!(key(3).to_string().len(), 32);
    }

    #[test]
    fn one_computation_per_key_across_threads() {
        let memo: Memo<Vec<f64>> = Memo::new(1 << 20);
        let calls = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for i in 0..20u64 {
                        let v = memo.get_or_compute(key(i % 5), || {
                            calls.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(1));
                            vec![(i % 5) as f64]
                        });
                        assert_eq!(v[0], (i % 5) as f64);
                    }
                });
            }
        });
        assert_eq!(calls.load(Ordering::SeqCst), 5);
        assert_eq!(memo.len(), 5);
        assert_eq!(memo.get(&key(2)).unwrap()[0], 2.0);
        assert!(memo.get(&key(7)).is_none());
    }

    #[test]
    fn the_budget_empties_the_memo_but_values_in_use_survive() {
        // Each value: 100 * 8 bytes + 64 of overhead; the budget holds two.
        let memo: Memo<Vec<f64>> = Memo::new(2 * 864 + 10);
        let a = memo.get_or_compute(key(0), || vec![1.0; 100]);
        memo.get_or_compute(key(1), || vec![2.0; 100]);
        assert_eq!(memo.len(), 2);
        memo.get_or_compute(key(2), || vec![3.0; 100]);
        assert!(memo.is_empty());
        assert_eq!(a[0], 1.0);
        let again = memo.get_or_compute(key(0), || vec![9.0; 100]);
        assert_eq!(again[0], 9.0, "recomputed after the memo was emptied");
    }
}
