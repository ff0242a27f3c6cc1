//! The two loops that take the time, each in a portable form and in forms compiled for AVX2 and AVX-512
//! (chosen once, when a core is made, from what the CPU has): the n-gram hashes of a run of code points,
//! and each permutation's minimum over a set of hashes.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

pub const SEED: u64 = 0x6573_6465_6475_7032; // "esdedup2"

/// Which compiled form of the loops runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    Portable,
    Avx2,
    Avx512,
}

impl Kernel {
    pub const ALL: [Kernel; 3] = [Kernel::Portable, Kernel::Avx2, Kernel::Avx512];

    pub fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
        }
    }

    pub fn supported(self) -> bool {
        match self {
            Kernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512dq"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The fastest form this CPU runs.
    pub fn best() -> Kernel {
        *Kernel::ALL
            .iter()
            .rev()
            .find(|k| k.supported())
            .expect("the portable form runs everywhere")
    }
}

#[inline(always)]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The shingle hash of a run of code points: `h = SEED`, `h = mix64(h ^ c)` per code point, the top 32 bits.
#[inline(always)]
pub fn fold(gram: &[u32]) -> u32 {
    let mut h = SEED;
    for &c in gram {
        h = mix64(h ^ u64::from(c));
    }
    (h >> 32) as u32
}

/// `fold` of the `out.len()` n-grams that start at `chars[0..]`, one code point position at a time over all
/// of them (the order in which the loop vectorises); `work` is scratch of `out.len()` values.
#[inline(always)]
fn fold_windows_into(chars: &[u32], n: usize, work: &mut [u64], out: &mut [u32]) {
    let count = out.len();
    work.fill(SEED);
    for j in 0..n {
        for (h, &c) in work.iter_mut().zip(&chars[j..j + count]) {
            *h = mix64(*h ^ u64::from(c));
        }
    }
    for (o, &h) in out.iter_mut().zip(work.iter()) {
        *o = (h >> 32) as u32;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fold_windows_avx2(chars: &[u32], n: usize, work: &mut [u64], out: &mut [u32]) {
    fold_windows_into(chars, n, work, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn fold_windows_avx512(chars: &[u32], n: usize, work: &mut [u64], out: &mut [u32]) {
    fold_windows_into(chars, n, work, out)
}

/// The n-gram hashes of `chars` (`chars.len() - n + 1` of them, `chars.len() >= n`) for windows starting
/// at `chars[0..out.len()]`.
pub fn fold_windows(kernel: Kernel, chars: &[u32], n: usize, work: &mut [u64], out: &mut [u32]) {
    debug_assert!(chars.len() + 1 >= out.len() + n && work.len() == out.len());
    match kernel {
        // SAFETY: a kernel is only chosen when `supported` says the CPU has its instructions.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { fold_windows_avx512(chars, n, work, out) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { fold_windows_avx2(chars, n, work, out) },
        _ => fold_windows_into(chars, n, work, out),
    }
}

/// Permutations computed together: the 32-bit lanes of an AVX-512 register (two AVX2 registers).
pub const LANES: usize = 16;

/// The permutation coefficients in the layout the vector forms read. A hash x is below 2^32, so with
/// `a = a_hi * 2^32 + a_lo`, `(a * x + b) mod 2^64 >> 32` equals `((a_lo * x + b) mod 2^64 >> 32) + a_hi * x`
/// modulo 2^32: one 32 x 32 -> 64-bit multiply and one 32-bit multiply, both in every x86-64 vector unit.
/// Each group of LANES permutations keeps `a_lo` and `b` of its even and of its odd permutations apart (the
/// top halves of the even products, shifted down, and of the odd ones, in place, then interleave into the
/// permutations' order with one blend). Padded with zeros to whole groups; the padding's minima are dropped.
pub struct Permutations {
    a_lo: Vec<u64>,
    b: Vec<u64>,
    a_hi: Vec<u32>,
    /// The same, in permutation order, for the portable form.
    a: Vec<u64>,
    b_plain: Vec<u64>,
    pub count: usize,
}

impl Permutations {
    pub fn new(a: &[u64], b: &[u64]) -> Self {
        let padded = a.len().div_ceil(LANES) * LANES;
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        let mut a_lo = Vec::with_capacity(padded);
        let mut b_split = Vec::with_capacity(padded);
        for group in (0..padded).step_by(LANES) {
            for parity in 0..2 {
                for i in (group + parity..group + LANES).step_by(2) {
                    a_lo.push(at(a, i) & 0xFFFF_FFFF);
                    b_split.push(at(b, i));
                }
            }
        }
        Permutations {
            a_lo,
            b: b_split,
            a_hi: (0..padded).map(|i| (at(a, i) >> 32) as u32).collect(),
            a: a.to_vec(),
            b_plain: b.to_vec(),
            count: a.len(),
        }
    }

    /// Each permutation's minimum over the hashes (u32::MAX each for no hashes).
    pub fn minima(&self, kernel: Kernel, hashes: &[u32]) -> Vec<u32> {
        let mut out = vec![u32::MAX; self.a_hi.len()];
        match kernel {
            // SAFETY: a kernel is only chosen when `supported` says the CPU has its instructions.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => unsafe { self.minima_avx512(hashes, &mut out) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { self.minima_avx2(hashes, &mut out) },
            _ => self.minima_portable(hashes, &mut out),
        }
        out.truncate(self.count);
        out
    }

    fn minima_portable(&self, hashes: &[u32], out: &mut [u32]) {
        for &x in hashes {
            let x = u64::from(x);
            for ((m, &a), &b) in out.iter_mut().zip(&self.a).zip(&self.b_plain) {
                *m = (*m).min((a.wrapping_mul(x).wrapping_add(b) >> 32) as u32);
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn minima_avx512(&self, hashes: &[u32], out: &mut [u32]) {
        for (g, mins) in out.chunks_exact_mut(LANES).enumerate() {
            let at = g * LANES;
            // SAFETY: every group has LANES values in each vector (padded), read unaligned.
            unsafe {
                let lo_even = _mm512_loadu_si512(self.a_lo[at..].as_ptr().cast());
                let lo_odd = _mm512_loadu_si512(self.a_lo[at + LANES / 2..].as_ptr().cast());
                let b_even = _mm512_loadu_si512(self.b[at..].as_ptr().cast());
                let b_odd = _mm512_loadu_si512(self.b[at + LANES / 2..].as_ptr().cast());
                let hi = _mm512_loadu_si512(self.a_hi[at..].as_ptr().cast());
                let mut m = _mm512_set1_epi32(-1);
                for &x in hashes {
                    let xv = _mm512_set1_epi32(x as i32);
                    let even = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epu32(lo_even, xv), b_even), 32);
                    let odd = _mm512_add_epi64(_mm512_mul_epu32(lo_odd, xv), b_odd);
                    let top = _mm512_mask_blend_epi32(0xAAAA, even, odd);
                    m = _mm512_min_epu32(m, _mm512_add_epi32(top, _mm512_mullo_epi32(hi, xv)));
                }
                _mm512_storeu_si512(mins.as_mut_ptr().cast(), m);
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn minima_avx2(&self, hashes: &[u32], out: &mut [u32]) {
        // A group of LANES as two halves of 8 permutations: half h holds even permutations 4h..4h+4 of the
        // group's evens and the matching odds, so its blend gives permutations 8h..8h+8 in order.
        for (g, mins) in out.chunks_exact_mut(LANES).enumerate() {
            let at = g * LANES;
            for (h, half) in mins.chunks_exact_mut(LANES / 2).enumerate() {
                // SAFETY: as in the AVX-512 form.
                unsafe {
                    let even_at = at + 4 * h;
                    let odd_at = at + LANES / 2 + 4 * h;
                    let lo_even = _mm256_loadu_si256(self.a_lo[even_at..].as_ptr().cast());
                    let lo_odd = _mm256_loadu_si256(self.a_lo[odd_at..].as_ptr().cast());
                    let b_even = _mm256_loadu_si256(self.b[even_at..].as_ptr().cast());
                    let b_odd = _mm256_loadu_si256(self.b[odd_at..].as_ptr().cast());
                    let hi = _mm256_loadu_si256(self.a_hi[at + 8 * h..].as_ptr().cast());
                    let mut m = _mm256_set1_epi32(-1);
                    for &x in hashes {
                        let xv = _mm256_set1_epi32(x as i32);
                        let even =
                            _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epu32(lo_even, xv), b_even), 32);
                        let odd = _mm256_add_epi64(_mm256_mul_epu32(lo_odd, xv), b_odd);
                        let top = _mm256_blend_epi32(even, odd, 0b1010_1010);
                        m = _mm256_min_epu32(m, _mm256_add_epi32(top, _mm256_mullo_epi32(hi, xv)));
                    }
                    _mm256_storeu_si256(half.as_mut_ptr().cast(), m);
                }
            }
        }
    }
}
