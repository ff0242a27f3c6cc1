package org.esdedup.es;

import org.apache.lucene.index.LeafReaderContext;
import org.elasticsearch.script.DocReader;
import org.elasticsearch.script.FieldScript;
import org.elasticsearch.script.ScoreScript;
import org.elasticsearch.script.ScriptContext;
import org.elasticsearch.script.ScriptEngine;
import org.elasticsearch.search.lookup.SearchLookup;
import org.esdedup.es.core.DedupDoc;

import java.util.Map;
import java.util.Set;

/**
 * Script language {@code esdedup}: exact near-duplicate measures between a query fingerprint (script params) and
 * each document's stored dedup object, for {@code script_score} (a score, higher is nearer) and
 * {@code script_fields} (the measure itself). Sources: {@code hamming}, {@code cosine}, {@code jaccard},
 * {@code containment}, {@code near_duplicate} (see {@link Measure}).
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

    /** The stored dedup object of the current document, read from _source. */
    static DedupDoc stored(org.elasticsearch.script.DocBasedScript script, String field) {
        return DedupFields.read(script.source().get().extractValue(field, null));
    }

    private record ScoreFactory(Measure measure) implements ScoreScript.Factory {
        @Override
        public boolean isResultDeterministic() {
            return true;
        }

        @Override
        public ScoreScript.LeafFactory newFactory(Map<String, Object> params, SearchLookup lookup) {
            Measure.Query query = measure.query(params);
            return new ScoreScript.LeafFactory() {
                @Override
                public boolean needs_score() {
                    return false;
                }

                @Override
                public boolean needs_termStats() {
                    return false;
                }

                @Override
                public ScoreScript newInstance(DocReader reader) {
                    return new ScoreScript(params, lookup, reader) {
                        @Override
                        public double execute(ExplanationHolder explanation) {
                            return measure.score(query, stored(this, query.field()));
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
                    return measure.value(query, stored(this, query.field()));
                }
            };
        }
    }
}
