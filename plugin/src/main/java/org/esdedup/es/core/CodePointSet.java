package org.esdedup.es.core;

/** A set of Unicode code points as a bit set over the whole code space (136 KiB). */
final class CodePointSet {
    private final long[] words = new long[(Character.MAX_CODE_POINT + 64) / 64];

    void addRange(int lo, int hi) {
        for (int cp = lo; cp <= hi; cp++) {
            words[cp >>> 6] |= 1L << (cp & 63);
        }
    }

    void add(int cp) {
        words[cp >>> 6] |= 1L << (cp & 63);
    }

    boolean contains(int cp) {
        return (words[cp >>> 6] & (1L << (cp & 63))) != 0;
    }
}
