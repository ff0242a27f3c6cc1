package org.esdedup.es;

import com.fasterxml.jackson.databind.JsonNode;

import org.esdedup.es.core.DedupDoc;
import org.esdedup.es.core.DuplicateRule;
import org.esdedup.es.core.Fingerprint;
import org.esdedup.es.core.FingerprintConfig;
import org.esdedup.es.core.Fingerprinter;
import org.esdedup.es.core.NfkcProbe;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every golden record (>= 10,000 real texts, several configs): the Java fingerprint must equal Python's, field by
 * field, bit for bit. Prints the agreement of each field.
 */
class GoldenParityTest {
    private final Map<String, int[]> agree = new TreeMap<>(); // field -> {equal, compared}
    private final List<String> failures = new ArrayList<>();
    private Map<String, Fingerprinter> fingerprinters;

    @Test
    void javaFingerprintsEqualPythonOnTheGoldenFile() throws Exception {
        Golden.read(h -> fingerprinters = Golden.fingerprinters(h), this::check);
        StringBuilder report = new StringBuilder("golden parity (equal / compared):\n");
        agree.forEach((k, v) -> report.append(String.format("  %-14s %6d / %6d  %.4f%%%n", k, v[0], v[1], 100.0 * v[0] / v[1])));
        System.out.print(report);
        assertTrue(agree.get("pair.duplicate")[1] >= 1000, "the golden file should hold >= 1,000 pairs");
        assertTrue(agree.get("records")[1] >= 10_000, "the golden file should hold >= 10,000 records");
        assertTrue(failures.isEmpty(), failures.size() + " mismatches, first ones:\n" + String.join("\n", failures.subList(0,
            Math.min(20, failures.size()))) + "\n" + report);
    }

    private void tally(String field, boolean equal, JsonNode rec, String detail) {
        int[] t = agree.computeIfAbsent(field, k -> new int[2]);
        t[1]++;
        if (equal) {
            t[0]++;
        } else if (failures.size() < 200) {
            failures.add(rec.get("id").asText() + " [" + rec.get("config").asText() + "] " + field + ": " + detail);
        }
    }

    private void check(JsonNode rec) {
        if (rec.get("kind").asText().equals("pair")) {
            checkPair(rec);
            return;
        }
        Fingerprinter f = fingerprinters.get(rec.get("config").asText());
        String text = rec.get("text").asText();
        int[] norm = f.normalize(text);
        String javaNorm = new String(norm, 0, norm.length);
        String pyNorm = rec.get("norm").asText();
        tally("norm", javaNorm.equals(pyNorm), rec, "python " + abbrev(pyNorm) + " java " + abbrev(javaNorm));
        // Informational (not part of the parity): the JVM's own NFKC follows another Unicode version.
        agree.computeIfAbsent("(jvm_nfkc)", k -> new int[2])[1]++;
        if (NfkcProbe.jvmAgrees(text)) {
            agree.get("(jvm_nfkc)")[0]++;
        }
        List<String> tokens = f.tokens(norm);
        if (rec.has("tokens")) {
            List<String> py = new ArrayList<>();
            rec.get("tokens").forEach(t -> py.add(t.asText()));
            tally("segmentation", py.equals(tokens), rec, "python " + abbrev(String.join("|", py)) + " java "
                + abbrev(String.join("|", tokens)));
        }
        tally("segmentation_sha1", sha1(tokens).equals(rec.get("tokens_sha1").asText()), rec, "differs");
        Fingerprint fp = f.fingerprintNormalized(norm);
        tally("vector_f32", vectorHex(fp.vector).equals(rec.get("vector_f32").asText()), rec, "differs");
        Map<String, Object> java = DedupFields.source(fp, f.config());
        JsonNode py = rec.get("dedup");
        tally("dedup.fields", fieldNames(py).equals(new ArrayList<>(java.keySet())), rec,
            "python " + fieldNames(py) + " java " + java.keySet());
        for (Iterator<Map.Entry<String, JsonNode>> it = py.fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> e = it.next();
            String field = e.getKey().startsWith("band_") ? "band_*" : e.getKey().startsWith("lsh_") ? "lsh_*" : e.getKey();
            Object mine = java.get(e.getKey());
            Object theirs = Golden.JSON.convertValue(e.getValue(), Object.class);
            tally(field, same(theirs, mine), rec, "python " + abbrev(String.valueOf(theirs)) + " java "
                + abbrev(String.valueOf(mine)));
        }
        tally("records", true, rec, "");
    }

    /** The near-duplicate rule (what the scripts compute) against Python's on a query and a stored document. */
    private void checkPair(JsonNode rec) {
        FingerprintConfig cfg = fingerprinters.get(rec.get("config").asText()).config();
        DedupDoc q = DedupFields.read(Golden.JSON.convertValue(rec.get("a"), Map.class));
        DedupDoc d = DedupFields.read(Golden.JSON.convertValue(rec.get("b"), Map.class));
        DuplicateRule rule = new DuplicateRule(cfg.hammingK, cfg.cosineThreshold, cfg.jaccardThreshold,
            cfg.containmentThreshold, cfg.strategy, cfg.shortTextChars, cfg.vectorIndex);
        DuplicateRule.Scores s = rule.score(q, d);
        JsonNode py = rec.get("scores");
        tally("pair.hamming", s.simhash() && s.hamming() == py.get("hamming").asInt(), rec,
            py.get("hamming") + " vs " + (s.simhash() ? s.hamming() : "no SimHash"));
        tally("pair.cosine", Double.compare(s.cosine(), py.get("cosine").asDouble()) == 0, rec,
            py.get("cosine") + " vs " + s.cosine());
        tally("pair.ngram", s.ngram() == py.get("ngram").asBoolean(), rec, py.get("ngram") + " vs " + s.ngram());
        tally("pair.jaccard", sameOrNull(py.get("jaccard"), s.jaccard()), rec, py.get("jaccard") + " vs " + s.jaccard());
        tally("pair.containment", sameOrNull(py.get("containment"), s.containment()), rec,
            py.get("containment") + " vs " + s.containment());
        boolean dup = rule.isDuplicate(q, d);
        tally("pair.duplicate", dup == py.get("duplicate").asBoolean(), rec, py.get("duplicate") + " vs " + dup);
        agree.computeIfAbsent("(pairs duplicate)", k -> new int[2])[1]++;
        if (dup) {
            agree.get("(pairs duplicate)")[0]++;
        }
    }

    private static boolean sameOrNull(JsonNode py, double java) {
        return py.isNull() ? Double.isNaN(java) : Double.compare(py.asDouble(), java) == 0;
    }

    /** JSON value from Python vs Java value: numbers compared as doubles, lists element by element. */
    static boolean same(Object py, Object java) {
        if (py instanceof Number a && java instanceof Number b) {
            return Double.compare(a.doubleValue(), b.doubleValue()) == 0;
        }
        if (py instanceof List<?> a && java instanceof List<?> b) {
            if (a.size() != b.size()) {
                return false;
            }
            for (int i = 0; i < a.size(); i++) {
                if (same(a.get(i), b.get(i)) == false) {
                    return false;
                }
            }
            return true;
        }
        return py != null && py.equals(java);
    }

    private static List<String> fieldNames(JsonNode node) {
        List<String> names = new ArrayList<>();
        node.fieldNames().forEachRemaining(names::add);
        return names;
    }

    static String vectorHex(float[] v) {
        StringBuilder sb = new StringBuilder(v.length * 8);
        for (float x : v) {
            String h = Integer.toHexString(Float.floatToRawIntBits(x));
            sb.append("0".repeat(8 - h.length())).append(h);
        }
        return sb.toString();
    }

    static String sha1(List<String> tokens) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-1");
            byte[] d = md.digest(String.join("\u0001", tokens).getBytes(StandardCharsets.UTF_8));
            StringBuilder sb = new StringBuilder();
            for (byte b : d) {
                sb.append(String.format("%02x", b));
            }
            return sb.toString();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static String abbrev(String s) {
        return s.length() > 300 ? s.substring(0, 300) + "..." : s;
    }
}
