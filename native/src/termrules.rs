//! Which term a new raw token counts as, and each new term's hash data, decided in the core: what
//! `esdedup.fingerprint.features.term_of`, `Fingerprinter._factors` and `esdedup.fingerprint.hashing`
//! decide in Python, for the configs whose rules are plain data (stopwords, synonyms, the weight of one
//! occurrence 1 or the term's length). Python hands the rules over once (`TermCore.decide_terms`) from the
//! same tables it reads itself (`str.isspace` and `str.isalnum` of its interpreter, its stopword set and
//! synonym map), so the two cannot drift apart; `tests/unit/test_native_steps.py` checks them on every kind
//! of token.
//!
//! * `term_of`: the token stripped of `str.isspace` characters at both ends; no term when nothing is left
//!   or no character is `str.isalnum`; then a synonym's canonical term for the token; no term when that is
//!   a stopword. A `char` tokenizer's n-grams are terms as they are (`raw`).
//! * The hash data of a term: BLAKE2b (RFC 7693) of its UTF-8 bytes, `bits / 8 + 8` bytes, personalised
//!   `esdedup-v1`: the first `bits / 8` bytes are its SimHash votes; the last 8, little-endian, its vector
//!   bucket (modulo `dims`) and sign (bit 63).

use blake2b_simd::Params;
use rustc_hash::{FxHashMap, FxHashSet};

/// `esdedup.fingerprint.hashing.PERSON`.
const PERSON: &[u8] = b"esdedup-v1";

/// The rules of one Fingerprinter's config, as Python hands them over.
pub(crate) struct TermRules {
    spaces: FxHashSet<char>,
    /// `str.isalnum` of each code point (0x110000 entries).
    words: Vec<bool>,
    stopwords: FxHashSet<Box<str>>,
    synonyms: FxHashMap<Box<str>, Box<str>>,
    /// Tokens are terms as they are (character n-grams).
    raw: bool,
    /// One occurrence weighs the term's length in code points (`tf_length`), else 1.
    by_length: bool,
}

/// The hash data of one term, as `_TermTable` keeps it.
pub(crate) struct HashData {
    pub digest: Vec<u8>,
    pub bucket: usize,
    pub sign: f64,
    pub factor: f64,
}

impl TermRules {
    pub(crate) fn new(
        spaces: Vec<u32>,
        words: &[u8],
        stopwords: Vec<String>,
        synonyms: Vec<(String, String)>,
        raw: bool,
        by_length: bool,
    ) -> TermRules {
        TermRules {
            spaces: spaces.into_iter().filter_map(char::from_u32).collect(),
            words: words.iter().map(|&v| v != 0).collect(),
            stopwords: stopwords.into_iter().map(String::into_boxed_str).collect(),
            synonyms: synonyms
                .into_iter()
                .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
                .collect(),
            raw,
            by_length,
        }
    }

    /// The term `token` counts as, or None (`term_of`).
    pub(crate) fn term_of<'a>(&'a self, token: &'a str) -> Option<&'a str> {
        if self.raw {
            return Some(token);
        }
        let stripped = token.trim_matches(|c: char| self.spaces.contains(&c));
        if !stripped.chars().any(|c| self.words[c as usize]) {
            return None; // an empty token has no word character either
        }
        let term = self.synonyms.get(stripped).map_or(stripped, |t| &**t);
        if self.stopwords.contains(term) {
            None
        } else {
            Some(term)
        }
    }

    /// The hash data of a term for a table of `bits`-wide SimHash votes and `dims` vector buckets.
    pub(crate) fn hash_data(&self, term: &str, bits: usize, dims: usize) -> HashData {
        let nbytes = bits / 8;
        let hash = Params::new()
            .hash_length(nbytes + 8)
            .personal(PERSON)
            .hash(term.as_bytes());
        let bytes = hash.as_bytes();
        let tail = u64::from_le_bytes(bytes[nbytes..nbytes + 8].try_into().expect("8 bytes"));
        HashData {
            digest: bytes[..nbytes].to_vec(),
            bucket: (tail % dims as u64) as usize,
            sign: if tail >> 63 == 1 { -1.0 } else { 1.0 },
            factor: if self.by_length {
                term.chars().count() as f64
            } else {
                1.0
            },
        }
    }
}
