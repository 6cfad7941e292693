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

Also here, because every writer meets them: the one line a person reads when the file system refuses a
write (`refused_write_line`: disk full, read-only, no permission), and the rule for a file or folder the
user names on the command line (`output_file`, `output_folder`): a file is not a folder, a folder is not a
file, a file written is a new path or a regular file (a link, a device or a FIFO is refused, never replaced),
and the folder it goes into exists and is writable — DMF Watch creates no folder outside the project
unasked.
"""

from __future__ import annotations

import ast
import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from dmf_assets.errors import UserError
from dmf_assets.korean import josa

TEMP_SUFFIX = ".tmp"
NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # no space, quota, file-size limit: the write cannot fit
CANNOT_WRITE = (errno.EROFS, errno.EACCES, errno.EPERM)


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
        elif not isinstance(exc, OSError) and (code := _errno_in_text(str(exc))) is not None:
            # a library's own error for a refused write (polars: "... (os error 28)"): the same OSError as
            # Python's own writers raise, naming the file, so every caller can say what happened and where
            raise OSError(code, os.strerror(code), str(path)) from exc
        raise
    fsync_dir(path.parent)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_output(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    atomic_write_bytes(path, text.encode(encoding))


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC (no space), EDQUOT (quota) or EFBIG (file-size limit): the write cannot fit."""
    return isinstance(exc, OSError) and exc.errno in NO_SPACE


def _errno_in_text(text: str) -> int | None:
    """The refused-write errno a library wrote into its message: Rust's "(os error 28)", or the words."""
    m = re.search(r"\(os error (\d+)\)", text)
    code = int(m[1]) if m else errno.ENOSPC if "No space left on device" in text else None
    return code if code in NO_SPACE + CANNOT_WRITE else None


def refused_write_line(code: int | None, path: str | Path | None) -> str | None:
    """The one line for a write the file system refused (errno `code` at `path`), or None for other errors.
    Permission errors are only this when a file is named: EPERM also comes from signals and sockets."""
    where = str(path) if path else "(위치 불명 / location unknown)"
    if code in NO_SPACE:
        return (
            f"디스크 공간이 부족합니다 (No space left on device): {where} — 공간을 확보한 뒤 다시 실행하세요 "
            f"(`dmf doctor`, `dmf prune`) / free some space and run again"
        )
    if code == errno.EROFS:
        return (
            f"읽기 전용 파일 시스템이라 쓸 수 없습니다 (Read-only file system): {where} — 쓰기 가능하게 다시 "
            f"마운트하거나 config의 [paths]를 쓸 수 있는 폴더로 바꾸세요 / remount it read-write or point [paths] "
            f"at a writable folder"
        )
    if code in (errno.EACCES, errno.EPERM) and path:
        return (
            f"권한이 없습니다 (Permission denied): {where} — 이 사용자(uid {os.getuid()})에게 권한을 주거나 config의 "
            f"[paths]를 바꾸세요 / give this user access, or point [paths] elsewhere"
        )
    return None


#: Python's own text for an OSError: "[Errno 28] No space left on device: '/data/raw/x'" (the name is a repr)
_OS_ERROR_TEXT = re.compile(r"""\[Errno (\d+)\] [^:\n]*(?:: ('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"))?""")


def _refused_write_in_text(text: str) -> tuple[int, str | None] | None:
    if m := _OS_ERROR_TEXT.search(text):
        return int(m[1]), ast.literal_eval(m[2]) if m[2] else None
    code = _errno_in_text(text)
    return (code, None) if code is not None else None


def refused_write_in_texts(texts: list[str]) -> str | None:
    """`refused_write_line` for an error known only by its texts, outermost cause first — a step's failure as
    Dagster records it ("OSError: [Errno 28] No space left on device: '/data/raw/…'"): from the first text
    that names the file (a wrapper may repeat the words without it), else the first that shows the errno."""
    found = [r for r in map(_refused_write_in_text, texts) if r is not None and refused_write_line(*r)]
    named = [r for r in found if r[1]]
    return refused_write_line(*(named or found)[0]) if found else None


def _absolute(value: str | Path, what: str) -> Path:
    if not str(value).strip():
        raise UserError(f"빈 경로입니다 — {what} 경로를 쓰세요 / empty path")
    return Path(value).expanduser().absolute()


def _must_exist(folder: Path, path: Path) -> None:
    if not folder.is_dir():
        raise UserError(
            f"{path}: {josa(f'폴더 {folder}', '이/가')} 없습니다 — 먼저 만드세요 (DMF Watch는 요청 없이 폴더를 "
            f"만들지 않습니다) / the folder {folder} does not exist; create it first"
        )


def _must_write_into(folder: Path, path: Path) -> None:
    _must_exist(folder, path)
    if not os.access(folder, os.W_OK) or os.statvfs(folder).f_flag & os.ST_RDONLY:
        raise UserError(
            f"{path}: 폴더 {folder}에 쓸 수 없습니다 (권한 또는 읽기 전용) / cannot write into {folder} "
            f"(permission, or a read-only file system)"
        )


def file_path(value: str | Path) -> Path:
    """A file the user names (`--database`): not a folder, in a folder that exists. Returns the absolute path."""
    path = _absolute(value, "파일")
    if path.is_dir():
        raise UserError(f"{path}: 폴더입니다 — 그 안의 파일 이름까지 쓰세요 / is a folder; give a file name inside it")
    _must_exist(path.parent, path)
    return path


#: what a path that is no regular file is, by its file type (os.lstat): a write there would replace it
_NOT_A_FILE = {
    stat.S_IFCHR: ("문자 장치", "a character device"),
    stat.S_IFBLK: ("블록 장치", "a block device"),
    stat.S_IFIFO: ("FIFO(이름 있는 파이프)", "a FIFO"),
    stat.S_IFSOCK: ("소켓", "a socket"),
}


def output_file(value: str | Path) -> Path:
    """A file the user asked a command to write (`--out`): a new path or a regular file (never a symbolic link,
    a device, a FIFO or a socket — the atomic write would replace the link or the node itself), not a folder,
    in a writable folder that exists. Raises UserError saying what is wrong and what to do."""
    path = _absolute(value, "파일")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise UserError(f"{path}: 확인할 수 없습니다 / cannot be checked: {exc.strerror or exc}") from None
    if mode is not None and stat.S_ISLNK(mode):
        raise UserError(
            f"{path}: 심볼릭 링크입니다 — 링크 자체가 새 파일로 바뀌게 되므로 쓰지 않습니다; 링크가 가리키는 실제 파일 "
            f"경로({os.path.realpath(path)})나 새 파일 이름을 쓰세요 / is a symbolic link: give the real file's path "
            f"or a new file name"
        )
    if mode is not None and (kind := _NOT_A_FILE.get(stat.S_IFMT(mode))):
        raise UserError(
            f"{path}: 일반 파일이 아니라 {kind[0]}입니다 — 그대로 두고 쓰지 않습니다; 새 파일 이름을 쓰세요 / is "
            f"{kind[1]}, not a regular file: left as it is; give a new file name"
        )
    path = file_path(path)
    _must_write_into(path.parent, path)
    return path


def output_folder(value: str | Path) -> Path:
    """A folder the user asked a command to write into: created when missing, but only inside a folder that exists."""
    path = _absolute(value, "폴더")
    if path.exists() and not path.is_dir():
        raise UserError(f"{path}: 폴더가 아니라 파일입니다 / is a file, not a folder")
    _must_write_into(path if path.is_dir() else path.parent, path)
    return path


def leaked_temp_files(*folders: Path) -> list[Path]:
    """`.*.tmp` files in `folders` and their direct subfolders (a day's staging, a partial fetch) — what
    killed writers left behind; sorted. Not deeper: a folder may sit beside a whole virtualenv."""
    found: set[Path] = set()
    for folder in folders:
        if Path(folder).is_dir():
            for pattern in (f".*{TEMP_SUFFIX}", f"*/.*{TEMP_SUFFIX}"):
                found.update(p for p in Path(folder).glob(pattern) if p.is_file() and not p.is_symlink())
    return sorted(found)
