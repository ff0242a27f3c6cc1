"""The checkpoint file of a run: per input file, the byte offset below which every record has been written (or
dead-lettered), or that the whole file is done, so that a resumed run reads only what the run before did not
account for.

Separate from the run (`esdedup.ingest.run`) because it is a file format with rules of its own: saved atomically,
checked when read (a file of another shape is one clear error), and held by one run at a time
(`lock_checkpoint`). The run decides when to advance it: after a batch is written and accounted for.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from esdedup.errors import ConfigError
from esdedup.util.filelock import FileLock


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

    def skip(self, source: str, offset: int) -> bool:
        return self.done(source) or offset < self.files.get(source, {}).get("offset", 0)

    def done(self, source: str) -> bool:
        """The whole file was finished by the run being resumed (it is not opened again)."""
        return bool(self.files.get(source, {}).get("done", False))

    def advance(self, source: str, next_offset: int) -> None:
        f = self.files.setdefault(source, {"offset": 0})
        f["offset"] = max(f.get("offset", 0), next_offset)

    def finish(self, source: str) -> None:
        self.files.setdefault(source, {})["done"] = True

    def save(self) -> None:
        if self.path is None:
            return
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


def _checkpoint_files(data: Any, path: Path) -> dict[str, dict[str, Any]]:
    """The ``files`` of a checkpoint as read from disk, checked: ``{"files": {path: {"offset": int >= 0,
    "done": bool}}}``."""
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
    if bad is not None:
        raise ConfigError(f"checkpoint {path} does not hold an ingest checkpoint ({bad}); delete it to start over")
    return files  # type: ignore[return-value]


def _json_kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def open_checkpoint(path: str | Path | None, *, resume: bool) -> Checkpoint:
    """The checkpoint a resumed run continues from; a new run starts an empty one at the same path
    (without reading what is there: it is overwritten)."""
    if resume:
        return Checkpoint(path)
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
