package org.esdedup.es.core;

/**
 * numpy's pairwise summation ({@code add.reduce} over a contiguous axis): blocks of up to 128 values summed
 * with eight interleaved accumulators, longer runs split in halves (a multiple of 8 on the left). Sums that
 * Python computes this way come out bit-identical only when added in the same order.
 */
public final class PairwiseSum {
    private PairwiseSum() {}

    public static float sum(float[] a, int from, int n) {
        if (n < 8) {
            float r = 0f;
            for (int i = 0; i < n; i++) {
                r += a[from + i];
            }
            return r;
        }
        if (n <= 128) {
            float[] r = new float[8];
            System.arraycopy(a, from, r, 0, 8);
            int i = 8;
            for (; i < n - (n % 8); i += 8) {
                for (int j = 0; j < 8; j++) {
                    r[j] += a[from + i + j];
                }
            }
            float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            for (; i < n; i++) {
                res += a[from + i];
            }
            return res;
        }
        int n2 = n / 2;
        n2 -= n2 % 8;
        return sum(a, from, n2) + sum(a, from + n2, n - n2);
    }

    public static double sum(double[] a, int from, int n) {
        if (n < 8) {
            double r = 0.0;
            for (int i = 0; i < n; i++) {
                r += a[from + i];
            }
            return r;
        }
        if (n <= 128) {
            double[] r = new double[8];
            System.arraycopy(a, from, r, 0, 8);
            int i = 8;
            for (; i < n - (n % 8); i += 8) {
                for (int j = 0; j < 8; j++) {
                    r[j] += a[from + i + j];
                }
            }
            double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            for (; i < n; i++) {
                res += a[from + i];
            }
            return res;
        }
        int n2 = n / 2;
        n2 -= n2 % 8;
        return sum(a, from, n2) + sum(a, from + n2, n - n2);
    }
}
