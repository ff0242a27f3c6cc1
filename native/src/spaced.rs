//! `esdedup.store.local.browse.spaced` of a batch of texts, with the GIL released: a space on each side of
//! every character of the given ranges (the CJK blocks `browse._CJK_RANGES` names, handed over by Python,
//! which keeps the one list), so that SQLite's FTS5 ``unicode61`` tokenizer makes each one a token.

use pyo3::prelude::*;
use pyo3::types::string::PyStringData;
use pyo3::types::{PyList, PyString};

use crate::{each_width, rewrite_texts, CodePointStep, Rewritten};

/// `spaced` of each of `texts` (`ranges`: inclusive code point ranges): the same str where nothing
/// changes, None where Python is to do the text (a lone surrogate), else the new text.
#[pyfunction]
pub fn spaced_texts<'py>(
    py: Python<'py>,
    texts: Vec<Bound<'py, PyString>>,
    ranges: Vec<(u32, u32)>,
) -> PyResult<Bound<'py, PyList>> {
    let below = ranges.iter().map(|&(lo, _)| lo).min().unwrap_or(u32::MAX);
    rewrite_texts(py, texts, |units| match units {
        PyStringData::Ucs1(_) if below > 0xFF => Rewritten::Same,
        _ => each_width(&Spaced(&ranges), units),
    })
}

/// Spaces around the characters of the ranges (inclusive code point ranges).
struct Spaced<'a>(&'a [(u32, u32)]);

impl CodePointStep for Spaced<'_> {
    fn rewrite(&self, units: impl ExactSizeIterator<Item = u32> + Clone) -> Rewritten {
        spaced_one(units, self.0)
    }
}

fn spaced_one(units: impl Iterator<Item = u32>, ranges: &[(u32, u32)]) -> Rewritten {
    let mut out = String::new();
    let mut changed = false;
    for c in units {
        let Some(ch) = char::from_u32(c) else {
            return Rewritten::Python;
        };
        if ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) {
            out.push(' ');
            out.push(ch);
            out.push(' ');
            changed = true;
        } else {
            out.push(ch);
        }
    }
    if changed {
        Rewritten::Changed(out)
    } else {
        Rewritten::Same
    }
}
