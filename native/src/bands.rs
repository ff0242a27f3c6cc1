//! SimHash band keys (`esdedup.fingerprint.bands.BandLayout.keys`) for many fingerprints at once: building
//! them in Python is a few integer operations and an f-string per table per text, as much as the rest of a
//! short text's fingerprint.
//!
//! The layout stays Python's: the caller passes each table's blocks as (start bit, width), in the order
//! `BandLayout.tables` lists them. Key t of a fingerprint h is its blocks' bits, the first block lowest,
//! written `"{t}:{value:0{digits}x}"` with `digits = (sum of the widths + 3) / 4`, as `BandLayout.format_key`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::fmt::Write;

/// For each fingerprint (an int below 2^128), its key in every table.
#[pyfunction]
pub fn band_keys(simhashes: Vec<u128>, tables: Vec<Vec<(u32, u32)>>) -> PyResult<Vec<Vec<String>>> {
    for blocks in &tables {
        let width: u32 = blocks.iter().map(|&(_, w)| w).sum();
        if width > 64 || blocks.iter().any(|&(start, w)| w == 0 || start + w > 128) {
            return Err(PyValueError::new_err(
                "a table's blocks must lie within 128 bits and make a key of at most 64",
            ));
        }
    }
    Ok(simhashes
        .iter()
        .map(|&h| {
            tables
                .iter()
                .enumerate()
                .map(|(t, blocks)| {
                    let (mut value, mut shift) = (0u64, 0u32);
                    for &(start, width) in blocks {
                        let mask = if width == 64 {
                            u64::MAX
                        } else {
                            (1u64 << width) - 1
                        };
                        value |= (((h >> start) as u64) & mask) << shift;
                        shift += width;
                    }
                    let digits = (shift as usize).div_ceil(4);
                    let mut key = String::with_capacity(4 + digits);
                    write!(key, "{t}:{value:0digits$x}").expect("writing to a String");
                    key
                })
                .collect()
        })
        .collect())
}
