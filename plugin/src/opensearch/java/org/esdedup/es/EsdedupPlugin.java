package org.esdedup.es;

import org.opensearch.common.settings.Settings;
import org.opensearch.index.analysis.PreBuiltAnalyzerProviderFactory;
import org.opensearch.index.analysis.PreConfiguredTokenizer;
import org.opensearch.indices.analysis.PreBuiltCacheFactory;
import org.opensearch.ingest.Processor;
import org.opensearch.plugins.AnalysisPlugin;
import org.opensearch.plugins.IngestPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.ScriptPlugin;
import org.opensearch.script.ScriptContext;
import org.opensearch.script.ScriptEngine;

import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * esdedup inside OpenSearch: the {@code esdedup_fingerprint} ingest processor, the {@code esdedup} scripts,
 * and the {@code jieba} tokenizer and analyzer for text fields (the Elasticsearch plugin's parts, on
 * OpenSearch's plugin API).
 */
public class EsdedupPlugin extends Plugin implements IngestPlugin, ScriptPlugin, AnalysisPlugin {
    @Override
    public Map<String, Processor.Factory> getProcessors(Processor.Parameters parameters) {
        return Map.of(FingerprintProcessor.TYPE, new FingerprintProcessorFactory());
    }

    @Override
    public ScriptEngine getScriptEngine(Settings settings, Collection<ScriptContext<?>> contexts) {
        return new DedupScriptEngine();
    }

    @Override
    public List<PreConfiguredTokenizer> getPreConfiguredTokenizers() {
        return List.of(PreConfiguredTokenizer.singleton(JiebaTokenizer.NAME, JiebaTokenizer::new));
    }

    @Override
    public List<PreBuiltAnalyzerProviderFactory> getPreBuiltAnalyzerProviderFactories() {
        return List.of(new PreBuiltAnalyzerProviderFactory(JiebaTokenizer.NAME, PreBuiltCacheFactory.CachingStrategy.ONE,
            JiebaAnalyzer::new));
    }
}
