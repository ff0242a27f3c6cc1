package org.esdedup.es;

import org.esdedup.es.core.DedupDoc;
import org.esdedup.es.core.DuplicateRule;

import java.util.Locale;
import java.util.Map;

/**
 * The measures of the {@code esdedup} script language, between the query fingerprint and a stored document.
 * As a score (always >= 0, higher is nearer; 0 when the document has no dedup fields):
 * <ul>
 *   <li>{@code hamming}: bits minus the Hamming distance of the SimHashes (field value: the distance);</li>
 *   <li>{@code cosine}: the TF-vector cosine, clipped to [0, 1];</li>
 *   <li>{@code jaccard} / {@code containment}: the MinHash estimates (0 unless both have signatures);</li>
 *   <li>{@code near_duplicate}: 0 unless esdedup's rule says near-duplicate, else
 *       {@code 1 + (bits - hamming) + cosine / 2} (nearest by Hamming first, then by cosine, as esdedup sorts);
 *       field value: true or false.</li>
 * </ul>
 */
enum Measure {
    HAMMING, COSINE, JACCARD, CONTAINMENT, NEAR_DUPLICATE;

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
            case HAMMING -> q.doc.bits() - DuplicateRule.hamming(q.doc.simhash(), d.simhash());
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
                yield 1.0 + (q.doc.bits() - s.hamming()) + s.cosine() / 2;
            }
        };
    }

    /** The measure itself, for script_fields (null when the document has no dedup fields or no signature). */
    Object value(Query q, DedupDoc d) {
        if (d == null) {
            return null;
        }
        DuplicateRule.Scores s = q.rule.score(q.doc, d);
        return switch (this) {
            case HAMMING -> s.hamming();
            case COSINE -> s.cosine();
            case JACCARD -> Double.isNaN(s.jaccard()) ? null : s.jaccard();
            case CONTAINMENT -> Double.isNaN(s.containment()) ? null : s.containment();
            case NEAR_DUPLICATE -> q.rule.isDuplicate(q.doc, d);
        };
    }

    /**
     * The script params: {@code query} (the query document's dedup object: simhash, vector, minhash, shingles,
     * chars, empty), thresholds {@code hamming_k}, {@code cosine}, {@code jaccard}, {@code containment} (absent or
     * null: off), the index config's {@code strategy} and {@code short_text_chars}, and {@code field} (the object
     * holding the stored fields, default {@code dedup}).
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
            if (k == null && cosine == null) { // only the rule needs thresholds; measures alone run without them
                cosine = 0.0;
            }
            DuplicateRule rule = new DuplicateRule(k, cosine, number(params, "jaccard"), number(params, "containment"),
                params.getOrDefault("strategy", "auto").toString(),
                params.get("short_text_chars") instanceof Number n ? n.intValue() : 200);
            return new Query(doc, rule, params.getOrDefault("field", "dedup").toString());
        }

        private static Double number(Map<String, Object> params, String key) {
            return params.get(key) instanceof Number n ? n.doubleValue() : null;
        }
    }
}
