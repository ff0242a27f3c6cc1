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
            "jaccard", 0.5, "containment", 0.8, "vector_index", "int8_flat"));
        return Measure.NEAR_DUPLICATE.query(params);
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

    /** The default config (strategy auto, vector_index auto): a short text is not segmented and has no SimHash. */
    private static final Fingerprinter PLAIN = FingerprintStep.fingerprinter(FingerprintConfig.fromMap(Map.of(), "0.42.1"));
    private static final String SHORT_A = "今天天气很好，我们去公园散步，然后一起吃午饭。";
    private static final String SHORT_B = "国务院总理在人民大会堂会见了来访的外国代表团。";

    private static Map<String, Object> plain(String text) {
        return DedupFields.source(PLAIN.fingerprint(text), PLAIN.config());
    }

    /** Script params as esdedup's client sends them for the default config, with the given thresholds. */
    private static Map<String, Object> plainParams(String text, Map<String, Object> thresholds) {
        Map<String, Object> params = new HashMap<>(thresholds);
        params.putAll(Map.of("query", plain(text), "strategy", "auto", "short_text_chars", 200, "vector_index", "auto"));
        return params;
    }

    @Test
    void aShortTextUnderTheDefaultConfigHasNoHamming() {
        Measure.Query q = Measure.Query.of(plainParams(SHORT_A, Map.of("hamming_k", 3, "jaccard", 0.5)));
        DedupDoc other = DedupFields.read(plain(SHORT_B));
        assertEquals("0000000000000000", plain(SHORT_B).get(DedupFields.SIMHASH)); // SimHash 0: no terms were read
        assertEquals(null, Measure.HAMMING.value(q, other)); // not distance 0
        assertEquals(0.0, Measure.HAMMING.score(q, other)); // no evidence, as jaccard without signatures
        // a long text has its SimHash, but the pair still has no Hamming: the short side has none
        DedupDoc longDoc = DedupFields.read(plain(SHORT_A.repeat(10)));
        assertEquals(null, Measure.HAMMING.value(q, longDoc));
        Measure.Query longQuery = Measure.Query.of(plainParams(SHORT_B.repeat(10), Map.of("hamming_k", 3)));
        assertTrue(Measure.HAMMING.value(longQuery, longDoc) instanceof Integer d && d > 0);
        assertEquals(64.0 - (Integer) Measure.HAMMING.value(longQuery, longDoc), Measure.HAMMING.score(longQuery, longDoc));
    }

    @Test
    void aMissingSimHashPassesNoHammingTest() {
        // The n-gram tests off and no cosine threshold: only the Hamming test could decide, and a pair without
        // SimHashes cannot pass it (esdedup.match.rule.decide: a pair no test can answer is no near-duplicate).
        Measure.Query q = Measure.Query.of(plainParams(SHORT_A, Map.of("hamming_k", 3)));
        DedupDoc other = DedupFields.read(plain(SHORT_B));
        assertEquals(Boolean.FALSE, Measure.NEAR_DUPLICATE.value(q, other));
        assertEquals(0.0, Measure.NEAR_DUPLICATE.score(q, other));
    }

    @Test
    void aNearDuplicateWithoutSimHashRanksAfterAnyDistance() {
        // A short text and its copy: the n-grams decide; the score has no Hamming term (esdedup sorts a pair
        // without Hamming after any distance), where a long pair's distance 0 counts bits + 1.
        Measure.Query q = Measure.Query.of(plainParams(SHORT_A, Map.of("hamming_k", 3, "jaccard", 0.5)));
        DedupDoc same = DedupFields.read(plain(SHORT_A));
        assertEquals(Boolean.TRUE, Measure.NEAR_DUPLICATE.value(q, same));
        assertEquals(1.0, Measure.NEAR_DUPLICATE.score(q, same)); // 1 + no Hamming term + cosine 0 (no vector)
        String text = SHORT_A.repeat(10);
        Measure.Query longQuery = Measure.Query.of(plainParams(text, Map.of("hamming_k", 3, "jaccard", 0.5)));
        assertEquals(1.0 + 65.0, Measure.NEAR_DUPLICATE.score(longQuery, DedupFields.read(plain(text))));
    }

    @Test
    void theMeasuresThatReadHammingNeedTheVectorIndex() {
        Map<String, Object> params = plainParams(SHORT_A, Map.of("hamming_k", 3));
        params.remove("vector_index");
        for (Measure m : new Measure[] {Measure.HAMMING, Measure.NEAR_DUPLICATE}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> m.query(params));
            assertTrue(e.getMessage().contains("params.vector_index"), e.getMessage());
        }
        DedupDoc same = DedupFields.read(plain(SHORT_A));
        assertEquals(1.0, Measure.JACCARD.score(Measure.JACCARD.query(params), same)); // reads no Hamming
        params.put("strategy", "simhash"); // every text carries its SimHash
        assertEquals(Boolean.TRUE, Measure.NEAR_DUPLICATE.value(Measure.NEAR_DUPLICATE.query(params), same));
        params.put("vector_index", "int8");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Measure.HAMMING.query(params));
        assertTrue(e.getMessage().contains("int8_flat"), e.getMessage());
    }

    @Test
    void nearDuplicateNeedsAHammingDistanceOrACosine() {
        Map<String, Object> params = plainParams(SHORT_A, Map.of("jaccard", 0.5));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Measure.NEAR_DUPLICATE.query(params));
        assertTrue(e.getMessage().contains("params.hamming_k, params.cosine"), e.getMessage());
        DedupDoc same = DedupFields.read(plain(SHORT_A));
        assertEquals(1.0, Measure.JACCARD.score(Measure.JACCARD.query(params), same)); // a measure alone needs none
        params.put("cosine", 0.8);
        assertEquals(Boolean.TRUE, Measure.NEAR_DUPLICATE.value(Measure.NEAR_DUPLICATE.query(params), same));
    }

    @Test
    void unknownScriptsAndMissingQueriesAreClearErrors() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Measure.of("painless"));
        assertTrue(e.getMessage().contains("near_duplicate"));
        assertThrows(IllegalArgumentException.class, () -> Measure.Query.of(Map.of()));
    }
}
