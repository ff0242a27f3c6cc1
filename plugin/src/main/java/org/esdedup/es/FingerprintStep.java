package org.esdedup.es;

import org.esdedup.es.core.Fingerprint;
import org.esdedup.es.core.FingerprintConfig;
import org.esdedup.es.core.Fingerprinter;
import org.esdedup.es.core.HmmModel;
import org.esdedup.es.core.JiebaDictionary;
import org.esdedup.es.core.JiebaSegmenter;
import org.esdedup.es.core.Stopwords;
import org.esdedup.es.core.UnicodeData;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * What the {@code esdedup_fingerprint} processor does to one document, in no engine's types: each engine's
 * {@code FingerprintProcessor} (Elasticsearch's in src/elasticsearch, OpenSearch's in src/opensearch) reads its
 * options and the document's fields with its own API and leaves every decision to this class, so both engines
 * write the same fields.
 */
public final class FingerprintStep {
    public static final String TYPE = "esdedup_fingerprint";

    /**
     * The write order esdedup keeps per document ({@code seq}: nanoseconds since 1970 when it was first written, and
     * its cluster representative's {@code cluster_seq}). The processor stamps {@code seq} on a document that has
     * none: the moment it reached this node, so documents of one {@code _bulk} keep the request's order, and
     * {@code esdedup label} picks as representative the earliest by it (then id), as {@code esdedup ingest} does.
     */
    static final List<String> WRITE_ORDER = List.of("seq", "cluster_seq");
    static final WriteClock CLOCK = new WriteClock();

    final String field;
    final String targetField;
    final boolean ignoreMissing;
    private final Fingerprinter fingerprinter;

    FingerprintStep(String field, String targetField, boolean ignoreMissing, FingerprintConfig config) {
        this.field = field;
        this.targetField = targetField;
        this.ignoreMissing = ignoreMissing;
        this.fingerprinter = fingerprinter(config);
    }

    /**
     * The dedup object to write at {@link #targetField} for the text field's {@code value}, keeping the labels and
     * write order the document's {@code old} object carries; null when the field is missing and that is allowed
     * (the document is left as it is).
     *
     * @throws IllegalArgumentException a text missing (unless ignored), not a string, or only whitespace, as
     *     {@code esdedup ingest} rejects such records
     */
    Map<String, Object> dedup(Object value, Object old) {
        if (value == null) {
            if (ignoreMissing) {
                return null;
            }
            throw new IllegalArgumentException("field [" + field + "] is null; esdedup fingerprints text");
        }
        if (!(value instanceof String text)) {
            throw new IllegalArgumentException("field [" + field + "] is a " + value.getClass().getSimpleName()
                + ", not a string; esdedup fingerprints text");
        }
        if (text.codePoints().allMatch(UnicodeData.get()::isSpace)) { // as esdedup ingest's readers reject it
            throw new IllegalArgumentException("field [" + field + "] is empty; esdedup fingerprints text");
        }
        Fingerprint fp = fingerprinter.fingerprint(text);
        Map<String, Object> dedup = DedupFields.source(fp, fingerprinter.config());
        Map<?, ?> kept = old instanceof Map<?, ?> m ? m : Map.of();
        for (String label : DedupFields.LABELS) {
            if (kept.get(label) != null) {
                dedup.put(label, kept.get(label));
            }
        }
        for (String order : WRITE_ORDER) { // a writer's own write order (esdedup ingest through this pipeline)
            if (kept.get(order) != null) {
                dedup.put(order, kept.get(order));
            }
        }
        dedup.putIfAbsent(WRITE_ORDER.get(0), CLOCK.next());
        return dedup;
    }

    /**
     * The config of the processor's {@code config} option: an object (an index's {@code _meta.esdedup.config}) or
     * its JSON text, read by the engine's own JSON parser ({@code json}).
     *
     * @throws IllegalArgumentException a config the plugin cannot reproduce bit for bit (UnsupportedConfigException),
     *     or neither an object nor a string
     */
    @SuppressWarnings("unchecked")
    static FingerprintConfig config(Object raw, Function<String, Map<String, Object>> json) {
        Map<String, Object> map;
        if (raw instanceof Map<?, ?> given) {
            map = new LinkedHashMap<>((Map<String, Object>) given);
        } else if (raw instanceof String text) { // the config as a JSON string, as FingerprintConfig.to_json() gives it
            map = json.apply(text);
        } else {
            throw new IllegalArgumentException("config must be an object (an index's _meta.esdedup.config) or its JSON text");
        }
        return FingerprintConfig.fromMap(map, JiebaDictionary.version());
    }

    /** Nanoseconds since 1970, strictly increasing on this node (two documents never share a seq here). */
    static final class WriteClock {
        private final AtomicLong last = new AtomicLong();

        long next() {
            Instant now = Instant.now();
            long nanos = now.getEpochSecond() * 1_000_000_000L + now.getNano();
            return last.updateAndGet(prev -> Math.max(prev + 1, nanos));
        }
    }

    static Fingerprinter fingerprinter(FingerprintConfig config) {
        JiebaSegmenter segmenter = config.tokenizer.equals("jieba")
            ? new JiebaSegmenter(JiebaDictionary.get(), HmmModel.get()) : null;
        return new Fingerprinter(config, UnicodeData.get(), segmenter, Stopwords.shipped());
    }
}
