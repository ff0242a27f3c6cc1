package org.esdedup.es.core;

/**
 * jieba's HMM for words missing from the dictionary ({@code jieba.finalseg}): start, transition and emission
 * log-probabilities of the states B, M, E, S, exactly the doubles of jieba's Python tables.
 */
public final class HmmModel {
    /** States in jieba's iteration order ({@code 'BMES'}). */
    static final int B = 0, M = 1, E = 2, S = 3;
    static final String NAMES = "BMES";
    /** jieba's {@code MIN_FLOAT}, the log-probability of anything the tables do not list. */
    static final double MIN_FLOAT = -3.14e100;

    final double[] start = new double[4];
    final double[][] trans = new double[4][4];
    /** emit[state][code unit]; MIN_FLOAT where jieba has no entry. */
    final double[][] emit = new double[4][0x10000];
    public final String version;

    private static final class Holder {
        static final HmmModel INSTANCE = new HmmModel();
    }

    public static HmmModel get() {
        return Holder.INSTANCE;
    }

    private HmmModel() {
        java.util.Arrays.fill(start, MIN_FLOAT);
        for (double[] row : trans) {
            java.util.Arrays.fill(row, MIN_FLOAT);
        }
        for (double[] row : emit) {
            java.util.Arrays.fill(row, MIN_FLOAT);
        }
        version = TableFile.read("hmm.tsv", line -> {
            String[] f = line.split(" ");
            switch (f[0]) {
                case "start" -> start[state(f[1])] = TableFile.bitsToDouble(f[2]);
                case "trans" -> trans[state(f[1])][state(f[2])] = TableFile.bitsToDouble(f[3]);
                case "emit" -> {
                    int cp = TableFile.hex(f[2]);
                    if (cp > 0xFFFF) {
                        throw new IllegalStateException("hmm.tsv: emission for a code point beyond the BMP");
                    }
                    emit[state(f[1])][cp] = TableFile.bitsToDouble(f[3]);
                }
                default -> throw new IllegalStateException("hmm.tsv: unknown record " + f[0]);
            }
        }).get("version");
    }

    private static int state(String s) {
        int i = NAMES.indexOf(s);
        if (s.length() != 1 || i < 0) {
            throw new IllegalStateException("hmm.tsv: unknown state " + s);
        }
        return i;
    }
}
