package org.esdedup.es;

import org.apache.lucene.analysis.Tokenizer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.analysis.tokenattributes.OffsetAttribute;
import org.esdedup.es.core.HmmModel;
import org.esdedup.es.core.JiebaDictionary;
import org.esdedup.es.core.JiebaSegmenter;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The {@code jieba} tokenizer: words as jieba cuts them (precise mode, HMM on; the segmenter the fingerprints
 * use, token for token jieba's), lower-cased. Pieces without a letter or digit (spaces, punctuation) are not
 * tokens. The segmenter's pieces cover the text exactly, so each token's offsets are where it stands in it.
 */
public final class JiebaTokenizer extends Tokenizer {
    public static final String NAME = "jieba";

    private final CharTermAttribute term = addAttribute(CharTermAttribute.class);
    private final OffsetAttribute offset = addAttribute(OffsetAttribute.class);
    private final JiebaSegmenter segmenter = new JiebaSegmenter(JiebaDictionary.get(), HmmModel.get());
    private final List<String> words = new ArrayList<>();
    private final List<int[]> spans = new ArrayList<>();
    private int next;
    private int length;

    @Override
    public void reset() throws IOException {
        super.reset();
        StringBuilder text = new StringBuilder();
        char[] buffer = new char[8192];
        for (int n = input.read(buffer); n > 0; n = input.read(buffer)) {
            text.append(buffer, 0, n);
        }
        String s = text.toString();
        length = s.length();
        int[] points = s.codePoints().toArray();
        List<String> pieces = new ArrayList<>();
        segmenter.cut(points, 0, points.length, pieces);
        words.clear();
        spans.clear();
        next = 0;
        int at = 0;
        for (String piece : pieces) {
            int end = at + piece.length();
            if (piece.codePoints().anyMatch(Character::isLetterOrDigit)) {
                words.add(piece.toLowerCase(Locale.ROOT));
                spans.add(new int[] { at, end });
            }
            at = end;
        }
    }

    @Override
    public boolean incrementToken() {
        if (next >= words.size()) {
            return false;
        }
        clearAttributes();
        term.setEmpty().append(words.get(next));
        int[] span = spans.get(next++);
        offset.setOffset(correctOffset(span[0]), correctOffset(span[1]));
        return true;
    }

    @Override
    public void end() throws IOException {
        super.end();
        int end = correctOffset(length);
        offset.setOffset(end, end);
    }
}
