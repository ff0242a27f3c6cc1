//! esdedup's native core for the per-document MinHash step: normalised texts in, each text's b-bit MinHash
//! signature, LSH band keys and number of distinct character n-grams out, for a whole batch at once with
//! the GIL released and the texts spread over rayon's threads.
//!
//! Every value is the one `esdedup/fingerprint/minhash.py` and `fingerprinter.py` compute (the Python
//! side is the definition; `tests/unit/test_native.py` checks the two agree bit for bit):
//!
//! * the word characters of a text are its code points whose entry in the caller's table is non-zero
//!   (Python passes `str.isalnum` of every code point, so both sides use the same Unicode database);
//! * an n-gram hashes to `h = SEED; h = mix64(h ^ c)` per code point `c`, then `h >> 32`; a text with fewer
//!   word characters than n is one n-gram, itself, unless it is longer than the chunk size, which the Python
//!   path reads a chunk at a time and so finds no n-gram in;
//! * permutation i maps a hash x to `(a_i * x + b_i) mod 2^64 >> 32` (the caller passes a and b); the
//!   signature keeps the low 16 bits of each permutation's minimum over the distinct hashes;
//! * band i hashes `h = mix64(i)`, then `h = mix64(h ^ v)` for its `rows` signature values; its key is the
//!   top 40 bits of `h`, in decimal.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::string::PyStringData;
use pyo3::types::{PyByteArray, PyList, PyString};
use rayon::prelude::*;

/// Bumped whenever what this module computes, or how it is called, changes; `esdedup.fingerprint.native`
/// uses the extension only when it expects this version.
const API_VERSION: u32 = 1;

const SEED: u64 = 0x6573_6465_6475_7032; // "esdedup2"
const CODE_POINTS: usize = 0x11_0000;
const SIGNATURE_MASK: u32 = (1 << 16) - 1;
const KEY_SHIFT: u32 = 64 - 40;
/// Distinct hashes above which one text's minima are taken on several threads.
const PARALLEL_MINIMA: usize = 1 << 15;

#[inline(always)]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The shingle hash of a run of code points.
#[inline(always)]
fn fold(gram: &[u32]) -> u32 {
    let mut h = SEED;
    for &c in gram {
        h = mix64(h ^ u64::from(c));
    }
    (h >> 32) as u32
}

/// Permutation values computed LANES at a time (a multiple of a vector register's 32-bit lanes).
const LANES: usize = 16;

/// The permutation coefficients, with each `a` split into 32-bit halves: a hash x is below 2^32, so
/// `(a * x + b) mod 2^64 >> 32` is `((a_lo * x + b) mod 2^64 >> 32) + a_hi * x` modulo 2^32, which takes one
/// 32 x 32 -> 64-bit multiply and one 32-bit multiply, both in every x86-64 vector unit. The vectors are
/// padded with zeros to a multiple of LANES; the padding's minima are dropped.
struct Permutations {
    a_lo: Vec<u32>,
    a_hi: Vec<u32>,
    b: Vec<u64>,
    count: usize,
}

impl Permutations {
    fn new(a: &[u64], b: &[u64]) -> Self {
        let padded = a.len().div_ceil(LANES) * LANES;
        let pad =
            |v: Vec<u64>| -> Vec<u64> { v.into_iter().chain(std::iter::repeat(0)).take(padded).collect() };
        let a = pad(a.to_vec());
        Permutations {
            a_lo: a.iter().map(|&v| v as u32).collect(),
            a_hi: a.iter().map(|&v| (v >> 32) as u32).collect(),
            b: pad(b.to_vec()),
            count: b.len(),
        }
    }

    /// Each permutation's minimum over the hashes (u32::MAX for none).
    fn minima(&self, hashes: &[u32]) -> Vec<u32> {
        let mut out = vec![u32::MAX; self.a_lo.len()];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has the instructions the function is compiled for.
                unsafe { self.minima_avx512(hashes, &mut out) };
            } else if is_x86_feature_detected!("avx2") {
                // SAFETY: as above.
                unsafe { self.minima_avx2(hashes, &mut out) };
            } else {
                self.minima_into(hashes, &mut out);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        self.minima_into(hashes, &mut out);
        out.truncate(self.count);
        out
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn minima_avx512(&self, hashes: &[u32], out: &mut [u32]) {
        self.minima_into(hashes, out)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn minima_avx2(&self, hashes: &[u32], out: &mut [u32]) {
        self.minima_into(hashes, out)
    }

    /// LANES permutations at a time over all the hashes, so their coefficients and minima stay in registers.
    #[inline(always)]
    fn minima_into(&self, hashes: &[u32], out: &mut [u32]) {
        for (group, mins) in out.chunks_exact_mut(LANES).enumerate() {
            let lanes = group * LANES..(group + 1) * LANES;
            let a_lo: [u32; LANES] = self.a_lo[lanes.clone()].try_into().expect("padded");
            let a_hi: [u32; LANES] = self.a_hi[lanes.clone()].try_into().expect("padded");
            let b: [u64; LANES] = self.b[lanes].try_into().expect("padded");
            let mut m = [u32::MAX; LANES];
            for &x in hashes {
                for k in 0..LANES {
                    let low = (u64::from(a_lo[k]) * u64::from(x)).wrapping_add(b[k]);
                    let v = ((low >> 32) as u32).wrapping_add(a_hi[k].wrapping_mul(x));
                    m[k] = m[k].min(v);
                }
            }
            mins.copy_from_slice(&m);
        }
    }
}

/// What the batch computes for one text.
struct Sketch {
    /// Low 16 bits of each permutation's minimum (empty when the text has no n-gram).
    signature: Vec<u32>,
    keys: Vec<u64>,
    shingles: usize,
}

/// The settings of one MinHash config, fixed for the life of the object.
#[pyclass(frozen, module = "esdedup_native")]
struct MinHashCore {
    is_word: Vec<bool>,
    perms: Permutations,
    ngram: usize,
    bands: usize,
    rows: usize,
    chunk: usize,
}

impl MinHashCore {
    fn word_chars(&self, text: &PyStringData<'_>) -> Vec<u32> {
        let is_word = &self.is_word;
        match text {
            PyStringData::Ucs1(units) => units
                .iter()
                .map(|&c| u32::from(c))
                .filter(|&c| is_word[c as usize])
                .collect(),
            PyStringData::Ucs2(units) => units
                .iter()
                .map(|&c| u32::from(c))
                .filter(|&c| is_word[c as usize])
                .collect(),
            PyStringData::Ucs4(units) => units
                .iter()
                .copied()
                .filter(|&c| (c as usize) < CODE_POINTS && is_word[c as usize])
                .collect(),
        }
    }

    /// The distinct n-gram hashes of a text's word characters, sorted. Windows are hashed `chunk` at a
    /// time and merged into the distinct hashes so far only once the new ones outnumber them, so memory
    /// follows the number of distinct n-grams, not the length of the text.
    fn distinct_hashes(&self, chars: &[u32]) -> Vec<u32> {
        let n = self.ngram;
        if chars.is_empty() {
            return Vec::new();
        }
        if chars.len() < n {
            return if chars.len() <= self.chunk {
                vec![fold(chars)]
            } else {
                Vec::new()
            };
        }
        let windows = chars.len() - n + 1;
        let mut distinct: Vec<u32> = Vec::new();
        let mut pending: Vec<u32> = Vec::new();
        let mut part: Vec<u32> = Vec::with_capacity(windows.min(self.chunk));
        let mut start = 0;
        while start < windows {
            let end = (start + self.chunk).min(windows);
            part.clear();
            part.extend(chars[start..end + n - 1].windows(n).map(fold));
            part.sort_unstable();
            part.dedup();
            pending.extend_from_slice(&part);
            if pending.len() > distinct.len().max(self.chunk) {
                pending.append(&mut distinct);
                pending.sort_unstable();
                pending.dedup();
                std::mem::swap(&mut distinct, &mut pending);
            }
            start = end;
        }
        if !pending.is_empty() {
            distinct.append(&mut pending);
            distinct.sort_unstable();
            distinct.dedup();
        }
        distinct
    }

    /// Each permutation's minimum over the hashes, on several threads when there are many.
    fn minima(&self, hashes: &[u32]) -> Vec<u32> {
        let perms = &self.perms;
        if hashes.len() <= PARALLEL_MINIMA {
            return perms.minima(hashes);
        }
        hashes
            .par_chunks(PARALLEL_MINIMA / 4)
            .map(|part| perms.minima(part))
            .reduce(
                || vec![u32::MAX; perms.count],
                |mut x, y| {
                    for (m, v) in x.iter_mut().zip(y) {
                        *m = (*m).min(v);
                    }
                    x
                },
            )
    }

    fn band_keys(&self, signature: &[u32]) -> Vec<u64> {
        (0..self.bands)
            .map(|band| {
                let values = &signature[band * self.rows..(band + 1) * self.rows];
                let h = values
                    .iter()
                    .fold(mix64(band as u64), |h, &v| mix64(h ^ u64::from(v)));
                h >> KEY_SHIFT
            })
            .collect()
    }

    fn sketch_one(&self, text: &PyStringData<'_>) -> Sketch {
        let hashes = self.distinct_hashes(&self.word_chars(text));
        if hashes.is_empty() {
            return Sketch {
                signature: Vec::new(),
                keys: Vec::new(),
                shingles: 0,
            };
        }
        let signature: Vec<u32> = self
            .minima(&hashes)
            .into_iter()
            .map(|m| m & SIGNATURE_MASK)
            .collect();
        let keys = self.band_keys(&signature);
        Sketch {
            signature,
            keys,
            shingles: hashes.len(),
        }
    }
}

/// A text's code points as CPython stores them (PEP 393: one, two or four bytes each), borrowed.
fn code_units<'a>(text: &'a Bound<'_, PyString>) -> PyResult<PyStringData<'a>> {
    // SAFETY: a str object is immutable, and `sketch` holds a reference to each text for as long as it reads
    // the borrowed code units.
    unsafe { text.data() }
}

#[pymethods]
impl MinHashCore {
    /// `word_table`: one byte per code point (0x110000), non-zero for a word character; `a`, `b`: the
    /// permutation coefficients (one pair per signature value); `ngram`: the n of the character n-grams;
    /// `bands` x `rows`: the LSH layout; `chunk`: the windows read at a time.
    #[new]
    fn new(
        word_table: &[u8],
        a: Vec<u64>,
        b: Vec<u64>,
        ngram: usize,
        bands: usize,
        rows: usize,
        chunk: usize,
    ) -> PyResult<Self> {
        if word_table.len() != CODE_POINTS {
            return Err(PyValueError::new_err(format!(
                "word_table needs one byte per code point ({CODE_POINTS}), got {}",
                word_table.len()
            )));
        }
        if a.is_empty() || a.len() != b.len() {
            return Err(PyValueError::new_err(format!(
                "a and b need one coefficient per permutation each, got {} and {}",
                a.len(),
                b.len()
            )));
        }
        if ngram < 1 || chunk < 1 {
            return Err(PyValueError::new_err(format!(
                "ngram ({ngram}) and chunk ({chunk}) must be >= 1"
            )));
        }
        if bands < 1 || rows < 1 || bands * rows > a.len() {
            return Err(PyValueError::new_err(format!(
                "{bands} bands of {rows} rows need {} signature values, the permutations give {}",
                bands * rows,
                a.len()
            )));
        }
        let is_word = word_table.iter().map(|&v| v != 0).collect();
        Ok(MinHashCore {
            is_word,
            perms: Permutations::new(&a, &b),
            ngram,
            bands,
            rows,
            chunk,
        })
    }

    #[getter]
    fn n_perm(&self) -> usize {
        self.perms.count
    }

    /// For a list of texts: (signatures: a bytearray of len(texts) x n_perm little-endian uint32, a text
    /// without n-grams having a row of 0xFFFF; LSH keys of each text as decimal strings, empty for a text
    /// without n-grams; the number of distinct n-grams of each text).
    fn sketch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
    ) -> PyResult<(Bound<'py, PyByteArray>, Bound<'py, PyList>, Vec<usize>)> {
        let units = texts.iter().map(code_units).collect::<PyResult<Vec<_>>>()?;
        let sketches: Vec<Sketch> = py.detach(|| units.par_iter().map(|t| self.sketch_one(t)).collect());
        let perm = self.perms.count;
        let signatures = PyByteArray::new_with(py, sketches.len() * perm * 4, |buf| {
            for (row, sketch) in buf.chunks_exact_mut(perm * 4).zip(&sketches) {
                for (j, out) in row.chunks_exact_mut(4).enumerate() {
                    let v = sketch.signature.get(j).copied().unwrap_or(SIGNATURE_MASK);
                    out.copy_from_slice(&v.to_le_bytes());
                }
            }
            Ok(())
        })?;
        let keys = PyList::empty(py);
        for sketch in &sketches {
            let row: Vec<String> = sketch.keys.iter().map(u64::to_string).collect();
            keys.append(row)?;
        }
        Ok((signatures, keys, sketches.iter().map(|s| s.shingles).collect()))
    }
}

#[pymodule]
fn esdedup_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("API_VERSION", API_VERSION)?;
    m.add_class::<MinHashCore>()?;
    Ok(())
}
