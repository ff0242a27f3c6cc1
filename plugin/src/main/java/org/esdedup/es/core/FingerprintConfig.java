package org.esdedup.es.core;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The fields of esdedup's {@code FingerprintConfig} that decide a fingerprint's bits, read from the config's JSON
 * object (as stored in an index's {@code _meta.esdedup.config}) and validated as Python validates them.
 *
 * <p>A config whose fingerprints the plugin cannot reproduce bit for bit is refused with an
 * {@link UnsupportedConfigException}: OpenCC conversion ({@code t2s}), the rjieba tokenizer, user dictionaries,
 * synonym and stopword files, tf-idf weighting, and a jieba version other than the one the plugin was built with.
 */
public final class FingerprintConfig {
    public static final int SCHEMA_VERSION = 5;
    static final int MAX_TABLES = 64;
    static final int MAX_PROBES = 4096;

    public final int bits;
    public final int hammingK;
    public final int bandBlocks;
    public final int bandKeyBlocks;
    public final int probeRadius;
    public final String tokenizer;
    public final int shingle;
    public final String weighting;
    public final int dims;
    public final String stopwords;
    public final String strategy;
    public final int shortTextChars;
    public final int minhashPerm;
    public final int minhashBands;
    /** Signature values per LSH band: the bands hash values [0, minhashBands * minhashRows). */
    public final int minhashRows;
    public final int minhashNgram;
    public final double cosineThreshold;
    public final double jaccardThreshold;
    public final double containmentThreshold;
    public final String vectorIndex;
    /** The values of vector_index: auto (no vector unless the strategy reads one) or how a stored vector is indexed. */
    public static final List<String> VECTOR_INDEXES = List.of("auto", "int8_flat", "flat", "int8_hnsw", "hnsw", "none");

    /** Every field Python's FingerprintConfig has, with its default (null: no default needed here). */
    private static final Map<String, Object> DEFAULTS = new LinkedHashMap<>();

    static {
        Object[][] d = {
            {"bits", 64}, {"hamming_k", 3}, {"band_blocks", 0}, {"band_key_blocks", 0}, {"probe_radius", 0},
            {"tokenizer", "jieba"}, {"tokenizer_version", ""}, {"shingle", 0}, {"weighting", "tf"}, {"dims", 256},
            {"t2s", false}, {"stopwords", "default"}, {"cosine_threshold", 0.8}, {"strategy", "auto"},
            {"short_text_chars", 200}, {"minhash_perm", 128}, {"minhash_bands", 16}, {"minhash_rows", 3},
            {"minhash_ngram", 2},
            {"vector_index", "auto"}, {"jaccard_threshold", 0.5}, {"containment_threshold", 0.8},
            {"synonyms_path", null}, {"synonyms_sha256", null}, {"user_dict_path", null}, {"user_dict_sha256", null},
            {"stopwords_path", null}, {"stopwords_sha256", null}, {"idf_path", null}, {"idf_sha256", null},
            {"schema", SCHEMA_VERSION}, {"extra", null},
        };
        for (Object[] kv : d) {
            DEFAULTS.put((String) kv[0], kv[1]);
        }
    }

    /**
     * Reads a config object. {@code jiebaVersion} is the version of the jieba tables in this plugin.
     *
     * @throws UnsupportedConfigException when the config is invalid or cannot be reproduced exactly
     */
    public static FingerprintConfig fromMap(Map<String, Object> map, String jiebaVersion) {
        for (String key : map.keySet()) {
            if (DEFAULTS.containsKey(key) == false) {
                throw new UnsupportedConfigException("unknown config field [" + key + "]");
            }
        }
        return new FingerprintConfig(new Reader(map), jiebaVersion);
    }

    private FingerprintConfig(Reader r, String jiebaVersion) {
        int schema = r.integer("schema");
        if (schema != SCHEMA_VERSION) {
            throw new UnsupportedConfigException("config schema " + schema + " is not supported (this plugin reproduces "
                + "schema " + SCHEMA_VERSION + ")");
        }
        bits = r.integer("bits");
        hammingK = r.integer("hamming_k");
        bandBlocks = r.integer("band_blocks");
        bandKeyBlocks = r.integer("band_key_blocks");
        probeRadius = r.integer("probe_radius");
        tokenizer = r.string("tokenizer");
        shingle = r.integer("shingle");
        weighting = r.string("weighting");
        dims = r.integer("dims");
        stopwords = r.string("stopwords");
        strategy = r.string("strategy");
        shortTextChars = r.integer("short_text_chars");
        minhashPerm = r.integer("minhash_perm");
        minhashBands = r.integer("minhash_bands");
        minhashRows = legacyRows(r) ? Math.max(minhashPerm / Math.max(minhashBands, 1), 1) : r.integer("minhash_rows");
        minhashNgram = r.integer("minhash_ngram");
        cosineThreshold = r.number("cosine_threshold");
        jaccardThreshold = r.number("jaccard_threshold");
        containmentThreshold = r.number("containment_threshold");
        vectorIndex = r.string("vector_index");
        refuseIrreproducible(r, jiebaVersion);
        validate();
        check(VECTOR_INDEXES.contains(vectorIndex), "vector_index must be one of " + String.join(", ", VECTOR_INDEXES));
    }

    /**
     * Whether the config was written before minhash_rows was a field (schema 4 has both forms): it names
     * minhash_bands but not minhash_rows, and its bands took all the signature values, perm / bands each (as
     * Python's {@code FingerprintConfig.from_dict} reads it).
     */
    private static boolean legacyRows(Reader r) {
        return r.given.containsKey("minhash_bands") && r.given.containsKey("minhash_rows") == false;
    }

    /**
     * Whether documents carry the TF vector ({@code FingerprintConfig.stores_vector}): always with strategy
     * simhash, whose rule reads cosines; with the others only when vector_index is not auto.
     */
    public boolean storesVector() {
        return storesVector(strategy, vectorIndex);
    }

    /** {@link #storesVector()} from the two config values it reads (the scripts have them as params). */
    public static boolean storesVector(String strategy, String vectorIndex) {
        return strategy.equals("simhash") || vectorIndex.equals("auto") == false;
    }

    private void refuseIrreproducible(Reader r, String jiebaVersion) {
        if (r.bool("t2s")) {
            throw new UnsupportedConfigException("t2s (OpenCC Traditional-to-Simplified conversion) cannot be reproduced "
                + "exactly in Elasticsearch; fingerprint such an index with esdedup ingest");
        }
        for (String f : List.of("synonyms", "user_dict", "stopwords", "idf")) {
            if (r.map.get(f + "_path") != null || r.map.get(f + "_sha256") != null) {
                throw new UnsupportedConfigException("configs with a " + f.replace('_', ' ') + " file are not supported by "
                    + "the plugin (its contents are not part of the config); fingerprint such an index with esdedup ingest");
            }
        }
        if (weighting.equals("tfidf")) {
            throw new UnsupportedConfigException("tfidf weighting needs the index's document-frequency table; the plugin "
                + "supports tf and tf_length");
        }
        if (tokenizer.equals("rjieba")) {
            throw new UnsupportedConfigException("tokenizer rjieba is not reproduced by the plugin (it implements jieba's "
                + "precise mode and char n-grams); use tokenizer jieba or char");
        }
        String version = r.string("tokenizer_version");
        if (tokenizer.equals("jieba") && version.isEmpty() == false && version.equals(jiebaVersion) == false) {
            throw new UnsupportedConfigException("the config was made with jieba " + version + " but this plugin carries "
                + "jieba " + jiebaVersion + "'s dictionary; segmentation would differ");
        }
        if (stopwords.equals("file")) {
            throw new UnsupportedConfigException("stopwords 'file' is not supported by the plugin; use default or none");
        }
    }

    private void validate() {
        check(bits == 64 || bits == 128, "bits must be 64 or 128, got " + bits);
        check(hammingK >= 0 && hammingK < bits / 2, "hamming_k must be between 0 and " + (bits / 2 - 1) + ", got " + hammingK);
        check(List.of("jieba", "char").contains(tokenizer), "tokenizer must be jieba, rjieba or char, got " + tokenizer);
        check(List.of("tf", "tf_length").contains(weighting), "weighting must be tf, tfidf or tf_length, got " + weighting);
        check(tokenizer.equals("char") == false || shingle > 0, "tokenizer 'char' needs shingle >= 1");
        check(shingle == 0 || tokenizer.equals("char"), "shingle (character n-grams) goes with tokenizer 'char'");
        check(shingle >= 0 && shingle <= 16, "shingle must be between 0 and 16, got " + shingle);
        check(dims >= 8 && dims <= 4096, "dims must be between 8 and 4096, got " + dims);
        check(List.of("default", "none").contains(stopwords), "stopwords must be 'default', 'none' or 'file'");
        check(List.of("auto", "simhash", "minhash").contains(strategy), "strategy must be auto, simhash or minhash");
        check(minhashBands >= 1 && minhashRows >= 1 && (long) minhashBands * minhashRows <= minhashPerm,
            "the LSH bands need minhash_bands (" + minhashBands + ") >= 1 and minhash_rows (" + minhashRows + ") >= 1 "
                + "with minhash_bands * minhash_rows at most minhash_perm (" + minhashPerm + ")");
        check(minhashNgram >= 1, "minhash_ngram must be >= 1, got " + minhashNgram);
        check(cosineThreshold > 0 && cosineThreshold <= 1, "cosine_threshold must be in (0, 1]");
        check(jaccardThreshold > 0 && jaccardThreshold <= 1, "jaccard_threshold must be in (0, 1]");
        check(containmentThreshold >= 0 && containmentThreshold <= 1, "containment_threshold must be in [0, 1]");
        validateLayout();
    }

    private void validateLayout() {
        int blocks = blocks(), keyBlocks = keyBlocks();
        check(blocks >= 1 && blocks <= bits, "blocks must be between 1 and " + bits + ", got " + blocks);
        check(keyBlocks >= 1 && keyBlocks <= blocks, "key_blocks must be between 1 and blocks (" + blocks + ")");
        int q = hammingK / blocks, rem = hammingK % blocks;
        int need = keyBlocks * q + Math.max(0, keyBlocks - (blocks - rem));
        check(probeRadius >= need, "band layout blocks=" + blocks + " key_blocks=" + keyBlocks + " radius=" + probeRadius
            + " can miss pairs at Hamming distance " + hammingK + ": it needs radius >= " + need);
        BandLayout layout = layout();
        check(layout.tableCount() <= MAX_TABLES, "band layout has " + layout.tableCount() + " tables (> " + MAX_TABLES + ")");
        long probes = 0;
        for (int w : layout.keyWidths) {
            for (int r = 0; r <= probeRadius; r++) {
                probes += binomial(w, r);
            }
        }
        check(probes <= MAX_PROBES, "band layout probes " + probes + " keys per lookup (> " + MAX_PROBES + ")");
        check(layout.maxKeyWidth() <= 64, "a band key may not be wider than 64 bits");
    }

    private static long binomial(int n, int k) {
        long c = 1;
        for (int i = 0; i < k; i++) {
            c = c * (n - i) / (i + 1);
            if (c > Integer.MAX_VALUE) {
                return c;
            }
        }
        return c;
    }

    private static void check(boolean ok, String message) {
        if (ok == false) {
            throw new UnsupportedConfigException(message);
        }
    }

    int blocks() {
        return bandBlocks != 0 ? bandBlocks : hammingK + 1;
    }

    int keyBlocks() {
        return bandKeyBlocks != 0 ? bandKeyBlocks : Math.max(1, blocks() - hammingK);
    }

    public BandLayout layout() {
        return new BandLayout(bits, blocks(), keyBlocks());
    }

    /** True when documents of this many characters get no SimHash band keys (MinHash alone serves them). */
    public boolean isShort(int chars) {
        return isShort(strategy, shortTextChars, chars);
    }

    /** {@link #isShort(int)} from the config values it reads. */
    public static boolean isShort(String strategy, int shortTextChars, int chars) {
        return strategy.equals("minhash") || (strategy.equals("auto") && chars < shortTextChars);
    }

    /**
     * Whether a text of this many characters is segmented into terms, weighted and SimHashed
     * ({@code FingerprintConfig.gets_terms}): only when it gets SimHash band keys or documents store the vector.
     * A text without terms has SimHash 0, which is no SimHash: its Hamming distances mean nothing.
     */
    public boolean getsTerms(int chars) {
        return getsTerms(strategy, vectorIndex, shortTextChars, chars);
    }

    /** {@link #getsTerms(int)} from the config values it reads (the scripts have them as params). */
    public static boolean getsTerms(String strategy, String vectorIndex, int shortTextChars, int chars) {
        return storesVector(strategy, vectorIndex) || isShort(strategy, shortTextChars, chars) == false;
    }

    /** Typed access to the config map, defaults filled in. */
    private static final class Reader {
        final Map<String, Object> map;
        final Map<String, Object> given;

        Reader(Map<String, Object> given) {
            this.given = given;
            map = new LinkedHashMap<>(DEFAULTS);
            map.putAll(given);
        }

        int integer(String key) {
            Object v = map.get(key);
            if (v instanceof Integer || v instanceof Long || v instanceof Short) {
                long l = ((Number) v).longValue();
                if (l >= Integer.MIN_VALUE && l <= Integer.MAX_VALUE) {
                    return (int) l;
                }
            }
            throw new UnsupportedConfigException("config field [" + key + "] must be an integer, got " + v);
        }

        double number(String key) {
            Object v = map.get(key);
            if (v instanceof Number n) {
                return n.doubleValue();
            }
            throw new UnsupportedConfigException("config field [" + key + "] must be a number, got " + v);
        }

        String string(String key) {
            Object v = map.get(key);
            if (v instanceof String s) {
                return s;
            }
            throw new UnsupportedConfigException("config field [" + key + "] must be a string, got " + v);
        }

        boolean bool(String key) {
            Object v = map.get(key);
            if (v instanceof Boolean b) {
                return b;
            }
            throw new UnsupportedConfigException("config field [" + key + "] must be true or false, got " + v);
        }
    }

    @Override
    public String toString() {
        return "FingerprintConfig[bits=" + bits + ", k=" + hammingK + ", tokenizer=" + tokenizer + ", strategy="
            + strategy + ", weighting=" + weighting + ", dims=" + dims + "]";
    }
}
