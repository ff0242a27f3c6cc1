package org.esdedup.es.core;

import java.util.Arrays;

/** A growable int array (code points) without boxing. */
final class IntList {
    int[] a;
    int size;

    IntList(int capacity) {
        a = new int[Math.max(capacity, 4)];
    }

    void add(int v) {
        if (size == a.length) {
            a = Arrays.copyOf(a, a.length * 2);
        }
        a[size++] = v;
    }

    void addAll(int[] vs) {
        for (int v : vs) {
            add(v);
        }
    }

    String toText(int from, int to) {
        return new String(a, from, to - from);
    }
}
