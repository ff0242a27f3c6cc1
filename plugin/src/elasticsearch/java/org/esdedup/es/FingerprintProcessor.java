package org.esdedup.es;

import org.elasticsearch.common.xcontent.XContentHelper;
import org.elasticsearch.ingest.AbstractProcessor;
import org.elasticsearch.ingest.ConfigurationUtils;
import org.elasticsearch.ingest.IngestDocument;
import org.elasticsearch.xcontent.XContentType;
import org.esdedup.es.core.FingerprintConfig;

import java.util.Map;

/**
 * The {@code esdedup_fingerprint} ingest processor: fingerprints a text field under an index's FingerprintConfig
 * and writes the {@code dedup} object that {@code esdedup ingest} writes (minus the cluster labels, which only
 * ingest assigns; labels a document already carries are kept). Elasticsearch's side of it: what it writes is
 * decided by {@link FingerprintStep}, which OpenSearch's processor shares.
 *
 * <pre>
 * {"esdedup_fingerprint": {"field": "text", "target_field": "dedup", "ignore_missing": false,
 *                          "config": { ...the index's _meta.esdedup.config... }}}
 * </pre>
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
            config = FingerprintStep.config(raw, json -> XContentHelper.convertToMap(XContentType.JSON.xContent(), json, false));
        } catch (IllegalArgumentException e) { // UnsupportedConfigException among them
            throw ConfigurationUtils.newConfigurationException(TYPE, tag, "config", e.getMessage());
        }
        return new FingerprintProcessor(tag, description, new FingerprintStep(field, target, ignoreMissing, config));
    }
}
