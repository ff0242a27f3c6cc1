package org.esdedup.es.core;

/**
 * BLAKE2b (RFC 7693) for short inputs, unkeyed, with a personalisation string: what esdedup's hashes use
 * ({@code hashlib.blake2b(data, digest_size=n, person=p)}). Written from the RFC's pseudo-code.
 */
public final class Blake2b {
    private static final long[] IV = {
        0x6A09E667F3BCC908L, 0xBB67AE8584CAA73BL, 0x3C6EF372FE94F82BL, 0xA54FF53A5F1D36F1L,
        0x510E527FADE682D1L, 0x9B05688C2B3E6C1FL, 0x1F83D9ABFB41BD6BL, 0x5BE0CD19137E2179L,
    };
    private static final byte[][] SIGMA = {
        {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
        {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
        {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
        {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
        {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
        {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
        {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
        {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
        {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
        {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    };

    private final long[] h0 = new long[8];
    private final int digestSize;

    /** A hasher for {@code digestSize} bytes (1..64) and a personalisation of at most 16 bytes. */
    public Blake2b(int digestSize, byte[] person) {
        if (digestSize < 1 || digestSize > 64 || person.length > 16) {
            throw new IllegalArgumentException("BLAKE2b: digest size 1..64 and at most 16 bytes of personalisation");
        }
        this.digestSize = digestSize;
        byte[] p = java.util.Arrays.copyOf(person, 16);
        System.arraycopy(IV, 0, h0, 0, 8);
        h0[0] ^= 0x01010000L ^ digestSize; // parameter block: digest length, key length 0, fanout 1, depth 1
        h0[6] ^= le64(p, 0);
        h0[7] ^= le64(p, 8);
    }

    /** The digest of {@code data}. */
    public byte[] digest(byte[] data) {
        long[] h = h0.clone();
        long[] m = new long[16];
        byte[] block = new byte[128];
        int off = 0;
        long counter = 0;
        while (data.length - off > 128) { // every block but the last
            counter += 128;
            compress(h, m, data, off, counter, false);
            off += 128;
        }
        int rest = data.length - off;
        System.arraycopy(data, off, block, 0, rest);
        compress(h, m, block, 0, counter + rest, true);
        byte[] out = new byte[digestSize];
        for (int i = 0; i < digestSize; i++) {
            out[i] = (byte) (h[i >>> 3] >>> (8 * (i & 7)));
        }
        return out;
    }

    static long le64(byte[] b, int off) {
        long v = 0;
        for (int i = 7; i >= 0; i--) {
            v = (v << 8) | (b[off + i] & 0xFFL);
        }
        return v;
    }

    private static void compress(long[] h, long[] m, byte[] b, int off, long counter, boolean last) {
        for (int i = 0; i < 16; i++) {
            m[i] = le64(b, off + 8 * i);
        }
        long[] v = new long[16];
        System.arraycopy(h, 0, v, 0, 8);
        System.arraycopy(IV, 0, v, 8, 8);
        v[12] ^= counter; // the high word of the 128-bit counter stays 0 for inputs below 2^64 bytes
        if (last) {
            v[14] = ~v[14];
        }
        for (int r = 0; r < 12; r++) {
            byte[] s = SIGMA[r % 10];
            mix(v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
            mix(v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
            mix(v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
            mix(v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
            mix(v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
            mix(v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
            mix(v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
            mix(v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
        }
        for (int i = 0; i < 8; i++) {
            h[i] ^= v[i] ^ v[i + 8];
        }
    }

    private static void mix(long[] v, int a, int b, int c, int d, long x, long y) {
        v[a] = v[a] + v[b] + x;
        v[d] = Long.rotateRight(v[d] ^ v[a], 32);
        v[c] = v[c] + v[d];
        v[b] = Long.rotateRight(v[b] ^ v[c], 24);
        v[a] = v[a] + v[b] + y;
        v[d] = Long.rotateRight(v[d] ^ v[a], 16);
        v[c] = v[c] + v[d];
        v[b] = Long.rotateRight(v[b] ^ v[c], 63);
    }
}
