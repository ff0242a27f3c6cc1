//! OpenCC's conversion of a batch of texts (the `t2s` step of `esdedup.fingerprint.normalize`), with the
//! GIL released and the texts spread over rayon's threads.
//!
//! Python reads the installed OpenCC's config and dictionaries (`esdedup.fingerprint.opencc_tables`) and
//! hands over their entries as stages, in the order OpenCC runs them (the normalization chain, then the
//! conversion chain); each stage is a short-circuit group of tables. A stage converts the whole text, left to
//! right, as OpenCC's `Conversion` does:
//!
//! * at each position, the first table (in the group's order) with a key that begins there wins, with the
//!   longest such key of that table, and the key is replaced by its value;
//! * where no key begins, an ideographic description sequence (an operator U+2FF0..U+2FFF and its operands,
//!   parsed as `UTF8Util::NextIdeographicDescriptionSequenceLength` parses them) is copied whole, so the
//!   characters inside it are left alone; otherwise one character is copied.
//!
//! Python strs reach OpenCC as UTF-8, so the code points here are what OpenCC's byte-wise matching sees
//! character by character; a text with a lone surrogate (which Python cannot encode, so OpenCC never sees
//! it) is handed back.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use rustc_hash::FxHashMap;

use crate::{each_width, rewrite_texts, CodePointStep, Rewritten};

const BMP: usize = 0x1_0000;
/// The ideographic description operators OpenCC recognises.
const FIRST_IDS_OPERATOR: u32 = 0x2FF0;
const LAST_IDS_OPERATOR: u32 = 0x2FFF;
/// OpenCC's bounds on one ideographic description sequence: operators nested at most this deep (an
/// operand one level deeper is invalid) ...
const IDS_MAX_DEPTH: usize = 16;
/// ... and at most this many code points in all.
const IDS_MAX_CODE_POINTS: usize = 64;

/// One dictionary: a trie over the code points of its keys, each node with the value of the key ending
/// there, if any.
struct Table {
    children: FxHashMap<(u32, char), u32>,
    values: Vec<Option<Box<[char]>>>,
    /// Whether a longer key goes on from each node.
    inner: Vec<bool>,
}

impl Table {
    fn new(entries: Vec<(String, String)>) -> PyResult<Self> {
        let mut table = Table {
            children: FxHashMap::default(),
            values: vec![None],
            inner: vec![false],
        };
        for (key, value) in entries {
            if key.is_empty() {
                return Err(PyValueError::new_err("a dictionary key is empty"));
            }
            let mut node = 0u32;
            for ch in key.chars() {
                table.inner[node as usize] = true;
                let next = table.values.len() as u32;
                node = *table.children.entry((node, ch)).or_insert(next);
                if node == next {
                    table.values.push(None);
                    table.inner.push(false);
                }
            }
            let slot = &mut table.values[node as usize];
            if slot.is_some() {
                return Err(PyValueError::new_err(format!(
                    "the dictionary key {key:?} comes twice"
                )));
            }
            *slot = Some(value.chars().collect());
        }
        Ok(table)
    }

    /// The longest key that `text` begins with: (its length in code points, its value).
    fn longest_prefix(&self, text: &[char]) -> Option<(usize, &[char])> {
        let mut node = 0u32;
        let mut found = None;
        for (i, &ch) in text.iter().enumerate() {
            match self.children.get(&(node, ch)) {
                Some(&next) => node = next,
                None => break,
            }
            if let Some(value) = &self.values[node as usize] {
                found = Some((i + 1, &value[..]));
            }
        }
        found
    }

    fn first_chars(&self) -> impl Iterator<Item = char> + '_ {
        self.children
            .keys()
            .filter(|(node, _)| *node == 0)
            .map(|&(_, ch)| ch)
    }

    /// What this table does where a text begins with `ch`, if some key of it begins with `ch`.
    fn start(&self, ch: char) -> Option<Start> {
        let node = *self.children.get(&(0, ch))? as usize;
        if self.inner[node] {
            return Some(Start::Walk);
        }
        Some(Start::Replace(
            self.values[node]
                .clone()
                .expect("a node without a longer key ends one"),
        ))
    }
}

/// What a stage does at a position whose code point begins some key.
enum Start {
    /// The first table with a key there has only the one-character key: its value, whatever follows.
    Replace(Box<[char]>),
    /// A longer key may begin there: walk the tables.
    Walk,
}

/// One conversion of OpenCC's chain: a short-circuit group of tables.
struct Stage {
    tables: Vec<Table>,
    /// What the stage does at each code point that begins some key of some table (most keys are one
    /// character long, and then the tables need not be walked) ...
    starts: Vec<Start>,
    /// ... found, for a code point of the BMP, at its entry here less one (0: no key begins with it) ...
    bmp: Vec<u32>,
    /// ... and for one past the BMP, here.
    astral: FxHashMap<char, u32>,
}

impl Stage {
    fn new(tables: Vec<Table>) -> Self {
        let mut stage = Stage {
            tables: Vec::new(),
            starts: Vec::new(),
            bmp: vec![0; BMP],
            astral: FxHashMap::default(),
        };
        for ch in tables.iter().flat_map(Table::first_chars) {
            if stage.start(ch).is_some() {
                continue;
            }
            stage.starts.push(
                tables
                    .iter()
                    .find_map(|table| table.start(ch))
                    .expect("a table has a key at ch"),
            );
            let index = stage.starts.len() as u32;
            if (ch as usize) < BMP {
                stage.bmp[ch as usize] = index;
            } else {
                stage.astral.insert(ch, index);
            }
        }
        stage.tables = tables;
        stage
    }

    /// What the stage does where a text begins with `ch`, when some key begins with it.
    #[inline]
    fn start(&self, ch: char) -> Option<&Start> {
        let index = if (ch as usize) < BMP {
            self.bmp[ch as usize]
        } else {
            *self.astral.get(&ch)?
        };
        index.checked_sub(1).map(|i| &self.starts[i as usize])
    }

    /// Whether converting a text with this code point can change it at all (a description sequence only
    /// keeps keys inside it from being replaced).
    fn touches(&self, ch: char) -> bool {
        self.start(ch).is_some()
    }

    /// The first table with a key `text` begins with, that table's longest one.
    fn lookup(&self, text: &[char]) -> Option<(usize, &[char])> {
        match self.start(text[0])? {
            Start::Replace(value) => Some((1, value)),
            Start::Walk => self.tables.iter().find_map(|table| table.longest_prefix(text)),
        }
    }

    /// `text` converted onto `out`; whether any key was replaced by a different value.
    fn convert(&self, text: &[char], out: &mut Vec<char>) -> bool {
        let mut changed = false;
        let mut pos = 0;
        while pos < text.len() {
            let rest = &text[pos..];
            if let Some((len, value)) = self.lookup(rest) {
                changed |= value != &rest[..len];
                out.extend_from_slice(value);
                pos += len;
                continue;
            }
            let len = ids_length(rest).unwrap_or(1);
            out.extend_from_slice(&rest[..len]);
            pos += len;
        }
        changed
    }
}

fn ids_arity(ch: char) -> usize {
    match ch as u32 {
        0x2FF2 | 0x2FF3 => 3,
        0x2FFE | 0x2FFF => 1,
        FIRST_IDS_OPERATOR..=LAST_IDS_OPERATOR => 2,
        _ => 0,
    }
}

fn is_ids_operator(ch: char) -> bool {
    ids_arity(ch) != 0
}

/// How a description sequence at the start of a text parses.
enum Ids {
    /// Complete, this many code points long.
    Complete(usize),
    /// The text ends inside it, or it breaks OpenCC's bounds: not a sequence.
    Not,
}

/// The length of the ideographic description sequence `text` begins with, if it begins with a complete one.
fn ids_length(text: &[char]) -> Option<usize> {
    if !is_ids_operator(text[0]) {
        return None;
    }
    let mut points = 0;
    match parse_ids(text, IDS_MAX_DEPTH, &mut points) {
        Ids::Complete(len) => Some(len),
        Ids::Not => None,
    }
}

/// One component of a description sequence: a code point that is no operator, or an operator and its
/// operands. `depth_left` operators may still nest; `points` counts the code points read so far.
fn parse_ids(text: &[char], depth_left: usize, points: &mut usize) -> Ids {
    if text.is_empty() || depth_left == 0 || *points >= IDS_MAX_CODE_POINTS {
        return Ids::Not;
    }
    *points += 1;
    let mut len = 1;
    for _ in 0..ids_arity(text[0]) {
        match parse_ids(&text[len..], depth_left - 1, points) {
            Ids::Complete(operand) => len += operand,
            Ids::Not => return Ids::Not,
        }
    }
    Ids::Complete(len)
}

/// The stages of one OpenCC config.
#[pyclass(frozen, module = "esdedup_native")]
pub struct OpenccCore {
    stages: Vec<Stage>,
}

impl CodePointStep for OpenccCore {
    fn rewrite(&self, units: impl ExactSizeIterator<Item = u32> + Clone) -> Rewritten {
        let mut text = Vec::with_capacity(units.len());
        for c in units {
            let Some(ch) = char::from_u32(c) else {
                return Rewritten::Python; // a lone surrogate: no UTF-8, OpenCC never gets it
            };
            text.push(ch);
        }
        let mut changed = false;
        let mut out = Vec::with_capacity(text.len());
        for stage in &self.stages {
            // A text none of whose code points begins a key stays as it is.
            if !text.iter().any(|&ch| stage.touches(ch)) {
                continue;
            }
            out.clear();
            changed |= stage.convert(&text, &mut out);
            std::mem::swap(&mut text, &mut out);
        }
        if changed {
            let mut converted = String::with_capacity(text.iter().map(|ch| ch.len_utf8()).sum());
            converted.extend(text);
            Rewritten::Changed(converted)
        } else {
            Rewritten::Same
        }
    }
}

#[pymethods]
impl OpenccCore {
    /// `stages`: the conversions in the order OpenCC runs them, each the entries (key, value) of its tables
    /// in the group's order.
    #[new]
    fn new(stages: Vec<Vec<Vec<(String, String)>>>) -> PyResult<Self> {
        let stages = stages
            .into_iter()
            .map(|tables| {
                Ok(Stage::new(
                    tables.into_iter().map(Table::new).collect::<PyResult<_>>()?,
                ))
            })
            .collect::<PyResult<_>>()?;
        Ok(OpenccCore { stages })
    }

    /// For a list of texts: each converted (the same object when nothing changes), or None for a text with
    /// a lone surrogate.
    fn convert<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
    ) -> PyResult<Bound<'py, PyList>> {
        rewrite_texts(py, texts, |t| each_width(self, t))
    }
}
