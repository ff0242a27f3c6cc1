package org.esdedup.es;

import org.esdedup.es.core.DedupDoc;
import org.esdedup.es.core.FingerprintConfig;
import org.esdedup.es.core.Fingerprinter;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The script measures on fingerprints made by the processor's own code (the golden pairs check the numbers). */
class MeasureTest {
    /** With a vector (the default config stores none), so that cosines are measured too. */
    private static final Fingerprinter F = FingerprintStep.fingerprinter(
        FingerprintConfig.fromMap(Map.of("vector_index", "int8_flat"), "0.42.1"));

    private static Map<String, Object> dedup(String text) {
        return DedupFields.source(F.fingerprint(text), F.config());
    }

    private static Measure.Query query(String text) {
        Map<String, Object> params = new HashMap<>(Map.of("query", dedup(text), "hamming_k", 3, "cosine", 0.8,
            "jaccard", 0.5, "containment", 0.8));
        return Measure.Query.of(params);
    }

    @Test
    void aTextIsItsOwnNearestDuplicate() {
        String text = "今天天气很好，我们去公园散步，然后一起吃午饭。";
        DedupDoc same = DedupFields.read(dedup(text));
        Measure.Query q = query(text);
        assertEquals(64.0, Measure.HAMMING.score(q, same));
        assertEquals(1.0, Measure.JACCARD.score(q, same));
        assertTrue(Measure.COSINE.score(q, same) > 0.9999);
        assertEquals(Boolean.TRUE, Measure.NEAR_DUPLICATE.value(q, same));
        assertTrue(Measure.NEAR_DUPLICATE.score(q, same) > 65.0);
    }

    @Test
    void theDefaultConfigStoresNoVectorAndItsCosineIsZero() {
        Fingerprinter plain = FingerprintStep.fingerprinter(FingerprintConfig.fromMap(Map.of(), "0.42.1"));
        String text = "今天天气很好，我们去公园散步，然后一起吃午饭。";
        Map<String, Object> stored = DedupFields.source(plain.fingerprint(text), plain.config());
        assertFalse(stored.containsKey(DedupFields.VECTOR));
        assertTrue(stored.get(DedupFields.LSH_KEYS) instanceof java.util.List<?> keys && keys.size() == 16);
        DedupDoc same = DedupFields.read(stored);
        Measure.Query q = query(text);
        assertEquals(1.0, Measure.JACCARD.score(q, same));
        assertEquals(0.0, Measure.COSINE.score(q, same));
        assertEquals(Boolean.TRUE, Measure.NEAR_DUPLICATE.value(q, same)); // the n-grams decide, not the cosine
    }

    @Test
    void unrelatedTextsAndMissingFieldsScoreZero() {
        Measure.Query q = query("今天天气很好，我们去公园散步，然后一起吃午饭。");
        DedupDoc other = DedupFields.read(dedup("国务院总理在人民大会堂会见了来访的外国代表团。"));
        assertEquals(0.0, Measure.NEAR_DUPLICATE.score(q, other));
        assertEquals(Boolean.FALSE, Measure.NEAR_DUPLICATE.value(q, other));
        assertEquals(0.0, Measure.NEAR_DUPLICATE.score(q, null));
        assertEquals(null, Measure.JACCARD.value(q, null));
    }

    @Test
    void unknownScriptsAndMissingQueriesAreClearErrors() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Measure.of("painless"));
        assertTrue(e.getMessage().contains("near_duplicate"));
        assertThrows(IllegalArgumentException.class, () -> Measure.Query.of(Map.of()));
    }
}
