//! A text's distinct character n-gram hashes.

use crate::kernels::{fold, fold_windows, Kernel};

/// N-grams hashed at a time (bounds the scratch memory whatever the length of the text).
const WINDOWS_AT_A_TIME: usize = 4096;

/// The distinct n-gram hashes of a text's word characters, in the order first seen. `chunk` is the number of
/// word characters the Python path turns into n-grams at a time: a text longer than that with fewer than n
/// word characters has no n-gram there, while a shorter one is one n-gram, itself.
pub fn distinct_hashes(kernel: Kernel, chars: &[u32], n: usize, chunk: usize) -> Vec<u32> {
    if chars.is_empty() {
        return Vec::new();
    }
    if chars.len() < n {
        return if chars.len() <= chunk {
            vec![fold(chars)]
        } else {
            Vec::new()
        };
    }
    let windows = chars.len() - n + 1;
    let mut set = DistinctSet::with_capacity(windows.min(INITIAL_SET_VALUES));
    let step = windows.min(WINDOWS_AT_A_TIME);
    let (mut work, mut hashes) = (vec![0u64; step], vec![0u32; step]);
    for start in (0..windows).step_by(step) {
        let count = step.min(windows - start);
        fold_windows(
            kernel,
            &chars[start..start + count + n - 1],
            n,
            &mut work[..count],
            &mut hashes[..count],
        );
        for &h in &hashes[..count] {
            set.insert(h);
        }
    }
    set.values
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
