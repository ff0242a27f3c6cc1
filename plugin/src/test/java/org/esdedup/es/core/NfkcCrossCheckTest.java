package org.esdedup.es.core;

import org.junit.jupiter.api.Test;

import java.text.Normalizer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The plugin's NFKC (Python's tables, {@link Nfkc}) against the JVM's {@link Normalizer}, an independent
 * implementation: normalisation is stable across Unicode versions for characters both versions assign, so on
 * those the two must agree; they may differ only on characters that one of the versions does not know.
 */
class NfkcCrossCheckTest {
    private final UnicodeData u = UnicodeData.get();

    private boolean bothAssigned(int cp) {
        return u.assigned.contains(cp) && Character.isDefined(cp) && Character.getType(cp) != Character.SURROGATE;
    }

    private String ours(int... cps) {
        IntList in = new IntList(cps.length);
        in.addAll(cps);
        IntList out = Nfkc.apply(u, in);
        return out.toText(0, out.size);
    }

    @Test
    void everyCodePointBothVersionsAssignNormalisesAsTheJvmDoes() {
        List<String> diffs = new ArrayList<>();
        int compared = 0;
        for (int cp = 0; cp <= Character.MAX_CODE_POINT; cp++) {
            if (bothAssigned(cp) == false) {
                continue;
            }
            compared++;
            String jvm = Normalizer.normalize(new String(new int[] {cp}, 0, 1), Normalizer.Form.NFKC);
            if (jvm.equals(ours(cp)) == false && diffs.size() < 20) {
                diffs.add(Integer.toHexString(cp));
            }
        }
        assertTrue(compared > 140_000, "compared " + compared);
        assertEquals(List.of(), diffs);
    }

    @Test
    void sequencesOfCombiningAndComposingCharactersNormaliseAsTheJvmDoes() {
        List<Integer> pool = new ArrayList<>();
        for (int cp = 0; cp <= Character.MAX_CODE_POINT; cp++) {
            if (bothAssigned(cp) && (u.decomposes.contains(cp) || u.combining.contains(cp) || u.composesBack.contains(cp))) {
                pool.add(cp);
            }
        }
        for (int cp = 0x1100; cp < 0x1200; cp++) {
            if (bothAssigned(cp)) {
                pool.add(cp); // Hangul jamo: algorithmic composition
            }
        }
        Random rnd = new Random(17);
        List<String> diffs = new ArrayList<>();
        for (int i = 0; i < 200_000; i++) {
            int[] cps = new int[1 + rnd.nextInt(6)];
            for (int j = 0; j < cps.length; j++) {
                cps[j] = rnd.nextInt(4) == 0 ? 'a' + rnd.nextInt(26) : pool.get(rnd.nextInt(pool.size()));
            }
            String jvm = Normalizer.normalize(new String(cps, 0, cps.length), Normalizer.Form.NFKC);
            if (jvm.equals(ours(cps)) == false && diffs.size() < 20) {
                diffs.add(new String(cps, 0, cps.length).codePoints().mapToObj(Integer::toHexString).toList().toString());
            }
        }
        assertEquals(List.of(), diffs);
    }
}
