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
//! computation. Memory is bounded: past its byte budget a memo drops its largest values first,
//! least recently used among equals (values in use live on through their `Arc`), so a run stays
//! within its datasets plus a constant. Largest first because a value's cost to recompute is a
//! pass over the rows it came from, whatever its own size: appendix B's row scales of the whole
//! 2^20-row set (8 MB from a pass over 12.6 GB) must not go to make room for a 2 GB scaled copy
//! of a trial's subset, which only that trial's next cells read again. A value larger than the
//! whole budget is kept alone until the next miss, so the cells that read it one after another
//! share it, and is dropped before that miss computes anything, so two such values are never
//! held for the memo's sake. A dropped value still in use elsewhere is found again through a
//! weak reference instead of recomputed: one key never has two copies alive.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

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

/// The SHA-256 of one f64 row, by its values' bits with its length: [`KeyBuilder::f64_rows`]
/// of that row alone.
pub fn row_digest(row: &[f64]) -> [u8; 32] {
    KeyBuilder(Sha256::new()).f64_rows([row]).finish().0
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

    pub fn u32s(self, v: &[u32]) -> Self {
        self.u64(v.len() as u64)
            .in_blocks(v.iter().map(|x| x.to_le_bytes()))
    }

    /// A sequence of u32 slices (e.g. the on-indices of a binary matrix's rows), each with its
    /// length; bytes go to the hash in 4 KiB blocks, so this runs at SHA-256's speed.
    pub fn u32_rows<'r>(self, rows: impl IntoIterator<Item = &'r [u32]>) -> Self {
        self.rows_in_blocks(rows, |n| (n as u32).to_le_bytes(), u32::to_le_bytes)
    }

    /// A sequence of 32-byte digests (e.g. [`row_digest`]s), with their count.
    pub fn digests<'d>(self, digests: impl IntoIterator<Item = &'d [u8; 32]>) -> Self {
        let mut count = 0u64;
        let this = self.in_blocks(digests.into_iter().inspect(|_| count += 1).copied());
        this.u64(count)
    }

    /// Fixed-width items through a 4 KiB buffer: the bytes hashed are those of one update per
    /// item (SHA-256 does not see how its input was cut), at the hash's speed instead of a
    /// call per item (a row set of appendix B is 2^20 indices and digests).
    fn in_blocks<const W: usize>(mut self, items: impl IntoIterator<Item = [u8; W]>) -> Self {
        let mut buf = [0u8; 4096];
        let mut used = 0;
        for item in items {
            if used + W > buf.len() {
                self.0.update(&buf[..used]);
                used = 0;
            }
            buf[used..used + W].copy_from_slice(&item);
            used += W;
        }
        self.0.update(&buf[..used]);
        self
    }

    /// A sequence of f64 rows (e.g. a dense matrix's rows), each with its length, by their
    /// bits; in 4 KiB blocks like [`Self::u32_rows`].
    /// On a little-endian machine a row's memory is already those bytes, so each row goes to
    /// the hash whole (the same stream, at SHA-256's speed without the per-value copy).
    pub fn f64_rows<'r>(mut self, rows: impl IntoIterator<Item = &'r [f64]>) -> Self {
        if cfg!(target_endian = "little") {
            let mut count = 0u64;
            for row in rows {
                self.0.update((row.len() as u64).to_le_bytes());
                // SAFETY: any f64 is 8 initialised bytes, and on a little-endian target they
                // are its `to_bits().to_le_bytes()`; the slice borrows `row` for this call.
                let bytes = unsafe {
                    std::slice::from_raw_parts(
                        row.as_ptr().cast::<u8>(),
                        std::mem::size_of_val(row),
                    )
                };
                self.0.update(bytes);
                count += 1;
            }
            return self.u64(count);
        }
        self.rows_in_blocks(
            rows,
            |n| (n as u64).to_le_bytes(),
            |v| v.to_bits().to_le_bytes(),
        )
    }

    /// Each row's length then its values, `W` bytes each, through [`Self::in_blocks`], then
    /// the number of rows.
    fn rows_in_blocks<'r, T: Copy + 'r, const W: usize>(
        self,
        rows: impl IntoIterator<Item = &'r [T]>,
        len: fn(usize) -> [u8; W],
        bytes: fn(T) -> [u8; W],
    ) -> Self {
        let mut count = 0u64;
        let items = rows.into_iter().flat_map(|row| {
            count += 1;
            std::iter::once(len(row.len())).chain(row.iter().map(move |&v| bytes(v)))
        });
        let this = self.in_blocks(items);
        this.u64(count)
    }

    pub fn usizes(self, v: &[usize]) -> Self {
        self.u64(v.len() as u64)
            .in_blocks(v.iter().map(|&x| (x as u64).to_le_bytes()))
    }

    pub fn f64s(self, v: &[f64]) -> Self {
        self.u64(v.len() as u64)
            .in_blocks(v.iter().map(|x| x.to_bits().to_le_bytes()))
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

/// One held key: its slot, the bytes it counts (0 while computed) and when it was last asked for.
struct Held<V> {
    slot: Slot<V>,
    bytes: usize,
    used: u64,
}

/// The memo's state under its lock.
struct Slots<V> {
    held: BTreeMap<Key, Held<V>>,
    bytes: usize,
    tick: u64,
    /// Values dropped from `held`, found again while something else still holds them.
    dropped: BTreeMap<Key, Weak<V>>,
}

impl<V> Slots<V> {
    /// Drops computed values, never `keep` nor one being computed, until the held bytes are
    /// within `budget`: the largest first, and among equals the least recently used.
    fn shrink_to(&mut self, budget: usize, keep: Option<&Key>) {
        while self.bytes > budget {
            let victim = self
                .held
                .iter()
                .filter(|(k, h)| Some(*k) != keep && h.slot.get().is_some())
                .min_by_key(|(_, h)| (std::cmp::Reverse(h.bytes), h.used))
                .map(|(k, _)| *k);
            let Some(k) = victim else { break };
            let h = self.held.remove(&k).expect("a held key");
            self.bytes -= h.bytes;
            if let Some(v) = h.slot.get() {
                self.dropped.insert(k, Arc::downgrade(v));
            }
        }
        self.dropped.retain(|_, w| w.strong_count() > 0);
    }
}

/// A keyed, thread-safe store of results computed once per key (see the module doc).
pub struct Memo<V> {
    slots: Mutex<Slots<V>>,
    budget: usize,
}

impl<V: Footprint> Memo<V> {
    /// An empty memo holding at most `budget` bytes (or one value larger than that).
    pub const fn new(budget: usize) -> Self {
        Memo {
            slots: Mutex::new(Slots {
                held: BTreeMap::new(),
                bytes: 0,
                tick: 0,
                dropped: BTreeMap::new(),
            }),
            budget,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slots<V>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value of `key`, computing it with `compute` if no thread has (concurrent callers of
    /// one key wait for the first). `compute` must be a pure function of the key.
    pub fn get_or_compute(&self, key: Key, compute: impl FnOnce() -> V) -> Arc<V> {
        let slot = {
            let mut g = self.lock();
            g.tick += 1;
            let tick = g.tick;
            if let Some(h) = g.held.get_mut(&key) {
                h.used = tick;
                Arc::clone(&h.slot)
            } else {
                let slot: Slot<V> = Arc::default();
                let alive = g.dropped.remove(&key).and_then(|w| w.upgrade());
                let bytes = alive.as_ref().map_or(0, |v| v.bytes() + 64);
                match alive {
                    Some(v) => {
                        let _ = slot.set(v);
                    }
                    // A miss: a value over the whole budget goes before this one is computed.
                    None => g.shrink_to(self.budget, None),
                }
                g.held.insert(
                    key,
                    Held {
                        slot: Arc::clone(&slot),
                        bytes,
                        used: tick,
                    },
                );
                if bytes > 0 {
                    g.bytes += bytes;
                    g.shrink_to(self.budget, Some(&key));
                }
                slot
            }
        };
        let mut fresh = None;
        let value = slot.get_or_init(|| {
            let v = Arc::new(compute());
            fresh = Some(v.bytes() + 64);
            v
        });
        if let Some(bytes) = fresh {
            let mut g = self.lock();
            if let Some(h) = g.held.get_mut(&key) {
                h.bytes = bytes;
                g.bytes += bytes;
            }
            g.shrink_to(self.budget, Some(&key));
        }
        Arc::clone(value)
    }

    /// The value of `key` if it has been computed and is still held or in use.
    pub fn get(&self, key: &Key) -> Option<Arc<V>> {
        let g = self.lock();
        g.held
            .get(key)
            .and_then(|h| h.slot.get().cloned())
            .or_else(|| g.dropped.get(key).and_then(Weak::upgrade))
    }

    /// Number of keys held (computed or being computed).
    pub fn len(&self) -> usize {
        self.lock().held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every held value (values in use live on through their `Arc`).
    pub fn clear(&self) {
        let mut g = self.lock();
        g.held.clear();
        g.dropped.clear();
        g.bytes = 0;
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

    /// Slices of fixed-width items hash the bytes of one update per length and item, as
    /// before they went through the 4 KiB blocks; lengths past one block cross its edge.
    #[test]
    fn slices_hash_one_item_at_a_time() {
        for n in [0usize, 1, 511, 512, 513, 3000] {
            let u: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2654435761)).collect();
            let f: Vec<f64> = u.iter().map(|&v| f64::from(v) * -0.25).collect();
            let z: Vec<usize> = u.iter().map(|&v| v as usize * 3).collect();
            let d: Vec<[u8; 32]> = u.iter().map(|&v| [(v % 251) as u8; 32]).collect();
            let mut e = KeyBuilder::new("t");
            e.0.update((n as u64).to_le_bytes());
            u.iter().for_each(|v| e.0.update(v.to_le_bytes()));
            e.0.update((n as u64).to_le_bytes());
            f.iter().for_each(|v| e.0.update(v.to_bits().to_le_bytes()));
            e.0.update((n as u64).to_le_bytes());
            z.iter().for_each(|&v| e.0.update((v as u64).to_le_bytes()));
            d.iter().for_each(|v| e.0.update(v));
            e.0.update((n as u64).to_le_bytes());
            let got = KeyBuilder::new("t")
                .u32s(&u)
                .f64s(&f)
                .usizes(&z)
                .digests(&d);
            assert_eq!(got.finish(), e.finish(), "{n} items");
        }
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
    fn past_the_budget_the_least_recently_used_go_and_values_in_use_are_found_again() {
        // Each value: 100 * 8 bytes + 64 of overhead; the budget holds two.
        let memo: Memo<Vec<f64>> = Memo::new(2 * 864 + 10);
        let a = memo.get_or_compute(key(0), || vec![1.0; 100]);
        memo.get_or_compute(key(1), || vec![2.0; 100]);
        memo.get_or_compute(key(0), || unreachable!("held"));
        memo.get_or_compute(key(2), || vec![3.0; 100]);
        assert_eq!(memo.len(), 2, "key 1, the least recently used, went");
        assert!(memo.get(&key(1)).is_none(), "and nothing else holds it");
        let again = memo.get_or_compute(key(1), || vec![9.0; 100]);
        assert_eq!(again[0], 9.0, "recomputed once dropped");
        assert_eq!(memo.len(), 2, "key 0 went now");
        assert!(
            memo.get(&key(0)).is_some(),
            "dropped from the memo but alive in `a`"
        );
        let found = memo.get_or_compute(key(0), || vec![8.0; 100]);
        assert!(Arc::ptr_eq(&found, &a), "found again, not a second copy");
    }

    #[test]
    fn past_the_budget_a_larger_value_goes_before_an_older_smaller_one() {
        // 864 and 1664 bytes with the overhead; the budget holds the small one beside one large.
        let memo: Memo<Vec<f64>> = Memo::new(864 + 1664 + 10);
        memo.get_or_compute(key(0), || vec![0.0; 100]);
        memo.get_or_compute(key(1), || vec![1.0; 200]);
        memo.get_or_compute(key(2), || vec![2.0; 200]);
        assert!(memo.get(&key(1)).is_none(), "the large value went");
        assert!(
            memo.get(&key(0)).is_some(),
            "not the least recently used, smaller one"
        );
        memo.get_or_compute(key(0), || unreachable!("held"));
        assert_eq!(memo.len(), 2);
    }

    #[test]
    fn a_value_over_the_whole_budget_is_kept_until_the_next_miss() {
        let memo: Memo<Vec<f64>> = Memo::new(1000);
        let small = memo.get_or_compute(key(0), || vec![0.0; 10]);
        drop(memo.get_or_compute(key(1), || vec![1.0; 1000]));
        assert_eq!(memo.len(), 1, "the large value alone");
        assert!(memo.get(&key(0)).is_some(), "the small one is still in use");
        drop(small);
        assert!(memo.get(&key(0)).is_none());
        let hit = memo.get_or_compute(key(1), || unreachable!("kept for the next reader"));
        assert_eq!(hit.len(), 1000);
        drop(hit);
        let weak = Arc::downgrade(&memo.get(&key(1)).unwrap());
        memo.get_or_compute(key(2), || {
            assert!(weak.upgrade().is_none(), "dropped before the miss computes");
            vec![2.0; 10]
        });
        assert!(memo.get(&key(1)).is_none());
    }
}
