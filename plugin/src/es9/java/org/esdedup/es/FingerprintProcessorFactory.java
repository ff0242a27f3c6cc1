package org.esdedup.es;

import org.elasticsearch.cluster.metadata.ProjectId;
import org.elasticsearch.ingest.Processor;

import java.util.Map;

/** The processor's factory, Elasticsearch 9.x signature (src/es8 has the 8.x one, without the project id). */
final class FingerprintProcessorFactory implements Processor.Factory {
    @Override
    public Processor create(Map<String, Processor.Factory> factories, String tag, String description,
                            Map<String, Object> options, ProjectId projectId) {
        return FingerprintProcessor.create(tag, description, options);
    }
}
