package org.esdedup.es;

import org.elasticsearch.common.xcontent.XContentHelper;
import org.elasticsearch.ingest.AbstractProcessor;
import org.elasticsearch.ingest.ConfigurationUtils;
import org.elasticsearch.ingest.IngestDocument;
import org.elasticsearch.ingest.Processor;
import org.elasticsearch.xcontent.XContentType;
import org.esdedup.es.core.Fingerprint;
import org.esdedup.es.core.FingerprintConfig;
import org.esdedup.es.core.Fingerprinter;
import org.esdedup.es.core.HmmModel;
import org.esdedup.es.core.JiebaDictionary;
import org.esdedup.es.core.JiebaSegmenter;
import org.esdedup.es.core.Stopwords;
import org.esdedup.es.core.UnicodeData;

import java.util.LinkedHashMap;
import java.util.Map;

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
        if (doc.getFieldValue(targetField, Object.class, true) instanceof Map<?, ?> old) {
            for (String label : DedupFields.LABELS) {
                if (old.get(label) != null) {
                    dedup.put(label, old.get(label));
                }
            }
        }
        doc.setFieldValue(targetField, dedup);
        return doc;
    }

    @Override
    public String getType() {
        return TYPE;
    }

    /** Reads the processor's options and refuses, at pipeline creation, configs it cannot reproduce. */
    public static final class Factory implements Processor.Factory {
        @Override
        public Processor create(Map<String, Processor.Factory> factories, String tag, String description,
                                Map<String, Object> options) {
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
    }

    static Fingerprinter fingerprinter(FingerprintConfig config) {
        JiebaSegmenter segmenter = config.tokenizer.equals("jieba")
            ? new JiebaSegmenter(JiebaDictionary.get(), HmmModel.get()) : null;
        return new Fingerprinter(config, UnicodeData.get(), segmenter, Stopwords.shipped());
    }
}
