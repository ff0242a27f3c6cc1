package org.esdedup.es;

import org.apache.lucene.analysis.Analyzer;

/** The {@code jieba} analyzer: the {@code jieba} tokenizer alone (it lower-cases its words itself). */
public final class JiebaAnalyzer extends Analyzer {
    @Override
    protected TokenStreamComponents createComponents(String fieldName) {
        return new TokenStreamComponents(new JiebaTokenizer());
    }
}
