package org.esdedup.es.core;

/**
 * {@code esdedup.fingerprint.normalize.normalize} without OpenCC: drop junk (controls, invisible format characters, lone
 * surrogates), NFKC, case folding, whitespace runs to one space and trimmed. Works on code points throughout,
 * as Python's {@code str} does, with Python's Unicode tables ({@link UnicodeData}).
 */
public final class TextNormalizer {
    private final UnicodeData u;

    public TextNormalizer(UnicodeData unicode) {
        this.u = unicode;
    }

    /** The normalised text, as a code point array (Python's string indexes are code point indexes). */
    public int[] normalize(String text) {
        IntList cps = new IntList(text.length());
        boolean special = false;
        for (int i = 0; i < text.length();) {
            int cp = text.codePointAt(i);
            i += Character.charCount(cp);
            if (u.junk.contains(cp)) {
                continue;
            }
            special |= u.decomposes.contains(cp) || u.combining.contains(cp) || u.composesBack.contains(cp)
                || (cp >= UnicodeData.S_BASE && cp < UnicodeData.S_BASE + UnicodeData.S_COUNT);
            cps.add(cp);
        }
        IntList nfkc = special ? Nfkc.apply(u, cps) : cps;
        return foldAndCollapse(nfkc);
    }

    /** Case folding, then Python's {@code " ".join(text.split())}. */
    private int[] foldAndCollapse(IntList in) {
        IntList out = new IntList(in.size);
        boolean pendingSpace = false;
        for (int i = 0; i < in.size; i++) {
            int cp = in.a[i];
            if (u.folds.contains(cp)) {
                for (int f : u.fold.get(cp)) {
                    pendingSpace = put(out, f, pendingSpace);
                }
            } else {
                pendingSpace = put(out, cp, pendingSpace);
            }
        }
        return java.util.Arrays.copyOf(out.a, out.size);
    }

    private boolean put(IntList out, int cp, boolean pendingSpace) {
        if (u.isSpace(cp)) {
            return out.size > 0; // leading whitespace is dropped, a run becomes one space before the next word
        }
        if (pendingSpace) {
            out.add(' ');
        }
        out.add(cp);
        return false;
    }
}
