//! The embedded store's signature columns read in the extension (`esdedup.store.local.store.LocalStore
//! .signature_columns`, what all-pairs search reads of every document): through a connection of its own to
//! the file, on the SQLite library Python's `sqlite3` uses (`sqlrows.rs` finds it), each row's values read
//! in place, with no Python tuple a row, and each signature widened straight into the caller's array; the
//! rows sorted by id here, once read in the file's order.
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
/// little-endian uint16 values) in any order, which fill the array's first rows sorted by id (`id_order`):
/// the file's own order reads it from start to end. None when the library cannot be used
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
    // Each of a size known at once: a column grown by doubling leaves freed blocks that the process keeps
    // through the join that follows, where its memory peaks.
    let mut ids: Vec<Bound<'py, PyString>> = Vec::with_capacity(count);
    let (mut simhash, mut chars, mut shingles) = (
        Vec::with_capacity(count),
        Vec::with_capacity(count),
        Vec::with_capacity(count),
    );
    // Whether the ids came in their order, and the last one read (the file's order is the order they were
    // written in, which is theirs for ids such as a counter's).
    let (mut in_order, mut last) = (true, Vec::new());
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
        if in_order {
            in_order = last.as_slice() <= id.as_bytes();
            last.clear();
            last.extend_from_slice(id.as_bytes());
        }
        ids.push(PyString::new(py, id));
        simhash.push(hash);
        // chars NULL reads 0, as `sqlite3`'s `r[2] or 0` gives it.
        chars.push(rows.int(2));
        shingles.push(rows.int(3));
        for (out, value) in values[n * perm..(n + 1) * perm]
            .iter_mut()
            .zip(signature.chunks_exact(2))
        {
            *out = u32::from(u16::from_le_bytes([value[0], value[1]]));
        }
        n += 1;
    }
    let order = if in_order {
        None
    } else {
        let keys = ids
            .iter()
            .map(|id| id.to_str())
            .collect::<PyResult<Vec<&str>>>()?;
        Some(id_order(&keys))
    };
    if let Some(order) = &order {
        permute_rows(&mut values[..n * perm], perm, order);
    }
    drop(buffer);
    let at = |i: usize| order.as_ref().map_or(i, |order| order[i] as usize);
    let list = PyList::new(py, (0..n).map(|i| &ids[at(i)]))?;
    drop(ids);
    // Each column's little-endian bytes written straight into its Python bytes, in id order.
    let column = |word: &dyn Fn(usize) -> [u8; 8]| {
        PyBytes::new_with(py, 8 * n, |out| {
            for (i, slot) in out.chunks_exact_mut(8).enumerate() {
                slot.copy_from_slice(&word(at(i)));
            }
            Ok(())
        })
    };
    Ok(Some((
        array,
        list,
        column(&|i| simhash[i].to_le_bytes())?,
        column(&|i| chars[i].to_le_bytes())?,
        column(&|i| shingles[i].to_le_bytes())?,
        n,
    )))
}

/// The positions of `ids` in the order of their bytes (SQLite's `ORDER BY` of UTF-8 text, which is the order
/// of the code points, Python's order of `str`). Sorted by the eight bytes that follow the prefix every id
/// shares (a URL's scheme and host, say), the whole ids read only where those are equal: each whole id read
/// is a string somewhere else in the heap, the eight bytes sit beside each other.
fn id_order(ids: &[&str]) -> Vec<u32> {
    let first = ids.first().map_or(&b""[..], |id| id.as_bytes());
    let shared = ids.iter().fold(first.len(), |n, id| {
        n.min(
            first
                .iter()
                .zip(id.as_bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        )
    });
    // A file holds fewer rows than 2^32 with a signature each (16 TiB of them).
    let mut keyed: Vec<(u64, u32)> = (0..ids.len() as u32)
        .map(|i| (word_after(ids[i as usize].as_bytes(), shared), i))
        .collect();
    keyed.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| ids[a.1 as usize].cmp(ids[b.1 as usize]))
    });
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// The eight bytes of `id` from `at` as a big-endian number, zeros past its end: ids that differ there are
/// in the order of these numbers.
fn word_after(id: &[u8], at: usize) -> u64 {
    let tail = id.get(at..).unwrap_or_default();
    let mut word = [0u8; 8];
    let n = tail.len().min(8);
    word[..n].copy_from_slice(&tail[..n]);
    u64::from_be_bytes(word)
}

/// Put the rows of `width` values of `values` in `order` (row k becomes the row that was at `order[k]`) in
/// place, a cycle of the permutation at a time through one spare row: a million signatures take half a
/// gigabyte, which a sorted copy would take again.
fn permute_rows(values: &mut [u32], width: usize, order: &[u32]) {
    let mut placed = vec![false; order.len()];
    let mut spare = vec![0u32; width];
    for start in 0..order.len() {
        if placed[start] || order[start] as usize == start {
            continue;
        }
        spare.copy_from_slice(&values[start * width..(start + 1) * width]);
        let mut to = start;
        loop {
            placed[to] = true;
            let from = order[to] as usize;
            if from == start {
                values[to * width..(to + 1) * width].copy_from_slice(&spare);
                break;
            }
            values.copy_within(from * width..(from + 1) * width, to * width);
            to = from;
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_put_in_the_order_given() {
        // Two cycles (0 -> 2 -> 3 -> 0, 1 <-> 4) and a row left in place (5).
        let order = [2, 4, 3, 0, 1, 5];
        let mut values: Vec<u32> = (0..6).flat_map(|r| [r * 10, r * 10 + 1]).collect();
        permute_rows(&mut values, 2, &order);
        let expected: Vec<u32> = order.iter().flat_map(|&r| [r * 10, r * 10 + 1]).collect();
        assert_eq!(values, expected);
    }

    #[test]
    fn ids_are_ordered_by_their_bytes() {
        // U+FF5E and U+1D11E: UTF-16 would put the second first, UTF-8 bytes (and code points) after.
        let ids = ["b", "\u{1d11e}", "a", "\u{ff5e}", "ab"];
        assert_eq!(id_order(&ids), vec![2, 4, 0, 3, 1]);
        // A shared prefix, ids equal in the eight bytes after it, and a NUL byte against the end of an id.
        let ids = [
            "https://h/a/0123456789z",
            "https://h/a/0123456789",
            "https://h/a/01234567\0",
            "https://h/a/01234567",
            "https://h/b",
        ];
        assert_eq!(id_order(&ids), vec![3, 2, 1, 0, 4]);
    }
}
