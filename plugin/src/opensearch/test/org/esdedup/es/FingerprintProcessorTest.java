package org.esdedup.es;

import com.fasterxml.jackson.databind.JsonNode;

import org.opensearch.OpenSearchParseException;
import org.opensearch.index.VersionType;
import org.opensearch.ingest.IngestDocument;
import org.opensearch.ingest.Processor;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The processor as OpenSearch drives it (the Elasticsearch test of src/elasticsearch, on OpenSearch's ingest API). */
class FingerprintProcessorTest {
    private static List<JsonNode> golden;
    private static Map<String, Object> defaultConfig;

    @BeforeAll
    @SuppressWarnings("unchecked")
    static void readGolden() {
        golden = Golden.first(300);
        defaultConfig = Golden.JSON.convertValue(golden.get(0).get("configs").get("default"), Map.class);
    }

    private static Processor create(Map<String, Object> options) throws Exception {
        return FingerprintProcessor.create("t", null, new HashMap<>(options));
    }

    private static Map<String, Object> config(Object... changes) {
        Map<String, Object> c = new HashMap<>(defaultConfig);
        for (int i = 0; i < changes.length; i += 2) {
            c.put((String) changes[i], changes[i + 1]);
        }
        return c;
    }

    private static IngestDocument doc(Map<String, Object> source) {
        return new IngestDocument("idx", "1", null, 1L, VersionType.INTERNAL, new HashMap<>(source));
    }

    @Test
    @SuppressWarnings("unchecked")
    void writesThePythonFieldsOfEachGoldenText() throws Exception {
        Processor p = create(Map.of("config", defaultConfig));
        int checked = 0;
        for (JsonNode rec : golden.subList(1, golden.size())) {
            if (rec.get("config").asText().equals("default") == false || rec.get("text").asText().isBlank()) {
                continue;
            }
            IngestDocument d = p.execute(doc(Map.of("text", rec.get("text").asText())));
            Map<String, Object> written = new HashMap<>(d.getFieldValue("dedup", Map.class));
            assertTrue(written.remove("seq") instanceof Long); // the write order the processor stamps, not a text field
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
    void acceptsTheConfigAsJsonTextAndOtherFieldNames() throws Exception {
        Processor p = create(Map.of("config", "{\"tokenizer\": \"char\", \"shingle\": 2, \"short_text_chars\": 0}", "field", "body",
            "target_field", "fp"));
        IngestDocument d = p.execute(doc(Map.of("body", "北京欢迎你")));
        assertEquals(4, d.getFieldValue("fp.tokens", Integer.class));
        assertFalse(d.hasField("dedup"));
    }

    @Test
    void keepsTheClusterLabelsADocumentAlreadyCarries() throws Exception {
        Processor p = create(Map.of("config", defaultConfig));
        IngestDocument d = p.execute(doc(Map.of("text", "今天天气很好", "dedup", Map.of("cluster_id", "a", "simhash", "x"))));
        assertEquals("a", d.getFieldValue("dedup.cluster_id", String.class));
        assertEquals(16, d.getFieldValue("dedup.simhash", String.class).length());
    }

    @Test
    void stampsAStrictlyIncreasingWriteOrderAndKeepsAWritersOwn() throws Exception {
        Processor p = create(Map.of("config", defaultConfig));
        long before = System.currentTimeMillis() * 1_000_000L;
        long first = p.execute(doc(Map.of("text", "今天天气很好"))).getFieldValue("dedup.seq", Long.class);
        long second = p.execute(doc(Map.of("text", "今天天气很好"))).getFieldValue("dedup.seq", Long.class);
        assertTrue(first >= before && second > first, first + " " + second);
        IngestDocument own = p.execute(doc(Map.of("text", "今天天气很好",
            "dedup", Map.of("seq", 7L, "cluster_seq", 5L, "cluster_id", "a"))));
        assertEquals(7L, own.getFieldValue("dedup.seq", Long.class));
        assertEquals(5L, own.getFieldValue("dedup.cluster_seq", Long.class));
        assertFalse(p.execute(doc(Map.of("text", "今天天气很好"))).hasField("dedup.cluster_seq"));
    }

    @Test
    void missingOrNonTextFieldsAreErrorsUnlessIgnored() throws Exception {
        Processor p = create(Map.of("config", defaultConfig));
        assertThrows(IllegalArgumentException.class, () -> p.execute(doc(Map.of("title", "x"))));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> p.execute(doc(Map.of("text", 5))));
        assertTrue(e.getMessage().contains("not a string"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> p.execute(doc(Map.of("text", " \u3000\n"))));
        assertTrue(e.getMessage().contains("is empty"), e.getMessage());
        IngestDocument untouched = doc(Map.of("title", "x"));
        assertSame(untouched, create(Map.of("config", defaultConfig, "ignore_missing", true)).execute(untouched));
        assertFalse(untouched.hasField("dedup"));
    }

    @Test
    void refusesConfigsItCannotReproduceAtPipelineCreation() {
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
            OpenSearchParseException e = assertThrows(OpenSearchParseException.class,
                () -> create(Map.of("config", config(changes))));
            assertTrue(e.getMessage().contains(expected), expected + " not in: " + e.getMessage());
        });
        assertThrows(OpenSearchParseException.class, () -> create(Map.of("field", "text")));
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
    void aConfigWithoutMinhashRowsKeepsTheLayoutItWasWrittenWith() throws Exception {
        Map<String, Object> legacy = config("minhash_bands", 32);
        legacy.remove("minhash_rows");
        List<Number> keys = create(Map.of("config", legacy)).execute(doc(Map.of("text", POEM)))
            .getFieldValue("dedup.lsh_keys", List.class);
        assertEquals(Arrays.stream(POEM_KEYS_32X4).boxed().toList(), keys.stream().map(Number::longValue).toList());
        List<Number> now = create(Map.of("config", defaultConfig)).execute(doc(Map.of("text", POEM)))
            .getFieldValue("dedup.lsh_keys", List.class);
        assertEquals(16, now.size()); // the default: 16 bands of 3 rows
    }

    @Test
    void refusesLshBandsThatNeedMoreValuesThanTheSignatureHas() {
        OpenSearchParseException e = assertThrows(OpenSearchParseException.class,
            () -> create(Map.of("config", config("minhash_bands", 64))));
        assertTrue(e.getMessage().contains("minhash_bands (64) >= 1 and minhash_rows (3) >= 1 with minhash_bands * "
            + "minhash_rows at most minhash_perm (128)"), e.getMessage());
        e = assertThrows(OpenSearchParseException.class, () -> create(Map.of("config", config("minhash_rows", 0))));
        assertTrue(e.getMessage().contains("minhash_rows (0)"), e.getMessage());
    }
}
