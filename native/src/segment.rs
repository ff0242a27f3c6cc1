//! The `rjieba` tokenizer inside the core: jieba-rs, the very version rjieba is built with (pinned in
//! Cargo.toml), so its embedded dictionary and HMM and its cuts are rjieba's own. `TermCore.run_cut`
//! segments a batch with it and counts the tokens without making a Python str of each;
//! `tests/unit/test_native_steps.py` checks the tokens against `rjieba.Jieba().cut(text, True)`.

use pyo3::prelude::*;

/// jieba-rs with its default dictionary and the user words of one config, fixed once made (so one
/// instance serves any number of threads and Fingerprinters at once).
#[pyclass(frozen, module = "esdedup_native")]
pub struct JiebaCore {
    pub(crate) jieba: jieba_rs::Jieba,
}

#[pymethods]
impl JiebaCore {
    /// `user_words`: (word, frequency or None) added in order, as `rjieba.Jieba.add_word(word, freq, None)`
    /// adds them.
    #[new]
    fn new(user_words: Vec<(String, Option<usize>)>) -> Self {
        let mut jieba = jieba_rs::Jieba::new();
        for (word, freq) in &user_words {
            jieba.add_word(word, *freq, None);
        }
        JiebaCore { jieba }
    }

    /// The tokens of one text, as `rjieba.Jieba.cut(text, hmm)` gives them.
    #[pyo3(signature = (text, hmm = true))]
    fn cut<'a>(&self, py: Python<'_>, text: &'a str, hmm: bool) -> Vec<&'a str> {
        py.detach(|| self.jieba.cut(text, hmm).into_iter().map(|t| t.word).collect())
    }
}
