//! The lines of an Elasticsearch `_bulk` request that writes documents whole, for a whole batch
//! (`esdedup.store.elastic.writes`: the action line, then the document's JSON, each document's two lines as
//! one bytes object). The Python definition is `writes._action_lines` of a document whose `dedup` fields
//! were encoded in advance (`NewDoc.dedup_json`): the article fields as orjson writes them (the `dedup` key
//! left out), then `"dedup":{` with the encoded members and the labels (`cluster_id`, `duplicate_of`,
//! `seq` and `cluster_seq` when `seq` is not zero).
//!
//! The Python objects are read with the GIL held; the bytes are written with it released. Only what these
//! bytes reproduce exactly is encoded here: strings (keys and values) that are valid Unicode, integers of 64
//! bits, booleans and None. A document with anything else (a float, a list, a nested object, a lone
//! surrogate, a big integer) or without its `dedup` fields encoded gets None, and Python encodes it.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyString};

/// One article field's value.
enum Value {
    Str(PyBackedStr),
    Int(i128),
    Bool(bool),
    Null,
}

/// One document, read out of its `NewDoc`.
struct Doc {
    id: PyBackedStr,
    fields: Vec<(PyBackedStr, Value)>,
    dedup: Vec<u8>,
    cluster_id: Option<PyBackedStr>,
    duplicate_of: Option<PyBackedStr>,
    seq: i128,
    cluster_seq: i128,
}

/// A string as orjson writes it: `"` and `\` escaped, the control characters below U+0020 as `\b`, `\t`,
/// `\n`, `\f`, `\r` or `\u00xx` (lowercase hex), everything else as it is.
fn push_json_string(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0c => b"\\f",
            b'\r' => b"\\r",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// An integer that orjson writes (a signed or unsigned 64-bit value), or None.
fn int_value(value: &Bound<'_, PyAny>) -> Option<i128> {
    if value.is_instance_of::<PyBool>() {
        return None; // orjson writes `true`, not 1
    }
    if let Ok(v) = value.extract::<i64>() {
        return Some(i128::from(v));
    }
    value.extract::<u64>().ok().map(i128::from)
}

fn field_value(value: &Bound<'_, PyAny>) -> Option<Value> {
    if value.is_none() {
        return Some(Value::Null);
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Some(Value::Bool(b.is_true()));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return s.extract::<PyBackedStr>().ok().map(Value::Str);
    }
    if value.is_instance_of::<PyInt>() {
        return int_value(value).map(Value::Int);
    }
    None
}

fn optional_str(value: Bound<'_, PyAny>) -> Option<Option<PyBackedStr>> {
    if value.is_none() {
        return Some(None);
    }
    value
        .cast::<PyString>()
        .ok()?
        .extract::<PyBackedStr>()
        .ok()
        .map(Some)
}

/// A `NewDoc` read out, or None when these bytes would not be orjson's (see the module docstring).
fn read_doc(doc: &Bound<'_, PyAny>, dedup_key: &str) -> PyResult<Option<Doc>> {
    let py = doc.py();
    let dedup = doc.getattr(intern!(py, "dedup_json"))?;
    if dedup.is_none() {
        return Ok(None);
    }
    let Ok(dedup) = dedup.cast::<PyBytes>() else {
        return Ok(None);
    };
    let Some(Some(id)) = optional_str(doc.getattr(intern!(py, "id"))?) else {
        return Ok(None);
    };
    let source = doc.getattr(intern!(py, "source"))?;
    let Ok(source) = source.cast::<PyDict>() else {
        return Ok(None);
    };
    let mut fields = Vec::with_capacity(source.len());
    for (key, value) in source.iter() {
        let Ok(key) = key.cast::<PyString>() else {
            return Ok(None);
        };
        let Ok(key) = key.extract::<PyBackedStr>() else {
            return Ok(None);
        };
        if &*key == dedup_key {
            continue;
        }
        let Some(value) = field_value(&value) else {
            return Ok(None);
        };
        fields.push((key, value));
    }
    let (Some(cluster_id), Some(duplicate_of)) = (
        optional_str(doc.getattr(intern!(py, "cluster_id"))?),
        optional_str(doc.getattr(intern!(py, "duplicate_of"))?),
    ) else {
        return Ok(None);
    };
    let seq = doc.getattr(intern!(py, "seq"))?;
    let cluster_seq = doc.getattr(intern!(py, "cluster_seq"))?;
    let (Some(seq), Some(cluster_seq)) = (int_value(&seq), int_value(&cluster_seq)) else {
        return Ok(None);
    };
    Ok(Some(Doc {
        id,
        fields,
        dedup: dedup.as_bytes().to_vec(),
        cluster_id,
        duplicate_of,
        seq,
        cluster_seq,
    }))
}

fn encode(doc: &Doc, header: &[u8], dedup_key: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(header.len() + doc.dedup.len() + 256);
    out.extend_from_slice(header);
    push_json_string(&mut out, &doc.id);
    out.extend_from_slice(b"}}\n{");
    for (i, (key, value)) in doc.fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_json_string(&mut out, key);
        out.push(b':');
        match value {
            Value::Str(s) => push_json_string(&mut out, s),
            Value::Int(v) => out.extend_from_slice(v.to_string().as_bytes()),
            Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Null => out.extend_from_slice(b"null"),
        }
    }
    if !doc.fields.is_empty() {
        out.push(b',');
    }
    push_json_string(&mut out, dedup_key);
    out.extend_from_slice(b":{");
    out.extend_from_slice(&doc.dedup);
    let mut first = doc.dedup.is_empty();
    let mut member = |out: &mut Vec<u8>, name: &str| {
        if !first {
            out.push(b',');
        }
        first = false;
        push_json_string(out, name);
        out.push(b':');
    };
    if let Some(cluster) = &doc.cluster_id {
        member(&mut out, "cluster_id");
        push_json_string(&mut out, cluster);
    }
    if let Some(dup) = &doc.duplicate_of {
        member(&mut out, "duplicate_of");
        push_json_string(&mut out, dup);
    }
    if doc.seq != 0 {
        member(&mut out, "seq");
        out.extend_from_slice(doc.seq.to_string().as_bytes());
        member(&mut out, "cluster_seq");
        out.extend_from_slice(doc.cluster_seq.to_string().as_bytes());
    }
    out.extend_from_slice(b"}}\n");
    out
}

/// Each document's two bulk lines (`header` + its id as a JSON string + `}}\n`, then its JSON and `\n`),
/// or None for a document Python encodes (see the module docstring).
#[pyfunction]
pub fn bulk_document_lines<'py>(
    py: Python<'py>,
    header: &[u8],
    docs: Vec<Bound<'py, PyAny>>,
    dedup_key: &str,
) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
    let read: Vec<Option<Doc>> = docs
        .iter()
        .map(|d| read_doc(d, dedup_key))
        .collect::<PyResult<_>>()?;
    let header = header.to_vec();
    let key = dedup_key.to_owned();
    let encoded: Vec<Option<Vec<u8>>> = py.detach(|| {
        read.iter()
            .map(|d| d.as_ref().map(|d| encode(d, &header, &key)))
            .collect()
    });
    Ok(encoded
        .into_iter()
        .map(|lines| lines.map(|l| PyBytes::new(py, &l)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_escape_as_orjson() {
        let mut out = Vec::new();
        push_json_string(&mut out, "a\"b\\c\n\u{1}\u{1f}\u{7f}é");
        assert_eq!(out, "\"a\\\"b\\\\c\\n\\u0001\\u001f\u{7f}é\"".as_bytes());
    }
}
