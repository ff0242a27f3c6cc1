//! A text's distinct character n-gram hashes.

use crate::kernels::{fold, fold_windows, Kernel};

/// Code points read at a time, and n-grams hashed at a time: with the distinct hashes, all the memory a
/// text takes, whatever its length.
const BLOCK: usize = 4096;

/// The distinct n-gram hashes of the word characters of a text, in the order first seen, read a block of
/// code points at a time. `is_word` says which code points are word characters. `chunk` is the number of
/// word characters the Python path turns into n-grams at a time: a text with more word characters than
/// that but fewer than n has no n-gram there, while a shorter one is one n-gram, itself.
pub fn distinct_hashes(
    kernel: Kernel,
    code_points: impl ExactSizeIterator<Item = u32>,
    is_word: &[bool],
    n: usize,
    chunk: usize,
) -> Vec<u32> {
    let block = code_points.len().clamp(1, BLOCK);
    let mut set = DistinctSet::with_capacity(code_points.len().min(INITIAL_SET_VALUES));
    let (mut work, mut hashes) = (vec![0u64; block], vec![0u32; block]);
    // The word characters not yet hashed as the first of an n-gram (fewer than n after each block).
    let mut chars: Vec<u32> = Vec::with_capacity(block + n);
    let mut words = 0usize;
    let mut code_points = code_points;
    loop {
        let start = chars.len();
        chars.resize(start + block, 0);
        let (mut end, mut read) = (start, 0);
        for c in code_points.by_ref().take(block) {
            // Every code point is written, and the end moves past the word characters only: no branch
            // per character on what kind of character it is.
            chars[end] = c;
            end += usize::from(is_word.get(c as usize).copied().unwrap_or(false));
            read += 1;
        }
        chars.truncate(end);
        words += end - start;
        while chars.len() >= n {
            let count = (chars.len() - n + 1).min(block);
            fold_windows(
                kernel,
                &chars[..count + n - 1],
                n,
                &mut work[..count],
                &mut hashes[..count],
            );
            for &h in &hashes[..count] {
                set.insert(h);
            }
            chars.drain(..count);
        }
        if read < block {
            break;
        }
    }
    match words {
        0 => Vec::new(),
        w if w < n && w <= chunk => vec![fold(&chars)],
        w if w < n => Vec::new(),
        _ => set.values,
    }
}

/// Values a text's set of distinct hashes is first made for; it grows past them as it fills.
const INITIAL_SET_VALUES: usize = 1 << 16;

/// The distinct values of a stream of 32-bit hashes, in the order first seen: open addressing with linear
/// probing (0 marks an empty slot, so the value 0 is kept aside), the table doubled whenever it is half
/// full, so memory follows the number of distinct values, not the length of the stream.
struct DistinctSet {
    slots: Vec<u32>,
    bits: u32,
    has_zero: bool,
    values: Vec<u32>,
}

impl DistinctSet {
    fn with_capacity(values: usize) -> Self {
        let slots = (2 * values).next_power_of_two().max(16);
        DistinctSet {
            slots: vec![0; slots],
            bits: slots.trailing_zeros(),
            has_zero: false,
            values: Vec::new(),
        }
    }

    #[inline(always)]
    fn slot_of(&self, x: u32) -> usize {
        // Fibonacci hashing: the top bits of a multiple by 2^64 / golden ratio.
        (u64::from(x).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.bits)) as usize
    }

    #[inline(always)]
    fn insert(&mut self, x: u32) {
        if x == 0 {
            if !self.has_zero {
                self.has_zero = true;
                self.values.push(0);
            }
            return;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.slot_of(x);
        loop {
            let s = self.slots[i];
            if s == x {
                return;
            }
            if s == 0 {
                self.slots[i] = x;
                self.values.push(x);
                if 2 * self.values.len() > self.slots.len() {
                    self.grow();
                }
                return;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        self.slots = vec![0; 2 * self.slots.len()];
        self.bits += 1;
        let mask = self.slots.len() - 1;
        for k in 0..self.values.len() {
            let x = self.values[k];
            if x == 0 {
                continue;
            }
            let mut i = self.slot_of(x);
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = x;
        }
    }
}
