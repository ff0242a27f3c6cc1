//! The steps of diversifying a page of search hits (`esdedup.search.diversify`) that Python does slowly.
//!
//! `diversify_page` reads a whole page of hits of the plain form (the parts the rule reads, straight from
//! the hit dicts) and groups it in rank order, deciding each pair by the near-duplicate rule of
//! `esdedup/match/rule.py` (`decide`), which stays its definition: the caller hands over the thresholds and
//! the bounds of a trusted containment estimate, and hands any page this does not read to the general
//! reader. `decode_base64` (the hits' stored MinHash signatures decoded all at once) and `equal_positions`
//! (the equal positions of the signatures, every row of one set against every row of another: the count
//! behind the estimated Jaccard of each pair) serve the Python path, whose estimates and verdicts stay in
//! Python; `esdedup.match.rule.equal_positions` counts the same in numpy when the extension is not in use.
//! `tests/unit/test_diversify_fast.py` checks every form against the reference.
//!
//! Signatures are b-bit values (16 bits under every config of today): they come as u16 when they fit, which
//! puts twice as many positions in a vector register as u32, and the loops are compiled for AVX2 as well as
//! portably, the form chosen at run time.

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyInt, PyList, PyString};
use rustc_hash::FxHashMap;

use crate::hits::{check_signature_form, decode_into, hex_simhash, part_names, Hit};

/// The n x m counts (row-major, into `out`, zeroed) of positions where row x of `a` and row y of `b` agree,
/// both row-major with `perm` columns; with `symmetric` (`b` is `a`), each pair below the diagonal is counted
/// once and mirrored. `$t` is the value type, and also the accumulator's: a count never exceeds `perm`, which
/// the caller keeps below the type's range.
macro_rules! counter {
    ($name:ident, $t:ty) => {
        #[inline(always)]
        fn $name(a: &[$t], b: &[$t], perm: usize, symmetric: bool, out: &mut [u32]) {
            let m = b.len() / perm;
            for (i, x) in a.chunks_exact(perm).enumerate() {
                let upto = if symmetric { i + 1 } else { m };
                for (j, y) in b.chunks_exact(perm).take(upto).enumerate() {
                    // A sum of 0/1 over two equal-length slices: compiled to vector compares and subtracts.
                    let same = x
                        .iter()
                        .zip(y)
                        .fold(0 as $t, |acc, (p, q)| acc.wrapping_add(<$t>::from(p == q)));
                    out[i * m + j] = u32::from(same);
                    if symmetric {
                        out[j * m + i] = u32::from(same);
                    }
                }
            }
        }
    };
}
counter!(count16, u16);
counter!(count32, u32);

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count16_avx2(a: &[u16], b: &[u16], perm: usize, symmetric: bool, out: &mut [u32]) {
    count16(a, b, perm, symmetric, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn count32_avx2(a: &[u32], b: &[u32], perm: usize, symmetric: bool, out: &mut [u32]) {
    count32(a, b, perm, symmetric, out)
}

fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn counts(a: &[u8], b: &[u8], perm: usize, width: usize, symmetric: bool) -> Vec<u32> {
    let mut out = vec![0u32; (a.len() / (width * perm)) * (b.len() / (width * perm))];
    if width == 2 {
        let words = |raw: &[u8]| -> Vec<u16> {
            raw.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        };
        let (a, b) = (words(a), words(b));
        #[cfg(target_arch = "x86_64")]
        if avx2() {
            // SAFETY: the CPU has AVX2 (checked just above).
            unsafe { count16_avx2(&a, &b, perm, symmetric, &mut out) };
            return out;
        }
        count16(&a, &b, perm, symmetric, &mut out);
    } else {
        let words = |raw: &[u8]| -> Vec<u32> {
            raw.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        let (a, b) = (words(a), words(b));
        #[cfg(target_arch = "x86_64")]
        if avx2() {
            // SAFETY: as above.
            unsafe { count32_avx2(&a, &b, perm, symmetric, &mut out) };
            return out;
        }
        count32(&a, &b, perm, symmetric, &mut out);
    }
    out
}

/// `equal_positions(a, b, perm, width, symmetric=False)`: `a` and `b` are the bytes of C-contiguous
/// little-endian arrays of `perm` columns of `width`-byte unsigned values (2 or 4; with 2, `perm` must be
/// below 65,536); returns the bytes of the (rows of a) x (rows of b) little-endian u32 counts, with the GIL
/// released while counting. `symmetric`: `b` holds the same rows as `a`, so half the pairs are counted.
#[pyfunction]
#[pyo3(signature = (a, b, perm, width, symmetric=false))]
pub fn equal_positions<'py>(
    py: Python<'py>,
    a: &[u8],
    b: &[u8],
    perm: usize,
    width: usize,
    symmetric: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let row = width * perm;
    if !(width == 2 && perm < 1 << 16 || width == 4)
        || perm == 0
        || !a.len().is_multiple_of(row)
        || !b.len().is_multiple_of(row)
        || (symmetric && a != b)
    {
        return Err(PyValueError::new_err(format!(
            "equal_positions: {} and {} bytes are not rows of {perm} values of {width} bytes{}",
            a.len(),
            b.len(),
            if symmetric { ", the same rows twice" } else { "" }
        )));
    }
    let found = py.detach(|| counts(a, b, perm, width, symmetric));
    let mut raw = vec![0u8; found.len() * 4];
    for (chunk, c) in raw.chunks_exact_mut(4).zip(&found) {
        chunk.copy_from_slice(&c.to_le_bytes());
    }
    Ok(PyBytes::new(py, &raw))
}

/// The bytes of `count` base64 strings of `width` characters laid end to end, each holding `nbytes` bytes
/// (`decode_into`); None when one of them is not such a string.
fn decode(joined: &[u8], width: usize, nbytes: usize) -> Option<Vec<u8>> {
    let mut out = vec![0u8; joined.len() / width * nbytes];
    for (text, chunk) in joined.chunks_exact(width).zip(out.chunks_exact_mut(nbytes)) {
        decode_into(text, chunk)?;
    }
    Some(out)
}

/// `decode_base64(joined, width, nbytes)`: see `decode`; the decoded bytes of every string in order, or
/// None. The GIL is released while decoding.
#[pyfunction]
pub fn decode_base64<'py>(
    py: Python<'py>,
    joined: &[u8],
    width: usize,
    nbytes: usize,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    if width == 0 || width != 4 * nbytes.div_ceil(3) || !joined.len().is_multiple_of(width) {
        return Err(PyValueError::new_err(format!(
            "decode_base64: {} bytes are not strings of {width} characters holding {nbytes} bytes each",
            joined.len()
        )));
    }
    let decoded = py.detach(|| decode(joined, width, nbytes));
    Ok(decoded.map(|raw| PyBytes::new(py, &raw)))
}

/// What the near-duplicate rule (`esdedup.match.rule.decide`) reads of a pair of hits that carry no
/// vector, as `esdedup.search.diversify` hands it over: the thresholds (None: that test is off), and the
/// bounds of a trusted containment estimate (`MIN_CONTAINMENT_SHINGLES`, `MAX_CONTAINMENT_RATIO`).
struct Rule {
    jaccard: Option<f64>,
    containment: Option<f64>,
    hamming_k: Option<u32>,
    cosine: bool,
    min_shingles: f64,
    max_ratio: f64,
}

/// A page's participants as columns: row i is hit i.
struct Page {
    perm: usize,
    sigs: Vec<u16>,    // n x perm; zeros where a hit is not signed
    signed: Vec<bool>, // carries a signature of the config's length and n-grams > 0
    shingles: Vec<i64>,
    simhash: Vec<Option<u128>>,
    cluster: Vec<i64>, // code of (index, cluster id), -1 where none
}

/// `containment_estimate` of `esdedup.match.rule`, for one pair: the same float64 steps in the same order.
#[inline(always)]
fn containment(rule: &Rule, jac: f64, n_a: i64, n_b: i64) -> f64 {
    let (a, b) = (n_a as f64, n_b as f64);
    let (lo, hi) = (a.min(b), a.max(b));
    if lo >= rule.min_shingles && hi <= rule.max_ratio * lo {
        (jac / (1.0 + jac) * (a + b) / lo.max(1.0)).min(1.0)
    } else {
        0.0
    }
}

/// How many positions two signatures of one length share (a sum of 0/1: vector compares and subtracts).
#[inline(always)]
fn same_positions(a: &[u16], b: &[u16]) -> u32 {
    u32::from(
        a.iter()
            .zip(b)
            .fold(0u16, |acc, (p, q)| acc.wrapping_add(u16::from(p == q))),
    )
}

/// `decide` for hits x and y of a page without vectors (every cosine unknown) and without legacy short
/// texts (every participant of such a page carries a signature, or the config bands every text).
#[inline(always)]
fn duplicates(page: &Page, rule: &Rule, x: usize, y: usize) -> bool {
    if page.cluster[x] >= 0 && page.cluster[x] == page.cluster[y] {
        return true;
    }
    let signatures = page.signed[x] && page.signed[y];
    if signatures && (rule.jaccard.is_some() || rule.containment.is_some()) {
        let perm = page.perm;
        let (a, b) = (
            &page.sigs[x * perm..(x + 1) * perm],
            &page.sigs[y * perm..(y + 1) * perm],
        );
        let share = f64::from(same_positions(a, b)) / perm as f64;
        return rule.jaccard.is_some_and(|j| share >= j)
            || rule
                .containment
                .is_some_and(|c| containment(rule, share, page.shingles[x], page.shingles[y]) >= c);
    }
    if signatures && rule.cosine {
        return false; // the cosine alone decides, and no pair carries two vectors
    }
    match (rule.hamming_k, page.simhash[x], page.simhash[y]) {
        (Some(k), Some(a), Some(b)) => (a ^ b).count_ones() <= k,
        _ => false,
    }
}

/// Greedy grouping in rank order (`esdedup.search.diversify._greedy`): each hit joins the first
/// representative it duplicates, else becomes one; the representative of each hit, or -1.
#[inline(always)]
fn group_portable(page: &Page, rule: &Rule) -> Vec<i64> {
    let n = page.signed.len();
    let mut rep_of = vec![-1i64; n];
    let mut reps: Vec<usize> = Vec::with_capacity(n);
    for (x, rep) in rep_of.iter_mut().enumerate() {
        match reps.iter().find(|&&r| duplicates(page, rule, x, r)) {
            Some(&r) => *rep = r as i64,
            None => reps.push(x),
        }
    }
    rep_of
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn group_avx2(page: &Page, rule: &Rule) -> Vec<i64> {
    group_portable(page, rule)
}

fn group(page: &Page, rule: &Rule) -> Vec<i64> {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { group_avx2(page, rule) };
    }
    group_portable(page, rule)
}

/// The plain form of a page's hits (see `diversify_page`): signatures of `perm` values in `nbytes` bytes and
/// `width` base64 characters, SimHashes below 2^`bits`, and what the config's rule needs.
struct Form {
    perm: usize,
    width: usize,
    nbytes: usize,
    bits: u32,
    gets_signatures: bool,
}

impl Form {
    fn new(perm: usize, width: usize, nbytes: usize, bits: u32, gets_signatures: bool) -> PyResult<Form> {
        check_signature_form("diversify_page", perm, width, nbytes)?;
        Ok(Form {
            perm,
            width,
            nbytes,
            bits,
            gets_signatures,
        })
    }
}

/// Reads a page whose every hit is a participant of the plain form; None at the first hit of another form.
fn read_page(py: Python<'_>, hits: &Bound<'_, PyList>, form: &Form) -> PyResult<Option<Page>> {
    let &Form {
        perm,
        width,
        nbytes,
        bits,
        gets_signatures,
    } = form;
    let n = hits.len();
    let keys = part_names(
        py,
        &[
            "minhash",
            "shingles",
            "simhash",
            "chars",
            "empty",
            "vector",
            "cluster_id",
        ],
    );
    let mut page = Page {
        perm,
        sigs: vec![0u16; n * perm],
        signed: vec![false; n],
        shingles: vec![0; n],
        simhash: vec![None; n],
        cluster: vec![-1; n],
    };
    let mut codes: FxHashMap<(Option<String>, String), i64> = FxHashMap::default();
    let mut bytes = vec![0u8; nbytes];
    for (i, hit) in hits.iter().enumerate() {
        let Some(hit) = Hit::of(hit)? else {
            return Ok(None);
        };
        let get = |k: usize| hit.part(&keys[k]);
        let mut sig = false;
        if let Some(mh) = get(0)? {
            let Ok(text) = mh.cast_exact::<PyString>() else {
                return Ok(None);
            };
            let text = text.to_str()?.as_bytes();
            if text.len() != width || decode_into(text, &mut bytes).is_none() {
                return Ok(None);
            }
            for (p, pair) in bytes.chunks_exact(2).enumerate() {
                page.sigs[i * perm + p] = u16::from_le_bytes([pair[0], pair[1]]);
            }
            sig = true;
        }
        let shingles: i64 = match get(1)? {
            None => 0,
            Some(v) if v.is_exact_instance_of::<PyInt>() => match v.extract::<i64>() {
                Ok(x) => x,
                Err(_) => return Ok(None),
            },
            Some(_) => return Ok(None),
        };
        let simhash = match get(2)? {
            None => None,
            Some(v) => match v
                .cast_exact::<PyString>()
                .ok()
                .and_then(|s| hex_simhash(s.to_str().ok()?, bits))
            {
                Some(x) => Some(x),
                None => return Ok(None),
            },
        };
        if get(3)?.is_some_and(|v| !v.is_exact_instance_of::<PyInt>()) {
            return Ok(None); // chars: a form the general reader parses (or refuses)
        }
        let empty = match get(4)? {
            None => simhash == Some(0),
            Some(v) if v.is_exact_instance_of::<PyBool>() => v.is_truthy()?,
            Some(_) => return Ok(None),
        };
        if empty || get(5)?.is_some() {
            return Ok(None); // a text without words (rule 0), or a vector: read by the general reader
        }
        if let Some(c) = get(6)? {
            let cluster = if let Ok(s) = c.cast_exact::<PyString>() {
                s.to_str()?.to_owned()
            } else if c.is_exact_instance_of::<PyInt>() {
                c.str()?.to_str()?.to_owned()
            } else {
                return Ok(None);
            };
            let index = match hit.hit.get_item(intern!(py, "_index"))? {
                None => None,
                Some(x) if x.is_none() => None,
                Some(x) => match x.cast_exact::<PyString>() {
                    Ok(s) => Some(s.to_str()?.to_owned()),
                    Err(_) => return Ok(None),
                },
            };
            let next = codes.len() as i64;
            page.cluster[i] = *codes.entry((index, cluster)).or_insert(next);
        }
        let signed = sig && shingles > 0;
        if !(if gets_signatures {
            signed
        } else {
            simhash.is_some()
        }) {
            return Ok(None); // lacks what the config's rule needs: its text is fingerprinted
        }
        if !signed {
            page.sigs[i * perm..(i + 1) * perm].fill(0);
        }
        page.signed[i] = signed;
        page.shingles[i] = shingles;
        page.simhash[i] = simhash;
    }
    Ok(Some(page))
}

/// `diversify_page(hits, perm, width, nbytes, bits, gets_signatures, jaccard, containment, hamming_k, cosine,
/// min_shingles, max_ratio)`: the representative of each hit of a page (its position, or -1 for a
/// representative), as `esdedup.search.diversify` groups them, when every hit is of the plain form this
/// reads: an exact dict whose parts (`part`) are a signature of `width` base64 characters holding `nbytes`
/// bytes (`perm` little-endian u16 values), counts and cluster ids of exact ints or strings, a SimHash of
/// plain hex digits below 2^`bits`, `empty` false or absent, no vector, and what the config's rule needs (a
/// signature with n-grams when `gets_signatures`, else a SimHash). None for any other page, which the
/// general reader then reads. The rest are the rule's thresholds (None: off; `cosine`: whether a cosine
/// threshold is set) and the bounds of a trusted containment estimate.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn diversify_page(
    py: Python<'_>,
    hits: &Bound<'_, PyList>,
    perm: usize,
    width: usize,
    nbytes: usize,
    bits: u32,
    gets_signatures: bool,
    jaccard: Option<f64>,
    containment: Option<f64>,
    hamming_k: Option<u32>,
    cosine: bool,
    min_shingles: f64,
    max_ratio: f64,
) -> PyResult<Option<Vec<i64>>> {
    let form = Form::new(perm, width, nbytes, bits, gets_signatures)?;
    let Some(page) = read_page(py, hits, &form)? else {
        return Ok(None);
    };
    let rule = Rule {
        jaccard,
        containment,
        hamming_k,
        cosine,
        min_shingles,
        max_ratio,
    };
    Ok(Some(py.detach(|| group(&page, &rule))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_widths_count_the_same() {
        let a: Vec<u16> = (0..3 * 5).map(|i| (i % 4) as u16).collect();
        let b: Vec<u16> = (0..2 * 5).map(|i| (i % 3) as u16).collect();
        let bytes16 = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let bytes32 = |v: &[u16]| {
            v.iter()
                .flat_map(|&x| u32::from(x).to_le_bytes())
                .collect::<Vec<u8>>()
        };
        let want: Vec<u32> = a
            .chunks(5)
            .flat_map(|x| {
                b.chunks(5)
                    .map(move |y| x.iter().zip(y).filter(|(p, q)| p == q).count() as u32)
            })
            .collect();
        assert_eq!(counts(&bytes16(&a), &bytes16(&b), 5, 2, false), want);
        assert_eq!(counts(&bytes32(&a), &bytes32(&b), 5, 4, false), want);
        let square = counts(&bytes16(&a), &bytes16(&a), 5, 2, false);
        assert_eq!(counts(&bytes16(&a), &bytes16(&a), 5, 2, true), square);
        assert_eq!(counts(&bytes32(&a), &bytes32(&a), 5, 4, true), square);
    }

    #[test]
    fn decodes_padded_strings_and_refuses_bad_digits() {
        assert_eq!(
            decode(b"AQID/w==AAAAAA==", 8, 4),
            Some(vec![1, 2, 3, 255, 0, 0, 0, 0])
        );
        assert_eq!(decode(b"AQI=", 4, 2), Some(vec![1, 2]));
        assert_eq!(decode(b"AQID", 4, 3), Some(vec![1, 2, 3]));
        assert_eq!(decode(b"AQ=D", 4, 3), None);
        assert_eq!(decode(b"AQID/w=A", 8, 4), None);
    }
}
