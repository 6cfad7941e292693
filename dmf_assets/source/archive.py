"""The raw archive: every page body as received, gzip'd, per day, plus a manifest.

Layout under `raw_dir` (docs/DOMAIN.md §7):
    YYYY-MM-DD/page-0001.json.gz …   the published archive of the day (+ manifest.json)
    .YYYY-MM-DD.partial/              the fetch in progress (or one that was interrupted)
    .YYYY-MM-DD.lock                  one fetch per day at a time (flock, released if the process dies)
    _requests/YYYY-MM-DD.json         requests sent per host on that (Seoul) day — the daily cap
Every file is written atomically (`fsutil.atomic_write_bytes`: temporary file + fsync + rename, mode
from the umask, no temporary file left on failure), the manifest after every page, and a
finished fetch replaces the day directory in one rename, so a crash never leaves a half-written
archive where a reader expects a finished one.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import orjson

from dmf_assets.fsutil import atomic_write_bytes
from dmf_assets.source.errors import ArchiveCorrupt, FetchInProgress, RequestCapExceeded

try:  # POSIX advisory locks; on other systems the lock degrades to an exclusive-create file
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    _HAS_FCNTL = False
else:
    _HAS_FCNTL = True

MANIFEST = "manifest.json"
PAGE_EXTS = ("json", "xml", "html", "txt")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def json_text(obj: Any) -> str:
    """Indented, UTF-8 JSON for people to read. orjson: the manifest is rewritten after every page, and the
    standard library's indenting encoder is pure Python (≈1 ms a write at 19 pages)."""
    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode("utf-8") + "\n"


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, json_text(obj).encode("utf-8"))


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None  # a damaged manifest is treated as no manifest: the fetch starts over
    return data if isinstance(data, dict) else None


@contextlib.contextmanager
def _flock(path: Path, *, blocking: bool) -> Iterator[bool]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+")  # noqa: SIM115 - held for the duration of the block
    try:
        if not _HAS_FCNTL:  # pragma: no cover
            yield True
            return
        flags = fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB)
        try:
            fcntl.flock(fh.fileno(), flags)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    finally:
        fh.close()


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

    def recover(self) -> None:
        """Finish a publish that a crash interrupted between its two renames."""
        if self._old_dir.exists():
            if self.day_dir.exists():
                shutil.rmtree(self._old_dir, ignore_errors=True)
            else:
                os.replace(self._old_dir, self.day_dir)

    # -- manifests ------------------------------------------------------------------------------

    def published_manifest(self) -> dict[str, Any] | None:
        return read_json(self.day_dir / MANIFEST)

    def partial_manifest(self) -> dict[str, Any] | None:
        return read_json(self.work_dir / MANIFEST)

    def write_manifest(self, manifest: dict[str, Any], text_filter: Callable[[str], str] | None = None) -> None:
        text = json_text(manifest)
        if text_filter is not None:
            text = text_filter(text)
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

    # -- reading --------------------------------------------------------------------------------

    @staticmethod
    def read_page(directory: Path, name: str, sha256: str | None) -> bytes:
        try:
            data = gzip.decompress((directory / name).read_bytes())
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise ArchiveCorrupt(f"{directory.name}/{name}: unreadable ({exc})") from None
        if sha256 is not None and sha256_hex(data) != sha256:
            raise ArchiveCorrupt(f"{directory.name}/{name}: sha256 does not match the manifest")
        return data


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
            atomic_write_json(path, {"day": today.isoformat(), "hosts": hosts})
            return used + 1
