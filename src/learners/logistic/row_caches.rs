//! What LR's fits remember about one dataset's dense rows, for the dataset's later cells: each
//! row's digest and the keys of the row sets asked for lately ([`RowDigests`]), and the column
//! bounds of the row sets scaled last ([`KnownBounds`]). They live in the workspace LR's
//! scheduler gives the runner for the dataset ([`super::schedule`]), not in the dataset.

use super::dense::{SharedDense, Spare};
use super::design::MaxRowNorm;
use super::harness::SharedDesign;
use super::mechanisms::FmCoefficients;
use super::solver::SharedFit;
use crate::memo::{Key, Memo};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

/// A dataset's caches, held by its workspace.
#[derive(Default, Debug)]
pub struct DatasetCaches {
    pub digests: RowDigests,
    pub bounds: KnownBounds,
    /// The noise-free work held for the dataset's later cells. Designs refer to it weakly
    /// ([`super::Design::memoised_in`]), so this is its one owner: dropping the caches (the
    /// runner's workspace, when the dataset's cells are done) lets go of all of it.
    pub work: Arc<SharedWork>,
}

/// LR's noise-free results for one dataset's later cells, each a pure function of its memo
/// key ([`crate::memo`]), so a cell computes the same bits whether it finds one or not. It
/// lives in the dataset's workspace, never in a process-global: once the runner is done with
/// the dataset, nothing of it is held (appendix B's D = 1500 needs those 3 GiB for its 12.7 GB
/// of rows).
pub struct SharedWork {
    /// Scaled binary designs (32 MiB at most).
    pub(super) designs: Memo<Option<SharedDesign>>,
    /// Scaled dense training rows (2 GiB: the 2^20 x 100 copy and one trial's smaller subsets
    /// of it fit together; past it the largest go first, see [`crate::memo`]).
    pub(super) dense: Memo<SharedDense>,
    /// The scaled rows each thread read last ([`super::dense::DenseRows::shared`]).
    pub(super) last_read: LastRead,
    /// The buffers of dropped dense copies, for the next copies ([`Spare`]).
    pub(super) spare: Mutex<Spare>,
    /// Exact minimisers of noise-free objectives (16 MiB at most).
    pub(super) fits: Memo<SharedFit>,
    /// The functional mechanism's X^T X and X^T y (1 GiB at most: 18 MB each at D = 1500
    /// whatever N, and two threads insert 34 per trial pair, so the whole training set's,
    /// which every trial reads, stays between trials).
    pub(super) fm: Memo<FmCoefficients>,
    /// Largest row norms of keyed designs (1 MiB at most).
    pub(super) norms: Memo<MaxRowNorm>,
}

impl Default for SharedWork {
    fn default() -> Self {
        SharedWork {
            designs: Memo::new(32 << 20),
            dense: Memo::new(2 << 30),
            last_read: LastRead::default(),
            spare: Mutex::new(Spare::default()),
            fits: Memo::new(16 << 20),
            fm: Memo::new(1 << 30),
            norms: Memo::new(1 << 20),
        }
    }
}

impl std::fmt::Debug for SharedWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedWork")
    }
}

/// The scaled rows each thread read last, kept until it asks for others: a trial's cells on
/// the same rows run one after another on one thread (objective perturbation, then the
/// functional mechanism's X^T X), and the other thread's next copy must not make it rebuild
/// them. Each thread's entry holds no more than the cell that read them held.
#[derive(Default)]
pub struct LastRead(Mutex<Vec<(ThreadId, Arc<SharedDense>)>>);

impl LastRead {
    /// Takes the rows this thread read last out of its hands.
    pub fn take(&self) -> Option<Arc<SharedDense>> {
        let me = std::thread::current().id();
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let at = held.iter().position(|(t, _)| *t == me)?;
        Some(held.swap_remove(at).1)
    }

    /// Makes `rows` the rows this thread read last.
    pub fn hold(&self, rows: Arc<SharedDense>) {
        let me = std::thread::current().id();
        let old = {
            let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
            match held.iter_mut().find(|(t, _)| *t == me) {
                Some((_, r)) => Some(std::mem::replace(r, rows)),
                None => {
                    held.push((me, rows));
                    None
                }
            }
        };
        // Dropped outside the lock: a copy's buffer goes to the spares.
        drop(old);
    }

    /// The rows this thread read last, if their key is `key`.
    pub fn get(&self, key: Key) -> Option<Arc<SharedDense>> {
        let me = std::thread::current().id();
        let held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        held.iter()
            .find(|(t, r)| *t == me && r.key() == Some(key))
            .map(|(_, r)| Arc::clone(r))
    }
}

/// The SHA-256 of each row of a dataset's dense feature matrix, computed (rows side by side on
/// the pool's threads) at the first request and then read. A memo key of a row set of the
/// matrix hashes these digests in the set's order (`DenseRows::key`), 32 bytes a row instead of
/// the row's 8D bytes of values, so equal keys still mean equal content, and a row set's key
/// does not depend on the rest of the matrix (a dataset grown to more rows keeps its smaller
/// subsets' keys): appendix B hashed about 210 GB of subsets (5% of its CPU), each set once,
/// where its two large matrices are 21 GB. It lives in the dataset's workspace
/// ([`super::schedule`]), dropped before the dataset, so it never outlives the content it
/// describes. Concurrent requests wait for the first to hash.
///
/// It also remembers the keys of the row sets asked for last ([`Self::set_key`]): each cell
/// of a trial's subset asks for the same key (appendix B: ten or more cells for each N, each
/// hashing 36 bytes a row, a sixth of the CPU at D <= 100), and comparing the row indices
/// costs a tenth of hashing them.
#[derive(Default)]
pub struct RowDigests {
    digests: std::sync::OnceLock<Vec<[u8; 32]>>,
    /// Most recently asked for first.
    sets: std::sync::Mutex<Vec<KnownSet>>,
}

/// A row set's key, by the key of everything else it hashes and the rows it lists.
struct KnownSet {
    settings: crate::memo::Key,
    rows: Vec<u32>,
    key: crate::memo::Key,
}

/// Row-set keys a dataset remembers (a few trials' subsets of every N: appendix B's largest
/// is 2^20 indices, 4 MB).
pub const KNOWN_SETS: usize = 16;

impl RowDigests {
    /// The digests of `x`'s rows, `x` being the dataset's feature matrix in standard layout
    /// (its rows are slices).
    pub fn of(&self, x: ndarray::ArrayView2<'_, f64>) -> &[[u8; 32]] {
        use rayon::prelude::*;
        self.digests.get_or_init(|| {
            (0..x.nrows())
                .into_par_iter()
                .map(|i| {
                    let row = x.row(i);
                    crate::memo::row_digest(row.to_slice().expect("standard layout"))
                })
                .collect()
        })
    }

    /// Whether the digests have been computed.
    pub fn is_computed(&self) -> bool {
        self.digests.get().is_some()
    }

    /// The key of the set `rows` of these rows, `compute`d unless a set with the same rows
    /// and the same `settings` (the key of all else `compute` hashes) was asked for lately.
    /// `compute` must be a function of `settings`, `rows` and the digests alone.
    pub fn set_key(
        &self,
        settings: crate::memo::Key,
        rows: &[u32],
        compute: impl FnOnce() -> crate::memo::Key,
    ) -> crate::memo::Key {
        let lock = || self.sets.lock().unwrap_or_else(|e| e.into_inner());
        {
            let mut sets = lock();
            let known = sets
                .iter()
                .position(|s| s.settings == settings && s.rows == rows);
            if let Some(at) = known {
                let set = sets.remove(at);
                let key = set.key;
                sets.insert(0, set);
                return key;
            }
        }
        let key = compute();
        let mut sets = lock();
        sets.insert(
            0,
            KnownSet {
                settings,
                rows: rows.to_vec(),
                key,
            },
        );
        sets.truncate(KNOWN_SETS);
        key
    }
}

/// The per-column bounds (smallest and largest value) of the row sets a dataset's fits
/// scaled last, for a set that extends one of them: appendix B's trial subsets are prefixes of
/// one order (2^17 rows, then 2^18, then 2^19), and a column's fold over the longer set is the
/// fold over the shorter one continued over the rest, every comparison the same in the same
/// order, so the bounds are the same bits with half the rows read.
#[derive(Default)]
pub struct KnownBounds(std::sync::Mutex<Vec<Bounds>>);

/// One row set's column bounds.
pub struct Bounds {
    pub cols: Vec<usize>,
    pub rows: Vec<u32>,
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
}

/// Row sets whose bounds a dataset remembers (the two workers' current trials, with room).
const KNOWN_BOUNDS: usize = 4;

impl KnownBounds {
    /// Of the remembered sets of the columns `cols` whose rows are a prefix of `rows`, the
    /// longest: its row count and its bounds (low, high).
    pub fn longest_prefix(
        &self,
        rows: &[u32],
        cols: &[usize],
    ) -> Option<(usize, Vec<f64>, Vec<f64>)> {
        let known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        known
            .iter()
            .filter(|b| b.cols == cols && rows.starts_with(&b.rows))
            .max_by_key(|b| b.rows.len())
            .map(|b| (b.rows.len(), b.lo.clone(), b.hi.clone()))
    }

    /// Remembers `bounds`, forgetting the set remembered longest ago past a few.
    pub fn remember(&self, bounds: Bounds) {
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        known.retain(|b| !(b.cols == bounds.cols && b.rows == bounds.rows));
        known.insert(0, bounds);
        known.truncate(KNOWN_BOUNDS);
    }
}

impl Clone for KnownBounds {
    /// A copy starts empty (it is a cache).
    fn clone(&self) -> Self {
        KnownBounds::default()
    }
}

impl std::fmt::Debug for KnownBounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map_or(0, |k| k.len());
        write!(f, "KnownBounds({n} sets)")
    }
}

impl Clone for RowDigests {
    /// A copy starts empty (it is a cache).
    fn clone(&self) -> Self {
        RowDigests::default()
    }
}

impl std::fmt::Debug for RowDigests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.digests.get() {
            Some(d) => write!(f, "RowDigests({} rows)", d.len()),
            None => write!(f, "RowDigests(not yet hashed)"),
        }
    }
}
