package org.esdedup.es;

import org.esdedup.es.core.DedupDoc;
import org.esdedup.es.core.DuplicateRule;
import org.esdedup.es.core.FingerprintConfig;

import java.util.Locale;
import java.util.Map;

/**
 * The measures of the {@code esdedup} script language, between the query fingerprint and a stored document.
 * As a score (always >= 0, higher is nearer; 0 when the document has no dedup fields):
 * <ul>
 *   <li>{@code hamming}: bits minus the Hamming distance of the SimHashes (field value: the distance); 0 (field
 *       value null) when a side carries no SimHash, a text nothing reads the terms of
 *       ({@link org.esdedup.es.core.FingerprintConfig#getsTerms}), as jaccard without signatures;</li>
 *   <li>{@code cosine}: the TF-vector cosine, clipped to [0, 1];</li>
 *   <li>{@code jaccard} / {@code containment}: the MinHash estimates (0 unless both have signatures);</li>
 *   <li>{@code near_duplicate}: 0 unless esdedup's rule says near-duplicate, else
 *       {@code 1 + (bits + 1 - hamming) + cosine / 2}, where a pair without SimHash has no Hamming term (nearest
 *       by Hamming first, a pair without one after any distance, then by cosine, as esdedup sorts its matches);
 *       field value: true or false.</li>
 * </ul>
 * {@code hamming} and {@code near_duplicate} need to know which texts carry a SimHash: {@link #query} refuses
 * them without the {@code vector_index} param unless the strategy is simhash.
 */
enum Measure {
    HAMMING, COSINE, JACCARD, CONTAINMENT, NEAR_DUPLICATE;

    /** Whether this measure reads the Hamming distance, and so needs to know which texts carry a SimHash. */
    boolean readsHamming() {
        return this == HAMMING || this == NEAR_DUPLICATE;
    }

    /** The script params read for this measure ({@link Query#of}); the script engines call this once a search. */
    Query query(Map<String, Object> params) {
        if (this == NEAR_DUPLICATE && Query.number(params, "hamming_k") == null && Query.number(params, "cosine") == null) {
            // As esdedup's Thresholds: with neither, a pair without MinHash signatures could never be near-duplicates.
            throw new IllegalArgumentException("the esdedup script [near_duplicate] needs params.hamming_k, params.cosine "
                + "or both: with neither, pairs without MinHash signatures could never be near-duplicates");
        }
        Query q = Query.of(params);
        if (readsHamming() && q.rule.knowsSimhash() == false) {
            // Without it, a text with SimHash 0 (no terms read) would measure distance 0 to every other such text.
            throw new IllegalArgumentException("the esdedup script [" + name().toLowerCase(Locale.ROOT) + "] needs "
                + "params.vector_index, the index config's vector_index (e.g. \"auto\"): with strategy ["
                + q.rule.strategy() + "] it decides, with short_text_chars, which texts carry a SimHash");
        }
        return q;
    }

    static Measure of(String source) {
        try {
            return valueOf(source.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown esdedup script [" + source + "]; use hamming, cosine, jaccard, "
                + "containment or near_duplicate");
        }
    }

    double score(Query q, DedupDoc d) {
        if (d == null) {
            return 0.0;
        }
        return switch (this) {
            case HAMMING -> q.rule.bothSimhashed(q.doc, d) ? q.doc.bits() - DuplicateRule.hamming(q.doc.simhash(), d.simhash())
                : 0.0;
            case COSINE -> DuplicateRule.cosine(q.doc.vector(), d.vector());
            case JACCARD, CONTAINMENT -> {
                Double v = (Double) value(q, d);
                yield v == null ? 0.0 : v;
            }
            case NEAR_DUPLICATE -> {
                if (q.rule.isDuplicate(q.doc, d) == false) {
                    yield 0.0;
                }
                DuplicateRule.Scores s = q.rule.score(q.doc, d);
                // esdedup ranks a pair without Hamming after any distance (lookup.Match.rank): distance bits
                // still scores 1 above it.
                yield 1.0 + (s.simhash() ? q.doc.bits() + 1 - s.hamming() : 0) + s.cosine() / 2;
            }
        };
    }

    /**
     * The measure itself, for script_fields (null when the document has no dedup fields, Hamming where a side
     * has no SimHash, Jaccard and containment where a side has no signature).
     */
    Object value(Query q, DedupDoc d) {
        if (d == null) {
            return null;
        }
        DuplicateRule.Scores s = q.rule.score(q.doc, d);
        return switch (this) {
            case HAMMING -> s.simhash() ? s.hamming() : null;
            case COSINE -> s.cosine();
            case JACCARD -> Double.isNaN(s.jaccard()) ? null : s.jaccard();
            case CONTAINMENT -> Double.isNaN(s.containment()) ? null : s.containment();
            case NEAR_DUPLICATE -> q.rule.isDuplicate(q.doc, d);
        };
    }

    /**
     * The script params: {@code query} (the query document's dedup object: simhash, vector, minhash, shingles,
     * chars, empty), thresholds {@code hamming_k}, {@code cosine}, {@code jaccard}, {@code containment} (absent or
     * null: off), the index config's {@code strategy}, {@code short_text_chars} and {@code vector_index} (absent:
     * unknown, which {@link Measure#query} refuses for the measures that read Hamming), and {@code field} (the
     * object holding the stored fields, default {@code dedup}).
     */
    record Query(DedupDoc doc, DuplicateRule rule, String field) {
        static Query of(Map<String, Object> params) {
            DedupDoc doc = DedupFields.read(params.get("query"));
            if (doc == null) {
                throw new IllegalArgumentException("esdedup scripts need params.query: the query's dedup object (at least "
                    + "its simhash)");
            }
            Integer k = params.get("hamming_k") instanceof Number n ? n.intValue() : null;
            Double cosine = number(params, "cosine");
            if (k == null && cosine == null) { // measures alone run without thresholds (near_duplicate refuses that)
                cosine = 0.0;
            }
            DuplicateRule rule = new DuplicateRule(k, cosine, number(params, "jaccard"), number(params, "containment"),
                params.getOrDefault("strategy", "auto").toString(),
                params.get("short_text_chars") instanceof Number n ? n.intValue() : 200, vectorIndex(params));
            return new Query(doc, rule, params.getOrDefault("field", "dedup").toString());
        }

        private static String vectorIndex(Map<String, Object> params) {
            Object v = params.get("vector_index");
            if (v == null) {
                return null;
            }
            if (FingerprintConfig.VECTOR_INDEXES.contains(v) == false) {
                throw new IllegalArgumentException("params.vector_index must be one of "
                    + String.join(", ", FingerprintConfig.VECTOR_INDEXES) + " (the index config's), got [" + v + "]");
            }
            return (String) v;
        }

        static Double number(Map<String, Object> params, String key) {
            return params.get(key) instanceof Number n ? n.doubleValue() : null;
        }
    }
}
