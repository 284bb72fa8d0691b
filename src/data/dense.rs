//! Dense feature storage: in memory, or, for a generated matrix too large to sit in memory
//! beside the scaled copies a fit reads (appendix B's toy Gaussian at D = 1500 and N = 2^20 is
//! 12.7 GB, its scaled training set as much again), in an unlinked temporary file mapped
//! read-only: its pages are the kernel's to drop and read back, not the process's to hold.
//! The values, and so every result, are the same either way.

use memmap2::Mmap;
use ndarray::{Array2, ArrayView2};
use std::io::{BufWriter, Write};
use std::sync::Arc;

/// Generated matrices larger than this go to a mapped file instead of memory, unless the
/// environment sets `EPSILAB_SPILL_BYTES` (0 maps every generated matrix).
pub const SPILL_BYTES: usize = 2 << 30;

/// The spill threshold in force ([`SPILL_BYTES`] or `EPSILAB_SPILL_BYTES`).
pub fn spill_bytes() -> usize {
    std::env::var("EPSILAB_SPILL_BYTES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(SPILL_BYTES)
}

/// A dense matrix of f64, row-major.
#[derive(Debug, Clone)]
pub enum DenseData {
    Owned(Array2<f64>),
    Mapped(Mapped),
}

/// A read-only mapping of an unlinked file of native-endian f64 rows (the file is gone from
/// the folder as soon as it is mapped, so nothing is left behind if the process dies).
#[derive(Clone)]
pub struct Mapped {
    map: Arc<Mmap>,
    rows: usize,
    cols: usize,
}

impl std::fmt::Debug for Mapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mapped({} x {})", self.rows, self.cols)
    }
}

impl DenseData {
    /// `rows` x `cols`, row `i` written by `fill(i, row)` in ascending order (so a seeded
    /// generator draws the same values either way): in memory up to [`spill_bytes`], else in a
    /// mapped temporary file.
    pub fn generate(
        rows: usize,
        cols: usize,
        fill: impl FnMut(usize, &mut [f64]),
    ) -> std::io::Result<Self> {
        Self::generate_spilling_above(spill_bytes(), rows, cols, fill)
    }

    /// As [`Self::generate`], mapping matrices of more than `limit` bytes.
    fn generate_spilling_above(
        limit: usize,
        rows: usize,
        cols: usize,
        mut fill: impl FnMut(usize, &mut [f64]),
    ) -> std::io::Result<Self> {
        if rows * cols * 8 <= limit || cols == 0 {
            let mut x = Array2::zeros((rows, cols));
            for (i, mut row) in x.rows_mut().into_iter().enumerate() {
                fill(i, row.as_slice_mut().expect("standard layout"));
            }
            return Ok(DenseData::Owned(x));
        }
        let file = tempfile::tempfile()?;
        let mut out = BufWriter::with_capacity(1 << 20, &file);
        let mut row = vec![0.0; cols];
        let mut bytes = vec![0u8; cols * 8];
        for i in 0..rows {
            fill(i, &mut row);
            for (b, v) in bytes.chunks_exact_mut(8).zip(&row) {
                b.copy_from_slice(&v.to_ne_bytes());
            }
            out.write_all(&bytes)?;
        }
        out.flush()?;
        drop(out);
        // SAFETY: the file is private to this process (created unlinked) and never written
        // again, so the mapping cannot change under the views handed out.
        let map = unsafe { Mmap::map(&file)? };
        Ok(DenseData::Mapped(Mapped {
            map: Arc::new(map),
            rows,
            cols,
        }))
    }

    pub fn view(&self) -> ArrayView2<'_, f64> {
        match self {
            DenseData::Owned(x) => x.view(),
            // SAFETY: the mapping holds rows * cols f64 written in native order and is
            // page-aligned, so aligned for f64; it lives as long as `self`.
            DenseData::Mapped(m) => unsafe {
                ArrayView2::from_shape_ptr((m.rows, m.cols), m.map.as_ptr().cast::<f64>())
            },
        }
    }

    pub fn nrows(&self) -> usize {
        self.view().nrows()
    }

    pub fn ncols(&self) -> usize {
        self.view().ncols()
    }

    /// Every value, row-major.
    pub fn as_slice(&self) -> Option<&[f64]> {
        match self {
            DenseData::Owned(x) => x.as_slice(),
            DenseData::Mapped(m) => Some(
                // SAFETY: as in `view`.
                unsafe {
                    std::slice::from_raw_parts(m.map.as_ptr().cast::<f64>(), m.rows * m.cols)
                },
            ),
        }
    }
}

impl From<Array2<f64>> for DenseData {
    fn from(x: Array2<f64>) -> Self {
        DenseData::Owned(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_matrix_holds_the_values_an_owned_one_does() {
        let fill = |i: usize, row: &mut [f64]| {
            for (j, v) in row.iter_mut().enumerate() {
                *v = (i * 31 + j) as f64 * 0.37 - 5.0;
            }
        };
        let owned = DenseData::generate(7, 5, fill).unwrap();
        assert!(matches!(owned, DenseData::Owned(_)));
        let mapped = DenseData::generate_spilling_above(0, 7, 5, fill).unwrap();
        assert!(matches!(mapped, DenseData::Mapped(_)));
        assert_eq!(mapped.view(), owned.view());
        assert_eq!(mapped.as_slice(), owned.as_slice());
        assert_eq!((mapped.nrows(), mapped.ncols()), (7, 5));
    }
}
