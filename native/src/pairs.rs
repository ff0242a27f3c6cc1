//! The two per-candidate steps of all-pairs search over a store's signature columns
//! (`esdedup.match.pairs`): the LSH join (every pair of rows whose signatures agree on every value of some
//! band) and the equal positions of given pairs of rows (the count behind each pair's estimated Jaccard).
//! Only pairs and counts are made here; the estimates and the verdicts stay in Python
//! (`esdedup/match/rule.py`, the one definition of the rule), and `esdedup.match.pairs.lsh_pair_indices`
//! and `esdedup.match.rule.pair_equal_positions` compute the same in numpy when the extension is not in use
//! (`tests/unit/test_native_pairs.py` checks the two agree).
//!
//! Signatures come as a C-contiguous (rows, perm) uint32 array (numpy's, through the buffer protocol, read
//! in place); b-bit values of 16 bits or fewer (every config's) pack a band of up to four into one integer.

use std::ptr::NonNull;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;

use crate::kernels::mix64;
use crate::pool;

/// The signature rows, borrowed from the caller's array.
struct Rows<'a> {
    values: &'a [u32],
    perm: usize,
    n: usize,
}

impl<'a> Rows<'a> {
    fn new(values: &'a [u32], perm: usize) -> Self {
        Rows {
            values,
            perm,
            n: values.len().checked_div(perm).unwrap_or(0),
        }
    }

    /// Values `from..to` of row `x`.
    #[inline(always)]
    fn part(&self, x: usize, from: usize, to: usize) -> &'a [u32] {
        &self.values[x * self.perm + from..x * self.perm + to]
    }

    /// How many of the `perm` values rows `x` and `y` share at the same position.
    #[inline(always)]
    fn equal(&self, x: usize, y: usize) -> u32 {
        let (p, q) = (self.part(x, 0, self.perm), self.part(y, 0, self.perm));
        p.iter().zip(q).map(|(a, b)| u32::from(a == b)).sum()
    }
}

/// The values of a C-contiguous buffer, in place: valid as long as `buffer` is held (the caller's array is
/// not written meanwhile: it is esdedup's own, made for the call).
pub(crate) fn values_of<'a, T: pyo3::buffer::Element>(
    buffer: &'a PyBuffer<T>,
    what: &str,
) -> PyResult<&'a [T]> {
    let slice: NonNull<[T]> = buffer
        .as_slice_ptr()
        .ok_or_else(|| PyValueError::new_err(format!("{what} must be a C-contiguous array")))?;
    // SAFETY: the pointer and length are the buffer's, which stays alive (and its memory with it) while
    // `buffer` is borrowed; nothing writes to it during the call.
    Ok(unsafe { slice.as_ref() })
}

/// The values of a writable C-contiguous buffer, in place, to be written: valid as long as `buffer` is held
/// (borrowed mutably, so the slice is the only way to it here). The caller's array is esdedup's own, made or
/// held for the call, which nothing else reads or writes meanwhile (the GIL is held).
pub(crate) fn values_of_mut<'a, T: pyo3::buffer::Element>(
    buffer: &'a mut PyBuffer<T>,
    what: &str,
) -> PyResult<&'a mut [T]> {
    if buffer.readonly() || !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "{what} must be a writable C-contiguous array"
        )));
    }
    // SAFETY: the buffer's memory and its length in items, alive while `buffer` is borrowed; writable, and
    // written by no one else during the call (see above).
    Ok(unsafe { std::slice::from_raw_parts_mut(buffer.buf_ptr().cast::<T>(), buffer.item_count()) })
}

/// The (rows, perm) signatures of a 2-D uint32 buffer.
fn signature_rows<'a>(buffer: &'a PyBuffer<u32>) -> PyResult<Rows<'a>> {
    if buffer.dimensions() != 2 {
        return Err(PyValueError::new_err(
            "sigs must be a 2-D (rows, perm) uint32 array",
        ));
    }
    let perm = buffer.shape()[1];
    Ok(Rows::new(values_of(buffer, "sigs")?, perm))
}

/// What one band gives: the pair codes (`left * n + right`), its crowded values (first row, rows) and how
/// many of its values were cut to `max_bucket` rows.
struct BandPairs {
    codes: Vec<u64>,
    crowded: Vec<(usize, usize)>,
    capped: usize,
}

/// The pairs of one band: rows are grouped by their band values and every pair among the first `max_bucket`
/// rows of a group is taken. Each row gets a key: its band values packed into a u64 when they fit (equal
/// exactly when the values are), else a hash of them; sorted by key, then by the values themselves where keys
/// tie (hashes only), then by row, each group is a run of ascending rows.
fn band_pairs(sigs: &Rows<'_>, band: usize, rows: usize, max_bucket: usize) -> BandPairs {
    let (from, to) = (band * rows, (band + 1) * rows);
    let narrow = (0..sigs.n).all(|x| sigs.part(x, from, to).iter().all(|&v| v <= 0xFFFF));
    let bits = if narrow { 16 } else { 32 };
    let packed = rows * bits <= 64;
    let mut order: Vec<(u64, u32)> = (0..sigs.n)
        .map(|x| {
            let part = sigs.part(x, from, to);
            let key = if packed {
                part.iter().fold(0u64, |k, &v| (k << bits) | u64::from(v))
            } else {
                part.iter()
                    .fold(mix64(band as u64), |h, &v| mix64(h ^ u64::from(v)))
            };
            (key, x as u32)
        })
        .collect();
    let values = |x: u32| sigs.part(x as usize, from, to);
    if packed {
        order.sort_unstable();
    } else {
        order.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| values(a.1).cmp(values(b.1)))
                .then_with(|| a.1.cmp(&b.1))
        });
    }
    let same = |a: &(u64, u32), b: &(u64, u32)| a.0 == b.0 && (packed || values(a.1) == values(b.1));
    let mut out = BandPairs {
        codes: Vec::new(),
        crowded: Vec::new(),
        capped: 0,
    };
    let n = sigs.n as u64;
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && same(&order[end], &order[start]) {
            end += 1;
        }
        let size = end - start;
        if size > 1 {
            if size > max_bucket {
                out.capped += 1;
            }
            if size >= max_bucket {
                out.crowded.push((order[start].1 as usize, size));
            }
            let members = &order[start..start + size.min(max_bucket)];
            for (i, a) in members.iter().enumerate() {
                for b in &members[i + 1..] {
                    out.codes.push(u64::from(a.1) * n + u64::from(b.1));
                }
            }
        }
        start = end;
    }
    out
}

fn index_bytes(values: impl ExactSizeIterator<Item = u64>) -> Vec<u8> {
    let mut raw = Vec::with_capacity(values.len() * 8);
    for v in values {
        raw.extend_from_slice(&v.to_le_bytes());
    }
    raw
}

/// `lsh_pairs(sigs, bands, rows, max_bucket)`: the row pairs of `sigs` (a C-contiguous (rows, perm) uint32
/// array) whose signatures agree on every value of at least one of `bands` bands of `rows` values (band i:
/// values i * rows .. (i + 1) * rows), per band value only its first `max_bucket` rows paired: (left, right)
/// as the bytes of little-endian int64 arrays, left < right, sorted, each pair once; the crowded values,
/// (band, first row, rows) of each band value held by `max_bucket` rows or more, by band then first row; and
/// how many band values held more than `max_bucket` rows. The GIL is released and the bands are joined on
/// the extension's threads.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn lsh_pairs<'py>(
    py: Python<'py>,
    sigs: PyBuffer<u32>,
    bands: usize,
    rows: usize,
    max_bucket: usize,
) -> PyResult<(
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Vec<(usize, usize, usize)>,
    usize,
)> {
    let sigs = signature_rows(&sigs)?;
    if bands < 1 || rows < 1 || bands * rows > sigs.perm || max_bucket < 1 || sigs.n > u32::MAX as usize {
        return Err(PyValueError::new_err(format!(
            "lsh_pairs: {bands} bands of {rows} rows over {} signatures of {} values, max_bucket {max_bucket}",
            sigs.n, sigs.perm
        )));
    }
    let threads = pool()?;
    let (codes, crowded, capped) = py.detach(|| {
        let per_band: Vec<BandPairs> = threads.install(|| {
            (0..bands)
                .into_par_iter()
                .map(|b| band_pairs(&sigs, b, rows, max_bucket))
                .collect()
        });
        let mut crowded = Vec::new();
        let mut capped = 0;
        let mut codes = Vec::with_capacity(per_band.iter().map(|p| p.codes.len()).sum());
        for (band, mut found) in per_band.into_iter().enumerate() {
            found.crowded.sort_unstable();
            crowded.extend(found.crowded.into_iter().map(|(row, size)| (band, row, size)));
            capped += found.capped;
            codes.append(&mut found.codes);
        }
        codes.sort_unstable();
        codes.dedup();
        (codes, crowded, capped)
    });
    let n = sigs.n as u64;
    let left = index_bytes(codes.iter().map(|c| c / n));
    let right = index_bytes(codes.iter().map(|c| c % n));
    Ok((PyBytes::new(py, &left), PyBytes::new(py, &right), crowded, capped))
}

/// `pair_equal_positions(sigs, left, right)`: for each x, how many of the positions rows `left[x]` and
/// `right[x]` of `sigs` (a C-contiguous (rows, perm) uint32 array) share (`left`, `right`: int64 arrays of
/// one length), as the bytes of a little-endian uint32 array. The GIL is released while counting.
#[pyfunction]
pub fn pair_equal_positions<'py>(
    py: Python<'py>,
    sigs: PyBuffer<u32>,
    left: PyBuffer<i64>,
    right: PyBuffer<i64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let sigs = signature_rows(&sigs)?;
    let (a, b) = (values_of(&left, "left")?, values_of(&right, "right")?);
    if a.len() != b.len() || a.iter().chain(b).any(|&x| x < 0 || x as u64 >= sigs.n as u64) {
        return Err(PyValueError::new_err(format!(
            "pair_equal_positions: {} and {} rows, not of one count or not all below {}",
            a.len(),
            b.len(),
            sigs.n
        )));
    }
    let counts: Vec<u32> = py.detach(|| {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| sigs.equal(x as usize, y as usize))
            .collect()
    });
    let mut raw = Vec::with_capacity(counts.len() * 4);
    for c in counts {
        raw.extend_from_slice(&c.to_le_bytes());
    }
    Ok(PyBytes::new(py, &raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_band_pairs_the_rows_that_agree_on_it() {
        // Four rows of 4 values, bands of 2: rows 0, 2, 3 agree on band 0; rows 1 and 3 on band 1.
        let values = [1, 2, 7, 7, 5, 6, 8, 9, 1, 2, 0, 0, 1, 2, 8, 9];
        let sigs = Rows::new(&values, 4);
        assert_eq!(band_pairs(&sigs, 0, 2, 10).codes, vec![2, 3, 2 * 4 + 3]);
        assert_eq!(band_pairs(&sigs, 1, 2, 10).codes, vec![4 + 3]);
        let capped = band_pairs(&sigs, 0, 2, 2);
        assert_eq!(
            (capped.codes, capped.crowded, capped.capped),
            (vec![2], vec![(0, 3)], 1)
        );
        assert_eq!(sigs.equal(0, 2), 2);
        assert_eq!(sigs.equal(1, 3), 2);
        assert_eq!(sigs.equal(0, 0), 4);
    }

    #[test]
    fn wide_bands_are_hashed_then_compared() {
        // Bands of 3 values above 16 bits (96 bits: hashed): rows 0 and 2 agree on band 0 only.
        let values = [1 << 20, 2, 3, 4, 9, 9, 7, 7, 7, 0, 0, 0, 1 << 20, 2, 3, 5, 5, 5];
        let sigs = Rows::new(&values, 6);
        assert_eq!(band_pairs(&sigs, 0, 3, 10).codes, vec![2]);
        assert_eq!(band_pairs(&sigs, 1, 3, 10).codes, Vec::<u64>::new());
        // Five 16-bit values (80 bits) do not pack either.
        let values = [1, 2, 3, 4, 5, 1, 2, 3, 4, 6, 1, 2, 3, 4, 5];
        let sigs = Rows::new(&values, 5);
        assert_eq!(band_pairs(&sigs, 0, 5, 10).codes, vec![2]);
    }
}
