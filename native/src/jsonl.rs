//! JSON Lines read from their bytes (`esdedup.readers.formats`, the native path of a UTF-8 file): a block of
//! whole lines in, and for each line its `Record` when it is of the kind `esdedup.readers.records.plain_record`
//! reads, else its place in the block, for Python to read it the long way (its record or its rejection).
//!
//! A line is read here only when reading it is sure to give what Python gives: a JSON object whose every
//! number is an integer of a signed 64 bits (not `-0`), whose strings hold no lone surrogate, whose objects
//! repeat no key and nest at most `MAX_DEPTH` deep, with a text that is a string holding a character other
//! than whitespace (Python's `str.isspace`), an id that is a string, an integer, null or absent (of at most
//! `MAX_ID_BYTES`), and a title of the same kinds. Anything else (a float, a byte that is not UTF-8, a
//! syntax error, a blank line, a line over the record limit) goes to Python, whose rules stay the definition.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

/// Objects and arrays nested deeper than this are left to Python.
const MAX_DEPTH: usize = 64;
/// Objects of more members than this are left to Python (a repeated key is looked for member by member).
const MAX_MEMBERS: usize = 256;
/// `esdedup.readers.records.MAX_ID_BYTES`: a longer id is rejected, by Python.
const MAX_ID_BYTES: usize = 512;

/// A JSON value of the kinds read here.
enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Str(Cow<'a, str>),
    List(Vec<Value<'a>>),
    Object(Vec<(Cow<'a, str>, Value<'a>)>),
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser {
            text,
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.at += 1;
        }
    }

    /// The line's object, when the whole line is one (space around it allowed).
    fn line(mut self) -> Option<Vec<(Cow<'a, str>, Value<'a>)>> {
        self.space();
        if self.peek()? != b'{' {
            return None;
        }
        let Value::Object(members) = self.value(0)? else {
            return None;
        };
        self.space();
        (self.at == self.bytes.len()).then_some(members)
    }

    fn value(&mut self, depth: usize) -> Option<Value<'a>> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.space();
        match self.peek()? {
            b'{' => self.object(depth),
            b'[' => self.list(depth),
            b'"' => self.string().map(Value::Str),
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'n' => self.literal("null", Value::Null),
            b'-' | b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &str, value: Value<'a>) -> Option<Value<'a>> {
        if self.bytes[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            return Some(value);
        }
        None
    }

    fn object(&mut self, depth: usize) -> Option<Value<'a>> {
        self.at += 1;
        let mut members: Vec<(Cow<'a, str>, Value<'a>)> = Vec::new();
        self.space();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(Value::Object(members));
        }
        loop {
            self.space();
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            self.space();
            if self.next()? != b':' {
                return None;
            }
            let value = self.value(depth + 1)?;
            // A repeated key: Python keeps its first place and its last value; left to Python.
            if members.len() >= MAX_MEMBERS || members.iter().any(|(k, _)| *k == key) {
                return None;
            }
            members.push((key, value));
            self.space();
            match self.next()? {
                b',' => continue,
                b'}' => return Some(Value::Object(members)),
                _ => return None,
            }
        }
    }

    fn list(&mut self, depth: usize) -> Option<Value<'a>> {
        self.at += 1;
        let mut items = Vec::new();
        self.space();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(Value::List(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.space();
            match self.next()? {
                b',' => continue,
                b']' => return Some(Value::List(items)),
                _ => return None,
            }
        }
    }

    /// An integer of a signed 64 bits; None for a float (a fraction or an exponent), `-0`, one out of range,
    /// or a leading zero.
    fn integer(&mut self) -> Option<Value<'a>> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let digits = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        let count = self.at - digits;
        if count == 0 || (self.bytes[digits] == b'0' && (count > 1 || digits > start)) {
            return None;
        }
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        self.text[start..self.at].parse::<i64>().ok().map(Value::Int)
    }

    /// A string at `"`: borrowed from the line when it has no escape. None for a raw control character, a
    /// bad escape or a lone surrogate.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.at += 1;
        let start = self.at;
        loop {
            match self.next()? {
                b'"' => return Some(Cow::Borrowed(&self.text[start..self.at - 1])),
                b'\\' => {
                    self.at -= 1;
                    break;
                }
                0..=0x1f => return None,
                _ => {}
            }
        }
        // Every byte stopped at is ASCII, so each slice taken falls between characters.
        let mut out = String::from(&self.text[start..self.at]);
        loop {
            match self.next()? {
                b'"' => return Some(Cow::Owned(out)),
                b'\\' => out.push(self.escape()?),
                0..=0x1f => return None,
                _ => {
                    let run = self.at - 1;
                    while matches!(self.peek(), Some(b) if b != b'"' && b != b'\\' && b >= 0x20) {
                        self.at += 1;
                    }
                    out.push_str(&self.text[run..self.at]);
                }
            }
        }
    }

    fn escape(&mut self) -> Option<char> {
        Some(match self.next()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4()?;
                if (0xD800..0xDC00).contains(&high) {
                    if self.next()? != b'\\' || self.next()? != b'u' {
                        return None;
                    }
                    let low = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return None;
                    }
                    char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))?
                } else {
                    char::from_u32(high)? // a lone low surrogate is no char
                }
            }
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        let mut value = 0;
        for &d in digits {
            value = value * 16 + (d as char).to_digit(16)?;
        }
        self.at += 4;
        Some(value)
    }
}

/// Python's `str.isspace` of one character.
fn is_space(c: char) -> bool {
    matches!(c, '\t'..='\r' | '\u{1c}'..=' ' | '\u{85}' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}'
        | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
}

/// What `plain_record` makes of an id or title value: None for one of another kind (left to Python).
fn name_text<'a>(value: Option<&'a Value<'a>>) -> Option<Option<Cow<'a, str>>> {
    match value {
        None | Some(Value::Null) => Some(None),
        Some(Value::Str(s)) if s.is_empty() => Some(None),
        Some(Value::Str(s)) => Some(Some(Cow::Borrowed(s.as_ref()))),
        Some(Value::Int(n)) => Some(Some(Cow::Owned(n.to_string()))),
        Some(_) => None,
    }
}

fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Int(n) => n.into_pyobject(py)?.into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::List(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(members) => {
            let dict = PyDict::new(py);
            for (key, item) in members {
                dict.set_item(key.as_ref(), to_python(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// The names of the fields holding the id, the text and the title (three different names).
#[derive(FromPyObject)]
pub struct FieldNames {
    id: String,
    text: String,
    title: String,
}

/// The records of a block of whole lines (`block`, each line ending in `\n`; its first line is line
/// `first_line` of the file, at byte `offset`): a list with, for each line in turn, its record, made by
/// calling `record(id, text, title, fields, source, "line N", offset, encoding)`, or `(start, length)`, where
/// the line is in the block, for a line read the long way (`limit`: the record limit in bytes, which a longer
/// line is over). Also the place in that list of the first record whose line is not all ASCII (None: none).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn jsonl_records<'py>(
    py: Python<'py>,
    block: &[u8],
    offset: u64,
    first_line: u64,
    names: FieldNames,
    source: Bound<'py, PyAny>,
    encoding: Bound<'py, PyAny>,
    record: Bound<'py, PyAny>,
    limit: usize,
) -> PyResult<(Bound<'py, PyList>, Option<usize>)> {
    if names.id == names.text || names.id == names.title || names.text == names.title {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "jsonl_records: the id, text and title fields must have three different names",
        ));
    }
    if block.last().is_some_and(|&b| b != b'\n') {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "jsonl_records reads whole lines: the block must end with a newline",
        ));
    }
    let out = PyList::empty(py);
    let mut first_not_ascii = None;
    let mut start = 0;
    for (x, line) in block.split(|&b| b == b'\n').enumerate() {
        if start == block.len() {
            break; // the empty piece after the last newline
        }
        let read = if line.len() > limit {
            None
        } else {
            std::str::from_utf8(line)
                .ok()
                .and_then(|text| Parser::new(text).line())
        };
        let made = match read {
            Some(members) => make_record(
                py,
                &members,
                &names,
                &source,
                &encoding,
                &record,
                offset + start as u64,
                first_line + x as u64,
            )?,
            None => None,
        };
        match made {
            Some(rec) => {
                if first_not_ascii.is_none() && !line.is_ascii() {
                    first_not_ascii = Some(x);
                }
                out.append(rec)?;
            }
            None => out.append(PyTuple::new(py, [start, line.len()])?)?,
        }
        start += line.len() + 1;
    }
    Ok((out, first_not_ascii))
}

#[allow(clippy::too_many_arguments)]
fn make_record<'py>(
    py: Python<'py>,
    members: &[(Cow<str>, Value)],
    names: &FieldNames,
    source: &Bound<'py, PyAny>,
    encoding: &Bound<'py, PyAny>,
    record: &Bound<'py, PyAny>,
    offset: u64,
    line: u64,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let field = |name: &str| members.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let Some(Value::Str(text)) = field(&names.text) else {
        return Ok(None);
    };
    if text.chars().all(is_space) {
        return Ok(None); // empty, or whitespace alone
    }
    let (Some(id), Some(title)) = (name_text(field(&names.id)), name_text(field(&names.title))) else {
        return Ok(None);
    };
    if id.as_ref().is_some_and(|id| id.len() > MAX_ID_BYTES) {
        return Ok(None);
    }
    let fields = PyDict::new(py);
    for (key, value) in members {
        if *key != names.id && *key != names.text && *key != names.title {
            fields.set_item(key.as_ref(), to_python(py, value)?)?;
        }
    }
    let args = (
        id.map(|s| PyString::new(py, &s)),
        PyString::new(py, text),
        title.map(|s| PyString::new(py, &s)),
        fields,
        source,
        PyString::new(py, &format!("line {line}")),
        offset,
        encoding,
    );
    record.call1(args).map(Some)
}
