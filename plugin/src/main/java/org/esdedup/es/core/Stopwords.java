package org.esdedup.es.core;

import java.util.HashSet;
import java.util.Set;

/** esdedup's shipped stopword list (Chinese and English), already normalised as Python normalises it. */
public final class Stopwords {
    private Stopwords() {}

    private static final class Holder {
        static final Set<String> WORDS = load();

        private static Set<String> load() {
            Set<String> words = new HashSet<>();
            TableFile.read("stopwords.txt", words::add);
            return Set.copyOf(words);
        }
    }

    public static Set<String> shipped() {
        return Holder.WORDS;
    }
}
