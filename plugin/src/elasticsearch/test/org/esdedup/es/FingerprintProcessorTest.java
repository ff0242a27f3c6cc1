package org.esdedup.es;

import org.elasticsearch.ElasticsearchParseException;
import org.elasticsearch.index.VersionType;
import org.elasticsearch.ingest.IngestDocument;
import org.elasticsearch.ingest.Processor;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How Elasticsearch's ingest API reaches {@link FingerprintStep}: the processor's options, the document's fields, its
 * refusals as Elasticsearch's configuration errors. What the step writes is FingerprintStepTest's.
 */
class FingerprintProcessorTest {
    private static Map<String, Object> defaultConfig;

    @BeforeAll
    @SuppressWarnings("unchecked")
    static void readConfig() {
        defaultConfig = Golden.JSON.convertValue(Golden.first(1).get(0).get("configs").get("default"), Map.class);
    }

    private static Processor create(Map<String, Object> options) throws Exception {
        return FingerprintProcessor.create("t", null, new HashMap<>(options));
    }

    private static IngestDocument doc(Map<String, Object> source) {
        return new IngestDocument("idx", "1", 1L, null, VersionType.INTERNAL, new HashMap<>(source));
    }

    @Test
    void readsItsOptionsAndTheConfigAsJsonText() throws Exception {
        Processor p = create(Map.of("config", "{\"tokenizer\": \"char\", \"shingle\": 2, \"short_text_chars\": 0}", "field", "body",
            "target_field", "fp"));
        IngestDocument d = p.execute(doc(Map.of("body", "北京欢迎你")));
        assertEquals(4, d.getFieldValue("fp.tokens", Integer.class));
        assertFalse(d.hasField("dedup"));
    }

    @Test
    void writesTheStepsFieldsAndKeepsTheDocumentsLabels() throws Exception {
        Processor p = create(Map.of("config", defaultConfig));
        IngestDocument d = p.execute(doc(Map.of("text", "今天天气很好", "dedup", Map.of("cluster_id", "a", "seq", 7L))));
        assertEquals("a", d.getFieldValue("dedup.cluster_id", String.class));
        assertEquals(7L, d.getFieldValue("dedup.seq", Long.class));
        assertEquals(16, d.getFieldValue("dedup.simhash", String.class).length());
    }

    @Test
    void aMissingFieldIsAnErrorUnlessIgnored() throws Exception {
        Processor p = create(Map.of("config", defaultConfig));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> p.execute(doc(Map.of("text", 5))));
        assertTrue(e.getMessage().contains("not a string"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> p.execute(doc(Map.of("title", "x"))));
        IngestDocument untouched = doc(Map.of("title", "x"));
        assertSame(untouched, create(Map.of("config", defaultConfig, "ignore_missing", true)).execute(untouched));
        assertFalse(untouched.hasField("dedup"));
    }

    @Test
    void aConfigItCannotReproduceIsAConfigurationErrorAtPipelineCreation() {
        Map<String, Object> config = FingerprintStepTest.config(defaultConfig, "t2s", true);
        ElasticsearchParseException e = assertThrows(ElasticsearchParseException.class, () -> create(Map.of("config", config)));
        assertTrue(e.getMessage().contains("t2s"), e.getMessage());
        assertThrows(ElasticsearchParseException.class, () -> create(Map.of("field", "text")));
    }
}
