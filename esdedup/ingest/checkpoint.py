"""The checkpoint file of a run: per input file, the byte offset below which every record has been written (or
dead-lettered), or that the whole file is done, so that a resumed run reads only what the run before did not
account for.

Separate from the run (`esdedup.ingest.run`) because it is a file format with rules of its own: saved atomically,
checked when read (a file of another shape is one clear error), and held by one run at a time
(`lock_checkpoint`). The run decides when to advance it: after a batch is written and accounted for.

An offset means something only in the file it was taken in, so each entry also holds the SHA-1 of the
file's first ``hashed`` bytes (what the run had read: up to its offset, or the whole file once done). A
resumed run hashes them again first: a file rewritten since is read again from its start (a warning
names it), a file that only grew goes on from its offset.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from esdedup.errors import ConfigError
from esdedup.readers.files import open_binary, printable, source_name, source_path
from esdedup.store.base import StoreCore, elasticsearch_backed
from esdedup.util.filelock import FileLock

log = logging.getLogger(__name__)

_CHUNK = 1 << 20


class Checkpoint:
    """Per input file, the byte offset below which every record has been written (or dead-lettered),
    or that the whole file is done. Saved atomically after every confirmed batch."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self.files: dict[str, dict[str, Any]] = {}
        if self.path is not None and self.path.exists():
            try:
                data = json.loads(self.path.read_text("utf-8"))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"checkpoint {self.path} is unreadable ({exc}); delete it to start over") from exc
            self.files = _checkpoint_files(data, self.path)
        #: source -> the running SHA-1 of the file's first n bytes, and n.
        self._hashes: dict[str, tuple[Any, int]] = {}
        #: The entries advanced or finished since the last save (their hashes are extended when saved).
        self._moved: set[str] = set()

    def recognise_files(self) -> None:
        """Hash again what each entry's run had read of its file: an entry whose file changed since (other
        bytes, or fewer) is dropped, so that the file is read again from its start. Entries without a hash,
        or whose file is gone, are kept as they are."""
        for source, entry in list(self.files.items()):
            if "sha1" not in entry:
                continue
            hashed = _hash_prefix(source_path(source), entry["hashed"])
            if hashed is None:
                continue
            if hashed[1] == entry["hashed"] and hashed[0].hexdigest() == entry["sha1"]:
                self._hashes[source] = hashed
                continue
            log.warning("%s changed since checkpoint %s was saved (its first %d bytes are not the ones read "
                        "then): it is read again from its start", printable(source), self.path, entry["hashed"])
            del self.files[source]

    def skip(self, source: str, offset: int) -> bool:
        return self.done(source) or offset < self.files.get(source, {}).get("offset", 0)

    def done(self, source: str) -> bool:
        """The whole file was finished by the run being resumed (it is not opened again)."""
        return bool(self.files.get(source, {}).get("done", False))

    def advance(self, source: str, next_offset: int) -> None:
        f = self.files.setdefault(source, {"offset": 0})
        f["offset"] = max(f.get("offset", 0), next_offset)
        self._moved.add(source)

    def finish(self, source: str) -> None:
        self.files.setdefault(source, {})["done"] = True
        self._moved.add(source)

    def _hash_up_to(self, source: str, end: int | None) -> None:
        """Extend the entry's hash to the file's first ``end`` bytes (None: the whole file). A file that
        cannot be read gets no hash: a resumed run trusts its offset, as it must for a checkpoint without."""
        entry = self.files[source]
        hasher, hashed = self._hashes.get(source) or (hashlib.sha1(usedforsecurity=False), 0)
        if end is not None and end <= hashed:
            return
        try:
            with open_binary(source_path(source)) as f:
                f.seek(hashed)
                while end is None or hashed < end:
                    chunk = f.read(_CHUNK if end is None else min(_CHUNK, end - hashed))
                    if not chunk:
                        break
                    hasher.update(chunk)
                    hashed += len(chunk)
        except OSError:
            self._hashes.pop(source, None)
            entry.pop("sha1", None)
            entry.pop("hashed", None)
            return
        self._hashes[source] = (hasher, hashed)
        entry["sha1"], entry["hashed"] = hasher.hexdigest(), hashed

    def save(self) -> None:
        if self.path is None:
            return
        for source in sorted(self._moved):
            entry = self.files[source]
            self._hash_up_to(source, None if entry.get("done") else entry.get("offset", 0))
        self._moved.clear()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        # Encoded before the file is opened (ASCII escapes: any source name can be saved), and the
        # temporary file removed on failure: a failed save never leaves a 0-byte .tmp behind.
        payload = json.dumps({"files": self.files}).encode("ascii")
        try:
            tmp.write_bytes(payload)
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def _hash_prefix(path: Path, n: int) -> tuple[Any, int] | None:
    """The SHA-1 of the first ``n`` bytes of ``path`` (fewer when the file is shorter) and how many were
    hashed; None when the file cannot be read."""
    hasher, hashed = hashlib.sha1(usedforsecurity=False), 0
    try:
        with open_binary(path) as f:
            while hashed < n:
                chunk = f.read(min(_CHUNK, n - hashed))
                if not chunk:
                    break
                hasher.update(chunk)
                hashed += len(chunk)
    except OSError:
        return None
    return hasher, hashed


def _checkpoint_files(data: Any, path: Path) -> dict[str, dict[str, Any]]:
    """The ``files`` of a checkpoint as read from disk, checked: ``{"files": {path: {"offset": int >= 0,
    "done": bool, "hashed": int >= 0, "sha1": hex}}}`` (the hash optional, both or neither)."""
    files = data.get("files") if isinstance(data, dict) else None
    bad = None
    if not isinstance(data, dict):
        bad = f"a JSON {_json_kind(data)} instead of an object"
    elif not isinstance(files, dict):
        bad = f"'files' is {_json_kind(files)} instead of an object"
    else:
        for name, entry in files.items():
            offset = entry.get("offset", 0) if isinstance(entry, dict) else None
            if (not isinstance(entry, dict) or isinstance(offset, bool) or not isinstance(offset, int) or offset < 0
                    or not isinstance(entry.get("done", False), bool)):
                bad = f"the entry of {name!r} is not {{'offset': a whole number >= 0, 'done': true or false}}"
                break
            if not _valid_hash(entry):
                bad = f"the entry of {name!r} has no valid 'hashed' (a whole number >= 0) and 'sha1' (40 hex digits)"
                break
    if bad is not None:
        raise ConfigError(f"checkpoint {path} does not hold an ingest checkpoint ({bad}); delete it to start over")
    return files  # type: ignore[return-value]


def _valid_hash(entry: dict[str, Any]) -> bool:
    if "sha1" not in entry and "hashed" not in entry:
        return True
    hashed, sha1 = entry.get("hashed"), entry.get("sha1")
    return (isinstance(hashed, int) and not isinstance(hashed, bool) and hashed >= 0 and isinstance(sha1, str)
            and len(sha1) == 40 and all(c in "0123456789abcdef" for c in sha1))


def _json_kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def open_checkpoint(path: str | Path | None, *, resume: bool) -> Checkpoint:
    """The checkpoint a resumed run continues from; a new run starts an empty one at the same path
    (without reading what is there: it is overwritten)."""
    if resume:
        ckpt = Checkpoint(path)
        ckpt.recognise_files()
        return ckpt
    ckpt = Checkpoint(None)
    ckpt.path = Path(path) if path else None
    return ckpt


def lock_checkpoint(checkpoint: str | Path | None) -> FileLock | None:
    """The checkpoint belongs to one run at a time: two runs saving one file would each overwrite the
    other's progress (and a resumed run would skip or repeat records)."""
    if not checkpoint:
        return None
    path = Path(checkpoint)
    return FileLock(path.with_name(path.name + ".lock"), busy=ConfigError(
        f"checkpoint {path} is in use by another ingest that is still running; give each ingest that runs at "
        "the same time a checkpoint file of its own")).acquire()


def default_checkpoint(store: StoreCore, paths: Sequence[str | os.PathLike[str]], *,
                       data_dir: str | Path | None = None) -> Path:
    """Where a run keeps its checkpoint when none is named: in the local data folder (``data_dir``; default: the
    embedded store's own folder, or `esdedup.store.local.default_data_dir`), never in the working folder, one
    per server, index and set of inputs (by canonical path, so any spelling of the same inputs resumes the same
    run): runs over other inputs write the same index at once, each with its own checkpoint, and the same
    inputs twice at once meet on one checkpoint, which the second is refused."""
    from esdedup.store.local import LocalStore, default_data_dir

    if data_dir is None:
        data_dir = store.data_dir if isinstance(store, LocalStore) else default_data_dir()
    where = ("es-" + hashlib.sha1(store.display_url.encode()).hexdigest()[:10] if elasticsearch_backed(store)
             else "local")
    inputs = hashlib.sha1("\0".join(sorted({source_name(p) for p in paths})).encode()).hexdigest()[:10]
    return Path(data_dir) / "checkpoints" / f"{where}-{store.name}-{inputs}.json"
