//! The `rjieba` and `jieba` tokenizers inside the core. Both segment with jieba-rs, the very version
//! rjieba is built with (pinned in Cargo.toml), so its embedded dictionary and route are rjieba's own;
//! `TermCore.run_cut` segments a batch with one and counts the tokens without making a Python str of each.
//!
//! * `rjieba`: jieba-rs's own cut with its HMM, what `rjieba.Jieba().cut(text, True)` gives;
//! * `jieba`: jieba's precise mode (`jieba.lcut(text, HMM=True)`), what
//!   `esdedup/fingerprint/jieba_fast.py` (`JiebaFast`) computes, which stays the definition: jieba-rs's
//!   route with its HMM off, the runs of single Chinese characters cut by jieba's own HMM (`hmm.rs`, its
//!   tables handed over by Python), blocks split as jieba splits them. A text with a block only jieba
//!   itself can cut (`JiebaFast._mixed_block`) is left to Python, never approximated.
//!
//! The character classes below are those of jieba_fast's patterns; `tests/unit/test_native_jieba.py` checks
//! the tokens against `JiebaFast` and jieba on every BMP code point, poems, news text and random mixed scripts.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::hmm::{Hmm, FIRST, LAST};

/// How a `JiebaCore` cuts.
pub(crate) enum Mode {
    /// jieba-rs's cut with its HMM.
    Rjieba,
    /// jieba's precise mode, with jieba's HMM.
    Jieba(Hmm),
}

/// jieba-rs with its default dictionary (and the user words of one config, for `rjieba`), fixed once
/// made (so one instance serves any number of threads and Fingerprinters at once).
#[pyclass(frozen, module = "esdedup_native")]
pub struct JiebaCore {
    pub(crate) jieba: jieba_rs::Jieba,
    pub(crate) mode: Mode,
}

/// Chinese as jieba counts it (`_CHINESE_BLOCK`, `_FINALSEG_CHINESE`; the HMM's characters).
fn is_chinese(c: char) -> bool {
    (FIRST..=LAST).contains(&(c as u32))
}

/// A character of jieba's Chinese blocks (`_HAN_BLOCK`).
fn is_han(c: char) -> bool {
    is_chinese(c) || c.is_ascii_alphanumeric() || matches!(c, '+' | '#' | '&' | '.' | '_' | '%' | '-')
}

/// The punctuation `_NOT_ALIKE` leaves out (ASCII but jieba's in-block ``+#&._%-``, and a few others).
const ALIKE_PUNCTUATION: &str = "!\"'(),/:;<=>?@[]^`{|}~\\*$·—…‘’“”";

/// A character both libraries treat alike (not `_NOT_ALIKE`).
fn is_alike(c: char) -> bool {
    is_chinese(c)
        || matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{3000}'..='\u{303F}')
        || ALIKE_PUNCTUATION.contains(c)
}

/// Where jieba's ``_HAN_BLOCK.split`` cuts a text: alternately the text between blocks and a block, each
/// as a byte range, beginning and ending with the text between (which may be empty).
fn han_split(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut from, mut inside) = (0, false);
    for (i, c) in text.char_indices() {
        if is_han(c) != inside {
            out.push((from, i));
            from = i;
            inside = !inside;
        }
    }
    out.push((from, text.len()));
    if inside {
        out.push((text.len(), text.len()));
    }
    out
}

/// The byte length of a `_FINALSEG_SKIP` match (`[a-zA-Z0-9]+(?:\.\d+)?%?`) at the start of `s`, 0 for none.
fn finalseg_skip_match(s: &[u8]) -> usize {
    let mut n = s.iter().take_while(|b| b.is_ascii_alphanumeric()).count();
    if n == 0 {
        return 0;
    }
    if s.get(n) == Some(&b'.') {
        let digits = s[n + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 {
            n += 1 + digits;
        }
    }
    if s.get(n) == Some(&b'%') {
        n += 1;
    }
    n
}

/// The characters of `s`, one token each.
fn push_chars<'a>(s: &'a str, out: &mut Vec<&'a str>) {
    out.extend(s.char_indices().map(|(i, c)| &s[i..i + c.len_utf8()]));
}

impl JiebaCore {
    /// The tokens of one text as this tokenizer gives them, or None for a text only jieba itself cuts.
    pub(crate) fn tokens<'a>(&self, text: &'a str) -> Option<Vec<&'a str>> {
        match &self.mode {
            Mode::Rjieba => Some(self.jieba.cut(text, true).into_iter().map(|t| t.word).collect()),
            Mode::Jieba(hmm) => {
                let mut out = Vec::new();
                self.precise(hmm, text, &mut out).then_some(out)
            }
        }
    }

    /// `JiebaFast.cut`: false when a block is one only jieba can cut.
    fn precise<'a>(&self, hmm: &Hmm, text: &'a str, out: &mut Vec<&'a str>) -> bool {
        if text.chars().all(is_alike) {
            self.route_and_hmm(hmm, text, out);
            return true;
        }
        // JiebaFast._blocks: consecutive blocks jieba-rs cuts as jieba does are routed as one text.
        let mut alike_from: Option<usize> = None;
        for (a, b) in han_split(text) {
            let block = &text[a..b];
            let han = !block.is_empty() && block.chars().all(is_han);
            let chinese = han && block.chars().all(is_chinese);
            if chinese || (!han && block.chars().all(is_alike)) {
                alike_from.get_or_insert(a);
                continue;
            }
            if let Some(from) = alike_from.take() {
                self.route_and_hmm(hmm, &text[from..a], out);
            }
            if han {
                if !self.mixed_block(hmm, block, out) {
                    return false;
                }
            } else {
                self.other_block(block, out);
            }
        }
        if let Some(from) = alike_from {
            self.route_and_hmm(hmm, &text[from..], out);
        }
        true
    }

    /// A block outside jieba's Chinese blocks, as `_SKIP` splits it: every character a token of its own,
    /// but ``\r\n``, one token.
    fn other_block<'a>(&self, block: &'a str, out: &mut Vec<&'a str>) {
        let mut chars = block.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let mut end = i + c.len_utf8();
            if c == '\r' && chars.peek().map(|&(_, n)| n) == Some('\n') {
                chars.next();
                end += 1;
            }
            out.push(&block[i..end]);
        }
    }

    /// `JiebaFast._route_and_hmm` of one text of Chinese blocks and alike characters: jieba-rs's route,
    /// each run of two or more single Chinese characters cut by the HMM unless the run is a word.
    fn route_and_hmm<'a>(&self, hmm: &Hmm, text: &'a str, out: &mut Vec<&'a str>) {
        if text.is_empty() {
            return;
        }
        let route = self.jieba.cut(text, false);
        let single = |t: &jieba_rs::Token<'_>| t.end - t.start == 1 && t.word.chars().all(is_chinese);
        let mut k = 0;
        while k < route.len() {
            if !single(&route[k]) {
                out.push(route[k].word);
                k += 1;
                continue;
            }
            let first = k;
            while k < route.len() && single(&route[k]) {
                k += 1;
            }
            let run = &text[route[first].byte_start..route[k - 1].byte_end];
            if k - first >= 2 && !self.jieba.has_word(run) {
                hmm.cut(run, out);
            } else {
                out.extend(route[first..k].iter().map(|t| t.word));
            }
        }
    }

    /// `JiebaFast._mixed_block`: a Chinese block with letters or digits; false when only jieba can cut it.
    fn mixed_block<'a>(&self, hmm: &Hmm, block: &'a str, out: &mut Vec<&'a str>) -> bool {
        // The route's steps, jieba-rs's runs of letters and digits taken apart.
        let mut steps: Vec<&'a str> = Vec::new();
        for token in self.jieba.cut(block, false) {
            let word = token.word;
            if token.end - token.start > 1 && word.bytes().all(|b| b.is_ascii_alphanumeric()) {
                if self.jieba.has_word(word) {
                    return false; // a word, or single steps run together: only jieba can tell
                }
                push_chars(word, &mut steps);
            } else {
                steps.push(word);
            }
        }
        let mut k = 0;
        while k < steps.len() {
            if steps[k].chars().nth(1).is_some() {
                out.push(steps[k]);
                k += 1;
                continue;
            }
            let first = k;
            while k < steps.len() && steps[k].chars().nth(1).is_none() {
                k += 1;
            }
            // Steps are consecutive slices of the block: the run is the block from the first to the last.
            let start = steps[first].as_ptr() as usize - block.as_ptr() as usize;
            let end = steps[k - 1].as_ptr() as usize - block.as_ptr() as usize + steps[k - 1].len();
            self.single_steps(hmm, &block[start..end], k - first, out);
        }
        true
    }

    /// `JiebaFast._cut_single_steps`: a run of `steps` single route steps, as jieba cuts it.
    fn single_steps<'a>(&self, hmm: &Hmm, run: &'a str, steps: usize, out: &mut Vec<&'a str>) {
        if steps == 1 || self.jieba.has_word(run) {
            push_chars(run, out);
            return;
        }
        // jieba.finalseg.cut: Chinese runs by the HMM, the rest split by _FINALSEG_SKIP.
        let mut rest = run;
        while !rest.is_empty() {
            let chinese = rest.starts_with(is_chinese);
            let n = rest
                .char_indices()
                .find(|&(_, c)| is_chinese(c) != chinese)
                .map_or(rest.len(), |(i, _)| i);
            let (part, tail) = rest.split_at(n);
            if !chinese {
                Self::finalseg_skip(part, out);
            } else if part.chars().nth(1).is_some() {
                hmm.cut(part, out);
            } else {
                out.push(part);
            }
            rest = tail;
        }
    }

    /// ``_FINALSEG_SKIP.split`` of a part without Chinese, its empty pieces dropped.
    fn finalseg_skip<'a>(part: &'a str, out: &mut Vec<&'a str>) {
        let bytes = part.as_bytes();
        let (mut gap, mut i) = (0, 0);
        while i < bytes.len() {
            let n = finalseg_skip_match(&bytes[i..]);
            if n == 0 {
                i += 1;
                continue;
            }
            if gap < i {
                out.push(&part[gap..i]);
            }
            out.push(&part[i..i + n]);
            i += n;
            gap = i;
        }
        if gap < bytes.len() {
            out.push(&part[gap..]);
        }
    }
}

#[pymethods]
impl JiebaCore {
    /// `user_words`: (word, frequency or None) added in order, as `rjieba.Jieba.add_word(word, freq, None)`
    /// adds them (the `rjieba` tokenizer). `hmm`: jieba's HMM tables as `jieba_hmm.tables` reads them
    /// (start, transition and emission scores, float64 little-endian bytes) for the `jieba` tokenizer,
    /// which takes no user words; None for `rjieba`.
    #[new]
    #[pyo3(signature = (user_words, hmm = None))]
    fn new(
        user_words: Vec<(String, Option<usize>)>,
        hmm: Option<(Vec<u8>, Vec<u8>, Vec<u8>)>,
    ) -> PyResult<Self> {
        let mode = match hmm {
            None => Mode::Rjieba,
            Some(_) if !user_words.is_empty() => {
                return Err(PyValueError::new_err(
                    "the jieba tokenizer with user words is jieba's own: the core takes none",
                ))
            }
            Some((start, trans, emit)) => Mode::Jieba(Hmm::new(&start, &trans, &emit)?),
        };
        let mut jieba = jieba_rs::Jieba::new();
        for (word, freq) in &user_words {
            jieba.add_word(word, *freq, None);
        }
        Ok(JiebaCore { jieba, mode })
    }

    /// Which tokenizer this is: ``rjieba`` or ``jieba``.
    #[getter]
    fn tokenizer(&self) -> &'static str {
        match self.mode {
            Mode::Rjieba => "rjieba",
            Mode::Jieba(_) => "jieba",
        }
    }

    /// The tokens of one text: for `rjieba` what `rjieba.Jieba.cut(text, hmm)` gives; for `jieba` what
    /// `JiebaFast.cut(text)` gives (``hmm`` must be true), or None for a text the core leaves to Python.
    #[pyo3(signature = (text, hmm = true))]
    fn cut<'a>(&self, py: Python<'_>, text: &'a str, hmm: bool) -> PyResult<Option<Vec<&'a str>>> {
        match self.mode {
            Mode::Rjieba => {
                Ok(Some(py.detach(|| {
                    self.jieba.cut(text, hmm).into_iter().map(|t| t.word).collect()
                })))
            }
            Mode::Jieba(_) if !hmm => Err(PyValueError::new_err("the jieba tokenizer cuts with its HMM")),
            Mode::Jieba(_) => Ok(py.detach(|| self.tokens(text))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str) -> Vec<&str> {
        han_split(text).into_iter().map(|(a, b)| &text[a..b]).collect()
    }

    #[test]
    fn han_split_is_re_split_with_the_block_captured() {
        // re.split(r"([\u4E00-\u9FD5a-zA-Z0-9+#&\._%\-]+)", text)
        assert_eq!(pieces("中文"), ["", "中文", ""]);
        assert_eq!(pieces("，"), ["，"]);
        assert_eq!(pieces(""), [""]);
        assert_eq!(pieces("a，b😀"), ["", "a", "，", "b", "😀"]);
    }

    #[test]
    fn finalseg_skip_splits_as_jiebas_pattern() {
        // [p for p in re.split(r"([a-zA-Z0-9]+(?:\.\d+)?%?)", part) if p]
        let split = |part: &'static str| {
            let mut out = Vec::new();
            JiebaCore::finalseg_skip(part, &mut out);
            out
        };
        assert_eq!(split("1.5%的"), ["1.5%", "的"]);
        assert_eq!(split("a1.b..2%"), ["a1", ".", "b", "..", "2%"]);
        assert_eq!(split("+#&"), ["+#&"]);
        assert_eq!(split("v1.2.3"), ["v1.2", ".", "3"]);
    }
}
