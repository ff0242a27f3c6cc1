package org.esdedup.es;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;

import org.esdedup.es.core.FingerprintConfig;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the processor writes, decided by {@link FingerprintStep} for both engines: the fields of each golden text,
 * the labels and write order a document keeps, the refusals. Each engine's {@code FingerprintProcessorTest} checks
 * only how its own ingest API reaches this step.
 */
class FingerprintStepTest {
    private static List<JsonNode> golden;
    private static Map<String, Object> defaultConfig;

    @BeforeAll
    @SuppressWarnings("unchecked")
    static void readGolden() {
        golden = Golden.first(300);
        defaultConfig = Golden.JSON.convertValue(golden.get(0).get("configs").get("default"), Map.class);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> parse(String json) {
        try {
            return Golden.JSON.readValue(json, Map.class);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    private static FingerprintStep step(Object config) {
        return step(config, false);
    }

    private static FingerprintStep step(Object config, boolean ignoreMissing) {
        FingerprintConfig parsed = FingerprintStep.config(config, FingerprintStepTest::parse);
        return new FingerprintStep("text", "dedup", ignoreMissing, parsed);
    }

    static Map<String, Object> config(Map<String, Object> base, Object... changes) {
        Map<String, Object> c = new HashMap<>(base);
        for (int i = 0; i < changes.length; i += 2) {
            c.put((String) changes[i], changes[i + 1]);
        }
        return c;
    }

    @Test
    void writesThePythonFieldsOfEachGoldenText() {
        FingerprintStep step = step(defaultConfig);
        int checked = 0;
        for (JsonNode rec : golden.subList(1, golden.size())) {
            if (rec.get("config").asText().equals("default") == false || rec.get("text").asText().isBlank()) {
                continue;
            }
            Map<String, Object> written = new HashMap<>(step.dedup(rec.get("text").asText(), null));
            assertTrue(written.remove("seq") instanceof Long); // the write order the step stamps, not a text field
            Object expected = Golden.JSON.convertValue(rec.get("dedup"), Object.class);
            assertTrue(GoldenParityTest.same(expected, written) || sameMap(expected, written), rec.get("id").asText());
            checked++;
        }
        assertTrue(checked > 200);
    }

    private static boolean sameMap(Object a, Object b) {
        if (a instanceof Map<?, ?> x && b instanceof Map<?, ?> y && x.keySet().equals(y.keySet())) {
            return x.keySet().stream().allMatch(k -> GoldenParityTest.same(x.get(k), y.get(k)));
        }
        return false;
    }

    @Test
    void readsTheConfigAsJsonText() {
        Map<String, Object> dedup = step("{\"tokenizer\": \"char\", \"shingle\": 2, \"short_text_chars\": 0}")
            .dedup("北京欢迎你", null);
        assertEquals(4, dedup.get("tokens"));
        assertThrows(IllegalArgumentException.class, () -> step(5));
    }

    @Test
    void keepsTheClusterLabelsADocumentAlreadyCarries() {
        Map<String, Object> dedup = step(defaultConfig).dedup("今天天气很好", Map.of("cluster_id", "a", "simhash", "x"));
        assertEquals("a", dedup.get("cluster_id"));
        assertEquals(16, ((String) dedup.get("simhash")).length());
    }

    @Test
    void stampsAStrictlyIncreasingWriteOrderAndKeepsAWritersOwn() {
        FingerprintStep step = step(defaultConfig);
        long before = System.currentTimeMillis() * 1_000_000L;
        long first = (Long) step.dedup("今天天气很好", null).get("seq");
        long second = (Long) step.dedup("今天天气很好", null).get("seq");
        assertTrue(first >= before && second > first, first + " " + second);
        Map<String, Object> own = step.dedup("今天天气很好", Map.of("seq", 7L, "cluster_seq", 5L, "cluster_id", "a"));
        assertEquals(7L, own.get("seq"));
        assertEquals(5L, own.get("cluster_seq"));
        assertFalse(step.dedup("今天天气很好", null).containsKey("cluster_seq"));
    }

    @Test
    void missingOrNonTextFieldsAreErrorsUnlessIgnored() {
        FingerprintStep step = step(defaultConfig);
        assertThrows(IllegalArgumentException.class, () -> step.dedup(null, null));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> step.dedup(5, null));
        assertTrue(e.getMessage().contains("not a string"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> step.dedup(" \u3000\n", null));
        assertTrue(e.getMessage().contains("is empty"), e.getMessage());
        assertNull(step(defaultConfig, true).dedup(null, null));
    }

    @Test
    void refusesConfigsItCannotReproduce() {
        Map<Object[], String> cases = Map.of(
            new Object[] {"t2s", true}, "t2s",
            new Object[] {"tokenizer", "rjieba", "tokenizer_version", "0.2.2"}, "rjieba",
            new Object[] {"weighting", "tfidf", "idf_sha256", "ab"}, "idf file",
            new Object[] {"user_dict_sha256", "ab", "user_dict_path", "/x"}, "user dict",
            new Object[] {"tokenizer_version", "0.39"}, "jieba 0.39",
            new Object[] {"stopwords", "file", "stopwords_path", "/x"}, "stopwords file",
            new Object[] {"schema", 2}, "schema 2",
            new Object[] {"colour", "red"}, "unknown config field [colour]",
            new Object[] {"band_blocks", 2}, "needs radius");
        cases.forEach((changes, expected) -> {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> step(config(defaultConfig, changes)));
            assertTrue(e.getMessage().contains(expected), expected + " not in: " + e.getMessage());
        });
    }

    /** Today's LSH keys of {@link #POEM} under 32 bands of 4 rows (computed by Python before minhash_rows existed). */
    private static final long[] POEM_KEYS_32X4 = {674810912044L, 1006281018634L, 619217008113L, 450778231333L,
        106680093860L, 303555309540L, 973738485409L, 653199392266L, 507034028921L, 815208760091L, 563579777784L,
        208415918218L, 787491760538L, 1018509784560L, 634933388442L, 929710413575L, 510454954182L, 258791111066L,
        992926227765L, 319391616843L, 470729042914L, 187496287305L, 109609062535L, 339607682384L, 1029133884069L,
        828980764751L, 494829649435L, 548631267535L, 277082107364L, 370713867586L, 363303896611L, 446740622201L};
    private static final String POEM = "床前明月光，疑是地上霜。举头望明月，低头思故乡。";

    @Test
    @SuppressWarnings("unchecked")
    void aConfigWithoutMinhashRowsKeepsTheLayoutItWasWrittenWith() {
        Map<String, Object> legacy = config(defaultConfig, "minhash_bands", 32);
        legacy.remove("minhash_rows");
        List<Number> keys = (List<Number>) step(legacy).dedup(POEM, null).get("lsh_keys");
        assertEquals(Arrays.stream(POEM_KEYS_32X4).boxed().toList(), keys.stream().map(Number::longValue).toList());
        List<Number> now = (List<Number>) step(defaultConfig).dedup(POEM, null).get("lsh_keys");
        assertEquals(16, now.size()); // the default: 16 bands of 3 rows
    }

    @Test
    void refusesLshBandsThatNeedMoreValuesThanTheSignatureHas() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> step(config(defaultConfig, "minhash_bands", 64)));
        assertTrue(e.getMessage().contains("minhash_bands (64) >= 1 and minhash_rows (3) >= 1 with minhash_bands * "
            + "minhash_rows at most minhash_perm (128)"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> step(config(defaultConfig, "minhash_rows", 0)));
        assertTrue(e.getMessage().contains("minhash_rows (0)"), e.getMessage());
    }
}
