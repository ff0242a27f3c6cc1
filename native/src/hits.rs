//! Search hits as the client decoded them (dicts), read without a Python step a hit: the parts of a hit's
//! `dedup` fields as `esdedup.es.hits.hit_parts` reads them (`Hit::part`) and its stored signature's base64
//! (`decode_into`), for `diversify_page`, and `signature_hits`: what all-pairs search reads of each hit of a
//! scan page (`esdedup.store.elastic.scans.signature_columns`). A hit of a form read here with any doubt is
//! left to the Python reader, whose reading, and refusals, stay the definition.

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString};

/// A part's name inside `_source["dedup"]`, and its dotted name (a flattened `_source`'s key, and the
/// name of its doc values in `fields`).
pub(crate) struct PartName<'py> {
    name: Bound<'py, PyString>,
    dotted: Bound<'py, PyString>,
}

/// The `PartName` of each of `names`.
pub(crate) fn part_names<'py>(py: Python<'py>, names: &[&str]) -> Vec<PartName<'py>> {
    names
        .iter()
        .map(|name| PartName {
            name: PyString::new(py, name),
            dotted: PyString::new(py, &format!("dedup.{name}")),
        })
        .collect()
}

/// A hit's dicts: the hit itself, its `_source`, the `dedup` dict inside that, and its `fields`.
pub(crate) struct Hit<'py> {
    pub(crate) hit: Bound<'py, PyDict>,
    src: Option<Bound<'py, PyDict>>,
    dedup: Option<Bound<'py, PyDict>>,
    fields: Option<Bound<'py, PyDict>>,
}

impl<'py> Hit<'py> {
    /// The dicts of a hit; None when the hit, its `_source`, its `fields` or `_source["dedup"]` is of another
    /// type than a dict (absent or None aside), which the Python reader reads (or refuses) itself.
    pub(crate) fn of(hit: Bound<'py, PyAny>) -> PyResult<Option<Hit<'py>>> {
        let py = hit.py();
        let Ok(hit) = hit.cast_into_exact::<PyDict>() else {
            return Ok(None);
        };
        let (Ok(src), Ok(fields)) = (
            dict_or_none(hit.get_item(intern!(py, "_source"))?),
            dict_or_none(hit.get_item(intern!(py, "fields"))?),
        ) else {
            return Ok(None);
        };
        let dedup = match &src {
            Some(s) => match dict_or_none(s.get_item(intern!(py, "dedup"))?) {
                Ok(d) => d,
                Err(()) => return Ok(None), // a Mapping of another type, or the dotted keys beside a value
            },
            None => None,
        };
        Ok(Some(Hit {
            hit,
            src,
            dedup,
            fields,
        }))
    }

    /// A part's raw value as `esdedup.es.hits.hit_parts` reads it (Python None as None): from
    /// `_source["dedup"]`, else the dotted `_source` key, else the first element of `fields["dedup.<name>"]`.
    pub(crate) fn part(&self, part: &PartName<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        if let Some(v) = self.source_part(part)? {
            return Ok(Some(v));
        }
        let Some(f) = &self.fields else {
            return Ok(None);
        };
        let Some(value) = f.get_item(&part.dotted)? else {
            return Ok(None);
        };
        if let Ok(list) = value.cast::<PyList>() {
            return Ok(if list.is_empty() {
                None
            } else {
                Some(list.get_item(0)?)
            }
            .filter(|v| !v.is_none()));
        }
        Ok(Some(value).filter(|v| !v.is_none()))
    }

    /// A part's value in `_source` alone (see `part`).
    fn source_part(&self, part: &PartName<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let found = match (&self.dedup, &self.src) {
            (Some(d), _) => d.get_item(&part.name)?,
            (None, Some(s)) => s.get_item(&part.dotted)?,
            (None, None) => None,
        };
        Ok(found.filter(|v| !v.is_none()))
    }

    /// Whether `fields` holds the part (a vector there is read by the Python reader: `hit_parts` reads it
    /// whole, not its first element).
    fn in_fields(&self, part: &PartName<'py>) -> PyResult<bool> {
        match &self.fields {
            Some(f) => f.contains(&part.dotted),
            None => Ok(false),
        }
    }
}

/// A dict that the general reader reads as a Mapping: an exact dict (Some), absent or None (Ok(None)), or
/// anything else (Err: not read here).
fn dict_or_none<'py>(value: Option<Bound<'py, PyAny>>) -> Result<Option<Bound<'py, PyDict>>, ()> {
    match value {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => v.cast_into_exact::<PyDict>().map(Some).map_err(|_| ()),
    }
}

/// A SimHash of plain hex digits below 2^bits (what `int(raw, 16)` reads of such a string); None for any
/// other string (a prefix, a sign, spaces, too wide: the general reader judges it).
pub(crate) fn hex_simhash(raw: &str, bits: u32) -> Option<u128> {
    let digits = raw.trim_start_matches('0');
    if raw.is_empty() || digits.len() > 32 || !raw.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let value = if digits.is_empty() {
        0
    } else {
        u128::from_str_radix(digits, 16).ok()?
    };
    (bits >= 128 || value >> bits == 0).then_some(value)
}

/// The six bits of a base64 digit (RFC 4648's standard alphabet), or `INVALID`.
const INVALID: u8 = 0xFF;
const SIXES: [u8; 256] = {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut table = [INVALID; 256];
    let mut i = 0;
    while i < 64 {
        table[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// The bytes of one base64 string (RFC 4648's standard alphabet) into `out`, whose length is the bytes it
/// holds (the string has 4 * ceil(len / 3) characters), ending in the padding of that many bytes; None when
/// a character before the padding is not a base64 digit or the padding is not '='. Bits under the padding
/// are dropped, as Python's decoder does.
#[inline]
pub(crate) fn decode_into(text: &[u8], out: &mut [u8]) -> Option<()> {
    let pad = (3 - out.len() % 3) % 3;
    let (digits, padding) = text.split_at(text.len() - pad);
    if padding.iter().any(|&c| c != b'=') {
        return None;
    }
    // Any INVALID digit sets the high bit, which no digit's six bits reach: checked once at the end.
    let mut seen = 0u8;
    let whole = digits.len() / 4;
    for (quad, three) in digits.chunks_exact(4).zip(out.chunks_exact_mut(3)) {
        let six = [quad[0], quad[1], quad[2], quad[3]].map(|c| SIXES[c as usize]);
        seen |= six[0] | six[1] | six[2] | six[3];
        let v = six.iter().fold(0u32, |v, &x| (v << 6) | u32::from(x));
        three.copy_from_slice(&v.to_be_bytes()[1..]);
    }
    // The two or three digits before the padding hold the last one or two bytes.
    let tail = &mut out[whole * 3..];
    let mut bits: u32 = 0;
    let mut held = 0;
    let mut at = 0;
    for &c in &digits[whole * 4..] {
        let v = SIXES[c as usize];
        seen |= v;
        bits = (bits << 6) | u32::from(v & 0x3F);
        held += 6;
        if held >= 8 {
            held -= 8;
            if at < tail.len() {
                tail[at] = (bits >> held) as u8;
            }
            at += 1;
        }
    }
    (seen & 0x80 == 0).then_some(())
}

/// Refuses a form of stored signature that no config makes: `perm` u16 values (fewer than 2^16 of them) in
/// `nbytes` bytes and `width` base64 characters, as `fname` is called with them.
pub(crate) fn check_signature_form(fname: &str, perm: usize, width: usize, nbytes: usize) -> PyResult<()> {
    if perm == 0 || nbytes != 2 * perm || width != 4 * nbytes.div_ceil(3) || perm >= 1 << 16 {
        return Err(PyValueError::new_err(format!(
            "{fname}: {perm} signature values in {nbytes} bytes and {width} base64 characters"
        )));
    }
    Ok(())
}

/// An exact int of 64 bits, or None (absent) as 0: what `int(raw or 0)` reads of such a value. None for any
/// other value (a bool, a float, a string: the Python reader reads it).
fn count(value: Option<Bound<'_, PyAny>>) -> Option<i64> {
    match value {
        None => Some(0),
        Some(v) if v.is_exact_instance_of::<PyInt>() => v.extract::<i64>().ok(),
        Some(_) => None,
    }
}

/// A vector of `dims` exact floats (or ints below 2^24, which a float32 holds exactly) as float32, what
/// `numpy.asarray(raw, dtype=float32)` makes of it; None for any other value.
fn vector_into(value: &Bound<'_, PyAny>, out: &mut Vec<f32>, dims: usize) -> PyResult<bool> {
    let Ok(list) = value.cast_exact::<PyList>() else {
        return Ok(false);
    };
    if list.len() != dims {
        return Ok(false);
    }
    let start = out.len();
    for x in list.iter() {
        let v = if let Ok(f) = x.cast_exact::<PyFloat>() {
            f.value() as f32
        } else if x.is_exact_instance_of::<PyInt>() {
            match x.extract::<i64>() {
                Ok(i) if i.unsigned_abs() < 1 << 24 => i as f32,
                _ => {
                    out.truncate(start);
                    return Ok(false);
                }
            }
        } else {
            out.truncate(start);
            return Ok(false);
        };
        out.push(v);
    }
    Ok(true)
}

/// What `signature_hits` returns: the ids of the hits read, and the columns as little-endian bytes.
type HitColumns<'py> = (Bound<'py, PyList>, Vec<Bound<'py, PyBytes>>);

/// What `signature_hits` reads of the hits of a page it reads, a column each, a row a hit read.
#[derive(Default)]
struct Signatures {
    read: Vec<u8>,
    simhash: Vec<u8>,
    chars: Vec<u8>,
    shingles: Vec<u8>,
    empty: Vec<u8>,
    signed: Vec<u8>,
    sigs: Vec<u8>,
    has_vector: Vec<u8>,
    vectors: Vec<f32>,
}

/// `signature_hits(hits, perm, width, nbytes, bits, dims)`: what `esdedup.store.elastic.scans` reads of each
/// hit of a scan page (its `_id`; its `dedup` parts: SimHash, chars, n-gram count, `empty`, the MinHash
/// signature and the vector), for the hits of the plain form: an exact dict with an `_id` string, a SimHash of
/// plain hex digits below 2^`bits` (absent: 0), counts of exact ints (absent: 0), `empty` a bool (absent:
/// false), a signature absent or of `width` base64 characters holding `nbytes` bytes (`perm` u16 values), and
/// a vector absent or in `_source` as a list of `dims` numbers. Returns, for `bits` up to 64 (else None:
/// the Python reader reads the page): whether each hit was read (one byte a hit), the ids of those read,
/// and for each of them its SimHash (u64), chars and n-grams (i64), `empty`, whether it has a signature and
/// whether a vector (a byte each), its signature (`nbytes`, zeros for none), and the vectors there are
/// (float32, `dims` a vector), all little-endian.
#[pyfunction]
pub fn signature_hits<'py>(
    py: Python<'py>,
    hits: &Bound<'py, PyList>,
    perm: usize,
    width: usize,
    nbytes: usize,
    bits: u32,
    dims: usize,
) -> PyResult<Option<HitColumns<'py>>> {
    check_signature_form("signature_hits", perm, width, nbytes)?;
    if bits > 64 {
        return Ok(None);
    }
    let names = part_names(
        py,
        &["simhash", "chars", "shingles", "empty", "minhash", "vector"],
    );
    let ids = PyList::empty(py);
    let mut out = Signatures::default();
    let mut sig = vec![0u8; nbytes];
    for hit in hits.iter() {
        let read = read_hit(hit, &names, &mut out, &mut sig, width, bits, dims)?;
        match read {
            Some(id) => {
                ids.append(id)?;
                out.read.push(1);
            }
            None => out.read.push(0),
        }
    }
    let vectors: Vec<u8> = out.vectors.iter().flat_map(|v| v.to_le_bytes()).collect();
    let columns = [
        &out.read,
        &out.simhash,
        &out.chars,
        &out.shingles,
        &out.empty,
        &out.signed,
        &out.sigs,
        &out.has_vector,
        &vectors,
    ];
    Ok(Some((ids, columns.iter().map(|c| PyBytes::new(py, c)).collect())))
}

/// One hit into `out` (its id returned), or None, `out` untouched, when it is not of the plain form.
fn read_hit<'py>(
    hit: Bound<'py, PyAny>,
    names: &[PartName<'py>],
    out: &mut Signatures,
    sig: &mut [u8],
    width: usize,
    bits: u32,
    dims: usize,
) -> PyResult<Option<Bound<'py, PyString>>> {
    let py = hit.py();
    let Some(hit) = Hit::of(hit)? else {
        return Ok(None);
    };
    let Some(id) = hit.hit.get_item(intern!(py, "_id"))? else {
        return Ok(None);
    };
    let Ok(id) = id.cast_into_exact::<PyString>() else {
        return Ok(None);
    };
    let simhash = match hit.part(&names[0])? {
        None => 0,
        Some(v) => match v.cast_exact::<PyString>() {
            Ok(s) => match hex_simhash(s.to_str()?, bits) {
                Some(x) => x as u64,
                None => return Ok(None),
            },
            Err(_) => return Ok(None),
        },
    };
    let (Some(chars), Some(shingles)) = (count(hit.part(&names[1])?), count(hit.part(&names[2])?)) else {
        return Ok(None);
    };
    let empty = match hit.part(&names[3])? {
        None => false,
        Some(v) if v.is_exact_instance_of::<PyBool>() => v.is_truthy()?,
        Some(_) => return Ok(None),
    };
    let signed = match hit.part(&names[4])? {
        None => false,
        Some(v) => {
            let Ok(text) = v.cast_exact::<PyString>() else {
                return Ok(None);
            };
            let text = text.to_str()?.as_bytes();
            if text.len() != width || decode_into(text, sig).is_none() {
                return Ok(None);
            }
            true
        }
    };
    let has_vector = match hit.source_part(&names[5])? {
        Some(v) => {
            if !vector_into(&v, &mut out.vectors, dims)? {
                return Ok(None);
            }
            true
        }
        None if hit.in_fields(&names[5])? => return Ok(None),
        None => false,
    };
    out.simhash.extend(simhash.to_le_bytes());
    out.chars.extend(chars.to_le_bytes());
    out.shingles.extend(shingles.to_le_bytes());
    out.empty.push(u8::from(empty));
    out.signed.push(u8::from(signed));
    if signed {
        out.sigs.extend_from_slice(sig);
    } else {
        out.sigs.resize(out.sigs.len() + sig.len(), 0);
    }
    out.has_vector.push(u8::from(has_vector));
    Ok(Some(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_plain_hex_simhashes_only() {
        assert_eq!(hex_simhash("00ff", 64), Some(255));
        assert_eq!(hex_simhash("FF", 8), Some(255));
        assert_eq!(hex_simhash("000", 64), Some(0));
        assert_eq!(hex_simhash(&"f".repeat(32), 128), Some(u128::MAX));
        assert_eq!(
            hex_simhash(&format!("0000{}", "f".repeat(16)), 64),
            Some(u128::from(u64::MAX))
        );
        for other in ["", "0x1", "+1", " 1", "1_0", "g", "1ffffffffffffffff"] {
            assert_eq!(hex_simhash(other, 64), None, "{other}");
        }
        assert_eq!(hex_simhash(&"1".repeat(33), 128), None);
    }
}
