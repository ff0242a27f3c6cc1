package org.esdedup.es;

import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.index.analysis.PreBuiltAnalyzerProviderFactory;
import org.elasticsearch.index.analysis.PreConfiguredTokenizer;
import org.elasticsearch.indices.analysis.PreBuiltCacheFactory;
import org.elasticsearch.ingest.Processor;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.IngestPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.plugins.ScriptPlugin;
import org.elasticsearch.script.ScriptContext;
import org.elasticsearch.script.ScriptEngine;

import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * esdedup inside Elasticsearch: the {@code esdedup_fingerprint} ingest processor, the {@code esdedup} scripts,
 * and the {@code jieba} tokenizer and analyzer for text fields.
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
