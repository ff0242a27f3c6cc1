package org.esdedup.es;

import org.elasticsearch.ingest.Processor;

import java.util.Map;

/** The processor's factory, Elasticsearch 8.x signature (src/es9 has the 9.x one, which adds a project id). */
final class FingerprintProcessorFactory implements Processor.Factory {
    @Override
    public Processor create(Map<String, Processor.Factory> factories, String tag, String description,
                            Map<String, Object> options) {
        return FingerprintProcessor.create(tag, description, options);
    }
}
