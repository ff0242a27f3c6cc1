//! esdedup's native core for the per-document MinHash step: normalised texts in, each text's b-bit MinHash
//! signature, LSH band keys and number of distinct character n-grams out, for a whole batch at once with
//! the GIL released and the texts spread over rayon's threads.
//!
//! Every value is the one `esdedup/fingerprint/minhash.py` and `fingerprinter.py` compute (the Python
//! side is the definition; `tests/unit/test_native.py` checks the two agree bit for bit):
//!
//! * the word characters of a text are its code points whose entry in the caller's table is non-zero
//!   (Python passes `str.isalnum` of every code point, so both sides use the same Unicode database);
//! * an n-gram hashes to `h = SEED; h = mix64(h ^ c)` per code point `c`, then `h >> 32` (`shingles`); a text
//!   with fewer word characters than n is one n-gram, itself, unless it is longer than the chunk size, which
//!   the Python path reads a chunk at a time and so finds no n-gram in;
//! * permutation i maps a hash x to `(a_i * x + b_i) mod 2^64 >> 32` (the caller passes a and b); the
//!   signature keeps the low 16 bits of each permutation's minimum over the distinct hashes;
//! * band i hashes `h = mix64(i)`, then `h = mix64(h ^ v)` for its `rows` signature values; its key is the
//!   top 40 bits of `h`, in decimal.

mod bands;
mod clean;
mod diversify;
mod documents;
mod esbulk;
mod fold;
mod hashslots;
mod hits;
mod hmm;
mod jsonl;
mod jsonout;
mod kernels;
mod pairs;
mod runkeys;
mod segment;
mod shingles;
mod spaced;
mod sqlread;
mod sqlrows;
mod t2s;
mod termrules;
mod terms;
mod textrows;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::string::PyStringData;
use pyo3::types::{PyByteArray, PyList, PyString};
use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::{Arc, Mutex};

use kernels::{mix64, Kernel, Permutations};

/// Bumped whenever what this module computes, or how it is called, changes; `esdedup.util.native`
/// uses the extension only when it expects this version.
const API_VERSION: u32 = 18;

const CODE_POINTS: usize = 0x11_0000;
const SIGNATURE_MASK: u32 = (1 << 16) - 1;
const KEY_SHIFT: u32 = 64 - 40;
/// Distinct hashes above which one text's minima are taken on several threads.
const PARALLEL_MINIMA: usize = 1 << 15;

/// The threads the batches run on, and the process that made them. A child made by fork() (Python's
/// multiprocessing on Linux does that) has none of its parent's threads, and work handed to them would wait
/// forever: the child makes threads of its own.
static POOL: Mutex<Option<(u32, Arc<ThreadPool>)>> = Mutex::new(None);

/// This process's threads (as many as `RAYON_NUM_THREADS`, by default one per CPU).
pub(crate) fn pool() -> PyResult<Arc<ThreadPool>> {
    let pid = std::process::id();
    let mut slot = POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((owner, threads)) = slot.as_ref() {
        if *owner == pid {
            return Ok(threads.clone());
        }
    }
    let threads = ThreadPoolBuilder::new()
        .thread_name(|i| format!("esdedup-native-{i}"))
        .build()
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(format!("cannot start threads: {e}")))?;
    let threads = Arc::new(threads);
    if let Some(inherited) = slot.replace((pid, threads.clone())) {
        // The parent's pool: its threads do not exist in this process, so there is nothing to stop.
        std::mem::forget(inherited);
    }
    Ok(threads)
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
    kernel: Kernel,
}

impl MinHashCore {
    /// The distinct n-gram hashes of a text's word characters.
    fn distinct_hashes(&self, text: &PyStringData<'_>) -> Vec<u32> {
        let (kernel, is_word, n, chunk) = (self.kernel, &self.is_word[..], self.ngram, self.chunk);
        match text {
            PyStringData::Ucs1(units) => {
                shingles::distinct_hashes(kernel, units.iter().map(|&c| u32::from(c)), is_word, n, chunk)
            }
            PyStringData::Ucs2(units) => {
                shingles::distinct_hashes(kernel, units.iter().map(|&c| u32::from(c)), is_word, n, chunk)
            }
            PyStringData::Ucs4(units) => {
                shingles::distinct_hashes(kernel, units.iter().copied(), is_word, n, chunk)
            }
        }
    }

    /// Each permutation's minimum over the hashes, on several threads when there are many.
    fn minima(&self, hashes: &[u32]) -> Vec<u32> {
        let (perms, kernel) = (&self.perms, self.kernel);
        if hashes.len() <= PARALLEL_MINIMA {
            return perms.minima(kernel, hashes);
        }
        hashes
            .par_chunks(PARALLEL_MINIMA / 4)
            .map(|part| perms.minima(kernel, part))
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
                values
                    .iter()
                    .fold(mix64(band as u64), |h, &v| mix64(h ^ u64::from(v)))
                    >> KEY_SHIFT
            })
            .collect()
    }

    fn sketch_one(&self, text: &PyStringData<'_>) -> Sketch {
        let hashes = self.distinct_hashes(text);
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

/// What a table-driven step of normalisation (`clean.rs`, `t2s.rs`, `fold.rs`) makes of one text.
pub(crate) enum Rewritten {
    /// Nothing changes: the text itself.
    Same,
    /// The tables cannot do this text alone: Python does it.
    Python,
    Changed(String),
}

/// A table-driven step over one text's code points (`each_width` reads them from any of CPython's storage
/// widths).
pub(crate) trait CodePointStep {
    fn rewrite(&self, units: impl ExactSizeIterator<Item = u32> + Clone) -> Rewritten;
}

/// `step` of one text, its code units read as code points whatever their width.
pub(crate) fn each_width(step: &impl CodePointStep, text: &PyStringData<'_>) -> Rewritten {
    match text {
        PyStringData::Ucs1(u) => step.rewrite(u.iter().map(|&c| u32::from(c))),
        PyStringData::Ucs2(u) => step.rewrite(u.iter().map(|&c| u32::from(c))),
        PyStringData::Ucs4(u) => step.rewrite(u.iter().copied()),
    }
}

/// `step` of each of `texts` on the core's threads, the GIL released: a list of the same str object where
/// nothing changes, None where Python is to do the text, else the new text.
pub(crate) fn rewrite_texts<'py>(
    py: Python<'py>,
    texts: Vec<Bound<'py, PyString>>,
    step: impl Fn(&PyStringData<'_>) -> Rewritten + Sync,
) -> PyResult<Bound<'py, PyList>> {
    let units = texts.iter().map(code_units).collect::<PyResult<Vec<_>>>()?;
    let threads = pool()?;
    let rewritten: Vec<Rewritten> = py.detach(|| threads.install(|| units.par_iter().map(&step).collect()));
    let out = PyList::empty(py);
    for (text, r) in texts.iter().zip(rewritten) {
        match r {
            Rewritten::Same => out.append(text)?,
            Rewritten::Python => out.append(py.None())?,
            Rewritten::Changed(s) => out.append(PyString::new(py, &s))?,
        }
    }
    Ok(out)
}

fn invalid(message: String) -> PyErr {
    PyValueError::new_err(message)
}

#[pymethods]
impl MinHashCore {
    /// `word_table`: one byte per code point (0x110000), non-zero for a word character; `a`, `b`: the
    /// permutation coefficients (one pair per signature value); `ngram`: the n of the character n-grams;
    /// `bands` x `rows`: the LSH layout; `chunk`: the word characters the Python path turns into n-grams at
    /// a time (a text longer than that with fewer than `ngram` word characters has no n-gram); `kernel`:
    /// which compiled form of the loops runs (`kernels()`), by default the fastest this CPU has.
    #[new]
    #[pyo3(signature = (word_table, a, b, ngram, bands, rows, chunk, kernel = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        word_table: &[u8],
        a: Vec<u64>,
        b: Vec<u64>,
        ngram: usize,
        bands: usize,
        rows: usize,
        chunk: usize,
        kernel: Option<&str>,
    ) -> PyResult<Self> {
        if word_table.len() != CODE_POINTS {
            return Err(invalid(format!(
                "word_table needs one byte per code point ({CODE_POINTS}), got {}",
                word_table.len()
            )));
        }
        if a.is_empty() || a.len() != b.len() {
            return Err(invalid(format!(
                "a and b need one coefficient per permutation each, got {} and {}",
                a.len(),
                b.len()
            )));
        }
        if ngram < 1 || chunk < 1 {
            return Err(invalid(format!(
                "ngram ({ngram}) and chunk ({chunk}) must be >= 1"
            )));
        }
        if bands < 1 || rows < 1 || bands * rows > a.len() {
            return Err(invalid(format!(
                "{bands} bands of {rows} rows need {} signature values, the permutations give {}",
                bands * rows,
                a.len()
            )));
        }
        let kernel = match kernel {
            None => Kernel::best(),
            Some(name) => *Kernel::ALL
                .iter()
                .find(|k| k.name() == name && k.supported())
                .ok_or_else(|| {
                    invalid(format!(
                        "kernel '{name}' does not run on this CPU, which runs: {}",
                        supported_kernels().join(", ")
                    ))
                })?,
        };
        let is_word = word_table.iter().map(|&v| v != 0).collect();
        Ok(MinHashCore {
            is_word,
            perms: Permutations::new(&a, &b),
            ngram,
            bands,
            rows,
            chunk,
            kernel,
        })
    }

    #[getter]
    fn n_perm(&self) -> usize {
        self.perms.count
    }

    /// The compiled form of the loops this core runs.
    #[getter]
    fn kernel(&self) -> &'static str {
        self.kernel.name()
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
        let threads = pool()?;
        let sketches: Vec<Sketch> =
            py.detach(|| threads.install(|| units.par_iter().map(|t| self.sketch_one(t)).collect()));
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
            keys.append(sketch.keys.iter().map(u64::to_string).collect::<Vec<String>>())?;
        }
        Ok((signatures, keys, sketches.iter().map(|s| s.shingles).collect()))
    }
}

/// The compiled forms of the loops this CPU runs, slowest first.
#[pyfunction]
#[pyo3(name = "kernels")]
fn supported_kernels() -> Vec<&'static str> {
    Kernel::ALL
        .iter()
        .filter(|k| k.supported())
        .map(|k| k.name())
        .collect()
}

#[pymodule]
fn esdedup_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("API_VERSION", API_VERSION)?;
    m.add_class::<MinHashCore>()?;
    m.add_class::<terms::TermCore>()?;
    m.add_class::<clean::CleanCore>()?;
    m.add_class::<segment::JiebaCore>()?;
    m.add_class::<fold::FoldCore>()?;
    m.add_class::<t2s::OpenccCore>()?;
    m.add_class::<runkeys::RunKeys>()?;
    m.add_class::<sqlrows::RowWriter>()?;
    m.add_function(wrap_pyfunction!(runkeys::key_hashes, m)?)?;
    m.add_function(wrap_pyfunction!(runkeys::frozen_lookup, m)?)?;
    m.add_function(wrap_pyfunction!(runkeys::bucket_starts, m)?)?;
    m.add_function(wrap_pyfunction!(runkeys::merge_frozen, m)?)?;
    m.add_function(wrap_pyfunction!(runkeys::batch_peers, m)?)?;
    m.add_function(wrap_pyfunction!(sqlread::read_signature_columns, m)?)?;
    m.add_function(wrap_pyfunction!(spaced::spaced_texts, m)?)?;
    m.add_function(wrap_pyfunction!(documents::dedup_members, m)?)?;
    m.add_function(wrap_pyfunction!(esbulk::bulk_document_lines, m)?)?;
    m.add_function(wrap_pyfunction!(supported_kernels, m)?)?;
    m.add_function(wrap_pyfunction!(diversify::equal_positions, m)?)?;
    m.add_function(wrap_pyfunction!(diversify::decode_base64, m)?)?;
    m.add_function(wrap_pyfunction!(diversify::diversify_page, m)?)?;
    m.add_function(wrap_pyfunction!(hits::signature_hits, m)?)?;
    m.add_function(wrap_pyfunction!(bands::band_keys, m)?)?;
    m.add_function(wrap_pyfunction!(pairs::lsh_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(pairs::pair_equal_positions, m)?)?;
    m.add_function(wrap_pyfunction!(textrows::text_rows, m)?)?;
    m.add_function(wrap_pyfunction!(jsonl::jsonl_records, m)?)?;
    Ok(())
}
