package org.esdedup.es.core;

import java.util.ArrayList;
import java.util.List;

/**
 * Which bits of a SimHash form each band key ({@code esdedup.fingerprint.bands.BandLayout}): the bits are cut into
 * {@code blocks} contiguous blocks whose widths differ by at most one, and every combination of
 * {@code keyBlocks} blocks (in {@code itertools.combinations} order) is one table, keyed {@code "<table>:<hex>"}.
 */
public final class BandLayout {
    final int[] starts;
    final int[] widths;
    final int[][] tables;
    final int[] keyWidths;

    BandLayout(int bits, int blocks, int keyBlocks) {
        starts = new int[blocks];
        widths = new int[blocks];
        int base = bits / blocks, extra = bits % blocks, start = 0;
        for (int i = 0; i < blocks; i++) {
            starts[i] = start;
            widths[i] = base + (i < extra ? 1 : 0);
            start += widths[i];
        }
        List<int[]> combos = new ArrayList<>();
        combinations(blocks, keyBlocks, 0, new int[keyBlocks], 0, combos);
        tables = combos.toArray(new int[0][]);
        keyWidths = new int[tables.length];
        for (int t = 0; t < tables.length; t++) {
            for (int b : tables[t]) {
                keyWidths[t] += widths[b];
            }
        }
    }

    private static void combinations(int n, int k, int from, int[] cur, int depth, List<int[]> out) {
        if (depth == k) {
            out.add(cur.clone());
            return;
        }
        for (int i = from; i < n; i++) {
            cur[depth] = i;
            combinations(n, k, i + 1, cur, depth + 1, out);
        }
    }

    public int tableCount() {
        return tables.length;
    }

    /** The widest key in bits. */
    int maxKeyWidth() {
        int max = 0;
        for (int w : keyWidths) {
            max = Math.max(max, w);
        }
        return max;
    }

    /** The key of each table for a SimHash given as 64-bit words, least significant first. */
    public String[] keys(long[] simhash) {
        String[] out = new String[tables.length];
        for (int t = 0; t < tables.length; t++) {
            long value = 0;
            int shift = 0;
            for (int b : tables[t]) {
                value |= bits(simhash, starts[b], widths[b]) << shift;
                shift += widths[b];
            }
            out[t] = t + ":" + Hex.pad(Long.toHexString(value), (keyWidths[t] + 3) / 4);
        }
        return out;
    }

    /** {@code width} (<= 64) bits of a multi-word value starting at bit {@code start}. */
    static long bits(long[] words, int start, int width) {
        int w = start >>> 6, off = start & 63;
        long v = words[w] >>> off;
        if (off != 0 && off + width > 64 && w + 1 < words.length) {
            v |= words[w + 1] << (64 - off);
        }
        return width == 64 ? v : v & ((1L << width) - 1);
    }
}
