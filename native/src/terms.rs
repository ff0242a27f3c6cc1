//! The term step of `Fingerprinter.fingerprint_many`: each text's raw tokens in, its term rows, weights,
//! SimHash and unnormalised hashed TF vector out, for a whole batch with the GIL released and the texts
//! spread over rayon's threads.
//!
//! The Python side stays the definition (`esdedup/fingerprint/fingerprinter.py`, `_terms_of`,
//! `_vote_sums`, `_fingerprint_chunk`); `tests/unit/test_native.py` checks the two agree bit for bit:
//!
//! * which term a raw token counts as (stopwords, synonyms, stripping), and each term's hash data (digest
//!   bytes, vector bucket and sign, weight of one occurrence), are decided by the core from the rules
//!   Python hands over (`decide_terms`, `termrules`), which Python takes when it reads them
//!   (`take_learned`); or, without rules (tfidf: the idf table stays Python's) and for a batch with a token
//!   that is no UTF-8, by Python (`register`), for every token the core has not seen;
//! * a text's terms are in the order of the first raw token that stands for each, with the counts of all
//!   the tokens that stand for it added up (`Counter`, then `_merge_mapped`);
//! * a weight is `count as f64`, times the term's factor unless the weighting is `tf`; SimHash votes use
//!   the weight rounded to 1/1024 (ties to even, as `np.rint`), summed exactly in integers, so bit i is set
//!   when the terms with bit i set outweigh those without;
//! * the vector adds `sign * weight` into the term's bucket term by term, in the text's term order (what
//!   `np.bincount` does); Python divides by the norm (numpy's own summation, not reproduced here).

use std::borrow::Cow;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::string::PyStringData;
use pyo3::types::{PyBytes, PyList, PyString};
use rayon::prelude::*;
use rayon::ThreadPool;
use rustc_hash::FxHashMap;

use crate::segment::JiebaCore;
use crate::termrules::TermRules;
use crate::{code_units, pool};

const QUANT: f64 = 1024.0;
/// A token the core has no code for yet (Python's codes are >= -1: -1 is "no term").
const UNKNOWN: i64 = -2;
/// Tokens a text's distinct-token map is sized for at most before it is counted (`Counting::add`). Sized for
/// every token, one 62 MB text (some 20 million tokens) took 1.7 GB.
const DISTINCT_PRESIZE: usize = 4096;

/// A token's identity: its PEP 393 width and code units. CPython stores every str in the narrowest width
/// its code points fit (its own string equality starts by comparing widths), so equal keys are equal
/// strings, as for the Python path's dict and `Counter`.
type Key<'a> = (u8, &'a [u8]);
/// The width tag of a token the core cut itself (`run_cut`): its key is its UTF-8 bytes.
const UTF8: u8 = 3;

fn key_of<'a>(data: &PyStringData<'a>) -> Key<'a> {
    // SAFETY: the code units of a str are plain integers; reading them as bytes is always valid.
    unsafe {
        match *data {
            PyStringData::Ucs1(u) => (0, u),
            PyStringData::Ucs2(u) => (1, std::slice::from_raw_parts(u.as_ptr().cast(), u.len() * 2)),
            PyStringData::Ucs4(u) => (2, std::slice::from_raw_parts(u.as_ptr().cast(), u.len() * 4)),
        }
    }
}

/// One text's distinct raw tokens, in first-occurrence order.
struct Distinct<'a> {
    keys: Vec<Key<'a>>,
    /// Index (into the batch's flat token list) of each distinct token's first occurrence.
    first: Vec<usize>,
    counts: Vec<u64>,
    codes: Vec<i64>,
}

/// A text's distinct tokens counted as its tokens come, a piece at a time, so that a long text's tokens are
/// never held all at once (a flat list of them takes 24 bytes a token).
struct Counting<'a> {
    index: FxHashMap<Key<'a>, usize>,
    out: Distinct<'a>,
    /// The index (into the batch's flat token list) of the next token.
    next: usize,
}

impl<'a> Counting<'a> {
    fn new(base: usize) -> Self {
        Counting {
            index: FxHashMap::default(),
            out: Distinct {
                keys: Vec::new(),
                first: Vec::new(),
                counts: Vec::new(),
                codes: Vec::new(),
            },
            next: base,
        }
    }

    /// Count the next tokens of the text.
    fn add(&mut self, tokens: impl ExactSizeIterator<Item = Key<'a>>) {
        if self.out.keys.is_empty() {
            // Sized for every token distinct up to `DISTINCT_PRESIZE`: a short text's map never grows as it
            // is counted, and a long one, whose distinct tokens are far fewer than its tokens, grows as it
            // needs.
            let n = tokens.len().min(DISTINCT_PRESIZE);
            self.index.reserve(n);
            self.out.keys.reserve(n);
            self.out.first.reserve(n);
            self.out.counts.reserve(n);
        }
        let out = &mut self.out;
        for key in tokens {
            let next = out.keys.len();
            let at = *self.index.entry(key).or_insert(next);
            if at == next {
                out.keys.push(key);
                out.first.push(self.next);
                out.counts.push(1);
            } else {
                out.counts[at] += 1;
            }
            self.next += 1;
        }
    }

    /// The distinct tokens with the code `core` has for each (`UNKNOWN` where it has none).
    fn into_distinct(self, core: &TermCore) -> Distinct<'a> {
        let mut out = self.out;
        out.codes = out.keys.iter().map(|k| core.code(k)).collect();
        out
    }
}

/// What the batch computes for one text.
struct Terms {
    rows: Vec<i64>,
    weights: Vec<f64>,
    length: u64,
    simhash: u128,
    vector: Vec<f64>,
}

/// What the core decided itself and Python has not taken yet (`take_learned`), in the order decided: the
/// new tokens with their codes, and the terms of the rows from `from` on (their hash data is the core's
/// own). Texts are kept one after the other in one buffer: a worker process, which never reads them, pays
/// no allocation and no Python str a token for them.
#[derive(Default)]
struct Learned {
    from: usize,
    tokens: String,
    token_ends: Vec<usize>,
    codes: Vec<i64>,
    terms: String,
    term_ends: Vec<usize>,
}

impl Learned {
    fn rows(&self) -> usize {
        self.term_ends.len()
    }
}

/// `take_learned`'s answer: the new tokens, their codes, the new rows' terms, then their hash data as
/// `register` answers it.
type LearnedLists<'py> = (
    Bound<'py, PyList>,
    Bound<'py, PyList>,
    Bound<'py, PyList>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
);

/// A term table mirrored from Python's `_TermTable` (row -> hash data) and `Fingerprinter._codes` (raw
/// token -> code), grown as Python registers new tokens.
#[pyclass(module = "esdedup_native")]
pub struct TermCore {
    bits: usize,
    dims: usize,
    /// Whether weights are count x factor (tf_length, tfidf) rather than the count (tf).
    weighted: bool,
    /// Raw token -> code, one map per PEP 393 width (looked up by the borrowed code units) and one for
    /// the tokens the core cuts itself (by their UTF-8 bytes).
    codes: [FxHashMap<Box<[u8]>, i64>; 4],
    digest: Vec<u8>,
    bucket: Vec<usize>,
    sign: Vec<f64>,
    factor: Vec<f64>,
    /// Term -> row, for the core's own decisions (`rules`); a term that is no UTF-8 is never one of those
    /// and is not kept.
    term_rows: FxHashMap<Box<str>, i64>,
    /// The config's rules when the core decides new tokens itself (`decide_terms`), else None: Python's
    /// `register` decides them.
    rules: Option<TermRules>,
    /// The core's own decisions not yet taken by Python.
    learned: Learned,
}

/// The hash data of new rows and the codes of new tokens, as `register` answers them or the core decides
/// them.
struct NewRows {
    codes: Vec<i64>,
    terms: Vec<String>,
    digest: Vec<u8>,
    bucket: Vec<usize>,
    sign: Vec<f64>,
    factor: Vec<f64>,
}

impl TermCore {
    fn nbytes(&self) -> usize {
        self.bits / 8
    }

    /// A text's distinct tokens; `base`: the index of its first token in the batch's flat token list.
    fn distinct<'a>(&self, tokens: impl ExactSizeIterator<Item = Key<'a>>, base: usize) -> Distinct<'a> {
        let mut counting = Counting::new(base);
        counting.add(tokens);
        counting.into_distinct(self)
    }

    fn code(&self, key: &Key<'_>) -> i64 {
        self.codes[usize::from(key.0)]
            .get(key.1)
            .copied()
            .unwrap_or(UNKNOWN)
    }

    fn terms_of(&self, doc: &Distinct<'_>) -> Terms {
        // Rows in the order of the first token that stands for each, counts added up per row.
        let mut rows: Vec<i64> = Vec::with_capacity(doc.codes.len());
        let mut counts: Vec<u64> = Vec::with_capacity(doc.codes.len());
        // Distinct tokens with even codes are distinct rows; only a token that stands for another term
        // (an odd code) can meet a row already there.
        let merge = doc.codes.iter().any(|&c| c >= 0 && c & 1 == 1);
        let mut at: FxHashMap<i64, usize> = FxHashMap::default();
        for (&code, &count) in doc.codes.iter().zip(&doc.counts) {
            if code < 0 {
                continue;
            }
            let row = code >> 1;
            if !merge {
                rows.push(row);
                counts.push(count);
                continue;
            }
            let next = rows.len();
            let i = *at.entry(row).or_insert(next);
            if i == next {
                rows.push(row);
                counts.push(count);
            } else {
                counts[i] += count;
            }
        }
        let weights: Vec<f64> = rows
            .iter()
            .zip(&counts)
            .map(|(&row, &count)| {
                let w = count as f64;
                if self.weighted {
                    w * self.factor[row as usize]
                } else {
                    w
                }
            })
            .collect();
        let (simhash, vector) = self.simhash_and_vector(&rows, &weights);
        Terms {
            length: counts.iter().sum(),
            rows,
            weights,
            simhash,
            vector,
        }
    }

    fn simhash_and_vector(&self, rows: &[i64], weights: &[f64]) -> (u128, Vec<f64>) {
        let nbytes = self.nbytes();
        let mut vector = vec![0.0f64; self.dims];
        let quantised: Vec<i128> = weights
            .iter()
            .map(|w| (w * QUANT).round_ties_even() as i128)
            .collect();
        let total: i128 = quantised.iter().sum();
        // Bit i: 2 * (weight of the terms with bit i set) - total > 0. In i64 unless the total could
        // overflow it (Python sums in float64 there, exact below 2^52, then in int64).
        let narrow = total < (1i128 << 62);
        let mut ones = if narrow {
            Vec::new()
        } else {
            vec![0i128; self.bits]
        };
        let mut ones64 = [0i64; 128];
        for ((&row, &w), &q) in rows.iter().zip(weights).zip(&quantised) {
            let row = row as usize;
            let digest = &self.digest[row * nbytes..(row + 1) * nbytes];
            if narrow {
                let q = q as i64;
                for (k, &byte) in digest.iter().enumerate() {
                    for bit in 0..8 {
                        // Branch-free: adds q where the bit is set.
                        ones64[k * 8 + bit] += q & -(((byte >> bit) & 1) as i64);
                    }
                }
            } else {
                for (k, &byte) in digest.iter().enumerate() {
                    for bit in 0..8 {
                        if (byte >> bit) & 1 == 1 {
                            ones[k * 8 + bit] += q;
                        }
                    }
                }
            }
            vector[self.bucket[row]] += self.sign[row] * w;
        }
        let mut simhash = 0u128;
        for bit in 0..self.bits {
            let set = if narrow {
                2 * i128::from(ones64[bit]) - total > 0
            } else {
                2 * ones[bit] - total > 0
            };
            if set {
                simhash |= 1u128 << bit;
            }
        }
        (simhash, vector)
    }

    /// Check hash data given as `register` answers it (digest bytes, buckets as int64, signs as float32,
    /// factors as float64, each little-endian bytes, and the rows' terms) and the codes of `tokens` new
    /// tokens; nothing is kept here.
    fn checked_rows(
        &self,
        tokens: usize,
        codes: Vec<i64>,
        (digest, bucket, sign, factor): (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>),
        terms: Vec<Bound<'_, PyString>>,
    ) -> PyResult<NewRows> {
        let nbytes = self.nbytes();
        let added = digest.len() / nbytes;
        if codes.len() != tokens
            || digest.len() != added * nbytes
            || bucket.len() != added * 8
            || sign.len() != added * 4
            || factor.len() != added * 8
            || terms.len() != added
        {
            return Err(PyValueError::new_err(
                "register must return one code per token and the hash data and term of every new row",
            ));
        }
        let mut buckets = Vec::with_capacity(added);
        for b in bucket.chunks_exact(8) {
            let value = i64::from_le_bytes(b.try_into().expect("8 bytes"));
            if value < 0 || value as usize >= self.dims {
                return Err(PyValueError::new_err(format!(
                    "bucket {value} is outside the vector's {} dimensions",
                    self.dims
                )));
            }
            buckets.push(value as usize);
        }
        let rows = (self.bucket.len() + added) as i64;
        if let Some(code) = codes.iter().find(|&&c| c < -1 || (c >> 1) >= rows) {
            return Err(PyValueError::new_err(format!(
                "code {code} names no row (the table has {rows})"
            )));
        }
        Ok(NewRows {
            codes,
            // A term with a lone surrogate is never one the core decides: it is not kept by name.
            terms: terms
                .iter()
                .map(|t| t.to_str().map_or_else(|_| String::new(), str::to_owned))
                .collect(),
            digest,
            bucket: buckets,
            sign: sign
                .chunks_exact(4)
                .map(|b| f64::from(f32::from_le_bytes(b.try_into().expect("4 bytes"))))
                .collect(),
            factor: factor
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
                .collect(),
        })
    }

    /// Keep new rows (from `self.rows()` on) and the codes of the new tokens `keys`.
    fn keep(&mut self, keys: &[Key<'_>], new: NewRows) {
        let first = self.rows() as i64;
        self.term_rows.reserve(new.terms.len());
        for (i, term) in new.terms.into_iter().enumerate() {
            if !term.is_empty() {
                self.term_rows.insert(term.into_boxed_str(), first + i as i64);
            }
        }
        self.digest.extend_from_slice(&new.digest);
        self.bucket.extend_from_slice(&new.bucket);
        self.sign.extend_from_slice(&new.sign);
        self.factor.extend_from_slice(&new.factor);
        if let Some(key) = keys.first() {
            // The map of the first key's width: the one every key of a batch the core cut is in.
            self.codes[usize::from(key.0)].reserve(keys.len());
        }
        for (key, &code) in keys.iter().zip(&new.codes) {
            self.codes[usize::from(key.0)].insert(Box::from(key.1), code);
        }
    }

    /// Add what the core decided itself (`decide`: the texts of the new tokens and their new rows) to what
    /// Python has not taken yet; before the rows are kept.
    fn log_learned(&mut self, tokens: &[Cow<'_, str>], new: &NewRows) {
        let log = &mut self.learned;
        if log.codes.is_empty() && log.term_ends.is_empty() {
            log.from = self.bucket.len();
        }
        for token in tokens {
            log.tokens.push_str(token);
            log.token_ends.push(log.tokens.len());
        }
        log.codes.extend_from_slice(&new.codes);
        for term in &new.terms {
            log.terms.push_str(term);
            log.term_ends.push(log.terms.len());
        }
    }

    /// What `take_learned` gives, and the core forgets.
    fn take_log<'py>(&mut self, py: Python<'py>) -> PyResult<Option<LearnedLists<'py>>> {
        let log = std::mem::take(&mut self.learned);
        if log.codes.is_empty() && log.term_ends.is_empty() {
            return Ok(None);
        }
        let texts = |all: &str, ends: &[usize]| -> PyResult<Bound<'py, PyList>> {
            let mut start = 0;
            PyList::new(
                py,
                ends.iter().map(|&end| {
                    let text = &all[start..end];
                    start = end;
                    text
                }),
            )
        };
        let (from, added, nbytes) = (log.from, log.rows(), self.nbytes());
        Ok(Some((
            texts(&log.tokens, &log.token_ends)?,
            PyList::new(py, &log.codes)?,
            texts(&log.terms, &log.term_ends)?,
            PyBytes::new(py, &self.digest[from * nbytes..]),
            le_bytes(
                py,
                self.bucket[from..].iter().map(|&b| b as i64),
                added,
                i64::to_le_bytes,
            )?,
            le_bytes(
                py,
                self.sign[from..].iter().map(|&v| v as f32),
                added,
                f32::to_le_bytes,
            )?,
            le_bytes(py, self.factor[from..].iter().copied(), added, f64::to_le_bytes)?,
        )))
    }

    /// The codes of new tokens and the rows of their new terms, decided by `rules` as Python's `_register`
    /// would: terms get rows in the order of their first token. None when a token is no UTF-8 (a lone
    /// surrogate): Python decides the whole batch then, in the same order.
    fn decide<'a>(
        &self,
        py: Python<'_>,
        threads: &ThreadPool,
        rules: &TermRules,
        keys: &[Key<'a>],
    ) -> Option<(NewRows, Vec<Cow<'a, str>>)> {
        let tokens: Vec<Cow<'a, str>> = keys.iter().map(key_text).collect::<Option<_>>()?;
        let first = self.rows() as i64;
        let mut codes = Vec::with_capacity(tokens.len());
        let mut terms: Vec<String> = Vec::new();
        let mut made: FxHashMap<&str, i64> = FxHashMap::default();
        for token in &tokens {
            let token: &str = token;
            let code = match rules.term_of(token) {
                None => -1,
                Some(term) => {
                    let row = match self.term_rows.get(term).or_else(|| made.get(term)) {
                        Some(&row) => row,
                        None => {
                            let row = first + terms.len() as i64;
                            made.insert(term, row);
                            terms.push(term.to_owned());
                            row
                        }
                    };
                    2 * row + i64::from(term != token)
                }
            };
            codes.push(code);
        }
        let (bits, dims) = (self.bits, self.dims);
        // The process's own pool (`pool`): rayon's global one has no threads in a forked child.
        let data: Vec<_> = py.detach(|| {
            threads.install(|| terms.par_iter().map(|t| rules.hash_data(t, bits, dims)).collect())
        });
        let mut new = NewRows {
            codes,
            terms,
            digest: Vec::with_capacity(data.len() * bits / 8),
            bucket: Vec::with_capacity(data.len()),
            sign: Vec::with_capacity(data.len()),
            factor: Vec::with_capacity(data.len()),
        };
        for d in data {
            new.digest.extend_from_slice(&d.digest);
            new.bucket.push(d.bucket);
            new.sign.push(d.sign);
            new.factor.push(d.factor);
        }
        Some((new, tokens))
    }
}

/// The text of a token's key, or None for a lone surrogate (no UTF-8).
fn key_text<'a>(key: &Key<'a>) -> Option<Cow<'a, str>> {
    let units = key.1;
    match key.0 {
        UTF8 => std::str::from_utf8(units).ok().map(Cow::Borrowed),
        0 => Some(Cow::Owned(units.iter().map(|&b| char::from(b)).collect())),
        1 => units
            .chunks_exact(2)
            .map(|u| char::from_u32(u32::from(u16::from_ne_bytes([u[0], u[1]]))))
            .collect::<Option<String>>()
            .map(Cow::Owned),
        _ => units
            .chunks_exact(4)
            .map(|u| char::from_u32(u32::from_ne_bytes([u[0], u[1], u[2], u[3]])))
            .collect::<Option<String>>()
            .map(Cow::Owned),
    }
}

fn le_bytes<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    values: impl Iterator<Item = T> + Clone,
    len: usize,
    to: fn(T) -> [u8; N],
) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, len * N, |buf| {
        for (out, v) in buf.chunks_exact_mut(N).zip(values) {
            out.copy_from_slice(&to(v));
        }
        Ok(())
    })
}

#[pymethods]
impl TermCore {
    /// `bits`: the SimHash width (64 or 128); `dims`: the length of the hashed TF vector; `weighted`:
    /// whether a weight is the count times the term's factor (any weighting but tf).
    #[new]
    fn new(bits: usize, dims: usize, weighted: bool) -> PyResult<Self> {
        if bits != 64 && bits != 128 {
            return Err(PyValueError::new_err(format!(
                "bits must be 64 or 128, got {bits}"
            )));
        }
        if dims < 1 {
            return Err(PyValueError::new_err("dims must be >= 1"));
        }
        Ok(TermCore {
            bits,
            dims,
            weighted,
            codes: Default::default(),
            digest: Vec::new(),
            bucket: Vec::new(),
            sign: Vec::new(),
            factor: Vec::new(),
            term_rows: FxHashMap::default(),
            rules: None,
            learned: Learned::default(),
        })
    }

    /// From now on the core decides the tokens it has no code for itself, by these rules (see
    /// `termrules`), and keeps what it decided until `take_learned`: `spaces`, the code points `str.isspace` is true
    /// for; `words`, one byte per code point, non-zero where `str.isalnum` is true; the stopwords and the
    /// synonyms (token, canonical term); `raw`: tokens are terms as they are; `by_length`: one occurrence
    /// weighs the term's length (else 1).
    fn decide_terms(
        &mut self,
        spaces: Vec<u32>,
        words: &[u8],
        stopwords: Vec<String>,
        synonyms: Vec<(String, String)>,
        raw: bool,
        by_length: bool,
    ) -> PyResult<()> {
        if words.len() != 0x11_0000 {
            return Err(PyValueError::new_err(format!(
                "words needs one byte per code point (1114112), got {}",
                words.len()
            )));
        }
        self.rules = Some(TermRules::new(spaces, words, stopwords, synonyms, raw, by_length));
        Ok(())
    }

    /// Take rows `[rows, rows + len(terms))` of Python's table that it made outside a batch: the terms and
    /// their hash data as `register` gives them.
    fn add_rows(
        &mut self,
        terms: Vec<Bound<'_, PyString>>,
        digest: Vec<u8>,
        bucket: Vec<u8>,
        sign: Vec<u8>,
        factor: Vec<u8>,
    ) -> PyResult<()> {
        let new = self.checked_rows(0, Vec::new(), (digest, bucket, sign, factor), terms)?;
        self.keep(&[], new);
        Ok(())
    }

    /// What the core decided itself (`decide_terms`) since this was last asked, or None: (the new tokens,
    /// their codes, the terms of the new rows, then the rows' digest bytes, buckets as int64, signs as
    /// float32 and factors as float64, each as little-endian bytes: what `register` answers). Python's table
    /// holds the rows before them; the core forgets them here.
    fn take_learned<'py>(&mut self, py: Python<'py>) -> PyResult<Option<LearnedLists<'py>>> {
        self.take_log(py)
    }

    /// Rows the core decided itself that `take_learned` has not given yet.
    #[getter]
    fn learned_rows(&self) -> usize {
        self.learned.rows()
    }

    /// Rows of hash data held (Python's table rows `[0, rows)`).
    #[getter]
    fn rows(&self) -> usize {
        self.bucket.len()
    }

    /// Forget every token and row (Python cleared its table).
    fn clear(&mut self) {
        self.learned = Learned::default();
        self.codes = Default::default();
        self.term_rows = FxHashMap::default();
        self.digest = Vec::new();
        self.bucket.clear();
        self.sign.clear();
        self.factor.clear();
    }

    /// For a list of token lists (one per text): (the SimHash of each text as an int; the term rows of all
    /// texts, one after the other, int64 little-endian; their weights, float64; each text's number of
    /// terms; each text's total count; the unnormalised vectors, len(texts) x dims float64).
    ///
    /// `register(tokens, rows, learned)` is called (at most once, with the GIL) with the distinct tokens the
    /// core has no code for, first occurrences in batch order, the rows it holds, and what `take_learned`
    /// would give (None when nothing), which Python's table takes first; it returns (the code of each token,
    /// then the digest bytes, buckets as int64, signs as float32 and factors as float64 of rows
    /// `[rows, len(table))`, each as bytes, and their terms).
    ///
    /// Once the core decides new tokens itself (`decide_terms`), `register` is asked only for a batch with
    /// a token that is no UTF-8; what the core decides is kept until `take_learned`.
    fn run<'py>(
        &mut self,
        py: Python<'py>,
        token_lists: Vec<Bound<'py, PyList>>,
        register: Bound<'py, PyAny>,
    ) -> PyResult<TermResults<'py>> {
        let mut tokens: Vec<Bound<'py, PyString>> = Vec::new();
        let mut starts = vec![0usize];
        for list in &token_lists {
            for item in list.iter() {
                tokens.push(item.cast_into::<PyString>()?);
            }
            starts.push(tokens.len());
        }
        let units = tokens.iter().map(code_units).collect::<PyResult<Vec<_>>>()?;
        let threads = pool()?;
        let docs: Vec<Distinct<'_>> = {
            let this = &*self;
            py.detach(|| {
                threads.install(|| {
                    starts
                        .par_windows(2)
                        .map(|w| this.distinct(units[w[0]..w[1]].iter().map(key_of), w[0]))
                        .collect()
                })
            })
        };
        self.finish(py, docs, |_, first| Ok(tokens[first].clone()), &register)
    }

    /// `run` of texts that the core segments itself with `jieba` (a `JiebaCore`: what
    /// `rjieba.Jieba.cut(text, True)` or `JiebaFast.cut(text)` gives each): `texts` are the pieces of all
    /// texts one after the other, `pieces` how many pieces each text has (one each when None). A token
    /// becomes a Python str only when Python asks for it (`take_learned`, `register`).
    ///
    /// The pieces the core does not cut itself (those only jieba itself cuts, and any str with a lone
    /// surrogate, which is no UTF-8) are handed back: `cut_left(pieces)` is called once, with the GIL, with those pieces in
    /// order, and returns the tokens of each (a list of str per piece).
    #[pyo3(signature = (jieba, texts, pieces, register, cut_left = None))]
    fn run_cut<'py>(
        &mut self,
        py: Python<'py>,
        jieba: PyRef<'py, JiebaCore>,
        texts: Vec<Bound<'py, PyString>>,
        pieces: Option<Vec<usize>>,
        register: Bound<'py, PyAny>,
        cut_left: Option<Bound<'py, PyAny>>,
    ) -> PyResult<TermResults<'py>> {
        // None: a str with a lone surrogate, which only Python's tokenizer takes.
        let utf8: Vec<Option<&str>> = texts.iter().map(|t| t.to_str().ok()).collect();
        let mut starts = vec![0usize];
        match pieces {
            None => starts.extend(1..=utf8.len()),
            Some(counts) => {
                for n in counts {
                    starts.push(starts[starts.len() - 1] + n);
                }
                if starts[starts.len() - 1] != utf8.len() {
                    return Err(PyValueError::new_err(format!(
                        "pieces add up to {}, but there are {} texts",
                        starts[starts.len() - 1],
                        utf8.len()
                    )));
                }
            }
        }
        let threads = pool()?;
        let segmenter = &*jieba;
        // Each text cut and counted in one pass; None for a text with a piece the core leaves.
        let mut docs: Vec<Option<Distinct<'_>>> = {
            let this = &*self;
            py.detach(|| {
                threads.install(|| {
                    starts
                        .par_windows(2)
                        .map(|w| {
                            let mut counting = Counting::new(0);
                            for piece in &utf8[w[0]..w[1]] {
                                let tokens = piece.and_then(|p| segmenter.tokens(p))?;
                                counting.add(tokens.into_iter().map(|t| (UTF8, t.as_bytes())));
                            }
                            Some(counting.into_distinct(this))
                        })
                        .collect()
                })
            })
        };
        // The texts left, their pieces cut again: each piece by the core, or by cut_left (at most once).
        let left_texts: Vec<usize> = (0..docs.len()).filter(|&i| docs[i].is_none()).collect();
        let mut cut: Vec<(usize, Option<Vec<&str>>)> = Vec::new();
        for &i in &left_texts {
            for (k, piece) in utf8.iter().enumerate().take(starts[i + 1]).skip(starts[i]) {
                cut.push((k, piece.and_then(|p| segmenter.tokens(p))));
            }
        }
        let left: Vec<usize> = cut.iter().filter(|c| c.1.is_none()).map(|c| c.0).collect();
        let mut given: Vec<Vec<Bound<'py, PyString>>> = Vec::new();
        if !left.is_empty() {
            let cut_left = cut_left.ok_or_else(|| {
                PyValueError::new_err("some pieces are left to Python, and there is no cut_left to cut them")
            })?;
            let asked = PyList::new(py, left.iter().map(|&i| &texts[i]))?;
            given = cut_left.call1((asked,))?.extract()?;
            if given.len() != left.len() {
                return Err(PyValueError::new_err(format!(
                    "cut_left must return the tokens of each of the {} pieces, got {} lists",
                    left.len(),
                    given.len()
                )));
            }
        }
        // A token given that is no UTF-8 (a lone surrogate) is keyed by its code units, as in `run`: such a
        // str is never one the core cuts, so each str still has one key.
        let mut odd: FxHashMap<Key<'_>, &Bound<'py, PyString>> = FxHashMap::default();
        let mut given_keys = Vec::with_capacity(given.len());
        for tokens in &given {
            let mut keys = Vec::with_capacity(tokens.len());
            for t in tokens {
                match t.to_str() {
                    Ok(s) => keys.push((UTF8, s.as_bytes())),
                    Err(_) => {
                        let key = key_of(&code_units(t)?);
                        odd.insert(key, t);
                        keys.push(key);
                    }
                }
            }
            given_keys.push(keys);
        }
        let mut given_keys = given_keys.into_iter();
        let mut pieces_cut = cut.into_iter();
        for &i in &left_texts {
            let mut counting = Counting::new(0);
            for _ in starts[i]..starts[i + 1] {
                match pieces_cut.next().expect("one entry a piece").1 {
                    Some(tokens) => counting.add(tokens.into_iter().map(|t| (UTF8, t.as_bytes()))),
                    None => counting.add(given_keys.next().expect("one list a piece left").into_iter()),
                }
            }
            docs[i] = Some(counting.into_distinct(self));
        }
        let docs: Vec<Distinct<'_>> = docs.into_iter().map(|d| d.expect("every text counted")).collect();
        self.finish(
            py,
            docs,
            |key, _| match odd.get(key) {
                Some(token) => Ok((*token).clone()),
                // SAFETY: UTF8 keys are the bytes of a &str.
                None => Ok(PyString::new(py, unsafe { std::str::from_utf8_unchecked(key.1) })),
            },
            &register,
        )
    }
}

/// What `TermCore.run` gives (see there).
type TermResults<'py> = (
    Bound<'py, PyList>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Vec<usize>,
    Vec<u64>,
    Bound<'py, PyBytes>,
);

impl TermCore {
    /// The codes of the new tokens `keys` (the first occurrence of each at `firsts`; `token(key, first)`
    /// gives its Python str): decided by the core's rules and kept for `take_learned`, or else by
    /// `register`.
    fn learn_new_tokens<'py, 'a>(
        &mut self,
        py: Python<'py>,
        keys: &[Key<'a>],
        firsts: &[usize],
        token: impl Fn(&Key<'a>, usize) -> PyResult<Bound<'py, PyString>>,
        register: &Bound<'py, PyAny>,
    ) -> PyResult<()> {
        let decided = match &self.rules {
            Some(rules) => self.decide(py, &*pool()?, rules, keys),
            None => None,
        };
        if let Some((new, tokens)) = decided {
            self.log_learned(&tokens, &new);
            self.keep(keys, new);
            return Ok(());
        }
        let tokens = keys
            .iter()
            .zip(firsts)
            .map(|(key, &first)| token(key, first))
            .collect::<PyResult<Vec<_>>>()?;
        let rows = self.rows();
        let learned = self.take_log(py)?;
        let (codes, digest, bucket, sign, factor, terms) = register
            .call1((PyList::new(py, tokens)?, rows, learned))?
            .extract()?;
        let new = self.checked_rows(keys.len(), codes, (digest, bucket, sign, factor), terms)?;
        self.keep(keys, new);
        Ok(())
    }

    /// The rest of `run` once each text's distinct tokens are known: codes for the new tokens
    /// (`learn_new_tokens`; `token(key, first)` gives the Python str of one), then the terms of every text.
    fn finish<'py, 'a>(
        &mut self,
        py: Python<'py>,
        docs: Vec<Distinct<'a>>,
        token: impl Fn(&Key<'a>, usize) -> PyResult<Bound<'py, PyString>>,
        register: &Bound<'py, PyAny>,
    ) -> PyResult<TermResults<'py>> {
        let threads = pool()?;
        // The tokens new to the core, once each, in batch order (Python registers them in that order).
        let mut new_keys: Vec<Key<'_>> = Vec::new();
        let mut firsts: Vec<usize> = Vec::new();
        let mut seen: FxHashMap<Key<'_>, ()> = FxHashMap::default();
        for doc in &docs {
            for ((key, &code), &first) in doc.keys.iter().zip(&doc.codes).zip(&doc.first) {
                if code == UNKNOWN && seen.insert(*key, ()).is_none() {
                    new_keys.push(*key);
                    firsts.push(first);
                }
            }
        }
        let mut docs = docs;
        if !new_keys.is_empty() {
            self.learn_new_tokens(py, &new_keys, &firsts, token, register)?;
            for doc in &mut docs {
                for (key, code) in doc.keys.iter().zip(doc.codes.iter_mut()) {
                    if *code == UNKNOWN {
                        *code = self.code(key);
                    }
                }
            }
        }
        let results: Vec<Terms> = {
            let this = &*self;
            py.detach(|| threads.install(|| docs.par_iter().map(|d| this.terms_of(d)).collect()))
        };
        let simhashes = PyList::empty(py);
        for t in &results {
            if self.bits == 64 {
                simhashes.append(t.simhash as u64)?;
            } else {
                simhashes.append(t.simhash)?;
            }
        }
        let total: usize = results.iter().map(|t| t.rows.len()).sum();
        let rows = le_bytes(
            py,
            results.iter().flat_map(|t| t.rows.iter().copied()),
            total,
            i64::to_le_bytes,
        )?;
        let weights = le_bytes(
            py,
            results.iter().flat_map(|t| t.weights.iter().copied()),
            total,
            f64::to_le_bytes,
        )?;
        let vectors = le_bytes(
            py,
            results.iter().flat_map(|t| t.vector.iter().copied()),
            results.len() * self.dims,
            f64::to_le_bytes,
        )?;
        Ok((
            simhashes,
            rows,
            weights,
            results.iter().map(|t| t.rows.len()).collect(),
            results.iter().map(|t| t.length).collect(),
            vectors,
        ))
    }
}
