package org.esdedup.es.core;

/**
 * Unicode Normalization Form KC (UAX #15): full compatibility decomposition, canonical ordering, canonical
 * composition, written from the specification over {@link UnicodeData}'s tables (Hangul syllables by
 * arithmetic, section 3.12 of the Unicode core specification).
 */
final class Nfkc {
    private Nfkc() {}

    static IntList apply(UnicodeData u, IntList in) {
        IntList d = decompose(u, in);
        reorder(u, d);
        compose(u, d);
        return d;
    }

    private static IntList decompose(UnicodeData u, IntList in) {
        IntList out = new IntList(in.size + 16);
        for (int i = 0; i < in.size; i++) {
            int cp = in.a[i];
            int s = cp - UnicodeData.S_BASE;
            if (s >= 0 && s < UnicodeData.S_COUNT) {
                out.add(UnicodeData.L_BASE + s / UnicodeData.N_COUNT);
                out.add(UnicodeData.V_BASE + (s % UnicodeData.N_COUNT) / UnicodeData.T_COUNT);
                if (s % UnicodeData.T_COUNT != 0) {
                    out.add(UnicodeData.T_BASE + s % UnicodeData.T_COUNT);
                }
            } else if (u.decomposes.contains(cp)) {
                out.addAll(u.nfkd.get(cp));
            } else {
                out.add(cp);
            }
        }
        return out;
    }

    /** Canonical ordering: a stable sort by combining class of each run of non-starters. */
    private static void reorder(UnicodeData u, IntList d) {
        for (int i = 1; i < d.size; i++) {
            int cc = u.combiningClass(d.a[i]);
            if (cc == 0) {
                continue;
            }
            int cp = d.a[i];
            int j = i - 1;
            while (j >= 0) {
                int prev = u.combiningClass(d.a[j]);
                if (prev <= cc || prev == 0) {
                    break;
                }
                d.a[j + 1] = d.a[j];
                j--;
            }
            d.a[j + 1] = cp;
        }
    }

    /** Canonical composition: each character joins the last starter unless something between blocks it. */
    private static void compose(UnicodeData u, IntList d) {
        if (d.size == 0) {
            return;
        }
        int starterPos = 0;
        int starter = d.a[0];
        int lastClass = u.combiningClass(starter) == 0 ? 0 : 256; // a leading non-starter composes with nothing
        int out = 1;
        for (int i = 1; i < d.size; i++) {
            int cp = d.a[i];
            int cc = u.combiningClass(cp);
            int composite = u.composesBack.contains(cp) ? u.composite(starter, cp) : -1;
            if (composite >= 0 && (lastClass < cc || lastClass == 0)) {
                d.a[starterPos] = composite;
                starter = composite;
            } else {
                if (cc == 0) {
                    starterPos = out;
                    starter = cp;
                }
                lastClass = cc;
                d.a[out++] = cp;
            }
        }
        d.size = out;
    }
}
