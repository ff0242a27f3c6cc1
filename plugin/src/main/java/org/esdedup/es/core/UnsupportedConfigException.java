package org.esdedup.es.core;

/** A config the plugin refuses: invalid, or one whose fingerprints it cannot reproduce bit for bit. */
public class UnsupportedConfigException extends IllegalArgumentException {
    public UnsupportedConfigException(String message) {
        super(message);
    }
}
