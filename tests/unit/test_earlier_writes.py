"""`esdedup.ingest.runindex.EarlierWrites`: the ids a run wrote in its earlier windows, with each one's content
SHA-1 and whether it still represents its cluster, answer as a dict of them would, whatever the window sizes
(the rows go in a hundred a statement, and the rest in one of their own)."""
from __future__ import annotations

import pytest

from esdedup.ingest.runindex import EarlierWrites


@pytest.mark.parametrize("sizes", [[0, 1], [99, 100, 101], [250, 3, 1000]])
def test_earlier_writes_answer_as_a_dict_of_every_window(sizes: list[int]) -> None:
    earlier = EarlierWrites()
    written: dict[str, str] = {}
    own: set[str] = set()
    start = 0
    try:
        for n in sizes:
            window = {f"doc-{start + i}-é": f"{start + i:040x}" for i in range(n)}  # ids travel as UTF-8
            roots = {i for k, i in enumerate(window) if k % 3 == 0}
            earlier.add(window, roots)
            written.update(window)
            own |= roots
            start += n
        asked = [*written, "never-written", *written][:700]
        assert earlier.get(asked) == {i: written[i] for i in asked if i in written}
        for i in list(written)[:50]:
            assert earlier.take_root(i) is (i in own)
            assert earlier.take_root(i) is False  # it represents its cluster no more
    finally:
        earlier.close()
