package org.esdedup.es.core;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * esdedup's MinHash ({@code esdedup.fingerprint.minhash}): character n-grams hashed by folding code points through the
 * SplitMix64 finaliser, permutations {@code (a*x + b) mod 2^64 >> 32} with BLAKE2b-derived coefficients, LSH
 * band keys from the signature rows. All arithmetic wraps on 64 bits, as numpy's uint64 does.
 */
public final class MinHash {
    static final long SEED = 0x6573646564757032L; // "esdedup2"
    private static final byte[] PERSON = "esdedup-mh-v2".getBytes(StandardCharsets.US_ASCII);
    public static final int SIGNATURE_BITS = 16;
    public static final int LSH_KEY_BITS = 40;
    private static final int LOW_BITS = (1 << SIGNATURE_BITS) - 1;

    private MinHash() {}

    /** SplitMix64's finaliser. */
    public static long mix64(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** The permutation coefficients: {@code a[i]} (odd) and {@code b[i]}, from BLAKE2b of "a<i>" and "b<i>". */
    public static long[][] permutations(int nPerm) {
        Blake2b h = new Blake2b(8, PERSON);
        long[] a = new long[nPerm];
        long[] b = new long[nPerm];
        for (int i = 0; i < nPerm; i++) {
            a[i] = Blake2b.le64(h.digest(("a" + i).getBytes(StandardCharsets.US_ASCII)), 0) | 1L;
            b[i] = Blake2b.le64(h.digest(("b" + i).getBytes(StandardCharsets.US_ASCII)), 0);
        }
        return new long[][] {a, b};
    }

    /**
     * The distinct 32-bit hashes of the n-grams of {@code chars[0, len)}, sorted; a text shorter than n is its
     * own single n-gram; an empty text has none.
     */
    public static long[] shingleHashes(int[] chars, int len, int n) {
        if (len == 0) {
            return new long[0];
        }
        int size = Math.min(n, len);
        int count = len - size + 1;
        long[] out = new long[count];
        for (int i = 0; i < count; i++) {
            long h = SEED;
            for (int j = 0; j < size; j++) {
                h = mix64(h ^ chars[i + j]);
            }
            out[i] = h >>> 32;
        }
        Arrays.sort(out);
        int distinct = 0;
        for (int i = 0; i < count; i++) {
            if (i == 0 || out[i] != out[i - 1]) {
                out[distinct++] = out[i];
            }
        }
        return Arrays.copyOf(out, distinct);
    }

    /** The signature (the low 16 bits of each permutation's minimum) of a non-empty hash set. */
    public static int[] signature(long[] hashes, long[][] perm) {
        long[] a = perm[0], b = perm[1];
        int[] sig = new int[a.length];
        for (int i = 0; i < a.length; i++) {
            long min = 0xFFFFFFFFL;
            long ai = a[i], bi = b[i];
            for (long x : hashes) {
                long v = (ai * x + bi) >>> 32;
                if (v < min) {
                    min = v;
                }
            }
            sig[i] = (int) min & LOW_BITS;
        }
        return sig;
    }

    /**
     * The LSH key of each band: the top 40 bits of its hash, a non-negative long. Band i hashes the signature
     * values [i * rows, (i + 1) * rows); values past bands * rows are in no band.
     */
    public static long[] lshKeys(int[] sig, int bands, int rows) {
        if (bands < 1 || rows < 1 || (long) bands * rows > sig.length) {
            throw new IllegalArgumentException(bands + " bands of " + rows + " rows need " + (long) bands * rows
                + " signature values, the signature has " + sig.length);
        }
        long[] keys = new long[bands];
        for (int band = 0; band < bands; band++) {
            long h = mix64(band);
            for (int r = 0; r < rows; r++) {
                h = mix64(h ^ (sig[band * rows + r] & 0xFFFFFFFFL));
            }
            keys[band] = h >>> (64 - LSH_KEY_BITS);
        }
        return keys;
    }
}
