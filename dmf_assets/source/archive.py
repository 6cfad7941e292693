"""The raw archive: every page body as received, gzip'd, per day, plus a manifest.

Layout under `raw_dir` (docs/DOMAIN.md §7):
    YYYY-MM-DD/page-0001.json.gz …   the published archive of the day (+ manifest.json)
    .YYYY-MM-DD.partial/              the fetch in progress (or one that was interrupted)
    .YYYY-MM-DD.lock                  one fetch per day at a time (flock, released if the process dies)
    _requests/YYYY-MM-DD.json         requests sent per host on that (Seoul) day — the daily cap
Every file is written atomically (`fsutil.atomic_write_bytes`: temporary file + fsync + rename, mode
from the umask, no temporary file left on failure), the manifest once per batch of pages and when the
fetch stops, and a finished fetch replaces the day directory in one rename, so a crash never leaves a
half-written archive where a reader expects a finished one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl  # POSIX advisory locks, like the history database's (storage.db)
import gzip
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Generic, TypeVar

import orjson

from dmf_assets.fsutil import atomic_write_bytes
from dmf_assets.source.errors import ArchiveCorrupt, FetchInProgress, RequestCapExceeded, SourceError

MANIFEST = "manifest.json"
PAGE_EXTS = ("json", "xml", "html", "txt")
#: 2: the day's would-be withdrawals are asked about again and the answers archived with it (source.recheck)
MANIFEST_SCHEMA = 2

R = TypeVar("R")
P = TypeVar("P")


# --- the manifest: what every reader of the archive reads ------------------------------------------


def record_of(cls: type[R], doc: Mapping[str, Any], **typed: Any) -> R:
    """A record (frozen dataclass) from its JSON object: the keys it declares, `typed` as given. A key an older
    manifest lacks keeps the field's default — what those archives meant (schema 1, no NODATA pages, …)."""
    declared = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]  # cls is a dataclass
    return cls(**{**{k: v for k, v in doc.items() if k in declared}, **typed})


@dataclass(frozen=True)
class PageEntry:
    """One page as the manifest records it: what came back and where its body is (written in this order)."""

    page_no: int
    status: str = "failed"  # "ok" | "failed"
    rows: int = 0
    total_count: int | None = None
    num_of_rows: int | None = None
    file: str | None = None  # page-0001.json.gz: the body as received (scrubbed of the key), gzip'd
    sha256: str | None = None  # of that body
    bytes: int | None = None  # its size
    charset: str | None = None  # the one its Content-Type named, when not UTF-8: the body is read back with it
    reused: bool = False  # taken from an earlier, interrupted fetch (no request for it)
    error: str | None = None
    error_type: str | None = None  # timeout | connection | http_status | gateway | api_result | malformed | shape
    gateway_error: dict[str, str] | None = None  # return_reason_code, return_auth_msg, err_msg
    nodata: bool = False  # NODATA where no rows were a possible answer: where the list ends, no rows
    attempts: tuple[dict[str, Any], ...] = ()  # one record per request: when, wait, status, size, error …

    @classmethod
    def of_json(cls, doc: Mapping[str, Any]) -> PageEntry:
        return record_of(cls, doc, page_no=int(doc["page_no"]), attempts=tuple(doc.get("attempts") or ()))

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def read_as(self) -> str | None:
        """What the parser is told of the archived body in place of the Content-Type it came with: "json" as its
        file name says (None: the body says), and the charset the answer named (UTF-8 when none)."""
        fmt = "json" if self.file is not None and ".json." in self.file else None
        return fmt if self.charset is None else f"{fmt or ''}; charset={self.charset}"


#: the manifest's keys written once the fetch has stopped (a running manifest has none of them)
_VERDICT = ("totals", "transport_errors", "problems", "unexpected_fields", "missing_fields", "stopped")


@dataclass(frozen=True)
class Manifest:
    """A day's fetch as `manifest.json` records it: written by the fetch (once per batch of pages, and when it
    stops), read by its resume and replay, `dmf diff` and `source.identity`. Fields in the order they are written."""

    schema_version: int = 1  # MANIFEST_SCHEMA when written
    day: str = ""
    status: str | None = None  # running | complete | incomplete | failed
    source: str | None = None  # the endpoint kind
    source_id: str | None = None  # which registry answered (`source.identity`); None: no answer came
    request: Mapping[str, Any] = field(default_factory=dict)  # url, method, params, headers
    num_of_rows: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    round: int = 1
    restarts: tuple[dict[str, Any], ...] = ()
    resumed_from: str | None = None
    politeness: Mapping[str, Any] = field(default_factory=dict)
    pages: tuple[PageEntry, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # the client's own keys (`manifest_extra`), top level
    #: the verdict, once the fetch has stopped: pages, requests, retries, rows_received, rows_after_dedup,
    #: duplicate_rows_dropped, total_count, total_counts (each page's), transport_ok, elapsed_s — its FetchResult's
    totals: Mapping[str, Any] | None = None
    transport_errors: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    unexpected_fields: tuple[str, ...] = ()
    missing_fields: tuple[str, ...] = ()
    stopped: str = ""  # why the fetch stopped before the last page totalCount promises (Korean)
    #: False for a manifest written before `source_id` was (`source.identity.manifest_source` reads those)
    source_recorded: bool = field(default=True, compare=False)

    @classmethod
    def of_json(cls, doc: Mapping[str, Any]) -> Manifest:
        declared = {f.name for f in dataclasses.fields(cls)}
        lists = {k: tuple(doc.get(k) or ()) for k in ("restarts", *_VERDICT[1:-1])}
        maps = {k: doc[k] if isinstance(doc.get(k), dict) else {} for k in ("request", "politeness")}
        return record_of(
            cls,
            doc,
            **lists,
            **maps,
            pages=tuple(PageEntry.of_json(e) for e in doc.get("pages") or () if isinstance(e, dict)),
            totals=doc.get("totals") if isinstance(doc.get("totals"), dict) and doc["totals"] else None,
            extra={k: v for k, v in doc.items() if k not in declared},
            stopped=str(doc.get("stopped") or ""),
            source_id=doc.get("source_id") if isinstance(doc.get("source_id"), str) else None,
            source_recorded="source_id" in doc,
            schema_version=int(doc.get("schema_version") or 1),
        )

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "extra":
                doc.update(self.extra)
            elif f.name != "source_recorded" and (self.totals is not None or f.name not in _VERDICT):
                doc[f.name] = getattr(self, f.name)
        return doc

    @property
    def complete(self) -> bool:
        return self.status == "complete"


def read_manifest_file(path: Path) -> Manifest | None:
    """The manifest at `path`; None when there is none or it cannot be read (a fetch then starts over)."""
    doc = read_json(path)
    return Manifest.of_json(doc) if doc is not None else None


# --- the pages --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArchivedPage(Generic[P]):
    """One archived page read back: its entry, its parsed body (None: NODATA, no rows — or a failed page) or why it
    cannot be read."""

    entry: PageEntry
    parsed: P | None = None
    error: SourceError | None = None  # ArchiveCorrupt (the file) or the parser's error


def read_pages(
    directory: Path, entries: Iterable[PageEntry], parse: Callable[[bytes, str | None], P]
) -> Iterator[ArchivedPage[P]]:
    """Each ok page's body read back from `directory`, checked against its sha256 and parsed with `parse` (a NODATA
    page is checked, not parsed; a failed page has nothing to read). A page that cannot be read comes with its
    error, and each reader decides: the resume asks for it again, the replay and `dmf diff` refuse the day, a
    re-check asks its question again."""
    for entry in entries:
        try:
            body = read_page(directory, entry) if entry.ok else b""
            parsed = None if entry.nodata or not entry.ok else parse(body, entry.read_as)
        except SourceError as exc:
            yield ArchivedPage(entry, error=exc)
        else:
            yield ArchivedPage(entry, parsed)


def read_page(directory: Path, entry: PageEntry) -> bytes:
    """The page's body as archived; ArchiveCorrupt when the file is missing, unreadable or not the recorded one."""
    if entry.file is None:
        raise ArchiveCorrupt(f"{directory.name}: page {entry.page_no} has no archived file")
    try:
        data = gzip.decompress((directory / entry.file).read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ArchiveCorrupt(f"{directory.name}/{entry.file}: unreadable ({exc})") from None
    if entry.sha256 is None:  # every page received ok is archived with its hash: a body nobody can vouch for
        raise ArchiveCorrupt(f"{directory.name}/{entry.file}: the manifest records no sha256 for it")
    if sha256_hex(data) != entry.sha256:
        raise ArchiveCorrupt(f"{directory.name}/{entry.file}: sha256 does not match the manifest")
    return data


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def json_text(obj: Any) -> str:
    """Indented, UTF-8 JSON for people to read. orjson: the manifest is rewritten as the fetch goes, and the
    standard library's indenting encoder is pure Python (≈1 ms a write at 19 pages)."""
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode("utf-8") + "\n"


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None  # a damaged manifest is treated as no manifest: the fetch starts over
    return data if isinstance(data, dict) else None


@contextlib.contextmanager
def _flock(path: Path, *, blocking: bool) -> Iterator[bool]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:  # held for the duration of the block
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def published_days(raw_dir: Path) -> list[date]:
    """The days with a published archive (`YYYY-MM-DD/manifest.json`) under `raw_dir`, in date order."""
    days = []
    for manifest in Path(raw_dir).glob("????-??-??/manifest.json"):
        with contextlib.suppress(ValueError):
            days.append(date.fromisoformat(manifest.parent.name))
    return sorted(days)


def newest_archived_day(raw_dir: Path) -> date | None:
    return max(published_days(raw_dir), default=None)


class DayArchive:
    """The archive of one day under `raw_dir`."""

    def __init__(self, raw_dir: Path, day: date) -> None:
        self.raw_dir = raw_dir
        self.day = day
        iso = day.isoformat()
        self.day_dir = raw_dir / iso
        self.work_dir = raw_dir / f".{iso}.partial"
        self._old_dir = raw_dir / f".{iso}.old"
        self._lock_path = raw_dir / f".{iso}.lock"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with _flock(self._lock_path, blocking=False) as got:
            if not got:
                raise FetchInProgress(
                    f"{self.day}: 이미 다른 수집이 진행 중입니다 / another fetch of this day is running "
                    f"(lock {self._lock_path.name})"
                )
            yield

    @contextlib.contextmanager
    def opened(self) -> Iterator[Manifest | None]:
        """The day locked (`locked`) and recovered (`recover`): its published manifest, None when there is none."""
        with self.locked():
            self.recover()
            yield self.published_manifest()

    def recover(self) -> None:
        """Finish a publish that a crash interrupted between its two renames."""
        if self._old_dir.exists():
            if self.day_dir.exists():
                shutil.rmtree(self._old_dir, ignore_errors=True)
            else:
                os.replace(self._old_dir, self.day_dir)

    # -- manifests ------------------------------------------------------------------------------

    def published_manifest(self) -> Manifest | None:
        return read_manifest_file(self.day_dir / MANIFEST)

    def partial_manifest(self) -> Manifest | None:
        return read_manifest_file(self.work_dir / MANIFEST)

    def write_manifest(self, manifest: Manifest | Mapping[str, Any], text_filter: Callable[[str], str]) -> None:
        """`manifest` written into the working directory, its text through `text_filter` (the key's redactor)."""
        text = text_filter(json_text(manifest.to_json() if isinstance(manifest, Manifest) else manifest))
        atomic_write_bytes(self.work_dir / MANIFEST, text.encode("utf-8"))

    # -- the working directory ------------------------------------------------------------------

    def begin(self, keep: Iterable[tuple[Path, str]] = ()) -> None:
        """Start a fresh working directory holding only the `keep` files (dir, name) reused from
        an earlier fetch. Files already in the working directory are kept in place."""
        keep = list(keep)
        keep_here = {name for d, name in keep if d == self.work_dir}
        if self.work_dir.exists():
            for child in self.work_dir.iterdir():
                if child.name not in keep_here:
                    if child.is_dir():
                        shutil.rmtree(child)
                    else:
                        child.unlink()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        for directory, name in keep:
            if directory != self.work_dir:
                shutil.copy2(directory / name, self.work_dir / name)

    def drop_empty_work(self) -> None:
        """Remove the working directory when it holds nothing (a fetch refused at its first answer)."""
        with contextlib.suppress(OSError):
            self.work_dir.rmdir()

    def write_page(self, page_no: int, body: bytes, fmt: str) -> str:
        """Gzip one page body into the working directory; returns the file name."""
        stem = f"page-{page_no:04d}"
        name = f"{stem}.{fmt}.gz"
        atomic_write_bytes(self.work_dir / name, gzip.compress(body, compresslevel=6, mtime=0))
        for other in PAGE_EXTS:  # an earlier attempt may have left another format for this page
            if other != fmt:
                with contextlib.suppress(FileNotFoundError):
                    (self.work_dir / f"{stem}.{other}.gz").unlink()
        return name

    def publish(self) -> Path:
        """Replace the day directory with the working directory (rename, rename, delete)."""
        if self.day_dir.exists():
            if self._old_dir.exists():
                shutil.rmtree(self._old_dir)
            os.replace(self.day_dir, self._old_dir)
        os.replace(self.work_dir, self.day_dir)
        if self._old_dir.exists():
            shutil.rmtree(self._old_dir, ignore_errors=True)
        return self.day_dir


class RequestCounter:
    """Requests sent per host and (Seoul) calendar day, shared by every process using `raw_dir`."""

    def __init__(self, raw_dir: Path) -> None:
        self.dir = raw_dir / "_requests"

    def count(self, host: str, today: date) -> int:
        data = read_json(self.dir / f"{today.isoformat()}.json") or {}
        return int((data.get("hosts") or {}).get(host, 0))

    def take(self, host: str, cap: int, today: date) -> int:
        """Count one request; raises RequestCapExceeded (without counting) when the cap is reached."""
        path = self.dir / f"{today.isoformat()}.json"
        with _flock(self.dir / ".lock", blocking=True):
            data = read_json(path) or {}
            hosts = dict(data.get("hosts") or {})
            used = int(hosts.get(host, 0))
            if used >= cap:
                raise RequestCapExceeded(host, cap, used)
            hosts[host] = used + 1
            atomic_write_bytes(path, json_text({"day": today.isoformat(), "hosts": hosts}).encode("utf-8"))
            return used + 1
