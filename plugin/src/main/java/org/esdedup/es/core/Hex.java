package org.esdedup.es.core;

/** Fixed-width lowercase hex, as Python's {@code f"{value:0{width}x}"} writes it. */
final class Hex {
    private Hex() {}

    static String pad(String hex, int width) {
        if (hex.length() >= width) {
            return hex;
        }
        return "0".repeat(width - hex.length()) + hex;
    }

    static String of(byte[] bytes) {
        StringBuilder sb = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            sb.append(Character.forDigit((b >>> 4) & 15, 16)).append(Character.forDigit(b & 15, 16));
        }
        return sb.toString();
    }
}
