//! Each document's `dedup` object as JSON (`esdedup.schema.dedup_members`: orjson of `dedup_source`, the
//! braces stripped) for a whole batch, from the Fingerprinter's columns: the Elasticsearch ingest path sends
//! these bytes, and building a dict per document for orjson costs as much as a short text's fingerprint.
//!
//! The members, in `dedup_source`'s order: `simhash` (lowercase hex, `bits / 4` digits at least), `tokens`,
//! `chars`, `empty`, then for a text with a signature `minhash` (base64 of its little-endian 16-bit values)
//! and `shingles`, one band field per band key the text has, `lsh_keys` (JSON numbers) when it has any, and
//! `content_sha1` when it is given and not empty. The vector is never written: a config that stores one
//! is encoded in Python (orjson formats the floats).
//!
//! Only what these bytes reproduce exactly is encoded here: every string written must be printable ASCII
//! without `"` or `\` (written as it is, as orjson writes it) and every LSH key a canonical decimal below
//! 10^19 (what orjson writes for `int(key)`). Anything else makes the whole batch go back to Python.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyBytes;
use rayon::prelude::*;
use std::io::Write;

use crate::pool;

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/// Documents one thread encodes at a time: each is a few hundred bytes written in well under a microsecond,
/// so finer splits cost more than they share out.
const DOCS_PER_TASK: usize = 64;

/// One document's fields, borrowed from the batch's columns.
struct Doc<'a> {
    simhash: u128,
    length: u64,
    chars: u64,
    shingles: u64,
    empty: bool,
    signature: Option<&'a [u8]>,
    bands: &'a [PyBackedStr],
    lsh: &'a [PyBackedStr],
    sha1: Option<&'a str>,
}

/// A string orjson writes as it is: printable ASCII, no quote, no backslash.
fn plain(text: &str) -> bool {
    text.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

/// A key that `int(key)` then orjson write back as the same digits: `0`, or up to 19 digits without a
/// leading zero (below 2^64, orjson's largest integer).
fn canonical_decimal(key: &str) -> bool {
    let digits = key.as_bytes();
    !digits.is_empty()
        && digits.len() <= 19
        && digits.iter().all(u8::is_ascii_digit)
        && (digits == b"0" || digits[0] != b'0')
}

fn push_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    for chunk in bytes.chunks(3) {
        let at = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let group = at(0) << 16 | at(1) << 8 | at(2);
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                BASE64[(group >> (18 - 6 * i) & 63) as usize]
            } else {
                b'='
            });
        }
    }
}

fn push_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
}

/// The document's members, or None when a string or key is not one these bytes reproduce.
fn encode(doc: &Doc<'_>, bits: usize, band_fields: &[String]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(256 + doc.signature.map_or(0, |s| s.len() * 4 / 3));
    // Writing to a Vec cannot fail.
    write!(out, "\"simhash\":\"{:0width$x}\"", doc.simhash, width = bits / 4).ok()?;
    write!(
        out,
        ",\"tokens\":{},\"chars\":{},\"empty\":{}",
        doc.length, doc.chars, doc.empty
    )
    .ok()?;
    if let Some(signature) = doc.signature {
        out.extend_from_slice(b",\"minhash\":\"");
        push_base64(&mut out, signature);
        write!(out, "\",\"shingles\":{}", doc.shingles).ok()?;
    }
    for (field, key) in band_fields.iter().zip(doc.bands) {
        if !plain(key) {
            return None;
        }
        out.push(b',');
        push_string(&mut out, field);
        out.push(b':');
        push_string(&mut out, key);
    }
    if !doc.lsh.is_empty() {
        out.extend_from_slice(b",\"lsh_keys\":[");
        for (i, key) in doc.lsh.iter().enumerate() {
            if !canonical_decimal(key) {
                return None;
            }
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(key.as_bytes());
        }
        out.push(b']');
    }
    if let Some(sha1) = doc.sha1.filter(|s| !s.is_empty()) {
        if !plain(sha1) {
            return None;
        }
        out.extend_from_slice(b",\"content_sha1\":");
        push_string(&mut out, sha1);
    }
    Some(out)
}

/// The `dedup` members of each document of a batch, given as columns (entry i of each list is document
/// i's): SimHash values below 2^128 of `bits` bits, token counts, normalised characters, distinct n-grams,
/// whether each is empty, the signatures of the documents flagged in `signed` laid end to end in
/// `signatures` (`perm` little-endian 16-bit values each), each one's band keys and LSH keys, content
/// SHA-1s (None or "" for none), and the band fields' names, one per table. Returns one bytes object per
/// document, or None when one of them is left to Python (see the module's notes). The GIL is released
/// while encoding.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn dedup_members<'py>(
    py: Python<'py>,
    simhashes: Vec<u128>,
    bits: usize,
    lengths: Vec<u64>,
    chars: Vec<u64>,
    shingles: Vec<u64>,
    empties: Vec<bool>,
    signatures: &[u8],
    signed: Vec<bool>,
    perm: usize,
    bands: Vec<Vec<PyBackedStr>>,
    lsh: Vec<Vec<PyBackedStr>>,
    sha1s: Vec<Option<PyBackedStr>>,
    band_fields: Vec<String>,
) -> PyResult<Option<Vec<Bound<'py, PyBytes>>>> {
    let n = simhashes.len();
    let columns = [
        lengths.len(),
        chars.len(),
        shingles.len(),
        empties.len(),
        signed.len(),
        bands.len(),
        lsh.len(),
        sha1s.len(),
    ];
    if columns.iter().any(|&len| len != n) {
        return Err(PyValueError::new_err(format!(
            "dedup_members: every column needs one entry per document ({n})"
        )));
    }
    let width = perm * 2;
    let with_signature = signed.iter().filter(|&&s| s).count();
    if signatures.len() != with_signature * width || (with_signature > 0 && perm == 0) {
        return Err(PyValueError::new_err(format!(
            "dedup_members: {} bytes of signatures for {with_signature} documents of {perm} values",
            signatures.len()
        )));
    }
    if !band_fields.iter().all(|f| plain(f)) {
        return Ok(None);
    }
    // One row per flagged document (none at all when no document has a signature).
    let mut rows = signatures.chunks_exact(width.max(1));
    let docs: Vec<Doc<'_>> = (0..n)
        .map(|i| Doc {
            simhash: simhashes[i],
            length: lengths[i],
            chars: chars[i],
            shingles: shingles[i],
            empty: empties[i],
            signature: if signed[i] { rows.next() } else { None },
            bands: &bands[i],
            lsh: &lsh[i],
            sha1: sha1s[i].as_deref(),
        })
        .collect();
    let threads = pool()?;
    let encoded: Option<Vec<Vec<u8>>> = py.detach(|| {
        threads.install(|| {
            docs.par_iter()
                .with_min_len(DOCS_PER_TASK)
                .map(|doc| encode(doc, bits, &band_fields))
                .collect()
        })
    });
    Ok(encoded.map(|all| all.iter().map(|members| PyBytes::new(py, members)).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads_as_rfc_4648() {
        for (raw, want) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
        ] {
            let mut out = Vec::new();
            push_base64(&mut out, raw);
            assert_eq!(out, want.as_bytes());
        }
    }

    #[test]
    fn only_canonical_decimals_are_written_as_they_are() {
        for key in ["0", "7", "1099511627775", "9999999999999999999"] {
            assert!(canonical_decimal(key), "{key}");
        }
        for key in [
            "",
            "00",
            "012",
            "+1",
            "-1",
            " 1",
            "1_0",
            "١",
            "10000000000000000000",
        ] {
            assert!(!canonical_decimal(key), "{key}");
        }
    }
}
