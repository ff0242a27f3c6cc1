package org.esdedup.es.core;

/** What esdedup stores for one text (see {@code esdedup.fingerprint.fingerprinter.Fingerprint}). */
public final class Fingerprint {
    /** The SimHash as 64-bit words, least significant first; all 0 for an empty text. */
    public final long[] simhash;
    public final int bits;
    /** SimHash band keys (none for an empty text or one that MinHash alone serves). */
    public final String[] bands;
    /** The hashed TF vector, unit length, float32 (all 0 for an empty text). */
    public final float[] vector;
    /** Terms after filtering, repeats counted. */
    public final int tokens;
    /** Normalised characters (code points). */
    public final int chars;
    public final boolean empty;
    /** The MinHash signature (16-bit values in ints), or null. */
    public final int[] minhash;
    /** Distinct character n-grams behind the signature (0 without one). */
    public final int shingles;
    /** MinHash LSH keys, one per band (40-bit values), or none. */
    public final long[] lsh;
    /** SHA-1 hex of the normalised text's UTF-8 bytes. */
    public final String contentSha1;

    Fingerprint(long[] simhash, int bits, String[] bands, float[] vector, int tokens, int chars, boolean empty,
                int[] minhash, int shingles, long[] lsh, String contentSha1) {
        this.simhash = simhash;
        this.bits = bits;
        this.bands = bands;
        this.vector = vector;
        this.tokens = tokens;
        this.chars = chars;
        this.empty = empty;
        this.minhash = minhash;
        this.shingles = shingles;
        this.lsh = lsh;
        this.contentSha1 = contentSha1;
    }

    /** Fixed-width lowercase hex, most significant first, as stored ({@code esdedup.fingerprint.simhash.to_hex}). */
    public String simhashHex() {
        StringBuilder sb = new StringBuilder(bits / 4);
        for (int w = simhash.length - 1; w >= 0; w--) {
            sb.append(Hex.pad(Long.toHexString(simhash[w]), 16));
        }
        return sb.toString();
    }
}
