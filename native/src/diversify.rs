//! The two array steps of diversifying a page of search hits (`esdedup.search.diversify`) that numpy does
//! slowly: the base64 of the hits' stored MinHash signatures decoded all at once, and the equal positions of
//! the signatures, every row of one set against every row of another (the count behind the estimated
//! Jaccard of each pair). Only the bytes and the count are made here; the estimates and the verdicts stay in Python (`esdedup/match/rule.py`), which is
//! the one definition of the rule, and `esdedup.match.rule.equal_positions` counts the same in numpy when
//! the extension is not in use (`tests/unit/test_diversify_fast.py` checks the two agree).
//!
//! Signatures are b-bit values (16 bits under every config of today): they come as u16 when they fit, which
//! puts twice as many positions in a vector register as u32, and the loop is compiled for AVX2 as well as
//! portably, the form chosen at run time.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The n x m counts (row-major, into `out`, zeroed) of positions where row x of `a` and row y of `b` agree,
/// both row-major with `perm` columns; with `symmetric` (`b` is `a`), each pair below the diagonal is counted
/// once and mirrored. `$t` is the value type, and also the accumulator's: a count never exceeds `perm`, which
/// the caller keeps below the type's range.
macro_rules! counter {
    ($name:ident, $t:ty) => {
        #[inline(always)]
        fn $name(a: &[$t], b: &[$t], perm: usize, symmetric: bool, out: &mut [u32]) {
            let m = b.len() / perm;
            for (i, x) in a.chunks_exact(perm).enumerate() {
                let upto = if symmetric { i + 1 } else { m };
                for (j, y) in b.chunks_exact(perm).take(upto).enumerate() {
                    // A sum of 0/1 over two equal-length slices: compiled to vector compares and subtracts.
                    let same = x
                        .iter()
                        .zip(y)
                        .fold(0 as $t, |acc, (p, q)| acc.wrapping_add(<$t>::from(p == q)));
                    out[i * m + j] = u32::from(same);
                    if symmetric {
                        out[j * m + i] = u32::from(same);
                    }
                }
            }
        }
    };
}
counter!(count16, u16);
counter!(count32, u32);

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count16_avx2(a: &[u16], b: &[u16], perm: usize, symmetric: bool, out: &mut [u32]) {
    count16(a, b, perm, symmetric, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count32_avx2(a: &[u32], b: &[u32], perm: usize, symmetric: bool, out: &mut [u32]) {
    count32(a, b, perm, symmetric, out)
}

fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn counts(a: &[u8], b: &[u8], perm: usize, width: usize, symmetric: bool) -> Vec<u32> {
    let mut out = vec![0u32; (a.len() / (width * perm)) * (b.len() / (width * perm))];
    if width == 2 {
        let words = |raw: &[u8]| -> Vec<u16> {
            raw.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        };
        let (a, b) = (words(a), words(b));
        #[cfg(target_arch = "x86_64")]
        if avx2() {
            // SAFETY: the CPU has AVX2 (checked just above).
            unsafe { count16_avx2(&a, &b, perm, symmetric, &mut out) };
            return out;
        }
        count16(&a, &b, perm, symmetric, &mut out);
    } else {
        let words = |raw: &[u8]| -> Vec<u32> {
            raw.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        let (a, b) = (words(a), words(b));
        #[cfg(target_arch = "x86_64")]
        if avx2() {
            // SAFETY: as above.
            unsafe { count32_avx2(&a, &b, perm, symmetric, &mut out) };
            return out;
        }
        count32(&a, &b, perm, symmetric, &mut out);
    }
    out
}

/// `equal_positions(a, b, perm, width, symmetric=False)`: `a` and `b` are the bytes of C-contiguous
/// little-endian arrays of `perm` columns of `width`-byte unsigned values (2 or 4; with 2, `perm` must be
/// below 65,536); returns the bytes of the (rows of a) x (rows of b) little-endian u32 counts, with the GIL
/// released while counting. `symmetric`: `b` holds the same rows as `a`, so half the pairs are counted.
#[pyfunction]
#[pyo3(signature = (a, b, perm, width, symmetric=false))]
pub fn equal_positions<'py>(
    py: Python<'py>,
    a: &[u8],
    b: &[u8],
    perm: usize,
    width: usize,
    symmetric: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let row = width * perm;
    if !(width == 2 && perm < 1 << 16 || width == 4)
        || perm == 0
        || a.len() % row != 0
        || b.len() % row != 0
        || (symmetric && a != b)
    {
        return Err(PyValueError::new_err(format!(
            "equal_positions: {} and {} bytes are not rows of {perm} values of {width} bytes{}",
            a.len(),
            b.len(),
            if symmetric { ", the same rows twice" } else { "" }
        )));
    }
    let found = py.detach(|| counts(a, b, perm, width, symmetric));
    let mut raw = vec![0u8; found.len() * 4];
    for (chunk, c) in raw.chunks_exact_mut(4).zip(&found) {
        chunk.copy_from_slice(&c.to_le_bytes());
    }
    Ok(PyBytes::new(py, &raw))
}

/// The six bits of a base64 digit (RFC 4648's standard alphabet), or `INVALID`.
const INVALID: u8 = 0xFF;
const SIXES: [u8; 256] = {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut table = [INVALID; 256];
    let mut i = 0;
    while i < 64 {
        table[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// The bytes of `count` base64 strings of `width` characters laid end to end, each ending in the padding of
/// `nbytes` bytes of data (`width` = 4 * ceil(nbytes / 3)); None when a character before the padding is not
/// a base64 digit or the padding is not '='. Bits under the padding are dropped, as Python's decoder does.
fn decode(joined: &[u8], width: usize, nbytes: usize) -> Option<Vec<u8>> {
    let pad = (3 - nbytes % 3) % 3;
    let mut out = Vec::with_capacity(joined.len() / width * nbytes);
    for text in joined.chunks_exact(width) {
        let (digits, padding) = text.split_at(width - pad);
        if padding.iter().any(|&c| c != b'=') {
            return None;
        }
        let start = out.len();
        let mut bits: u32 = 0;
        let mut held = 0;
        for &c in digits {
            let v = SIXES[c as usize];
            if v == INVALID {
                return None;
            }
            bits = (bits << 6) | u32::from(v);
            held += 6;
            if held >= 8 {
                held -= 8;
                out.push((bits >> held) as u8);
            }
        }
        out.truncate(start + nbytes);
    }
    Some(out)
}

/// `decode_base64(joined, width, nbytes)`: see `decode`; the decoded bytes of every string in order, or
/// None. The GIL is released while decoding.
#[pyfunction]
pub fn decode_base64<'py>(
    py: Python<'py>,
    joined: &[u8],
    width: usize,
    nbytes: usize,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    if width == 0 || width != 4 * nbytes.div_ceil(3) || joined.len() % width != 0 {
        return Err(PyValueError::new_err(format!(
            "decode_base64: {} bytes are not strings of {width} characters holding {nbytes} bytes each",
            joined.len()
        )));
    }
    let decoded = py.detach(|| decode(joined, width, nbytes));
    Ok(decoded.map(|raw| PyBytes::new(py, &raw)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_widths_count_the_same() {
        let a: Vec<u16> = (0..3 * 5).map(|i| (i % 4) as u16).collect();
        let b: Vec<u16> = (0..2 * 5).map(|i| (i % 3) as u16).collect();
        let bytes16 = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let bytes32 = |v: &[u16]| {
            v.iter()
                .flat_map(|&x| u32::from(x).to_le_bytes())
                .collect::<Vec<u8>>()
        };
        let want: Vec<u32> = a
            .chunks(5)
            .flat_map(|x| {
                b.chunks(5)
                    .map(move |y| x.iter().zip(y).filter(|(p, q)| p == q).count() as u32)
            })
            .collect();
        assert_eq!(counts(&bytes16(&a), &bytes16(&b), 5, 2, false), want);
        assert_eq!(counts(&bytes32(&a), &bytes32(&b), 5, 4, false), want);
        let square = counts(&bytes16(&a), &bytes16(&a), 5, 2, false);
        assert_eq!(counts(&bytes16(&a), &bytes16(&a), 5, 2, true), square);
        assert_eq!(counts(&bytes32(&a), &bytes32(&a), 5, 4, true), square);
    }

    #[test]
    fn decodes_padded_strings_and_refuses_bad_digits() {
        assert_eq!(
            decode(b"AQID/w==AAAAAA==", 8, 4),
            Some(vec![1, 2, 3, 255, 0, 0, 0, 0])
        );
        assert_eq!(decode(b"AQI=", 4, 2), Some(vec![1, 2]));
        assert_eq!(decode(b"AQID", 4, 3), Some(vec![1, 2, 3]));
        assert_eq!(decode(b"AQ=D", 4, 3), None);
        assert_eq!(decode(b"AQID/w=A", 8, 4), None);
    }
}
