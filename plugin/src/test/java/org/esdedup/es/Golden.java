package org.esdedup.es;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.esdedup.es.core.FingerprintConfig;
import org.esdedup.es.core.Fingerprinter;
import org.esdedup.es.core.HmmModel;
import org.esdedup.es.core.JiebaDictionary;
import org.esdedup.es.core.JiebaSegmenter;
import org.esdedup.es.core.Stopwords;
import org.esdedup.es.core.UnicodeData;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.function.Consumer;
import java.util.zip.GZIPInputStream;

/** The golden file written by golden/make_golden.py: Python's fingerprint fields for each (text, config). */
final class Golden {
    static final ObjectMapper JSON = new ObjectMapper();

    static Path path() {
        String p = System.getProperty("esdedup.golden", "target/golden/golden.jsonl.gz");
        Path path = Path.of(p);
        if (Files.exists(path) == false) {
            throw new IllegalStateException("golden file " + path + " is missing: it is written by golden/make_golden.py "
                + "in Maven's generate-test-resources phase (mvn test -Dpython=/path/to/venv/bin/python)");
        }
        return path;
    }

    /** Config name -> fingerprinter, from the file's first line. */
    static Map<String, Fingerprinter> fingerprinters(JsonNode header) {
        Map<String, Fingerprinter> out = new HashMap<>();
        JiebaSegmenter seg = new JiebaSegmenter(JiebaDictionary.get(), HmmModel.get());
        for (Iterator<Map.Entry<String, JsonNode>> it = header.get("configs").fields(); it.hasNext();) {
            Map.Entry<String, JsonNode> e = it.next();
            @SuppressWarnings("unchecked")
            Map<String, Object> map = JSON.convertValue(e.getValue(), Map.class);
            FingerprintConfig cfg = FingerprintConfig.fromMap(map, JiebaDictionary.get().version);
            out.put(e.getKey(), new Fingerprinter(cfg, UnicodeData.get(), seg, Stopwords.shipped()));
        }
        return out;
    }

    /** The header and the first {@code n} records. */
    static java.util.List<JsonNode> first(int n) {
        java.util.List<JsonNode> out = new java.util.ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(
            new GZIPInputStream(Files.newInputStream(path()), 1 << 16), StandardCharsets.UTF_8), 1 << 16)) {
            String line;
            while (out.size() <= n && (line = r.readLine()) != null) {
                out.add(JSON.readTree(line));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    /** Calls {@code header} with the first line, then {@code each} with every record. */
    static void read(Consumer<JsonNode> header, Consumer<JsonNode> each) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(
            new GZIPInputStream(Files.newInputStream(path()), 1 << 16), StandardCharsets.UTF_8), 1 << 16)) {
            header.accept(JSON.readTree(r.readLine()));
            String line;
            while ((line = r.readLine()) != null) {
                each.accept(JSON.readTree(line));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
