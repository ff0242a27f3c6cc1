package org.esdedup.es;

import org.opensearch.ingest.Processor;

import java.util.Map;

/** The processor's factory (OpenSearch's signature: the same on 2.x and 3.x). */
final class FingerprintProcessorFactory implements Processor.Factory {
    @Override
    public Processor create(Map<String, Processor.Factory> factories, String tag, String description,
                            Map<String, Object> options) {
        return FingerprintProcessor.create(tag, description, options);
    }
}
