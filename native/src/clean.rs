//! The first step of `esdedup.fingerprint.normalize` for a batch of texts: junk characters (controls,
//! lone surrogates, invisible format characters) removed and the characters NFKC maps one to one replaced,
//! with the GIL released and the texts spread over rayon's threads.
//!
//! Python's `normalize._tables()` classifies every BMP code point with its own `unicodedata` (SAFE, MAP1 with
//! its replacement, OTHER, JUNK) and hands the tables over, so this module holds no Unicode data of its own
//! and cannot disagree with the interpreter's Unicode version. A text with only SAFE, MAP1 and JUNK
//! characters is what `_clean_nfkc` makes of it by that table alone; a text with any OTHER character (a
//! combining mark, a ligature, Hangul, anything past the BMP) needs unicodedata's NFKC, and is handed back to
//! Python untouched.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::string::PyStringData;
use pyo3::types::{PyList, PyString};

use crate::{each_width, rewrite_texts, CodePointStep, Rewritten};

const SAFE: u8 = 0;
const MAP1: u8 = 1;
const JUNK: u8 = 3;
const BMP: usize = 0x1_0000;

/// The tables of one interpreter's `normalize._tables()`.
#[pyclass(frozen, module = "esdedup_native")]
pub struct CleanCore {
    /// Class of each BMP code point (SAFE, MAP1, OTHER, JUNK).
    classes: Vec<u8>,
    /// What a MAP1 code point becomes (a SAFE BMP code point).
    replace: Vec<char>,
}

impl CodePointStep for CleanCore {
    /// One text cleaned: the same when every character is SAFE; a character that needs unicodedata leaves
    /// the text to Python's `_clean_nfkc`.
    fn rewrite(&self, units: impl ExactSizeIterator<Item = u32> + Clone) -> Rewritten {
        let mut all_safe = true;
        for c in units.clone() {
            let c = c as usize;
            if c >= BMP {
                return Rewritten::Python;
            }
            match self.classes[c] {
                SAFE => {}
                MAP1 | JUNK => all_safe = false,
                _ => return Rewritten::Python,
            }
        }
        if all_safe {
            return Rewritten::Same;
        }
        let mut out = String::new();
        for c in units {
            let c = c as usize;
            match self.classes[c] {
                // A SAFE code point is never a surrogate (those are JUNK), so it is a char.
                SAFE => out.push(char::from_u32(c as u32).expect("a SAFE code point is a scalar value")),
                MAP1 => out.push(self.replace[c]),
                _ => {}
            }
        }
        Rewritten::Changed(out)
    }
}

#[pymethods]
impl CleanCore {
    /// `classes`: one byte per BMP code point and one more (the class of everything past the BMP);
    /// `replace`: the replacement of each BMP code point, little-endian uint32 (read for MAP1 ones only).
    #[new]
    fn new(classes: &[u8], replace: &[u8]) -> PyResult<Self> {
        if classes.len() != BMP + 1 || replace.len() != BMP * 4 {
            return Err(PyValueError::new_err(format!(
                "classes needs {} bytes and replace {} (got {} and {})",
                BMP + 1,
                BMP * 4,
                classes.len(),
                replace.len()
            )));
        }
        let mut table = Vec::with_capacity(BMP);
        for (c, b) in replace.chunks_exact(4).enumerate() {
            let target = u32::from_le_bytes(b.try_into().expect("4 bytes"));
            let ok = (target as usize) < BMP && classes[target as usize] == SAFE;
            if classes[c] == MAP1 && !ok {
                return Err(PyValueError::new_err(format!(
                    "U+{c:04X} is MAP1 but maps to U+{target:04X}, which is not a SAFE BMP code point"
                )));
            }
            table.push(char::from_u32(target).unwrap_or('\u{FFFD}'));
        }
        Ok(CleanCore {
            classes: classes[..BMP].to_vec(),
            replace: table,
        })
    }

    /// For a list of texts: each text cleaned (the same object when nothing changes), or None for a text
    /// the table cannot clean alone (Python's `_clean_nfkc` does it).
    fn clean<'py>(&self, py: Python<'py>, texts: Vec<Bound<'py, PyString>>) -> PyResult<Bound<'py, PyList>> {
        rewrite_texts(py, texts, |t| match t {
            // A str stored four bytes a code point has one past the BMP.
            PyStringData::Ucs4(_) => Rewritten::Python,
            _ => each_width(self, t),
        })
    }
}
