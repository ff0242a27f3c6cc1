package org.esdedup.es;

import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.search.IndexSearcher;
import org.opensearch.common.xcontent.support.XContentMapValues;
import org.opensearch.script.FieldScript;
import org.opensearch.script.ScoreScript;
import org.opensearch.script.ScriptContext;
import org.opensearch.script.ScriptEngine;
import org.opensearch.search.lookup.SearchLookup;
import org.esdedup.es.core.DedupDoc;

import java.util.Map;
import java.util.Set;

/**
 * Script language {@code esdedup} on OpenSearch: the Elasticsearch plugin's scripts (see src/elasticsearch) on
 * OpenSearch's script API, the measures shared ({@link Measure}). OpenSearch's score scripts are made per segment
 * from a {@code LeafReaderContext} and read the document's {@code _source} through their params (the
 * {@code _source} entry OpenSearch puts there, loaded when read); field scripts through their leaf lookup.
 */
final class DedupScriptEngine implements ScriptEngine {
    static final String LANG = "esdedup";

    @Override
    public String getType() {
        return LANG;
    }

    @Override
    public <T> T compile(String name, String source, ScriptContext<T> context, Map<String, String> options) {
        Measure measure = Measure.of(source);
        if (context.equals(ScoreScript.CONTEXT)) {
            return context.factoryClazz.cast(new ScoreFactory(measure));
        }
        if (context.equals(FieldScript.CONTEXT)) {
            return context.factoryClazz.cast(new FieldFactory(measure));
        }
        throw new IllegalArgumentException("esdedup scripts run in script_score and script_fields, not in [" + context.name + "]");
    }

    @Override
    public Set<ScriptContext<?>> getSupportedContexts() {
        return Set.of(ScoreScript.CONTEXT, FieldScript.CONTEXT);
    }

    /** The stored dedup object at {@code field} (a dotted path) of a document's _source. */
    static DedupDoc stored(Object source, String field) {
        return DedupFields.read(source instanceof Map<?, ?> map ? XContentMapValues.extractValue(field, map) : null);
    }

    private record ScoreFactory(Measure measure) implements ScoreScript.Factory {
        @Override
        public boolean isResultDeterministic() {
            return true;
        }

        @Override
        public ScoreScript.LeafFactory newFactory(Map<String, Object> params, SearchLookup lookup, IndexSearcher searcher) {
            Measure.Query query = measure.query(params);
            return new ScoreScript.LeafFactory() {
                @Override
                public boolean needs_score() {
                    return false;
                }

                @Override
                public ScoreScript newInstance(LeafReaderContext ctx) {
                    return new ScoreScript(params, lookup, searcher, ctx) {
                        @Override
                        public double execute(ExplanationHolder explanation) {
                            return measure.score(query, stored(getParams().get("_source"), query.field()));
                        }
                    };
                }
            };
        }
    }

    private record FieldFactory(Measure measure) implements FieldScript.Factory {
        @Override
        public boolean isResultDeterministic() {
            return true;
        }

        @Override
        public FieldScript.LeafFactory newFactory(Map<String, Object> params, SearchLookup lookup) {
            Measure.Query query = measure.query(params);
            return (LeafReaderContext ctx) -> new FieldScript(params, lookup, ctx) {
                @Override
                public Object execute() {
                    return measure.value(query, stored(getLeafLookup().source().loadSourceIfNeeded(), query.field()));
                }
            };
        }
    }
}
