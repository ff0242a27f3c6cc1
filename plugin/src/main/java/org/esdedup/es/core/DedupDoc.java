package org.esdedup.es.core;

/**
 * The stored fingerprint fields that scoring reads: the query document's or a candidate's.
 *
 * @param simhash 64-bit words, least significant first
 * @param vector  the TF vector as float32 (null when the document has none)
 * @param minhash the MinHash signature (null when none)
 */
public record DedupDoc(long[] simhash, int bits, float[] vector, int[] minhash, int shingles, int chars, boolean empty) {

    public boolean hasSignature() {
        return minhash != null && shingles > 0;
    }

    /** The words of a fixed-width hex SimHash (16 or 32 digits), least significant first. */
    public static long[] parseSimhash(String hex) {
        if (hex.isEmpty() || hex.length() % 16 != 0 || hex.length() > 32) {
            throw new IllegalArgumentException("a SimHash is 16 or 32 hex digits, got [" + hex + "]");
        }
        int words = hex.length() / 16;
        long[] out = new long[words];
        for (int w = 0; w < words; w++) {
            int end = hex.length() - 16 * w;
            out[w] = Long.parseUnsignedLong(hex.substring(end - 16, end), 16);
        }
        return out;
    }
}
