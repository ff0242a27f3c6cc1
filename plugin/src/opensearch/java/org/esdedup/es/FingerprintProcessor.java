package org.esdedup.es;

import org.opensearch.common.xcontent.XContentHelper;
import org.opensearch.common.xcontent.XContentType;
import org.opensearch.ingest.AbstractProcessor;
import org.opensearch.ingest.ConfigurationUtils;
import org.opensearch.ingest.IngestDocument;
import org.esdedup.es.core.FingerprintConfig;

import java.util.Map;

/**
 * The {@code esdedup_fingerprint} ingest processor on OpenSearch: the Elasticsearch plugin's processor (see
 * src/elasticsearch) on OpenSearch's ingest API; what it writes is decided by {@link FingerprintStep}, shared by
 * both, so the two engines write the same fields.
 */
public final class FingerprintProcessor extends AbstractProcessor {
    public static final String TYPE = FingerprintStep.TYPE;

    private final FingerprintStep step;

    FingerprintProcessor(String tag, String description, FingerprintStep step) {
        super(tag, description);
        this.step = step;
    }

    @Override
    public IngestDocument execute(IngestDocument doc) {
        Map<String, Object> dedup = step.dedup(doc.getFieldValue(step.field, Object.class, step.ignoreMissing),
            doc.getFieldValue(step.targetField, Object.class, true));
        if (dedup != null) {
            doc.setFieldValue(step.targetField, dedup);
        }
        return doc;
    }

    @Override
    public String getType() {
        return TYPE;
    }

    /** The processor for one pipeline's options; refuses, at pipeline creation, configs it cannot reproduce. */
    public static FingerprintProcessor create(String tag, String description, Map<String, Object> options) {
        String field = ConfigurationUtils.readStringProperty(TYPE, tag, options, "field", "text");
        String target = ConfigurationUtils.readStringProperty(TYPE, tag, options, "target_field", "dedup");
        boolean ignoreMissing = ConfigurationUtils.readBooleanProperty(TYPE, tag, options, "ignore_missing", false);
        Object raw = ConfigurationUtils.readObject(TYPE, tag, options, "config");
        FingerprintConfig config;
        try {
            config = FingerprintStep.config(raw, json -> XContentHelper.convertToMap(XContentType.JSON.xContent(), json, false));
        } catch (IllegalArgumentException e) { // UnsupportedConfigException among them
            throw ConfigurationUtils.newConfigurationException(TYPE, tag, "config", e.getMessage());
        }
        return new FingerprintProcessor(tag, description, new FingerprintStep(field, target, ignoreMissing, config));
    }
}
