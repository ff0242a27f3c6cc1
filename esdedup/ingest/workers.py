"""The fingerprint worker pool of `esdedup.ingest.run`: batches of records go to worker processes (or are
fingerprinted in this process, with one worker) and come back in input order, each as a `Fingerprinted`: the
fingerprints packed into a few columns, with the content SHA-1 of each text and, for Elasticsearch, each
document's ``dedup`` fields encoded as JSON already.

Separate from the run because it is another job with its own rules: this module is what the worker processes
run (its functions are what they unpickle; it touches no store and none of the run's files), and it alone
decides how fingerprints cross the process boundary. The run takes the batches in order from `Workers.in_order`
and stops it through `Stop` (SIGTERM).
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, TimeoutError
from concurrent.futures import wait as futures_wait
from concurrent.futures.process import BrokenProcessPool
from itertools import chain
from typing import Any

import numpy as np

from esdedup.errors import Terminated, WorkerKilled
from esdedup.fingerprint.config import FingerprintConfig
from esdedup.fingerprint.fingerprinter import Fingerprinter
from esdedup.fingerprint.values import Fingerprint, FingerprintBlock, FingerprintColumns, zero_vector
from esdedup.ingest.runindex import HeldHashes, held_keys, key_hashes, run_starts
from esdedup.readers import Record, Rejected
from esdedup.schema import content_sha1, dedup_members_many

#: Records as the run reads them, the rejected ones in their places: one task for a worker.
Batch = list[Record | Rejected]

#: Seconds the pool is given to see a worker's death itself (`Workers._killed`).
_GRACE = 1.0

#: What separates a text's LSH keys as a batch carries them (`_pack_columns`): a key is a decimal number
#: (`esdedup.fingerprint.minhash.lsh_keys`), never a line break.
LSH_SEPARATOR = "\n"

#: A worker process's own Fingerprinter, built once by `_init_worker`.
_WORKER: Fingerprinter | None = None


def _init_worker(config_json: str, parent: int) -> None:
    global _WORKER
    # A forked worker inherits the parent's SIGTERM handler (`Stop`, which only asks the run to stop): the
    # default action comes back first, so that the parent-death signal `_die_with` asks for ends the worker.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with(parent)
    # Ctrl-C in a terminal signals the whole process group: the parent alone decides how the run stops, and
    # ends its workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _WORKER = Fingerprinter(FingerprintConfig.from_json(config_json))


def _die_with(parent: int) -> None:
    """Linux: have the kernel send this worker SIGTERM when the process that started it dies, however it
    dies (SIGKILL included): no worker outlives its ingest."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - no prctl in this libc
        return
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def _fingerprint_batch(texts: list[str], encode: bool, held: bool, fingerprints: bool) -> Fingerprinted:
    assert _WORKER is not None
    return fingerprint_with(_WORKER, texts, encode=encode, held=held, fingerprints=fingerprints)


def fingerprint_with(fper: Fingerprinter, texts: list[str], *, encode: bool = False, held: bool = False,
                     fingerprints: bool = True) -> Fingerprinted:
    """What a worker does with one task, also done in the calling thread (`esdedup.ingest.service.Ingester`): each
    text normalised once, for its fingerprint and its content SHA-1; ``encode``: the ``dedup`` JSON too, made
    from the Fingerprinter's columns (`esdedup.schema.dedup_members_many`) with no fingerprint object;
    ``held``: the hashes of the keys the run's memory holds each text under (`held_key_hashes`);
    ``fingerprints`` false: the fingerprints are not kept (nor sent), only each text's SimHash."""
    norms = fper.normalize_many(texts)
    columns = fper.fingerprint_columns(norms)
    sha1s = [content_sha1(norm) for norm in norms]
    return Fingerprinted(columns, sha1s, dedup_members_many(columns, fper.config, sha1s) if encode else None,
                         held_key_hashes(columns, sha1s) if held else None, fingerprints=fingerprints)


def held_key_hashes(columns: list[FingerprintColumns], sha1s: list[str]) -> HeldHashes:
    """The `esdedup.ingest.runindex.key_hashes` of each text's `esdedup.ingest.runindex.held_keys`, as the run
    would hash them itself."""
    keys = [held_keys(bands, lsh, empty, sha1) for bands, lsh, empty, sha1 in zip(
        chain.from_iterable(c.bands for c in columns), chain.from_iterable(c.lsh for c in columns),
        chain.from_iterable(c.empties for c in columns), sha1s, strict=True)]
    return HeldHashes.counted(key_hashes([k for ks in keys for k in ks]), [len(k) for k in keys])


class Fingerprinted(Sequence[tuple[Fingerprint, str]]):
    """A batch of fingerprints with the content SHA-1 and the SimHash of each text, as a worker process sends
    it back: the fingerprints travel as a few columns (one array of vectors, one of signatures, flat key
    lists) instead of one pickled object with arrays and lists per document, and without the exact TF tables
    (not stored, and dearer to pickle than to compute). ``dedup_json``: each document's ``dedup`` fields
    encoded as JSON (`NewDoc.dedup_json`), made in the worker processes rather than in the process that
    writes. The fingerprint objects are made when the run first reads them; ``fingerprints`` false: there
    are none, for a run that writes the encoded fields and reads no more of a fingerprint than its SimHash
    (``index`` mode on Elasticsearch), which spares both processes most of what a batch pickles."""

    def __init__(self, columns: list[FingerprintColumns], sha1s: list[str], dedup_json: list[bytes] | None = None,
                 held: HeldHashes | None = None, *, fingerprints: bool = True) -> None:
        self.sha1s = sha1s
        self.simhashes: list[int] = list(chain.from_iterable(c.simhashes for c in columns))
        self.dedup_json = dedup_json
        #: `held_key_hashes`, when asked for.
        self.held = held
        self.has_fingerprints = fingerprints
        #: The Fingerprinter's columns in the process that made them; after pickling, what they were packed to.
        self._columns: list[FingerprintColumns] | None = columns if fingerprints else None
        self._packed: tuple[Any, ...] = ()
        self._fps: list[Fingerprint] | None = None
        #: `block`, once made (False: there is none).
        self._block: FingerprintBlock | bool | None = None

    def __len__(self) -> int:
        return len(self.sha1s)

    def __getitem__(self, i: int) -> tuple[Fingerprint, str]:  # type: ignore[override]
        return self.fingerprints()[i], self.sha1s[i]

    def fingerprints(self) -> list[Fingerprint]:
        """The fingerprints, in text order.

        Raises:
            ValueError: the batch was made without them (``fingerprints`` false).
        """
        if not self.has_fingerprints:
            raise ValueError("this batch was fingerprinted for a run that reads no fingerprints: it has none")
        if self._fps is None:
            if self._columns is not None:
                self._fps = list(chain.from_iterable(c.fingerprints() for c in self._columns))
            else:
                self._fps = _unpack_fingerprints(self.simhashes, self._packed)
        return self._fps

    def block(self) -> FingerprintBlock | None:
        """The fingerprints as the arrays this batch travelled in (`FingerprintBlock`), row r for the r-th of
        `fingerprints`, which are made from the same arrays. None for a batch made in this process (its
        fingerprints are the Fingerprinter's own objects), one without fingerprints, or SimHashes wider than
        64 bits."""
        if self._block is None and self.has_fingerprints and self._columns is None and self._packed:
            self._block = _block_of(self.simhashes, self._packed)
        return self._block if isinstance(self._block, FingerprintBlock) else None

    def __getstate__(self) -> dict[str, Any]:
        packed = self._packed if self._columns is None else _pack_columns(self._columns)
        return {"sha1s": self.sha1s, "simhashes": self.simhashes, "dedup_json": self.dedup_json, "held": self.held,
                "has_fingerprints": self.has_fingerprints, "_columns": None, "_packed": packed, "_fps": None,
                "_block": None}


def _pack_columns(batches: list[FingerprintColumns]) -> tuple[Any, ...]:
    """The fingerprints of some batches of columns as the columns a batch travels as (`_unpack_fingerprints`
    reads them): per-document scalars in lists, the vectors and the signatures stacked in arrays, band keys
    in a flat list with a count per document, and each document's LSH keys in one string (`LSH_SEPARATOR`
    between them; a text of 16 keys is then one object to pickle, unpickle and free, not 16, and a row whose
    fingerprint is never read never has its keys made again). The SimHash values travel beside them
    (`Fingerprinted.simhashes`). Only the vectors that are not all zero travel, with a mask of the documents
    they belong to (None: every document's): a text without terms (`FingerprintConfig.gets_terms`: most short
    texts) has a zero vector, which would be half of what a batch of them sends."""
    def flat(name: str) -> list[Any]:
        return list(chain.from_iterable(getattr(b, name) for b in batches))

    n = sum(map(len, batches))
    minhashes, bands, lsh = flat("minhash"), flat("bands"), flat("lsh")
    sigs = [s for s in minhashes if s is not None]
    vectors = np.concatenate([b.vectors for b in batches]) if n else None
    has_vector = None
    if vectors is not None:
        nonzero = vectors.any(axis=1)
        if not nonzero.all():
            has_vector, vectors = nonzero, np.ascontiguousarray(vectors[nonzero])
    return (flat("lengths"), flat("chars"), flat("shingles"), flat("empties"),
            batches[0].bits if n else 64, vectors, has_vector, np.stack(sigs) if sigs else None,
            [s is not None for s in minhashes], list(map(len, bands)), list(chain.from_iterable(bands)),
            list(map(LSH_SEPARATOR.join, lsh)))


def _block_of(simhashes: list[int], columns: tuple[Any, ...]) -> FingerprintBlock | bool:
    """The `FingerprintBlock` of packed columns (`_pack_columns`), which makes a row's fingerprint when it is
    read (`RowFingerprints`); False for no texts, or SimHashes wider than 64 bits (a block keeps them as
    unsigned 64-bit integers)."""
    lengths, chars, shingles, empties, bits, vectors, _, sigs, _, n_bands, *_ = columns
    if bits > 64 or vectors is None:
        return False
    n = len(simhashes)
    rows = RowFingerprints(simhashes, columns)
    return FingerprintBlock(np.array(simhashes, dtype=np.uint64).reshape(n),
                            np.array(lengths, dtype=np.int64).reshape(n), np.array(chars, dtype=np.int64).reshape(n),
                            np.array(shingles, dtype=np.int64).reshape(n), np.array(empties, dtype=bool).reshape(n),
                            np.array(n_bands, dtype=np.int64).reshape(n) > 0, vectors, rows.vector_row,
                            zero_vector(vectors.shape[1], vectors.dtype), sigs, rows.sig_row, rows)


def _unpack_fingerprints(simhashes: list[int], columns: tuple[Any, ...]) -> list[Fingerprint]:
    """Every row's `Fingerprint`, in order (`RowFingerprints` makes one)."""
    rows = RowFingerprints(simhashes, columns)
    return [rows(r) for r in range(len(simhashes))]


class RowFingerprints:
    """One row's `Fingerprint` at a time from packed columns (`_pack_columns`), as many as a consumer reads:
    the rows without a vector of their own share one zero vector. Holds the columns, not the batch (no cycle
    through a batch's block, which holds it)."""

    def __init__(self, simhashes: list[int], columns: tuple[Any, ...]) -> None:
        lengths, chars, shingles, empties, bits, vectors, has_vector, sigs, signed, n_bands, bands, lsh = columns
        self._scalars = simhashes, lengths, chars, shingles, empties
        self._bits, self._bands, self._lsh, self._vectors, self._sigs = bits, bands, lsh, vectors, sigs
        self._band_at = run_starts(n_bands).tolist()
        n = len(simhashes)
        self._zero: Any = None if vectors is None else zero_vector(vectors.shape[1], vectors.dtype)
        #: Each row's place among the vectors and among the signatures (-1: none), as a block keeps them.
        self.vector_row = (np.arange(n, dtype=np.int64) if has_vector is None
                           else np.where(has_vector, np.cumsum(has_vector) - 1, -1))
        signed_mask = np.array(signed, dtype=bool).reshape(n)
        self.sig_row = np.where(signed_mask, np.cumsum(signed_mask) - 1, -1)
        self._vector_at, self._sig_at = self.vector_row.tolist(), self.sig_row.tolist()

    def __call__(self, r: int) -> Fingerprint:
        simhashes, lengths, chars, shingles, empties = self._scalars
        v, s, b, lsh = self._vector_at[r], self._sig_at[r], self._band_at, self._lsh[r]
        # By position: a call by keyword costs twice as much, once a record.
        return Fingerprint(simhashes[r], self._bands[b[r]:b[r + 1]], self._zero if v < 0 else self._vectors[v], {},
                           lengths[r], empties[r], lsh.split(LSH_SEPARATOR) if lsh else [],
                           None if s < 0 else self._sigs[s], chars[r], self._bits, shingles[r])


class Workers:
    """Fingerprinting in worker processes (or in this process with one worker), batches kept in input
    order with at most ``workers + 1`` of them in flight. ``encode``, ``held`` and ``fingerprints``: what
    each batch comes back with, as `fingerprint_with` takes them."""

    def __init__(self, config: FingerprintConfig, workers: int, *, encode: bool = False, held: bool = False,
                 fingerprints: bool = True) -> None:
        self.workers = workers
        self._encode = encode
        self._held = held
        self._fingerprints = fingerprints
        self._pool: ProcessPoolExecutor | None = None
        if workers > 1:
            context = multiprocessing.get_context()
            if context.get_start_method() == "fork":
                # A forked worker inherits the tables a Fingerprinter is built from (character tables, stopwords:
                # cached per process), made here once instead of once in each worker. The segmentation
                # dictionary is not among them: a worker loads it when its first text is segmented.
                Fingerprinter(config)
            self._pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker,
                                             initargs=(config.to_json(), os.getpid()))
        self._local = None if self._pool else Fingerprinter(config)
        #: The pool's worker processes, by pid (`_submit`).
        self._procs: dict[int, Any] = {}
        #: Records read from the input and handed to the workers, not yet given back (see `unwritten`).
        self._in_flight: deque[tuple[Batch, Future | Fingerprinted]] = deque()

    def _submit(self, batch: Batch) -> Future | Fingerprinted:
        texts = [r.text for r in batch if isinstance(r, Record)]
        if self._pool is not None:
            try:
                fut = self._pool.submit(_fingerprint_batch, texts, self._encode, self._held, self._fingerprints)
            except BrokenProcessPool as exc:  # a worker died: this batch was read, and counts as in flight
                fut = Future()
                fut.set_exception(exc)
            # concurrent.futures names no public way to its worker processes, which the run watches (`_next`):
            # `_processes` (pid -> Process, since Python 3.7) is read after each submit, which starts them.
            # tests/integration/test_worker_death.py fails when it is gone.
            self._procs.update(getattr(self._pool, "_processes", None) or {})
            return fut
        return fingerprint_with(self._local, texts, encode=self._encode, held=self._held,  # type: ignore[arg-type]
                                fingerprints=self._fingerprints)

    def in_order(self, batches: Iterator[Batch], stop: Stop) -> Iterator[tuple[Batch, Fingerprinted]]:
        """The batches with their fingerprints, in input order, until the input ends or ``stop`` is asked.

        Raises:
            WorkerKilled: a worker process ended (every worker has ended then; `unwritten` counts the batches
                read and not given back)."""
        in_flight = self._in_flight
        for batch in batches:
            in_flight.append((batch, self._submit(batch)))
            if len(in_flight) > self.workers:
                done = self._next(stop)
                if done is None:
                    return
                yield done
        while in_flight:
            done = self._next(stop)
            if done is None:
                return
            yield done

    def _next(self, stop: Stop) -> tuple[Batch, Fingerprinted] | None:
        batch, fut = self._in_flight[0]
        if isinstance(fut, Future):
            while not stop.asked:
                try:
                    results = fut.result(timeout=0.25)
                    break
                except TimeoutError:
                    if not self._ended():
                        continue
                    killed = self._killed()
                except BrokenProcessPool:
                    killed = self._killed()
                    if killed is None:  # broken by something else than a death: as the pool says
                        raise
                if killed is not None:
                    raise killed from None
            else:
                return None
        else:
            results = fut
        if stop.asked:
            return None
        self._in_flight.popleft()
        return batch, results

    def _ended(self) -> list[Any]:
        """The worker processes that have ended (during a run, none ends unless something kills it)."""
        return [p for p in self._procs.values() if p.exitcode is not None]

    def _killed(self) -> WorkerKilled | None:
        """The error for a worker process that ended during the run (None: none did), once every worker has
        ended. The pool sees most deaths itself (each worker's sentinel), marks itself broken and ends the other
        workers. Not a worker killed halfway through sending a result back: the pool's result thread then waits
        for the rest of that message for ever (the other workers and this process hold the pipe's write end),
        and this process's exit with it (`concurrent.futures` joins it at exit). When the pool has not seen the
        death within `_GRACE` seconds (a future it holds is still pending), its thread is released: every worker
        is killed and this process's copy of the write end closed, so that its read ends (the pool is then
        broken, and its thread ends)."""
        # A pool that sees the death fails every future it holds at once.
        pending = [f for _, f in self._in_flight if isinstance(f, Future)]
        stuck = bool(futures_wait(pending, timeout=_GRACE).not_done)
        deadline = time.monotonic() + 10
        while not (ended := self._ended()) and time.monotonic() < deadline:  # a death the pool saw first
            time.sleep(0.05)
        if stuck and self._pool is not None:
            for p in self._procs.values():
                p.kill()  # SIGKILL, which also ends a stopped worker
            # Private, as `_processes` (`_submit`): concurrent.futures has no other way to it. Its thread, stuck
            # in the read, touches it only once the read has ended.
            writer = getattr(getattr(self._pool, "_result_queue", None), "_writer", None)
            if writer is not None:
                writer.close()
        if not ended:
            return None
        # The first to die, not one the pool ended with SIGTERM after it.
        dead = min(ended, key=lambda p: p.exitcode == -signal.SIGTERM)
        if dead.exitcode >= 0:
            return WorkerKilled(f"fingerprint worker process {dead.pid} exited with code {dead.exitcode}",
                                pid=dead.pid, exitcode=dead.exitcode)
        signum = -dead.exitcode
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = "unknown"
        message = f"fingerprint worker process {dead.pid} was killed by signal {signum} ({name})"
        if signum == signal.SIGKILL:
            message += (", most likely by the kernel's out-of-memory killer (its log says: dmesg, journalctl -k): "
                        "with the memory at hand, fingerprint with fewer workers or smaller batches")
        return WorkerKilled(message, pid=dead.pid, signum=signum)

    def unwritten(self) -> int:
        """Records handed to the workers and never given back (when the run was stopped)."""
        return sum(len(batch) for batch, _ in self._in_flight)

    def close(self) -> None:
        """Shut the workers down: the batches no worker has taken are dropped, each worker finishes the one it
        holds (its result is dropped too: `unwritten` counts those records), then the workers exit.

        Never by killing a worker: a batch's result is megabytes, which a worker sends through a pipe of 64 KiB
        for as long as this process takes to read it (long, on a busy machine), and one killed in the middle
        leaves the pool's result thread waiting for the rest for ever, and this process's exit waiting for that
        thread (`concurrent.futures` joins it at exit). Waiting costs at most a batch's fingerprinting; a
        second SIGTERM still ends the run at once, and the kernel ends the workers with it (`_die_with`). A
        worker that died (`_killed`) leaves none of them running."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


#: The signals that stop a run, with the handler each has by default (which a program may leave in place).
_DEFAULTS: dict[int, Any] = {signal.SIGTERM: signal.SIG_DFL, signal.SIGINT: signal.default_int_handler}


class Stop:
    """Whether the run was asked to stop: by SIGTERM or SIGINT (Ctrl-C), while `Stop.on_stop_signals` holds
    their handlers (in the main thread of a program that left their default handlers in place; elsewhere
    they are the program's, which may give them to `handle`). The run then ends after the batch it is
    writing, its workers are stopped, and `Terminated` says what was written and what was read but not
    written (a resumed run reads it again); asked before the run read anything, it reads nothing
    (`refuse_if_asked`). Asked a second time, the run stops at once, as the signal's default handler would."""

    def __init__(self) -> None:
        self.asked: str | None = None

    def handle(self, signum: int, frame: object) -> None:
        """The handler of the signals that stop the run."""
        if self.asked:  # asked twice: stop now
            signal.signal(signum, _DEFAULTS[signum])
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            os.kill(os.getpid(), signum)
        self.asked = signal.Signals(signum).name

    def refuse_if_asked(self, summary: Any = None) -> None:
        """Raise `Terminated` when the run was asked to stop before it read anything."""
        if self.asked:
            raise Terminated(f"stopped by {self.asked} before the run read anything: nothing was read or written",
                             summary=summary, signal_name=self.asked)

    @contextlib.contextmanager
    def on_stop_signals(self) -> Iterator[Stop]:
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        taken = [signum for signum, default in _DEFAULTS.items() if signal.getsignal(signum) is default]
        for signum in taken:
            signal.signal(signum, self.handle)
        try:
            yield self
        finally:
            for signum in taken:
                signal.signal(signum, _DEFAULTS[signum])
