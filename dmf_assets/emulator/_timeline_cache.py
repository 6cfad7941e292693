"""A per-user cache of the emulator's built history: the history is a pure function of the seed and
of the emulator's code, and building it takes ≈1.3 s of CPU. Every process that serves emulator days
pays that cost: a `dmf run`, each daemon run, each test subprocess. Reading the cached copy takes ≈0.03 s.

The file lives under `$XDG_CACHE_HOME/dmf-watch/emulator/` (default `~/.cache/...`). Its name carries
a fingerprint of the Python version and of every emulator source and seed file, so a code change never
reads an old history. Histories of other code versions stay while they are in use (another checkout, a
branch switched back and forth: deleting them made two checkouts rebuild each other's history on every run)
and are removed once unused for `KEEP_UNUSED_DAYS`. The data is plain lists and tuples, pickled. It is
read only from a folder owned by this user and writable by no one else. A missing, foreign or unreadable
file is rebuilt. If the folder cannot be written, the history is built in memory as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

from dmf_assets.domain import model
from dmf_assets.fsutil import atomic_write_bytes

_FORMAT = 1
#: a history no run has read for this long is removed when another one is written
KEEP_UNUSED_DAYS = 7
#: (per entity: first days of its versions, the versions' rows) and the per-day action log
Payload = tuple[list[tuple[list[int], list]], list[list[str]]]


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dmf-watch" / "emulator"


def fingerprint() -> str:
    """Python version + every file of the emulator package (code and seed rows) + the API field list."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256(f"{_FORMAT}|{sys.version}".encode())
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in [*files, Path(model.__file__)]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:20]


def _private_dir(folder: Path) -> bool:
    try:
        st = folder.stat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def load_or_build(seed: int, build: Callable[[], Payload], cache_dir: Path | None = None) -> Payload:
    folder = cache_dir or default_cache_dir()
    path = folder / f"timeline-{seed}-{fingerprint()}.pickle"
    if _private_dir(folder) and path.is_file():
        try:
            with open(path, "rb") as fh:
                payload = pickle.load(fh)
        except Exception:  # noqa: BLE001 - a damaged cache file is rebuilt
            pass
        else:
            with contextlib.suppress(OSError):
                os.utime(path)  # in use: other code's writes keep it (KEEP_UNUSED_DAYS)
            return payload
    payload = build()
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if _private_dir(folder):
            unused_since = time.time() - KEEP_UNUSED_DAYS * 86400
            for other in folder.glob(f"timeline-{seed}-*.pickle"):  # other code's histories, unused for a week
                with contextlib.suppress(OSError):
                    if other != path and other.stat().st_mtime < unused_since:
                        other.unlink()
            atomic_write_bytes(path, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        pass  # a read-only home: the history stays in memory only
    return payload
