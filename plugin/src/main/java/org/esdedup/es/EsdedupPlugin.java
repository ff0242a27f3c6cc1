package org.esdedup.es;

import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.ingest.Processor;
import org.elasticsearch.plugins.IngestPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.plugins.ScriptPlugin;
import org.elasticsearch.script.ScriptContext;
import org.elasticsearch.script.ScriptEngine;

import java.util.Collection;
import java.util.Map;

/** esdedup inside Elasticsearch: the {@code esdedup_fingerprint} ingest processor and the {@code esdedup} scripts. */
public class EsdedupPlugin extends Plugin implements IngestPlugin, ScriptPlugin {
    @Override
    public Map<String, Processor.Factory> getProcessors(Processor.Parameters parameters) {
        return Map.of(FingerprintProcessor.TYPE, new FingerprintProcessorFactory());
    }

    @Override
    public ScriptEngine getScriptEngine(Settings settings, Collection<ScriptContext<?>> contexts) {
        return new DedupScriptEngine();
    }
}
