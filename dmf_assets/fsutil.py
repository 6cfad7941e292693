"""The product's one way to replace a file: atomically, durably, and without leaving litter.

`atomic_output(path)` yields a temporary path in the same folder (same file system, so the final
`os.replace` is atomic) for writers that want a path (parquet, openpyxl, shutil.copyfile);
`atomic_write_bytes` / `atomic_write_text` wrap it for data already in memory. Every call:
  * creates the temporary file `.<name>.<pid>.<random>.tmp` with mode 0666 minus the umask — the
    same permissions as any file the user creates (group-readable under the usual 022/002), unlike
    `tempfile.mkstemp`'s 0600 that kept colleagues out of shared report folders;
  * fsyncs the file, renames it over `path`, then fsyncs the folder (the rename survives a power cut);
  * removes the temporary file on every failure — ENOSPC, EFBIG, an exception in the writer,
    KeyboardInterrupt — so a full disk is not made fuller by our own leftovers.
Readers therefore see the old file or the new one, never half of one. `leaked_temp_files` finds
what a SIGKILLed writer (the one case no code can clean up) left behind, for `dmf doctor`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

TEMP_SUFFIX = ".tmp"


def _temp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write; on normal exit it replaces `path`, on any error it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_path(path)
    # os.open applies the umask to 0o666 (mkstemp would force 0600); O_EXCL: never reuse a name
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield tmp
        with open(tmp, "rb+") as fh:  # the writer may have closed its own handle without fsync
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = str(path)  # write() on a descriptor names no file; "disk full" should
        raise
    fsync_dir(path.parent)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_output(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    atomic_write_bytes(path, text.encode(encoding))


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC (no space), EDQUOT (quota) or EFBIG (file-size limit): the write cannot fit."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def leaked_temp_files(*folders: Path) -> list[Path]:
    """`.*.tmp` files in `folders` and their direct subfolders (a day's staging, a partial fetch) — what
    killed writers left behind; sorted. Not deeper: a folder may sit beside a whole virtualenv."""
    found: set[Path] = set()
    for folder in folders:
        if Path(folder).is_dir():
            for pattern in (f".*{TEMP_SUFFIX}", f"*/.*{TEMP_SUFFIX}"):
                found.update(p for p in Path(folder).glob(pattern) if p.is_file() and not p.is_symlink())
    return sorted(found)
