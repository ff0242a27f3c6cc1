//! Rows of text put together from tables of texts (`esdedup.match.native_kernels.text_rows`): what `dups`
//! prints of a million pairs, whose every distinct value Python has already written once.

use std::collections::HashMap;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::pairs::values_of;

/// Row `x` is `literals[0] + tables[0][codes[0][x]] + literals[1] + ... + tables[k-1][codes[k-1][x]] +
/// literals[k]`, for every `x` of the int64 arrays `codes` (all of one length); the rows from `cuts[i]` to
/// `cuts[i + 1]` (ascending positions, from 0 to the rows' count) are joined by `sep` into text `i` of the
/// list returned. A code outside its table, or cuts that do not cover the rows so, raise ValueError; a table
/// entry that is not a str raises TypeError, and one that is no UTF-8 UnicodeEncodeError. A table given
/// twice (the same list) is read once.
#[pyfunction]
pub fn text_rows<'py>(
    py: Python<'py>,
    literals: Vec<String>,
    codes: Vec<PyBuffer<i64>>,
    tables: Vec<Bound<'py, PyList>>,
    sep: &str,
    cuts: Vec<usize>,
) -> PyResult<Bound<'py, PyList>> {
    if literals.len() != codes.len() + 1 || tables.len() != codes.len() {
        return Err(PyValueError::new_err(format!(
            "text_rows takes one more literal than code arrays and one table a code array: got {} literals, \
             {} code arrays, {} tables",
            literals.len(),
            codes.len(),
            tables.len()
        )));
    }
    let columns = codes
        .iter()
        .map(|buffer| values_of(buffer, "codes"))
        .collect::<PyResult<Vec<&[i64]>>>()?;
    let rows = columns.first().map_or(0, |c| c.len());
    if columns.iter().any(|c| c.len() != rows) {
        return Err(PyValueError::new_err(
            "text_rows' code arrays must be of one length",
        ));
    }
    if cuts.first() != Some(&0) || cuts.last() != Some(&rows) || cuts.windows(2).any(|w| w[0] > w[1]) {
        return Err(PyValueError::new_err(format!(
            "text_rows' cuts must ascend from 0 to the {rows} rows"
        )));
    }
    let items = tables
        .iter()
        .map(|table| table.iter().collect::<Vec<_>>())
        .collect::<Vec<_>>();
    let mut read: HashMap<*mut pyo3::ffi::PyObject, usize> = HashMap::new();
    let mut texts: Vec<Vec<&str>> = Vec::new();
    let mut table_of = Vec::with_capacity(tables.len());
    for (table, entries) in tables.iter().zip(&items) {
        let at = match read.get(&table.as_ptr()) {
            Some(&at) => at,
            None => {
                let strings = entries
                    .iter()
                    .map(|item| item.cast::<PyString>()?.to_str())
                    .collect::<PyResult<Vec<&str>>>()?;
                texts.push(strings);
                read.insert(table.as_ptr(), texts.len() - 1);
                texts.len() - 1
            }
        };
        table_of.push(at);
    }
    let tables: Vec<&[&str]> = table_of.iter().map(|&at| texts[at].as_slice()).collect();
    for (column, table) in columns.iter().zip(&tables) {
        if let Some(bad) = column.iter().find(|&&c| c < 0 || c as usize >= table.len()) {
            return Err(PyValueError::new_err(format!(
                "text_rows: code {bad} is outside its table of {} texts",
                table.len()
            )));
        }
    }
    let out = PyList::empty(py);
    let mut text = String::new();
    for range in cuts.windows(2) {
        text.clear();
        for x in range[0]..range[1] {
            if x > range[0] {
                text.push_str(sep);
            }
            text.push_str(&literals[0]);
            for ((column, table), literal) in columns.iter().zip(&tables).zip(&literals[1..]) {
                text.push_str(table[column[x] as usize]);
                text.push_str(literal);
            }
        }
        out.append(PyString::new(py, &text))?;
    }
    Ok(out)
}
