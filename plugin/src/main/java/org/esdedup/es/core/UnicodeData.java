package org.esdedup.es.core;

import java.util.HashMap;
import java.util.Map;

/**
 * Python's character data, as exported from the interpreter that made the golden file: which code points
 * {@code str.isalnum} and {@code str.isspace} accept, {@code str.casefold}, the canonical combining classes,
 * compatibility decompositions and primary composites that NFKC uses, and what esdedup drops as junk. The JVM's
 * own tables follow another Unicode version (Java 17: 13.0, Python 3.11: 14.0), so none of them is used.
 */
public final class UnicodeData {
    static final int S_BASE = 0xAC00, L_BASE = 0x1100, V_BASE = 0x1161, T_BASE = 0x11A7;
    static final int L_COUNT = 19, V_COUNT = 21, T_COUNT = 28, N_COUNT = V_COUNT * T_COUNT, S_COUNT = L_COUNT * N_COUNT;

    final CodePointSet alnum = new CodePointSet();
    final CodePointSet junk = new CodePointSet();
    /** Code points assigned in Python's Unicode version (general category other than Cn). */
    final CodePointSet assigned = new CodePointSet();
    final CodePointSet space = new CodePointSet();
    final CodePointSet folds = new CodePointSet();
    final CodePointSet decomposes = new CodePointSet();
    final CodePointSet combining = new CodePointSet();
    /** Code points that can be the second of a composition: only their presence makes composing worth it. */
    final CodePointSet composesBack = new CodePointSet();
    final Map<Integer, int[]> fold = new HashMap<>();
    final Map<Integer, int[]> nfkd = new HashMap<>();
    final Map<Integer, Integer> ccc = new HashMap<>();
    final Map<Long, Integer> compose = new HashMap<>();
    /** The Unicode version of the tables (Python's {@code unicodedata.unidata_version}). */
    public final String version;

    private static final class Holder {
        static final UnicodeData INSTANCE = new UnicodeData();
    }

    public static UnicodeData get() {
        return Holder.INSTANCE;
    }

    private UnicodeData() {
        Map<String, String> headers = TableFile.read("unicode.tsv", this::parse);
        version = headers.get("unidata");
        composesBack.addRange(V_BASE, V_BASE + V_COUNT - 1);
        composesBack.addRange(T_BASE + 1, T_BASE + T_COUNT - 1);
    }

    private void parse(String line) {
        String[] f = line.split(" ");
        switch (f[0]) {
            case "alnum" -> alnum.addRange(TableFile.hex(f[1]), TableFile.hex(f[2]));
            case "junk" -> junk.addRange(TableFile.hex(f[1]), TableFile.hex(f[2]));
            case "assigned" -> assigned.addRange(TableFile.hex(f[1]), TableFile.hex(f[2]));
            case "space" -> space.add(TableFile.hex(f[1]));
            case "fold" -> {
                folds.add(TableFile.hex(f[1]));
                fold.put(TableFile.hex(f[1]), codePoints(f));
            }
            case "ccc" -> {
                combining.add(TableFile.hex(f[1]));
                ccc.put(TableFile.hex(f[1]), Integer.parseInt(f[2]));
            }
            case "nfkd" -> {
                decomposes.add(TableFile.hex(f[1]));
                nfkd.put(TableFile.hex(f[1]), codePoints(f));
            }
            case "comp" -> {
                int second = TableFile.hex(f[2]);
                composesBack.add(second);
                compose.put(pair(TableFile.hex(f[1]), second), TableFile.hex(f[3]));
            }
            default -> throw new IllegalStateException("unicode.tsv: unknown record " + f[0]);
        }
    }

    private static int[] codePoints(String[] f) {
        int[] out = new int[f.length - 2];
        for (int i = 2; i < f.length; i++) {
            out[i - 2] = TableFile.hex(f[i]);
        }
        return out;
    }

    static long pair(int first, int second) {
        return ((long) first << 21) | second;
    }

    /** Python's {@code str.isalnum()} for one code point: letters, digits, numerals (categories L* and N*). */
    public boolean isAlnum(int cp) {
        return alnum.contains(cp);
    }

    /** Python's {@code str.isspace()} for one code point. */
    public boolean isSpace(int cp) {
        return space.contains(cp);
    }

    int combiningClass(int cp) {
        return combining.contains(cp) ? ccc.get(cp) : 0;
    }

    /** The primary composite of two code points, or -1. */
    int composite(int first, int second) {
        if (first >= L_BASE && first < L_BASE + L_COUNT && second >= V_BASE && second < V_BASE + V_COUNT) {
            return S_BASE + ((first - L_BASE) * V_COUNT + (second - V_BASE)) * T_COUNT;
        }
        if (first >= S_BASE && first < S_BASE + S_COUNT && (first - S_BASE) % T_COUNT == 0
            && second > T_BASE && second < T_BASE + T_COUNT) {
            return first + (second - T_BASE);
        }
        Integer c = compose.get(pair(first, second));
        return c == null ? -1 : c;
    }
}
