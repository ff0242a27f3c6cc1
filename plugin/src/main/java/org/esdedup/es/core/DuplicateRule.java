package org.esdedup.es.core;

/**
 * esdedup's near-duplicate rule ({@code esdedup.match.lookup.is_duplicate} and {@code _measure}), with the same
 * arithmetic: Hamming distance of the SimHashes; cosine as the float32 dot product of the stored vectors summed
 * pairwise like numpy, clipped to [0, 1]; MinHash Jaccard as the share of equal signature positions; containment
 * from Jaccard and the n-gram counts.
 *
 * <p>Documents that both carry a signature are judged on n-grams (Jaccard >= jaccard, or containment >=
 * containment); two short documents without signatures on the cosine alone; anything else on Hamming <=
 * hammingK and cosine >= cosine. A null threshold is switched off. An empty document matches nothing.
 *
 * <p>A text that nothing reads the terms of ({@link FingerprintConfig#getsTerms}: decided from its stored
 * {@code chars} and the config's strategy, short_text_chars and vector_index) has SimHash 0, which is no SimHash:
 * a pair with such a side has no Hamming distance, and the Hamming test does not apply to it (as
 * {@code esdedup.match.rule.decide} reads a NaN distance); a pair that no test applies to is no near-duplicate.
 */
public final class DuplicateRule {
    /** Containment is only trusted when the smaller text has this many distinct n-grams... */
    static final double MIN_CONTAINMENT_SHINGLES = 8;
    /** ... and the larger has at most this many times as many. */
    static final double MAX_CONTAINMENT_RATIO = 4.0;

    private final Integer hammingK;
    private final Double cosine;
    private final Double jaccard;
    private final Double containment;
    private final String strategy;
    private final int shortTextChars;
    private final String vectorIndex;

    /**
     * @param vectorIndex the config's vector_index, which decides with the strategy which texts carry a SimHash;
     *                    null when unknown, for callers that read no Hamming distance ({@link #knowsSimhash}): every
     *                    text then counts as carrying one
     */
    public DuplicateRule(Integer hammingK, Double cosine, Double jaccard, Double containment, String strategy,
                         int shortTextChars, String vectorIndex) {
        if (hammingK == null && cosine == null) {
            throw new IllegalArgumentException("give a Hamming distance, a cosine threshold, or both");
        }
        this.hammingK = hammingK;
        this.cosine = cosine;
        this.jaccard = jaccard;
        this.containment = containment != null && containment <= 0.0 ? null : containment;
        this.strategy = strategy;
        this.shortTextChars = shortTextChars;
        this.vectorIndex = vectorIndex;
    }

    public String strategy() {
        return strategy;
    }

    /** Whether the rule knows which texts carry a SimHash: given the vector_index, or under strategy simhash (all do). */
    public boolean knowsSimhash() {
        return vectorIndex != null || strategy.equals("simhash");
    }

    /** Whether both documents carry a SimHash (every text does while the vector_index is unknown). */
    public boolean bothSimhashed(DedupDoc q, DedupDoc d) {
        return vectorIndex == null || (FingerprintConfig.getsTerms(strategy, vectorIndex, shortTextChars, q.chars())
            && FingerprintConfig.getsTerms(strategy, vectorIndex, shortTextChars, d.chars()));
    }

    /**
     * The measures of one pair; NaN Jaccard and containment when not both documents have signatures.
     *
     * @param simhash whether both carry a SimHash; {@code hamming} means nothing when not
     */
    public record Scores(int hamming, boolean simhash, double cosine, boolean ngram, double jaccard, double containment) {}

    public Scores score(DedupDoc q, DedupDoc d) {
        int ham = hamming(q.simhash(), d.simhash());
        boolean simhash = bothSimhashed(q, d);
        double cos = cosine(q.vector(), d.vector());
        double jac = Double.NaN, cont = Double.NaN;
        boolean ngram;
        if (q.hasSignature()) {
            ngram = d.hasSignature() && d.minhash().length == q.minhash().length;
            if (ngram) {
                jac = jaccard(q.minhash(), d.minhash());
                cont = containment(jac, q.shingles(), d.shingles());
            }
        } else if (isShort(q.chars())) { // documents stored without signatures: short pairs by cosine
            ngram = d.hasSignature() == false && isShort(d.chars());
        } else {
            ngram = false;
        }
        return new Scores(ham, simhash, cos, ngram, jac, cont);
    }

    /** As esdedup.match.rule: a float32 cosine within this much below the threshold reaches it (rounding). */
    static final double COSINE_TOLERANCE = 1e-6;

    public boolean isDuplicate(DedupDoc q, DedupDoc d) {
        if (q.empty() || d.empty()) {
            return false;
        }
        Scores s = score(q, d);
        return isDuplicate(s);
    }

    boolean isDuplicate(Scores s) {
        if (s.ngram() && Double.isNaN(s.jaccard()) == false && (jaccard != null || containment != null)) {
            if (jaccard != null && s.jaccard() >= jaccard) {
                return true;
            }
            return containment != null && Double.isNaN(s.containment()) == false && s.containment() >= containment;
        }
        if (s.ngram() && cosine != null) {
            return s.cosine() >= cosine - COSINE_TOLERANCE;
        }
        // Each test applies only where the pair has its measure (the cosine of a missing vector is 0, measured);
        // a pair that neither applies to is no near-duplicate.
        boolean hammingTested = hammingK != null && s.simhash();
        if (hammingTested == false && cosine == null) {
            return false;
        }
        if (hammingTested && s.hamming() > hammingK) {
            return false;
        }
        return (cosine != null && s.cosine() < cosine - COSINE_TOLERANCE) == false;
    }

    private boolean isShort(int chars) {
        return FingerprintConfig.isShort(strategy, shortTextChars, chars);
    }

    public static int hamming(long[] a, long[] b) {
        int n = 0;
        for (int i = 0; i < Math.max(a.length, b.length); i++) {
            n += Long.bitCount((i < a.length ? a[i] : 0) ^ (i < b.length ? b[i] : 0));
        }
        return n;
    }

    /** The clipped float32 dot product, summed as numpy sums a row; 0 when a vector is missing. */
    public static double cosine(float[] a, float[] b) {
        if (a == null || b == null || a.length != b.length) {
            return 0.0;
        }
        float[] prod = new float[a.length];
        for (int i = 0; i < a.length; i++) {
            prod[i] = a[i] * b[i];
        }
        float dot = PairwiseSum.sum(prod, 0, prod.length);
        return Math.min(1.0f, Math.max(0.0f, dot));
    }

    public static double jaccard(int[] a, int[] b) {
        int equal = 0;
        for (int i = 0; i < a.length; i++) {
            equal += a[i] == b[i] ? 1 : 0;
        }
        return (double) equal / a.length;
    }

    /** The estimated share of the smaller n-gram set found in the other ({@code esdedup.match.lookup._containment}). */
    public static double containment(double jac, int shinglesA, int shinglesB) {
        double na = shinglesA, nb = shinglesB;
        double lo = Math.min(na, nb), hi = Math.max(na, nb);
        if (lo < MIN_CONTAINMENT_SHINGLES || hi > MAX_CONTAINMENT_RATIO * lo) {
            return 0.0;
        }
        double inter = jac / (1.0 + jac) * (na + nb);
        return Math.min(1.0, inter / Math.max(lo, 1.0));
    }
}
