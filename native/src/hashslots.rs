//! A map from 64-bit key hashes to u32 positions, by open addressing with linear probing: the first holder
//! of each key of the run index's table (`runkeys.rs`). A run's table outgrows the caches, so each key's
//! slot is a miss to memory; the batch calls ask for the slot of a key some keys ahead (`prefetch`) while
//! they work on the current one, so those misses overlap instead of following one another (the lookups of
//! the frozen keys too).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};

/// Ask the CPU to bring the cache line of `value` in: a hint, which changes nothing the program sees.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the address of a live value; a prefetch reads nothing the program sees.
    unsafe {
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// How many keys ahead a batch call asks for a slot.
const AHEAD: usize = 16;

/// The key of an empty slot; a key of this value is kept apart (`Slots::zero`).
const EMPTY: u64 = 0;
/// Fibonacci hashing: the slot of a key is the top bits of its product with this odd constant, so keys that
/// differ only in their low bits (not `key_hashes`'s, but any caller's) still spread over the table.
const SPREAD: u64 = 0x9E37_79B9_7F4A_7C15;

pub struct Slots {
    /// Each slot's key (`EMPTY`: a free slot): apart from the values, so that a probe past other keys (a
    /// key not held, most lookups) reads eight slots a cache line.
    keys: Vec<u64>,
    values: Vec<u32>,
    /// The value of key 0, which no slot can hold.
    zero: Option<u32>,
    len: usize,
    /// 64 minus the base-2 logarithm of the number of slots.
    shift: u32,
}

impl Default for Slots {
    fn default() -> Self {
        Slots {
            keys: vec![EMPTY; 16],
            values: vec![0; 16],
            zero: None,
            len: 0,
            shift: 60,
        }
    }
}

impl Slots {
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(SPREAD) >> self.shift) as usize
    }

    /// Ask the CPU to bring `key`'s home slot into the cache (its value too, with `value`); no effect on
    /// what the table holds.
    #[inline(always)]
    pub fn prefetch(&self, key: u64, value: bool) {
        let at = self.home(key);
        prefetch(&self.keys[at]);
        if value {
            prefetch(&self.values[at]);
        }
    }

    /// `prefetch` of the key `AHEAD` keys after the `x`-th of `keys`, if there is one: what a batch call
    /// asks for before it works on key `x`.
    #[inline(always)]
    pub fn prefetch_ahead(&self, keys: &[u64], x: usize, value: bool) {
        if let Some(&ahead) = keys.get(x + AHEAD) {
            self.prefetch(ahead, value);
        }
    }

    pub fn get(&self, key: u64) -> Option<u32> {
        if key == EMPTY {
            return self.zero;
        }
        let mask = self.keys.len() - 1;
        let mut at = self.home(key);
        loop {
            let held = self.keys[at];
            if held == key {
                return Some(self.values[at]);
            }
            if held == EMPTY {
                return None;
            }
            at = (at + 1) & mask;
        }
    }

    /// The value held under `key`, or `value` once it is held there. Room must have been made
    /// (`reserve`).
    pub fn get_or_insert(&mut self, key: u64, value: u32) -> u32 {
        if key == EMPTY {
            if self.zero.is_none() {
                self.len += 1;
            }
            return *self.zero.get_or_insert(value);
        }
        debug_assert!(5 * (self.len + 1) <= 4 * self.keys.len());
        let mask = self.keys.len() - 1;
        let mut at = self.home(key);
        loop {
            let held = self.keys[at];
            if held == key {
                return self.values[at];
            }
            if held == EMPTY {
                self.keys[at] = key;
                self.values[at] = value;
                self.len += 1;
                return value;
            }
            at = (at + 1) & mask;
        }
    }

    /// Hold `value` under `key`, which is held already (its value changes).
    pub fn replace(&mut self, key: u64, value: u32) {
        if key == EMPTY {
            debug_assert!(self.zero.is_some());
            self.zero = Some(value);
            return;
        }
        let mask = self.keys.len() - 1;
        let mut at = self.home(key);
        while self.keys[at] != key {
            debug_assert!(self.keys[at] != EMPTY, "replace: the key is not held");
            at = (at + 1) & mask;
        }
        self.values[at] = value;
    }

    /// Make room for `more` keys beyond those held, at most four fifths of the slots in use (a key not
    /// held is then told, at the fullest, after some thirteen slots on average: two cache lines).
    pub fn reserve(&mut self, more: usize) {
        let needed = self.len + more;
        if 5 * needed <= 4 * self.keys.len() {
            return;
        }
        let mut size = self.keys.len();
        while 5 * needed > 4 * size {
            size *= 2;
        }
        let keys = std::mem::replace(&mut self.keys, vec![EMPTY; size]);
        let values = std::mem::replace(&mut self.values, vec![0; size]);
        self.shift = 64 - size.trailing_zeros();
        let mask = size - 1;
        for (key, value) in keys.into_iter().zip(values).filter(|&(k, _)| k != EMPTY) {
            let mut at = self.home(key);
            while self.keys[at] != EMPTY {
                at = (at + 1) & mask;
            }
            self.keys[at] = key;
            self.values[at] = value;
        }
    }

    /// Every (key, value) held, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        let zero = self.zero.map(|v| (EMPTY, v));
        self.keys
            .iter()
            .zip(&self.values)
            .filter(|&(&k, _)| k != EMPTY)
            .map(|(&k, &v)| (k, v))
            .chain(zero)
    }
}
