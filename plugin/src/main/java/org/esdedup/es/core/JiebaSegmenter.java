package org.esdedup.es.core;

import java.util.List;

/**
 * jieba 0.42's precise mode with HMM ({@code jieba.Tokenizer().lcut(text, HMM=True)}), written again from its
 * algorithm: the text is cut into blocks of {@code [\u4E00-\u9FD5a-zA-Z0-9+#&._%-]}; each block gets a DAG of the
 * dictionary words starting at each position and the route of maximum log-probability (ties to the longer word);
 * runs of single characters that are not a word themselves go through the HMM (Viterbi over B/M/E/S). Everything
 * outside the blocks is one token per code point ("\r\n" is one token).
 *
 * <p>Indexes are code point indexes, like Python's. Thread-safe: the tables are read-only.
 */
public final class JiebaSegmenter {
    private final JiebaDictionary dict;
    private final HmmModel hmm;

    public JiebaSegmenter(JiebaDictionary dict, HmmModel hmm) {
        this.dict = dict;
        this.hmm = hmm;
    }

    /** jieba's {@code re_han_default} character class. */
    static boolean isBlockChar(int cp) {
        return (cp >= 0x4E00 && cp <= 0x9FD5) || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')
            || (cp >= '0' && cp <= '9') || cp == '+' || cp == '#' || cp == '&' || cp == '.' || cp == '_'
            || cp == '%' || cp == '-';
    }

    /** Appends the tokens of {@code text[from, to)} to {@code out}. */
    public void cut(int[] text, int from, int to, List<String> out) {
        int i = from;
        while (i < to) {
            int j = i;
            if (isBlockChar(text[i])) {
                while (j < to && isBlockChar(text[j])) {
                    j++;
                }
                cutBlock(text, i, j, out);
            } else {
                while (j < to && isBlockChar(text[j]) == false) {
                    j++;
                }
                for (int k = i; k < j; k++) { // re_skip_default "(\r\n|\s)" splits; everything else char by char
                    if (text[k] == '\r' && k + 1 < j && text[k + 1] == '\n') {
                        out.add("\r\n");
                        k++;
                    } else {
                        out.add(new String(text, k, 1));
                    }
                }
            }
            i = j;
        }
    }

    /** {@code __cut_DAG}: the best route through the block, unknown runs through the HMM. */
    private void cutBlock(int[] text, int from, int to, List<String> out) {
        int n = to - from;
        int[] next = bestRoute(text, from, n);
        int x = 0;
        int buf = -1; // start of the pending run of single characters
        while (x < n) {
            int y = next[x];
            if (y - x == 1) {
                if (buf < 0) {
                    buf = x;
                }
            } else {
                if (buf >= 0) {
                    flushSingles(text, from + buf, from + x, out);
                    buf = -1;
                }
                out.add(new String(text, from + x, y - x));
            }
            x = y;
        }
        if (buf >= 0) {
            flushSingles(text, from + buf, from + n, out);
        }
    }

    /**
     * jieba's {@code calc}: for each position, the end of the word that starts the most probable route from there
     * (exclusive). Probabilities add exactly as in Python: {@code (log(freq) - log(total)) + route[x + 1]}.
     */
    int[] bestRoute(int[] text, int from, int n) {
        double[] prob = new double[n + 1];
        int[] next = new int[n + 1];
        double logTotal = dict.logTotal;
        for (int idx = n - 1; idx >= 0; idx--) {
            double best = Double.NEGATIVE_INFINITY;
            int bestEnd = -1;
            int node = JiebaDictionary.ROOT;
            for (int x = idx; x < n; x++) {
                node = dict.child(node, text[from + x]);
                if (node < 0) {
                    break;
                }
                if (dict.isWord(node)) {
                    double p = dict.logFreq(node) - logTotal + prob[x + 1];
                    if (p >= best) { // max() over (prob, x) tuples: a tie goes to the larger x
                        best = p;
                        bestEnd = x;
                    }
                }
            }
            if (bestEnd < 0) { // no word starts here: the character alone, log(1) = 0
                best = 0.0 - logTotal + prob[idx + 1];
                bestEnd = idx;
            }
            prob[idx] = best;
            next[idx] = bestEnd + 1;
        }
        return next;
    }

    private void flushSingles(int[] text, int from, int to, List<String> out) {
        if (to - from == 1) {
            out.add(new String(text, from, 1));
            return;
        }
        int node = dict.find(text, from, to);
        if (node >= 0 && dict.isWord(node)) { // a known word that the route split: its characters one by one
            for (int i = from; i < to; i++) {
                out.add(new String(text, i, 1));
            }
        } else {
            hmmCut(text, from, to, out);
        }
    }

    private static boolean isHan(int cp) {
        return cp >= 0x4E00 && cp <= 0x9FD5;
    }

    /** {@code finalseg.cut}: Han runs through Viterbi, the rest split by {@code [a-zA-Z0-9]+(?:\.\d+)?%?}. */
    private void hmmCut(int[] text, int from, int to, List<String> out) {
        int i = from;
        while (i < to) {
            int j = i;
            if (isHan(text[i])) {
                while (j < to && isHan(text[j])) {
                    j++;
                }
                viterbiCut(text, i, j, out);
            } else {
                while (j < to && isHan(text[j]) == false) {
                    j++;
                }
                skipSplit(text, i, j, out);
            }
            i = j;
        }
    }

    private static boolean isAsciiAlnum(int c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    }

    private static boolean isDigit(int c) {
        return c >= '0' && c <= '9'; // \d; a block holds no other decimal digits
    }

    /** Python's {@code re.split} with the capturing pattern above, empty pieces dropped. */
    private static void skipSplit(int[] text, int from, int to, List<String> out) {
        int gap = from;
        int i = from;
        while (i < to) {
            if (isAsciiAlnum(text[i]) == false) {
                i++;
                continue;
            }
            int end = i;
            while (end < to && isAsciiAlnum(text[end])) {
                end++;
            }
            if (end + 1 < to && text[end] == '.' && isDigit(text[end + 1])) {
                end += 2;
                while (end < to && isDigit(text[end])) {
                    end++;
                }
            }
            if (end < to && text[end] == '%') {
                end++;
            }
            if (i > gap) {
                out.add(new String(text, gap, i - gap));
            }
            out.add(new String(text, i, end - i));
            gap = i = end;
        }
        if (to > gap) {
            out.add(new String(text, gap, to - gap));
        }
    }

    /** {@code finalseg.__cut}: the Viterbi path over B/M/E/S, then words cut at E and S. */
    private void viterbiCut(int[] text, int from, int to, List<String> out) {
        int[] states = viterbi(text, from, to - from);
        int begin = 0, nexti = 0;
        for (int i = 0; i < states.length; i++) {
            switch (states[i]) {
                case HmmModel.B -> begin = i;
                case HmmModel.E -> {
                    out.add(new String(text, from + begin, i + 1 - begin));
                    nexti = i + 1;
                }
                case HmmModel.S -> {
                    out.add(new String(text, from + i, 1));
                    nexti = i + 1;
                }
                default -> { }
            }
        }
        if (nexti < states.length) {
            out.add(new String(text, from + nexti, states.length - nexti));
        }
    }

    /** Previous states allowed before each state (jieba's {@code PrevStatus}), in jieba's order. */
    private static final int[][] PREV = {
        {HmmModel.E, HmmModel.S}, // B
        {HmmModel.M, HmmModel.B}, // M
        {HmmModel.B, HmmModel.M}, // E
        {HmmModel.S, HmmModel.E}, // S
    };

    /** Python compares states as letters when probabilities tie: B < E < M < S. */
    private static int letter(int state) {
        return HmmModel.NAMES.charAt(state);
    }

    int[] viterbi(int[] text, int from, int n) {
        double[] v = new double[4];
        double[] nv = new double[4];
        int[][] back = new int[n][4];
        for (int y = 0; y < 4; y++) {
            v[y] = hmm.start[y] + hmm.emit[y][text[from]];
        }
        for (int t = 1; t < n; t++) {
            int ch = text[from + t];
            for (int y = 0; y < 4; y++) {
                double em = hmm.emit[y][ch];
                double best = Double.NaN;
                int bestPrev = -1;
                for (int y0 : PREV[y]) {
                    double p = v[y0] + hmm.trans[y0][y] + em;
                    if (bestPrev < 0 || p > best || (p == best && letter(y0) > letter(bestPrev))) {
                        best = p;
                        bestPrev = y0;
                    }
                }
                nv[y] = best;
                back[t][y] = bestPrev;
            }
            double[] tmp = v;
            v = nv;
            nv = tmp;
        }
        int last = v[HmmModel.S] >= v[HmmModel.E] ? HmmModel.S : HmmModel.E; // max((V[E], 'E'), (V[S], 'S'))
        int[] path = new int[n];
        path[n - 1] = last;
        for (int t = n - 1; t > 0; t--) {
            path[t - 1] = back[t][path[t]];
        }
        return path;
    }
}
