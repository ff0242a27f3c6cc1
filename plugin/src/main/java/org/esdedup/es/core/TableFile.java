package org.esdedup.es.core;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Reads the tables that {@code golden/export_tables.py} wrote into the jar at build time (UTF-8, one record a
 * line, {@code #name value} header lines).
 */
final class TableFile {
    private TableFile() {}

    /** Calls {@code onLine} for every record line and returns the header values by name. */
    static Map<String, String> read(String name, Consumer<String> onLine) {
        String path = "/org/esdedup/es/tables/" + name;
        Map<String, String> headers = new HashMap<>();
        try (InputStream in = TableFile.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("table " + path + " is missing from the plugin jar (it is generated at "
                    + "build time by golden/export_tables.py)");
            }
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8), 1 << 16);
            String line;
            while ((line = reader.readLine()) != null) {
                if (line.startsWith("#")) {
                    int sp = line.indexOf(' ');
                    headers.put(line.substring(1, sp), line.substring(sp + 1));
                } else if (line.isEmpty() == false) {
                    onLine.accept(line);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read table " + path, e);
        }
        return headers;
    }

    /** The header values of a table (its leading {@code #name value} lines) without reading the records. */
    static Map<String, String> headers(String name) {
        Map<String, String> headers = new HashMap<>();
        try (InputStream in = TableFile.class.getResourceAsStream("/org/esdedup/es/tables/" + name)) {
            if (in == null) {
                throw new IllegalStateException("table " + name + " is missing from the plugin jar");
            }
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            String line;
            while ((line = reader.readLine()) != null && line.startsWith("#")) {
                int sp = line.indexOf(' ');
                headers.put(line.substring(1, sp), line.substring(sp + 1));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read table " + name, e);
        }
        return headers;
    }

    /** A double from its IEEE-754 bits written as 16 hex digits. */
    static double bitsToDouble(String hex) {
        return Double.longBitsToDouble(Long.parseUnsignedLong(hex, 16));
    }

    static int hex(String s) {
        return Integer.parseInt(s, 16);
    }
}
