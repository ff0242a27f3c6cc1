//! The embedded store's signature columns read in the extension (`esdedup.store.local.store.LocalStore
//! .signature_columns`, what all-pairs search reads of every document): through a connection of its own to
//! the file, on the SQLite library Python's `sqlite3` uses (`sqlrows.rs` finds it), each row's values read
//! in place, with no Python tuple a row, and each signature widened straight into the caller's array.
//!
//! The statements come from Python, which stays the definition: this steps them and reads the columns.

use std::ffi::c_int;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use crate::pairs::values_of_mut;
use crate::sqlrows::{Connection, Failure, Statement};

const SQLITE_INTEGER: c_int = 1;
const SQLITE_TEXT: c_int = 3;
const SQLITE_BLOB: c_int = 4;
const SQLITE_NULL: c_int = 5;

/// The types of a row's columns that this reads as Python's `sqlite3` would (another type: the caller reads
/// the rows): id and SimHash text, chars an integer or NULL, shingles an integer, the signature a blob.
fn of_types(rows: &Statement<'_>) -> bool {
    rows.kind(0) == SQLITE_TEXT
        && rows.kind(1) == SQLITE_TEXT
        && matches!(rows.kind(2), SQLITE_INTEGER | SQLITE_NULL)
        && rows.kind(3) == SQLITE_INTEGER
        && rows.kind(4) == SQLITE_BLOB
}

/// What `read_signature_columns` gives: the signatures' array, the ids, the SimHash, character and shingle
/// counts (little-endian uint64, int64, int64 bytes), and how many rows it read.
type Columns<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyList>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    usize,
);

fn failed(what: &str, (code, message): Failure) -> PyErr {
    PyRuntimeError::new_err(format!("{what}: {message} (code {code})"))
}

/// One read transaction on the file `path` (through the SQLite of `module`, of `version`: see
/// `RowWriter::open`): `count_sql` gives a number of rows, `allocate(count)` a C-contiguous uint32 array of
/// at least that many rows of `perm` values, and `rows_sql` (its one parameter bound to `size`) the rows
/// (id TEXT, SimHash TEXT of hex digits, chars INTEGER or NULL, shingles INTEGER, signature BLOB of `perm`
/// little-endian uint16 values), which fill the array's first rows. None when the library cannot be used
/// so, or a row is not of those types (`of_types`; a SimHash of more than 16 hex digits, an id that is not
/// UTF-8): the caller reads the rows itself then. SQLite's failures raise RuntimeError.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn read_signature_columns<'py>(
    py: Python<'py>,
    module: &[u8],
    version: c_int,
    path: &[u8],
    busy_ms: c_int,
    count_sql: &str,
    rows_sql: &str,
    size: i64,
    perm: usize,
    allocate: &Bound<'py, PyAny>,
) -> PyResult<Option<Columns<'py>>> {
    let Some(connection) = Connection::open(module, version, path, busy_ms, &[])? else {
        return Ok(None);
    };
    connection.exec("BEGIN").map_err(|f| failed("BEGIN", f))?;
    let query = Query {
        count_sql,
        rows_sql,
        size,
        perm,
    };
    let read = read_rows(py, &connection, &query, allocate);
    // A read transaction: nothing to keep or undo, whatever the read did.
    let _ = connection.exec("COMMIT");
    read
}

/// What `read_signature_columns` was asked to read.
struct Query<'a> {
    count_sql: &'a str,
    rows_sql: &'a str,
    size: i64,
    perm: usize,
}

fn read_rows<'py>(
    py: Python<'py>,
    connection: &Connection,
    query: &Query<'_>,
    allocate: &Bound<'py, PyAny>,
) -> PyResult<Option<Columns<'py>>> {
    let Query {
        count_sql,
        rows_sql,
        size,
        perm,
    } = *query;
    let counted = connection.prepare(count_sql).map_err(|f| failed(count_sql, f))?;
    if !counted.step().map_err(|f| failed(count_sql, f))? {
        return Err(PyValueError::new_err(format!("{count_sql} gave no row")));
    }
    let count = counted.int(0).max(0) as usize;
    drop(counted);
    let array = allocate.call1((count,))?;
    let mut buffer = PyBuffer::<u32>::get(&array)?;
    // The array `allocate` just made for this call.
    let values = values_of_mut(&mut buffer, "allocate's uint32 array")?;
    if values.len() < count * perm {
        return Err(PyValueError::new_err(format!(
            "allocate gave {} values for {count} rows of {perm}",
            values.len()
        )));
    }
    let rows = connection.prepare(rows_sql).map_err(|f| failed(rows_sql, f))?;
    rows.bind_int(1, size).map_err(|f| failed(rows_sql, f))?;
    let ids = PyList::empty(py);
    let (mut simhash, mut chars, mut shingles) = (Vec::new(), Vec::new(), Vec::new());
    let mut n = 0;
    while rows.step().map_err(|f| failed(rows_sql, f))? {
        if n == count {
            return Err(PyValueError::new_err(format!(
                "{rows_sql} gave more rows than {count_sql} counted"
            )));
        }
        if !of_types(&rows) {
            return Ok(None);
        }
        let Some(id) = rows.text(0).and_then(|b| std::str::from_utf8(b).ok()) else {
            return Ok(None);
        };
        let Some(hash) = rows.text(1).and_then(hex) else {
            return Ok(None);
        };
        let signature = rows.blob(4).unwrap_or_default();
        if signature.len() != 2 * perm {
            return Ok(None);
        }
        ids.append(PyString::new(py, id))?;
        simhash.extend_from_slice(&hash.to_le_bytes());
        // chars NULL reads 0, as `sqlite3`'s `r[2] or 0` gives it.
        chars.extend_from_slice(&rows.int(2).to_le_bytes());
        shingles.extend_from_slice(&rows.int(3).to_le_bytes());
        for (out, value) in values[n * perm..(n + 1) * perm]
            .iter_mut()
            .zip(signature.chunks_exact(2))
        {
            *out = u32::from(u16::from_le_bytes([value[0], value[1]]));
        }
        n += 1;
    }
    drop(buffer);
    Ok(Some((
        array,
        ids,
        PyBytes::new(py, &simhash),
        PyBytes::new(py, &chars),
        PyBytes::new(py, &shingles),
        n,
    )))
}

/// The value of 1 to 16 hex digits, as Python's `int(text, 16)` reads them (None for anything else).
fn hex(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 16 {
        return None;
    }
    text.iter().try_fold(0u64, |value, &c| {
        let digit = (c as char).to_digit(16)?;
        Some(value << 4 | u64::from(digit))
    })
}
