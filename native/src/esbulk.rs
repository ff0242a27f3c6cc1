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
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::jsonout::{int_value, push_members, push_string, read_members, Members};

/// One document, read out of its `NewDoc`.
struct Doc {
    id: PyBackedStr,
    fields: Members,
    dedup: Vec<u8>,
    cluster_id: Option<PyBackedStr>,
    duplicate_of: Option<PyBackedStr>,
    seq: i128,
    cluster_seq: i128,
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
    let Some(fields) = read_members(source, Some(dedup_key)) else {
        return Ok(None);
    };
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
    push_string(&mut out, &doc.id);
    out.extend_from_slice(b"}}\n{");
    push_members(&mut out, &doc.fields);
    if !doc.fields.is_empty() {
        out.push(b',');
    }
    push_string(&mut out, dedup_key);
    out.extend_from_slice(b":{");
    out.extend_from_slice(&doc.dedup);
    let mut first = doc.dedup.is_empty();
    let mut member = |out: &mut Vec<u8>, name: &str| {
        if !first {
            out.push(b',');
        }
        first = false;
        push_string(out, name);
        out.push(b':');
    };
    if let Some(cluster) = &doc.cluster_id {
        member(&mut out, "cluster_id");
        push_string(&mut out, cluster);
    }
    if let Some(dup) = &doc.duplicate_of {
        member(&mut out, "duplicate_of");
        push_string(&mut out, dup);
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
