//! The last steps of `esdedup.fingerprint.normalize` for a batch of texts: case folding, then every run of
//! whitespace made one space and the ends stripped (`" ".join(text.casefold().split())`), with the GIL
//! released and the texts spread over rayon's threads.
//!
//! Python hands over what `str.casefold` does to each code point it changes and which code points
//! `str.split` splits on (`str.isspace`), both from this interpreter (`normalize._fold_tables`), so this
//! module holds no Unicode data of its own. Case folding maps each code point on its own (no context), and
//! no folded character is whitespace, so folding and joining in one pass gives what Python's two steps give.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use rustc_hash::FxHashMap;

use crate::{each_width, rewrite_texts, CodePointStep, Rewritten};

const CODE_POINTS: usize = 0x11_0000;

/// The case folding and whitespace of one interpreter.
#[pyclass(frozen, module = "esdedup_native")]
pub struct FoldCore {
    /// One entry per code point: 0 unchanged, 1 whitespace, 2 folded (to `folds[c]`).
    kind: Vec<u8>,
    folds: FxHashMap<u32, Box<str>>,
}

const KEEP: u8 = 0;
const SPACE: u8 = 1;
const FOLD: u8 = 2;

impl CodePointStep for FoldCore {
    /// One text's folding and whitespace; a lone surrogate (not a char) leaves the text to Python.
    fn rewrite(&self, units: impl ExactSizeIterator<Item = u32> + Clone) -> Rewritten {
        // Unchanged when nothing folds and the only whitespace is single spaces between words.
        let mut same = true;
        let mut prev_space = true; // at the start, a space would be stripped
        let mut last_space = false;
        for c in units.clone() {
            let kind = self.kind[c as usize];
            if (0xD800..0xE000).contains(&c) {
                return Rewritten::Python;
            }
            match kind {
                KEEP => {
                    prev_space = false;
                    last_space = false;
                }
                SPACE => {
                    if c != 0x20 || prev_space {
                        same = false;
                    }
                    prev_space = true;
                    last_space = true;
                }
                _ => same = false,
            }
        }
        if same && !last_space {
            return Rewritten::Same;
        }
        let mut out = String::new();
        let mut pending = false; // whitespace since the last character written
        for c in units {
            match self.kind[c as usize] {
                SPACE => pending = true,
                kind => {
                    if pending && !out.is_empty() {
                        out.push(' ');
                    }
                    pending = false;
                    if kind == FOLD {
                        out.push_str(&self.folds[&c]);
                    } else {
                        out.push(char::from_u32(c).expect("surrogates were handed back"));
                    }
                }
            }
        }
        Rewritten::Changed(out)
    }
}

#[pymethods]
impl FoldCore {
    /// `folds`: (code point, what `str.casefold` makes of it) for every code point it changes; `spaces`:
    /// the code points `str.isspace` is true for.
    #[new]
    fn new(folds: Vec<(u32, String)>, spaces: Vec<u32>) -> PyResult<Self> {
        let mut kind = vec![KEEP; CODE_POINTS];
        for &c in &spaces {
            if c as usize >= CODE_POINTS {
                return Err(PyValueError::new_err(format!("{c} is not a code point")));
            }
            kind[c as usize] = SPACE;
        }
        let mut table = FxHashMap::default();
        for (c, folded) in folds {
            if c as usize >= CODE_POINTS || kind[c as usize] != KEEP || folded.is_empty() {
                return Err(PyValueError::new_err(format!(
                    "U+{c:04X}: a fold must be of a code point that is not whitespace, to some text"
                )));
            }
            if let Some(ch) = folded.chars().find(|&ch| kind[ch as usize] == SPACE) {
                return Err(PyValueError::new_err(format!(
                    "U+{c:04X} folds to whitespace (U+{:04X})",
                    ch as u32
                )));
            }
            kind[c as usize] = FOLD;
            table.insert(c, folded.into_boxed_str());
        }
        Ok(FoldCore { kind, folds: table })
    }

    /// For a list of texts: `" ".join(text.casefold().split())` of each (the same object when nothing
    /// changes), or None for a text with a lone surrogate (Python does it).
    fn fold<'py>(&self, py: Python<'py>, texts: Vec<Bound<'py, PyString>>) -> PyResult<Bound<'py, PyList>> {
        rewrite_texts(py, texts, |t| each_width(self, t))
    }
}
