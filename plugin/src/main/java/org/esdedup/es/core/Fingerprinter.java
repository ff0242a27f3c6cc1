package org.esdedup.es.core;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Text to {@link Fingerprint} under one {@link FingerprintConfig}, bit-identical to {@code esdedup.Fingerprinter}:
 * normalise, segment (jieba or character n-grams), keep words, drop stopwords, weight (tf or tf_length), SimHash
 * of BLAKE2b token hashes, band keys, hashed TF vector, MinHash signature and LSH keys of the character n-grams.
 *
 * <p>Sums that decide bits are exact: SimHash votes add integer weights in longs (Python adds them as exact
 * integers in float64), the vector adds integers in doubles in the same order and its norm uses numpy's
 * pairwise summation. Thread-safe.
 */
public final class Fingerprinter {
    /** Pieces of at most this many code points are segmented at a time ({@code esdedup.fingerprint.tokenize.PIECE_CHARS}). */
    static final int PIECE_CHARS = 1 << 16;
    private static final byte[] TOKEN_PERSON = "esdedup-v1".getBytes(StandardCharsets.US_ASCII);

    private final FingerprintConfig config;
    private final UnicodeData unicode;
    private final TextNormalizer normalizer;
    private final JiebaSegmenter segmenter;
    private final Set<String> stopwords;
    private final BandLayout layout;
    private final Blake2b tokenHash;
    private final long[][] permutations;

    /**
     * @param segmenter needed for tokenizer jieba (null otherwise)
     * @param stopwords the shipped stopwords, normalised (used with stopwords "default" and a word tokenizer)
     */
    public Fingerprinter(FingerprintConfig config, UnicodeData unicode, JiebaSegmenter segmenter, Set<String> stopwords) {
        this.config = config;
        this.unicode = unicode;
        this.normalizer = new TextNormalizer(unicode);
        this.segmenter = segmenter;
        boolean words = config.tokenizer.equals("jieba");
        this.stopwords = words && config.stopwords.equals("default") ? stopwords : Set.of();
        this.layout = config.layout();
        this.tokenHash = new Blake2b(config.bits / 8 + 8, TOKEN_PERSON);
        this.permutations = MinHash.permutations(config.minhashPerm);
    }

    public FingerprintConfig config() {
        return config;
    }

    public int[] normalize(String text) {
        return normalizer.normalize(text);
    }

    public Fingerprint fingerprint(String text) {
        return fingerprintNormalized(normalize(text));
    }

    /** The fingerprint of a normalised text (code points). */
    public Fingerprint fingerprintNormalized(int[] norm) {
        String sha1 = sha1Hex(norm);
        int words = (config.bits + 63) / 64;
        if (config.getsTerms(norm.length) == false) {
            // Never segmented: SimHash 0, no term, a zero vector; empty when it has no n-gram (no letter or digit).
            long[] hashes = shingleHashes(norm);
            if (hashes.length == 0) {
                return new Fingerprint(new long[words], config.bits, new String[0], new float[config.dims], 0,
                    norm.length, true, null, 0, new long[0], sha1);
            }
            int[] sig = MinHash.signature(hashes, permutations);
            return new Fingerprint(new long[words], config.bits, new String[0], new float[config.dims], 0, norm.length,
                false, sig, hashes.length, MinHash.lshKeys(sig, config.minhashBands, config.minhashRows), sha1);
        }
        Map<String, long[]> counts = termCounts(norm);
        if (counts.isEmpty()) {
            return new Fingerprint(new long[words], config.bits, new String[0], new float[config.dims], 0, norm.length,
                true, null, 0, new long[0], sha1);
        }
        long[] votes = new long[config.bits];
        double[] vec = new double[config.dims];
        long length = 0;
        for (Map.Entry<String, long[]> e : counts.entrySet()) {
            long count = e.getValue()[0];
            length += count;
            long weight = config.weighting.equals("tf_length") ? count * e.getKey().codePointCount(0, e.getKey().length())
                : count;
            addTerm(e.getKey(), weight, votes, vec);
        }
        long[] simhash = new long[words];
        for (int i = 0; i < config.bits; i++) {
            if (votes[i] > 0) {
                simhash[i >>> 6] |= 1L << (i & 63);
            }
        }
        String[] bands = config.isShort(norm.length) ? new String[0] : layout.keys(simhash);
        int[] sig = null;
        long[] lsh = new long[0];
        int shingles = 0;
        if (config.strategy.equals("simhash") == false) {
            long[] hashes = shingleHashes(norm);
            if (hashes.length > 0) {
                sig = MinHash.signature(hashes, permutations);
                lsh = MinHash.lshKeys(sig, config.minhashBands, config.minhashRows);
                shingles = hashes.length;
            }
        }
        return new Fingerprint(simhash, config.bits, bands, unitVector(vec), (int) length, norm.length, false, sig,
            shingles, lsh, sha1);
    }

    /** One term's SimHash votes (+weight where its hash bit is 1, -weight where 0) and vector bucket. */
    private void addTerm(String term, long weight, long[] votes, double[] vec) {
        byte[] digest = tokenHash.digest(term.getBytes(StandardCharsets.UTF_8));
        for (int i = 0; i < config.bits; i++) {
            boolean one = ((digest[i >>> 3] >>> (i & 7)) & 1) != 0;
            votes[i] += one ? weight : -weight;
        }
        long tail = Blake2b.le64(digest, config.bits / 8);
        int bucket = (int) Long.remainderUnsigned(tail, config.dims);
        vec[bucket] += (tail < 0 ? -1.0 : 1.0) * weight;
    }

    private static float[] unitVector(double[] vec) {
        double[] squares = new double[vec.length];
        for (int i = 0; i < vec.length; i++) {
            squares[i] = vec[i] * vec[i];
        }
        double norm = Math.sqrt(PairwiseSum.sum(squares, 0, squares.length));
        float[] out = new float[vec.length];
        if (norm > 0) {
            for (int i = 0; i < vec.length; i++) {
                out[i] = (float) (vec[i] / norm);
            }
        }
        return out;
    }

    /** The distinct n-gram hashes of the text's word characters (esdedup's short-text path). */
    private long[] shingleHashes(int[] norm) {
        int[] chars = new int[norm.length];
        int n = 0;
        for (int cp : norm) {
            if (unicode.isAlnum(cp)) {
                chars[n++] = cp;
            }
        }
        return MinHash.shingleHashes(chars, n, config.minhashNgram);
    }

    /** Term -> count, in first-occurrence order (what Python's weights count). */
    Map<String, long[]> termCounts(int[] norm) {
        Map<String, long[]> counts = new LinkedHashMap<>();
        boolean chars = config.tokenizer.equals("char");
        for (String token : tokens(norm)) {
            String term = chars ? token : termOf(token);
            if (term != null) {
                counts.computeIfAbsent(term, t -> new long[1])[0]++;
            }
        }
        return counts;
    }

    /** {@code esdedup.fingerprint.features.term_of}: stripped; null when it has no word character or is a stopword. */
    private String termOf(String token) {
        int[] cps = token.codePoints().toArray();
        int a = 0, b = cps.length;
        while (a < b && unicode.isSpace(cps[a])) {
            a++;
        }
        while (b > a && unicode.isSpace(cps[b - 1])) {
            b--;
        }
        boolean word = false;
        for (int i = a; i < b && word == false; i++) {
            word = unicode.isAlnum(cps[i]);
        }
        if (word == false) {
            return null;
        }
        String term = (a == 0 && b == cps.length) ? token : new String(cps, a, b - a);
        return stopwords.contains(term) ? null : term;
    }

    /** The raw tokens of a normalised text, as Python's fingerprinter segments it (pieces for long texts). */
    public List<String> tokens(int[] norm) {
        List<String> out = new ArrayList<>();
        if (config.tokenizer.equals("char")) {
            charShingles(norm, config.shingle, out);
            return out;
        }
        if (norm.length <= PIECE_CHARS) {
            segmenter.cut(norm, 0, norm.length, out);
            return out;
        }
        int start = 0;
        while (start < norm.length) {
            int end = pieceEnd(norm, start, PIECE_CHARS);
            segmenter.cut(norm, start, end, out);
            start = end;
        }
        return out;
    }

    /** {@code esdedup.fingerprint.tokenize.iter_pieces}: cut after the last sentence break or space of the last quarter. */
    int pieceEnd(int[] text, int start, int size) {
        int end = Math.min(start + size, text.length);
        if (end < text.length) {
            int window = Math.min(size / 4, end - start);
            for (int i = end - 1; i >= end - window; i--) {
                if (isBreak(text[i])) {
                    return i + 1;
                }
            }
        }
        return end;
    }

    private boolean isBreak(int cp) {
        return unicode.isSpace(cp) || cp == '。' || cp == '！' || cp == '？' || cp == '；' || cp == '!' || cp == '?'
            || cp == ';' || cp == '\n';
    }

    /** {@code esdedup.fingerprint.features.char_shingles}: n-grams of the word characters; a shorter text is one shingle. */
    private void charShingles(int[] norm, int n, List<String> out) {
        int[] chars = new int[norm.length];
        int len = 0;
        for (int cp : norm) {
            if (unicode.isAlnum(cp)) {
                chars[len++] = cp;
            }
        }
        if (len == 0) {
            return;
        }
        if (len <= n) {
            out.add(new String(chars, 0, len));
            return;
        }
        for (int i = 0; i + n <= len; i++) {
            out.add(new String(chars, i, n));
        }
    }

    static String sha1Hex(int[] norm) {
        try {
            MessageDigest sha1 = MessageDigest.getInstance("SHA-1");
            return Hex.of(sha1.digest(new String(norm, 0, norm.length).getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JVM has no SHA-1", e);
        }
    }
}
