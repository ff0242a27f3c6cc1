package org.esdedup.es.core;

import java.util.HashMap;
import java.util.Map;

/**
 * jieba's prefix dictionary (every word with its frequency, every prefix of a word with frequency 0) as a trie
 * whose edges live in one open-addressing hash table: about 13 MB for jieba's 500,000 keys.
 *
 * <p>Each node keeps the index of its word's {@code log(freq)} in a table of the doubles Python computed, so the
 * route probabilities add up exactly as in jieba's {@code calc}.
 */
public final class JiebaDictionary {
    public static final int ROOT = 0;
    private long[] edgeKeys;
    private int[] edgeChild;
    private int edgeMask;
    private int edges;
    private char[] logIndex = new char[1 << 16]; // per node: 0 = frequency 0 (a prefix only), else 1 + index
    private int nodes = 1;
    private final double[] logFreq;
    /** {@code log(total)}, as Python computed it. */
    public final double logTotal;
    /** The jieba version the tables came from (part of a config's identity). */
    public final String version;

    private static final class Holder {
        static final JiebaDictionary INSTANCE = new JiebaDictionary();
    }

    public static JiebaDictionary get() {
        return Holder.INSTANCE;
    }

    /** The version of the jieba tables in the jar, read without loading the dictionary. */
    public static String version() {
        return TableFile.headers("jieba.tsv").get("version");
    }

    private JiebaDictionary() {
        edgeKeys = new long[1 << 20];
        edgeChild = new int[1 << 20];
        edgeMask = edgeKeys.length - 1;
        java.util.Arrays.fill(edgeKeys, -1L);
        Map<Long, Integer> freqIndex = new HashMap<>();
        java.util.List<Double> logs = new java.util.ArrayList<>();
        Map<String, String> headers = TableFile.read("jieba.tsv", line -> {
            if (line.startsWith("f ")) {
                String[] f = line.split(" ");
                freqIndex.put(Long.parseLong(f[1]), logs.size());
                logs.add(TableFile.bitsToDouble(f[2]));
                return;
            }
            int tab = line.lastIndexOf('\t');
            long freq = Long.parseLong(line.substring(tab + 1));
            int node = insert(line, tab);
            if (freq > 0) {
                Integer idx = freqIndex.get(freq);
                if (idx == null) {
                    throw new IllegalStateException("jieba.tsv: no log value for frequency " + freq);
                }
                logIndex[node] = (char) (idx + 1);
            }
        });
        logFreq = logs.stream().mapToDouble(Double::doubleValue).toArray();
        logTotal = TableFile.bitsToDouble(headers.get("logtotal"));
        version = headers.get("version");
    }

    private int insert(String word, int length) {
        int node = ROOT;
        for (int i = 0; i < length; i++) {
            int next = child(node, word.charAt(i));
            if (next < 0) {
                next = addEdge(node, word.charAt(i));
            }
            node = next;
        }
        return node;
    }

    private int addEdge(int parent, char ch) {
        if (2 * (edges + 1) > edgeKeys.length) {
            grow();
        }
        int child = nodes++;
        if (child == logIndex.length) {
            logIndex = java.util.Arrays.copyOf(logIndex, child * 2);
        }
        put(key(parent, ch), child);
        edges++;
        return child;
    }

    private void put(long key, int child) {
        int slot = slot(key);
        while (edgeKeys[slot] != -1L) {
            slot = (slot + 1) & edgeMask;
        }
        edgeKeys[slot] = key;
        edgeChild[slot] = child;
    }

    private void grow() {
        long[] oldKeys = edgeKeys;
        int[] oldChild = edgeChild;
        edgeKeys = new long[oldKeys.length * 2];
        edgeChild = new int[oldKeys.length * 2];
        edgeMask = edgeKeys.length - 1;
        java.util.Arrays.fill(edgeKeys, -1L);
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldKeys[i] != -1L) {
                put(oldKeys[i], oldChild[i]);
            }
        }
    }

    private static long key(int parent, int ch) {
        return ((long) parent << 16) | ch;
    }

    private int slot(long key) {
        return (int) MinHash.mix64(key) & edgeMask;
    }

    /** The node reached from {@code node} by the UTF-16 unit {@code ch}, or -1 when no key continues that way. */
    public int child(int node, int ch) {
        if (ch > 0xFFFF) {
            return -1;
        }
        long key = key(node, ch);
        int slot = slot(key);
        long k;
        while ((k = edgeKeys[slot]) != -1L) {
            if (k == key) {
                return edgeChild[slot];
            }
            slot = (slot + 1) & edgeMask;
        }
        return -1;
    }

    /** True when the node's key is a word with a frequency above 0 (jieba: {@code FREQ.get(word)} is truthy). */
    public boolean isWord(int node) {
        return logIndex[node] != 0;
    }

    /** {@code log(FREQ.get(word) or 1)}: the word's log frequency, 0.0 for a prefix. */
    public double logFreq(int node) {
        int i = logIndex[node];
        return i == 0 ? 0.0 : logFreq[i - 1];
    }

    /** The node of a whole key, or -1. */
    public int find(int[] text, int from, int to) {
        int node = ROOT;
        for (int i = from; i < to && node >= 0; i++) {
            node = child(node, text[i]);
        }
        return node;
    }
}
