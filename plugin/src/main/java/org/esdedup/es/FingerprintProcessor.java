package org.esdedup.es;

import org.elasticsearch.common.xcontent.XContentHelper;
import org.elasticsearch.ingest.AbstractProcessor;
import org.elasticsearch.ingest.ConfigurationUtils;
import org.elasticsearch.ingest.IngestDocument;
import org.elasticsearch.xcontent.XContentType;
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

/**
 * The {@code esdedup_fingerprint} ingest processor: fingerprints a text field under an index's FingerprintConfig
 * and writes the {@code dedup} object that {@code esdedup ingest} writes (minus the cluster labels, which only
 * ingest assigns; labels a document already carries are kept).
 *
 * <pre>
 * {"esdedup_fingerprint": {"field": "text", "target_field": "dedup", "ignore_missing": false,
 *                          "config": { ...the index's _meta.esdedup.config... }}}
 * </pre>
 */
public final class FingerprintProcessor extends AbstractProcessor {
    public static final String TYPE = "esdedup_fingerprint";

    /**
     * The write order esdedup keeps per document ({@code seq}: nanoseconds since 1970 when it was first written, and
     * its cluster representative's {@code cluster_seq}). The processor stamps {@code seq} on a document that has
     * none: the moment it reached this node, so documents of one {@code _bulk} keep the request's order, and
     * {@code esdedup label} picks as representative the earliest by it (then id), as {@code esdedup ingest} does.
     */
    static final List<String> WRITE_ORDER = List.of("seq", "cluster_seq");
    static final WriteClock CLOCK = new WriteClock();

    private final String field;
    private final String targetField;
    private final boolean ignoreMissing;
    private final Fingerprinter fingerprinter;

    FingerprintProcessor(String tag, String description, String field, String targetField, boolean ignoreMissing,
                         Fingerprinter fingerprinter) {
        super(tag, description);
        this.field = field;
        this.targetField = targetField;
        this.ignoreMissing = ignoreMissing;
        this.fingerprinter = fingerprinter;
    }

    @Override
    public IngestDocument execute(IngestDocument doc) {
        Object value = doc.getFieldValue(field, Object.class, ignoreMissing);
        if (value == null) {
            if (ignoreMissing) {
                return doc;
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
        Map<?, ?> old = doc.getFieldValue(targetField, Object.class, true) instanceof Map<?, ?> m ? m : Map.of();
        for (String label : DedupFields.LABELS) {
            if (old.get(label) != null) {
                dedup.put(label, old.get(label));
            }
        }
        for (String order : WRITE_ORDER) { // a writer's own write order (esdedup ingest through this pipeline)
            if (old.get(order) != null) {
                dedup.put(order, old.get(order));
            }
        }
        dedup.putIfAbsent(WRITE_ORDER.get(0), CLOCK.next());
        doc.setFieldValue(targetField, dedup);
        return doc;
    }

    @Override
    public String getType() {
        return TYPE;
    }

    /**
     * The processor for one pipeline's options; refuses, at pipeline creation, configs it cannot reproduce. The
     * {@code Processor.Factory} that calls it differs between Elasticsearch 8.x and 9.x (9.x passes a project id):
     * {@code FingerprintProcessorFactory} in src/es8 and src/es9.
     */
    public static FingerprintProcessor create(String tag, String description, Map<String, Object> options) {
        String field = ConfigurationUtils.readStringProperty(TYPE, tag, options, "field", "text");
        String target = ConfigurationUtils.readStringProperty(TYPE, tag, options, "target_field", "dedup");
        boolean ignoreMissing = ConfigurationUtils.readBooleanProperty(TYPE, tag, options, "ignore_missing", false);
        Object raw = ConfigurationUtils.readObject(TYPE, tag, options, "config");
        FingerprintConfig config;
        try {
            config = FingerprintConfig.fromMap(configMap(raw), JiebaDictionary.version());
        } catch (IllegalArgumentException e) { // UnsupportedConfigException among them
            throw ConfigurationUtils.newConfigurationException(TYPE, tag, "config", e.getMessage());
        }
        return new FingerprintProcessor(tag, description, field, target, ignoreMissing, fingerprinter(config));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> configMap(Object raw) {
        if (raw instanceof Map<?, ?> map) {
            return new LinkedHashMap<>((Map<String, Object>) map);
        }
        if (raw instanceof String json) { // the config as a JSON string, as FingerprintConfig.to_json() gives it
            return XContentHelper.convertToMap(XContentType.JSON.xContent(), json, false);
        }
        throw new IllegalArgumentException("config must be an object (an index's _meta.esdedup.config) or its JSON text");
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
