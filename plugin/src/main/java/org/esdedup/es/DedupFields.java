package org.esdedup.es;

import org.esdedup.es.core.DedupDoc;
import org.esdedup.es.core.Fingerprint;
import org.esdedup.es.core.FingerprintConfig;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The stored layout of a fingerprint: the {@code dedup} object that {@code esdedup.schema.dedup_source} writes.
 * The only place that knows field names and encodings, so a change of layout touches this class alone.
 */
public final class DedupFields {
    public static final String SIMHASH = "simhash";
    public static final String VECTOR = "vector";
    public static final String MINHASH = "minhash";
    public static final String SHINGLES = "shingles";
    public static final String CHARS = "chars";
    public static final String TOKENS = "tokens";
    public static final String EMPTY = "empty";
    public static final String CONTENT_SHA1 = "content_sha1";
    public static final String LSH_KEYS = "lsh_keys";
    /** Labels that esdedup's ingest assigns; the processor keeps them when a document already carries them. */
    public static final List<String> LABELS = List.of("cluster_id", "duplicate_of");

    private DedupFields() {}

    /** The dedup object of one fingerprint, fields in Python's order. */
    public static Map<String, Object> source(Fingerprint fp, FingerprintConfig config) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put(SIMHASH, fp.simhashHex());
        d.put(TOKENS, fp.tokens);
        d.put(CHARS, fp.chars);
        d.put(EMPTY, fp.empty);
        if (fp.empty == false && config.storesVector()) { // a cosine dense_vector rejects an all-zero vector
            d.put(VECTOR, storedVector(fp.vector));
        }
        if (fp.minhash != null) {
            d.put(MINHASH, encodeMinhash(fp.minhash));
            d.put(SHINGLES, fp.shingles);
        }
        for (int i = 0; i < fp.bands.length; i++) {
            d.put("band_" + i, fp.bands[i]);
        }
        if (config.strategy.equals("simhash") == false && fp.lsh.length > 0) {
            List<Long> keys = new ArrayList<>(fp.lsh.length);
            for (long key : fp.lsh) {
                keys.add(key);
            }
            d.put(LSH_KEYS, keys);
        }
        d.put(CONTENT_SHA1, fp.contentSha1);
        return d;
    }

    /** Each value rounded to 6 decimals as numpy does ({@code rint(x * 1e6) / 1e6} on the float64 of the float32). */
    static List<Double> storedVector(float[] vector) {
        List<Double> out = new ArrayList<>(vector.length);
        for (float v : vector) {
            out.add(round6(v));
        }
        return out;
    }

    public static double round6(float v) {
        return Math.rint((double) v * 1e6) / 1e6;
    }

    /** Base64 of the little-endian 16-bit values. */
    public static String encodeMinhash(int[] sig) {
        ByteBuffer buf = ByteBuffer.allocate(sig.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (int v : sig) {
            buf.putShort((short) v);
        }
        return Base64.getEncoder().encodeToString(buf.array());
    }

    public static int[] decodeMinhash(String text) {
        ByteBuffer buf = ByteBuffer.wrap(Base64.getDecoder().decode(text)).order(ByteOrder.LITTLE_ENDIAN);
        int[] sig = new int[buf.remaining() / 2];
        for (int i = 0; i < sig.length; i++) {
            sig[i] = Short.toUnsignedInt(buf.getShort());
        }
        return sig;
    }

    /**
     * The fields scoring needs from a stored dedup object (or from a query's script params), or null when the
     * object carries no SimHash.
     */
    public static DedupDoc read(Object value) {
        if (!(value instanceof Map<?, ?> d) || !(d.get(SIMHASH) instanceof String hex)) {
            return null;
        }
        float[] vector = null;
        if (d.get(VECTOR) instanceof List<?> list) {
            vector = new float[list.size()];
            for (int i = 0; i < vector.length; i++) {
                vector[i] = ((Number) list.get(i)).floatValue(); // float32 of the stored double, as numpy reads it
            }
        }
        int[] minhash = d.get(MINHASH) instanceof String b64 && b64.isEmpty() == false ? decodeMinhash(b64) : null;
        return new DedupDoc(DedupDoc.parseSimhash(hex), hex.length() * 4, vector, minhash, intOf(d.get(SHINGLES)),
            intOf(d.get(CHARS)), Boolean.TRUE.equals(d.get(EMPTY)));
    }

    private static int intOf(Object v) {
        return v instanceof Number n ? n.intValue() : 0;
    }
}
