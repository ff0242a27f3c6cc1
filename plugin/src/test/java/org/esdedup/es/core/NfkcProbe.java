package org.esdedup.es.core;

import java.text.Normalizer;

/** For the golden test's report: would the JVM's own NFKC have given the same text as Python's tables? */
public final class NfkcProbe {
    private NfkcProbe() {}

    public static boolean jvmAgrees(String text) {
        UnicodeData u = UnicodeData.get();
        IntList cps = new IntList(text.length());
        text.codePoints().filter(cp -> u.junk.contains(cp) == false).forEach(cps::add);
        IntList ours = Nfkc.apply(u, cps);
        String jvm = Normalizer.normalize(cps.toText(0, cps.size), Normalizer.Form.NFKC);
        return jvm.equals(ours.toText(0, ours.size));
    }
}
