"""What the command modules share: option groups, threshold overrides, the opened store, error handling.

Option groups are decorators (the sqlite-utils pattern, for typer): a group adds its options to the
command's signature and hands the command one object built from them (`Connection`,
`FingerprintOptions`, `ThresholdOptions`), so each option is declared once. `handles_errors` is the one
place where a library error becomes an ``Error:`` line, an exit code and, where a flag fixes it, a hint
naming that flag (the library speaks of its own settings, never of this command line's flags).
"""
import functools
import inspect
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from esdedup.errors import (
    CertificateError,
    ConfigMismatchError,
    EsdedupError,
    IndexNotFound,
    NeedsElasticsearch,
    NoAnswer,
    NotElasticsearch,
    RequestTimedOut,
    WorkerKilled,
)
from esdedup.match.thresholds import (
    HammingBeyondIndex,
    InertThresholds,
    ThresholdOverrides,
)
from esdedup.readers import FORMATS
from esdedup.util.redact import redact

from .output import for_people, json_text

if TYPE_CHECKING:  # the CLI imports the store layer when a command runs
    from esdedup.store.base import Store
    from esdedup.store.partition import Partition

Index = Annotated[str, typer.Option("--index", "-i", help="Index (Elasticsearch) or collection (local) name.")]
JsonOut = Annotated[bool, typer.Option("--json", help="Print JSON for programs instead of text for people.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")]
TextAnalyzer = Annotated[str | None, typer.Option(
    "--text-analyzer", help="Analyzer of the title and text fields (Elasticsearch): one the cluster has, such as "
                            "jieba (the esdedup plugin's), smartcn, ik_max_word or cjk (default: standard, which "
                            "cuts Chinese into single characters).")]


def choices(name: str, *values: str) -> Any:
    """A choice type for an option: typer refuses any other value before the command starts (exit 2) and
    ``--help`` lists the values. The command reads the choice as ``option.value``."""
    return Enum(name, {v: v for v in values}, type=str)


# The reader's own list, so a format the library learns is a choice here too.
InputFormat = choices("InputFormat", "auto", *sorted(FORMATS - {"auto"}))
PairsFormat = choices("PairsFormat", "jsonl", "table", "csv")
CompareFormat = choices("CompareFormat", "table", "jsonl")
Engine = choices("Engine", "auto", "elasticsearch", "opensearch")


def _group(name: str, cls: type, params: list[inspect.Parameter]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn, eval_str=True)
        kept = [p for p in sig.parameters.values() if p.name != name]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {p.name: kwargs.pop(p.name) for p in params}
            kwargs[name] = cls(**values)
            return fn(*args, **kwargs)

        wrapper.__signature__ = sig.replace(parameters=kept + params)  # type: ignore[attr-defined]
        return wrapper

    return decorator


def _opt(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)


# -- connection ------------------------------------------------------------------------------------------
@dataclass
class Connection:
    es: str | None = None
    data_dir: Path | None = None
    ca_certs: str | None = None
    no_verify_certs: bool = False
    client_cert: str | None = None
    client_key: str | None = None
    es_timeout: float | None = None
    engine: Any = None  # an Engine choice

    def redact(self, text: str) -> str:
        return redact(text)

    def settings(self) -> Any:  # -> ConnectionSettings | None
        """The server these options, the environment and the config file name; None: the local store."""
        from esdedup.es.connect import resolve_settings

        return resolve_settings(self.es, ca_certs=self.ca_certs, verify_certs=not self.no_verify_certs,
                                client_cert=self.client_cert, client_key=self.client_key,
                                request_timeout=self.es_timeout,
                                engine=self.engine.value if self.engine is not None else None)


connection_options = _group("conn", Connection, [
    _opt("es", Annotated[str | None, typer.Option(
        "--es", help="Elasticsearch URL, or several nodes' URLs comma-separated (or ESDEDUP_ES_URL). Without it "
                     "the embedded local store is used. "
                     "Put credentials in ESDEDUP_ES_API_KEY or ESDEDUP_ES_USER/ESDEDUP_ES_PASSWORD.")], None),
    _opt("data_dir", Annotated[Path | None, typer.Option(
        "--data-dir", help="Local store folder (default: ESDEDUP_DATA_DIR or ~/.local/share/esdedup).")], None),
    _opt("ca_certs", Annotated[str | None, typer.Option("--ca-certs", help="CA bundle to verify the server.")], None),
    _opt("no_verify_certs", Annotated[bool, typer.Option(
        "--no-verify-certs", help="Do NOT verify the server's TLS certificate (insecure; warned).")], False),
    _opt("client_cert", Annotated[str | None, typer.Option("--client-cert", help="Client certificate (PEM).")], None),
    _opt("client_key", Annotated[str | None, typer.Option("--client-key", help="Client key (PEM).")], None),
    _opt("es_timeout", Annotated[float | None, typer.Option(
        "--es-timeout", help="Seconds each attempt of an Elasticsearch request may take, connecting included "
                             "(default 30, or ESDEDUP_ES_TIMEOUT); an attempt that runs out is tried 3 more times; "
                             "the first request waits at most 10.")], None),
    _opt("engine", Annotated[Engine | None, typer.Option(
        "--engine", help="The server's engine: elasticsearch or opensearch (or ESDEDUP_ENGINE); default auto, "
             "as the server answers (give it for a proxy that hides the product).")], None),
])


# -- fingerprint config ------------------------------------------------------------------------------------
@dataclass
class FingerprintOptions:
    config_file: Path | None = None
    bits: int | None = None
    hamming_k: int | None = None
    band_blocks: int | None = None
    probe_radius: int | None = None
    tokenizer: str | None = None
    shingle: int | None = None
    weighting: str | None = None
    dims: int | None = None
    vector_index: str | None = None
    t2s: bool | None = None
    strategy: str | None = None
    synonyms: Path | None = None
    user_dict: Path | None = None
    stopwords_file: Path | None = None
    idf: Path | None = None

    def config(self):  # -> FingerprintConfig | None
        """The config these options describe, or None when none was given (use the index's)."""
        from esdedup.fingerprint.config import FingerprintConfig

        given = {f.name: getattr(self, f.name) for f in fields(self)
                 if f.name != "config_file" and getattr(self, f.name) is not None}
        if self.config_file is None and not given:
            return None
        from esdedup.fingerprint.config import read_config_file

        base: dict[str, Any] = read_config_file(self.config_file).to_dict() if self.config_file else {}
        for option, value in given.items():
            base[_PATH_OPTIONS.get(option, option)] = str(value) if isinstance(value, Path) else value
        for option, path_field in _PATH_OPTIONS.items():
            if option in given:  # a new file: its digest is computed again, the config file's is stale
                base.pop(path_field.replace("_path", "_sha256"), None)
        if "stopwords_file" in given:
            base["stopwords"] = "file"
        if "idf" in given and "weighting" not in base:
            base["weighting"] = "tfidf"
        return FingerprintConfig.from_dict(base)


#: Option name -> the config field holding that file's path.
_PATH_OPTIONS = {"synonyms": "synonyms_path", "user_dict": "user_dict_path", "stopwords_file": "stopwords_path",
                 "idf": "idf_path"}


fingerprint_options = _group("fp", FingerprintOptions, [
    _opt("config_file", Annotated[Path | None, typer.Option(
        "--config", help="FingerprintConfig JSON: what 'esdedup info --json' prints, or its \"config\".")], None),
    _opt("bits", Annotated[int | None, typer.Option("--bits", help="SimHash width: 64 or 128.")], None),
    _opt("hamming_k", Annotated[int | None, typer.Option(
        "--hamming-k", help="Largest distance the band layout guarantees to find (default 3).")], None),
    _opt("band_blocks", Annotated[int | None, typer.Option(
        "--band-blocks", help="Blocks the fingerprint is cut into (default k+1, the pigeonhole layout).")], None),
    _opt("probe_radius", Annotated[int | None, typer.Option(
        "--probe-radius", help="Probe band keys with neighbours within this many bits.")], None),
    _opt("tokenizer", Annotated[str | None, typer.Option("--tokenizer", help="jieba, rjieba or char.")], None),
    _opt("shingle", Annotated[int | None, typer.Option(
        "--shingle", help="Character n-gram size (with --tokenizer char).")], None),
    _opt("weighting", Annotated[str | None, typer.Option("--weighting", help="tf, tfidf or tf_length.")], None),
    _opt("dims", Annotated[int | None, typer.Option("--dims", help="Length of the TF vector (default 256).")], None),
    _opt("vector_index", Annotated[str | None, typer.Option(
        "--vector-index", help="TF vector and its kNN index: auto (default: a vector only with --strategy "
        "simhash, as int8_flat), int8_flat, flat, int8_hnsw, hnsw or none (stored, no kNN).")],
        None),
    _opt("t2s", Annotated[bool | None, typer.Option(
        "--t2s/--no-t2s", help="Convert Traditional to Simplified Chinese first.")], None),
    _opt("strategy", Annotated[str | None, typer.Option(
        "--strategy", help="auto (by length), simhash or minhash.")], None),
    _opt("synonyms", Annotated[Path | None, typer.Option("--synonyms", help="Synonym dictionary file.")], None),
    _opt("user_dict", Annotated[Path | None, typer.Option("--user-dict", help="jieba user dictionary.")], None),
    _opt("stopwords_file", Annotated[Path | None, typer.Option(
        "--stopwords-file", help="Stopword list replacing the shipped ones.")], None),
    _opt("idf", Annotated[Path | None, typer.Option("--idf", help="Document-frequency table (tf-idf).")], None),
])


# -- thresholds ------------------------------------------------------------------------------------------
@dataclass
class ThresholdOptions:
    hamming: int | None = None
    cosine: float | None = None
    jaccard: float | None = None
    containment: float | None = None

    def overrides(self) -> ThresholdOverrides:
        """The thresholds given on the command line; the others come from the index's config."""
        given = {"hamming_k": self.hamming, "cosine": self.cosine, "jaccard": self.jaccard,
                 "containment": self.containment}
        return ThresholdOverrides(**{k: v for k, v in given.items() if v is not None})


threshold_options = _group("thresholds", ThresholdOptions, [
    _opt("hamming", Annotated[int | None, typer.Option(
        "--hamming", help="Largest Hamming distance that counts as a duplicate (default: the index's hamming_k).")],
        None),
    _opt("cosine", Annotated[float | None, typer.Option(
        "--cosine", help="Smallest TF cosine that counts as a duplicate (default: the index's cosine_threshold).")],
        None),
    _opt("jaccard", Annotated[float | None, typer.Option(
        "--jaccard", help="Smallest estimated character n-gram Jaccard that counts as a duplicate between texts "
                          "with MinHash signatures (default: the index's jaccard_threshold).")], None),
    _opt("containment", Annotated[float | None, typer.Option(
        "--containment", help="Smallest estimated share of the smaller text's n-grams found in the other that "
                              "counts as a duplicate (0 switches it off; default: the index's "
                              "containment_threshold).")], None),
])


#: The threshold option of each threshold's name.
THRESHOLD_FLAGS = {"hamming_k": "--hamming", "cosine": "--cosine", "jaccard": "--jaccard",
                   "containment": "--containment"}


def threshold_flags(t: Any) -> list[str]:
    """The arguments of `threshold_options` that ask for the thresholds ``t`` (a `Thresholds`): what a printed
    command must carry to apply them (a switched-off containment is given as 0, its way of saying off)."""
    flags: list[str] = []
    for name in ("hamming_k", "cosine", "jaccard"):
        if getattr(t, name) is not None:
            flags += [THRESHOLD_FLAGS[name], str(getattr(t, name))]
    return flags + [THRESHOLD_FLAGS["containment"], "0" if t.containment is None else str(t.containment)]

@contextmanager
def opened_store(index: str, conn: Connection, *, shards: int = 1, replicas: int | None = None,
                 text_analyzer: str | None = None) -> Iterator[Any]:
    from esdedup.api import open_store

    store = open_store(index, connection=conn.settings(), data_dir=conn.data_dir, shards=shards, replicas=replicas,
                       text_analyzer=text_analyzer)
    try:
        yield store
    finally:
        store.close()


# -- errors ------------------------------------------------------------------------------------------------
def flag_hint(exc: EsdedupError) -> str | None:
    """The command-line flags that fix ``exc``, when some do."""
    if isinstance(exc, HammingBeyondIndex):
        return (f"give --hamming {exc.index_k} or less, or ingest into a new index with --hamming-k "
                f"{exc.requested}")
    if isinstance(exc, ConfigMismatchError):
        return ("omit the fingerprint options (--config, --bits, --tokenizer, ...) to use the index's own, "
                "or give another --index")
    if isinstance(exc, NotElasticsearch | NoAnswer):
        return "give --es the URL of an Elasticsearch node's HTTP port (9200 by default)"
    if isinstance(exc, InertThresholds):
        return (f"omit {', '.join(THRESHOLD_FLAGS[n] for n in exc.inert)}; the options that act here: "
                f"{', '.join(THRESHOLD_FLAGS[n] for n in exc.acting)}")
    if isinstance(exc, NeedsElasticsearch):
        return "give the server with --es URL (or ESDEDUP_ES_URL)"
    if isinstance(exc, IndexNotFound) and exc.index is not None:
        return f"create it with 'esdedup index create --index {exc.index}', or ingest into it"
    if isinstance(exc, RequestTimedOut):
        return "give a longer --es-timeout (or ESDEDUP_ES_TIMEOUT), up to 3600 seconds"
    if isinstance(exc, WorkerKilled):
        return ("rerun the same command with --resume to continue where the checkpoint stands"
                + (" (with fewer --workers if memory ran out)" if exc.signum == signal.SIGKILL else ""))
    if isinstance(exc, CertificateError):
        if exc.needs == "client_cert":
            return "give the client's certificate with --client-cert and --client-key"
        return "give the CA that signed the server's certificate with --ca-certs (or ESDEDUP_ES_CA_CERTS)"
    return None


def error_line(exc: EsdedupError) -> str:
    """One line for people: the library's message (paths and ids in it escaped) and the flags that fix it."""
    hint = flag_hint(exc)
    return f"Error: {for_people(exc)}" + (f"; {hint}" if hint else "")


# -- partitions --------------------------------------------------------------------------------------------
#: Seconds between two progress lines of a partition.
PROGRESS_EVERY = 5.0


class PartitionLines:
    """What a job run as partition I/P (``dups --partition``, ``label --partition``) prints on stderr for
    people or, with ``--json``, as JSON lines for schedulers: its progress (at most every `PROGRESS_EVERY`
    seconds), its summary, and an error naming the partition and how to rerun it."""

    def __init__(self, partition: str, json_out: bool) -> None:
        import time

        self.partition, self.json_out = partition, json_out
        self._shown = time.monotonic()

    def line(self, event: str, counts: dict[str, Any]) -> None:
        d = {"partition": self.partition, **counts}
        if self.json_out:
            typer.echo(json_text({"event": event, **d}), err=True)
        else:
            typer.echo(f"partition {self.partition}: " + ", ".join(f"{k} {v}" for k, v in d.items()
                                                                   if k != "partition"), err=True)

    def progress(self, counts: dict[str, Any]) -> None:
        import time

        if time.monotonic() - self._shown >= PROGRESS_EVERY:
            self._shown = time.monotonic()
            self.line("progress", counts)

    @contextmanager
    def errors(self) -> Iterator[None]:
        """A library error as the partition's `Error:` line (and ``"event": "error"`` line), then its exit code."""
        try:
            yield
        except EsdedupError as exc:
            rerun = f"rerun the same command with --partition {self.partition} to redo this partition alone"
            if self.json_out:
                typer.echo(json_text({"event": "error", "partition": self.partition, "error": for_people(exc),
                                      "rerun": rerun}), err=True)
            typer.echo(f"{error_line(exc)} (partition {self.partition}: {rerun})", err=True)
            raise typer.Exit(exc.exit_code) from None


@contextmanager
def partition_store(spec: str, json_out: bool, index: str, conn: Connection,
                    thresholds: ThresholdOptions) -> Iterator[tuple["Partition", "Store", PartitionLines]]:
    """The store a job run as partition ``spec`` (I/P) works on, with the partition and its `PartitionLines`: a bad
    I/P is refused before anything is read, and an error is the partition's (`PartitionLines.errors`)."""
    from esdedup.api import refuse_inert_thresholds
    from esdedup.store.partition import Partition

    part = Partition.parse(spec)
    lines = PartitionLines(str(part), json_out)
    with lines.errors(), opened_store(index, conn) as store:
        refuse_inert_thresholds(store, thresholds.overrides())
        yield part, store, lines


F = TypeVar("F", bound=Callable[..., Any])


def handles_errors(fn: F) -> F:
    """Turn library errors into one line on stderr and the error's exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EsdedupError as exc:
            typer.echo(error_line(exc), err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("Interrupted.", err=True)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]
