//! A JSON object of plain values written as orjson writes it (`esdedup.schema.json_bytes`): the article
//! fields of a document, for a bulk request (`esbulk.rs`) and for the embedded store's `source` column
//! (`sqlrows.rs`). Only what these bytes reproduce exactly is read: string keys, and values that are strings
//! of valid Unicode, integers of 64 bits, booleans or None. An object with anything else (a float, a list, a
//! nested object, a lone surrogate, a big integer) is not read here, and Python encodes it.
//!
//! The Python objects are read with the GIL held; the bytes can be written with it released.

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};

/// One member's value.
pub(crate) enum Scalar {
    Str(PyBackedStr),
    Int(i128),
    Bool(bool),
    Null,
}

/// An object's members, in order.
pub(crate) type Members = Vec<(PyBackedStr, Scalar)>;

/// A string as orjson writes it: `"` and `\` escaped, the control characters below U+0020 as `\b`, `\t`,
/// `\n`, `\f`, `\r` or `\u00xx` (lowercase hex), everything else as it is.
pub(crate) fn push_string(out: &mut Vec<u8>, text: &str) {
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
pub(crate) fn int_value(value: &Bound<'_, PyAny>) -> Option<i128> {
    if value.is_instance_of::<PyBool>() {
        return None; // orjson writes `true`, not 1
    }
    if let Ok(v) = value.extract::<i64>() {
        return Some(i128::from(v));
    }
    value.extract::<u64>().ok().map(i128::from)
}

fn scalar(value: &Bound<'_, PyAny>) -> Option<Scalar> {
    if value.is_none() {
        return Some(Scalar::Null);
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Some(Scalar::Bool(b.is_true()));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return s.extract::<PyBackedStr>().ok().map(Scalar::Str);
    }
    if value.is_instance_of::<PyInt>() {
        return int_value(value).map(Scalar::Int);
    }
    None
}

/// The members of `object` but the one named `skip`, or None when orjson's bytes for them are not these.
pub(crate) fn read_members(object: &Bound<'_, PyDict>, skip: Option<&str>) -> Option<Members> {
    let mut members = Vec::with_capacity(object.len());
    for (key, value) in object.iter() {
        let key = key.cast::<PyString>().ok()?.extract::<PyBackedStr>().ok()?;
        if skip == Some(&*key) {
            continue;
        }
        members.push((key, scalar(&value)?));
    }
    Some(members)
}

/// The members, comma-separated, without the braces.
pub(crate) fn push_members(out: &mut Vec<u8>, members: &Members) {
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_string(out, key);
        out.push(b':');
        match value {
            Scalar::Str(s) => push_string(out, s),
            Scalar::Int(v) => out.extend_from_slice(v.to_string().as_bytes()),
            Scalar::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Scalar::Null => out.extend_from_slice(b"null"),
        }
    }
}

/// The object's JSON: UTF-8, made of valid strings and ASCII.
pub(crate) fn object_json(members: &Members) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + members.len() * 24);
    out.push(b'{');
    push_members(&mut out, members);
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_escape_as_orjson() {
        let mut out = Vec::new();
        push_string(&mut out, "a\"b\\c\n\u{1}\u{1f}\u{7f}é");
        assert_eq!(out, "\"a\\\"b\\\\c\\n\\u0001\\u001f\u{7f}é\"".as_bytes());
    }
}
