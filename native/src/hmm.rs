//! jieba's HMM for the runs of Chinese characters its dictionary route leaves single (`jieba.finalseg`),
//! as `esdedup/fingerprint/jieba_hmm.py` computes it: the same float64 sums in the same order (previous
//! score + transition, then + emission), the same tie-breaking (among equal scores the state whose name
//! sorts last, as jieba's `max` over `(score, state)`), and runs longer than `MAX_RUN` decoded `MAX_RUN`
//! characters at a time. The tables are jieba's own, handed over by Python (`jieba_hmm.tables`).

use pyo3::exceptions::PyValueError;
use pyo3::PyResult;

const B: usize = 0;
const M: usize = 1;
const E: usize = 2;
const S: usize = 3;
/// The characters the HMM sees (`jieba_hmm.FIRST`, `LAST`; jieba's `re_han`).
pub(crate) const FIRST: u32 = 0x4E00;
pub(crate) const LAST: u32 = 0x9FD5;
/// `jieba_hmm.MAX_RUN`: the longest run decoded in one piece.
const MAX_RUN: usize = 500;

/// jieba's start, transition (`[from][to]`) and emission (per character of `FIRST..=LAST`) scores.
pub(crate) struct Hmm {
    start: [f64; 4],
    trans: [[f64; 4]; 4],
    emit: Vec<[f64; 4]>,
}

fn floats(bytes: &[u8]) -> impl Iterator<Item = f64> + '_ {
    bytes
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
}

/// The larger of two candidate scores and its previous state; on a tie `b` (the state that sorts last).
#[inline]
fn best(a: f64, a_state: u8, b: f64, b_state: u8) -> (f64, u8) {
    if b >= a {
        (b, b_state)
    } else {
        (a, a_state)
    }
}

impl Hmm {
    /// `start` (4 float64), `trans` (4 x 4, [from, to]) and `emit` ((LAST - FIRST + 1) x 4), little-endian,
    /// states in the order B, M, E, S.
    pub(crate) fn new(start: &[u8], trans: &[u8], emit: &[u8]) -> PyResult<Self> {
        let chars = (LAST - FIRST + 1) as usize;
        if start.len() != 4 * 8 || trans.len() != 16 * 8 || emit.len() != chars * 4 * 8 {
            return Err(PyValueError::new_err(format!(
                "the HMM tables need 4, 16 and {} float64 values",
                chars * 4
            )));
        }
        let mut out = Hmm {
            start: [0.0; 4],
            trans: [[0.0; 4]; 4],
            emit: vec![[0.0; 4]; chars],
        };
        for (slot, v) in out.start.iter_mut().zip(floats(start)) {
            *slot = v;
        }
        for (i, v) in floats(trans).enumerate() {
            out.trans[i / 4][i % 4] = v;
        }
        for (i, v) in floats(emit).enumerate() {
            out.emit[i / 4][i % 4] = v;
        }
        Ok(out)
    }

    /// The words of a run (a str of characters of `FIRST..=LAST` only, two or more), pushed onto `out`.
    pub(crate) fn cut<'a>(&self, run: &'a str, out: &mut Vec<&'a str>) {
        let codes: Vec<(usize, u32)> = run.char_indices().map(|(i, c)| (i, c as u32)).collect();
        let mut states = Vec::with_capacity(codes.len());
        for chunk in codes.chunks(MAX_RUN) {
            self.decode(
                chunk.iter().map(|&(_, c)| (c - FIRST) as usize),
                chunk.len(),
                &mut states,
            );
        }
        // A word ends at every E and S (the transitions allow no other).
        let mut begin = 0;
        for (k, &state) in states.iter().enumerate() {
            if usize::from(state) >= E {
                let end = codes.get(k + 1).map_or(run.len(), |&(i, _)| i);
                out.push(&run[begin..end]);
                begin = end;
            }
        }
    }

    /// Viterbi over one piece of a run (emission rows `codes`, `n` of them), its states pushed onto `out`.
    fn decode(&self, mut codes: impl Iterator<Item = usize>, n: usize, out: &mut Vec<u8>) {
        let (t, first) = (&self.trans, codes.next().expect("a run is not empty"));
        let e = &self.emit[first];
        let mut v = [0.0f64; 4];
        for s in 0..4 {
            v[s] = self.start[s] + e[s];
        }
        let mut back: Vec<[u8; 4]> = Vec::with_capacity(n.saturating_sub(1));
        for code in codes {
            let e = &self.emit[code];
            let (nb, pb) = best((v[E] + t[E][B]) + e[B], E as u8, (v[S] + t[S][B]) + e[B], S as u8);
            let (nm, pm) = best((v[B] + t[B][M]) + e[M], B as u8, (v[M] + t[M][M]) + e[M], M as u8);
            let (ne, pe) = best((v[B] + t[B][E]) + e[E], B as u8, (v[M] + t[M][E]) + e[E], M as u8);
            let (ns, ps) = best((v[E] + t[E][S]) + e[S], E as u8, (v[S] + t[S][S]) + e[S], S as u8);
            v = [nb, nm, ne, ns];
            back.push([pb, pm, pe, ps]);
        }
        // A run ends a word: E or S.
        let mut state = if v[S] >= v[E] { S as u8 } else { E as u8 };
        let from = out.len();
        out.resize(from + n, 0);
        out[from + n - 1] = state;
        for k in (0..back.len()).rev() {
            state = back[k][usize::from(state)];
            out[from + k] = state;
        }
    }
}
