"""Which files the page serves from reports/: the product's workbooks by name, and nothing else.

* only names of the product's workbooks (`DMF_리포트_YYYY-MM-DD.xlsx`, `DMF_리포트_최신.xlsx`,
  `DMF_기간리포트_YYYY-MM-DD_YYYY-MM-DD.xlsx`) directly inside the reports folder — no dotfiles, no other
  extensions, no subfolders; a symlink only if it resolves to a file inside the folder;
* the request path is judged as it arrived (`raw_path`, before any decoding): NUL and other control
  characters, bad percent-encoding, non-UTF-8, `..`, `/` or `\\` inside the name, a name over 255 bytes —
  each a 4xx, never a file name;
* the server refuses to start on an empty reports_dir or one that holds the project (it would be `.env`'s folder).
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from http import HTTPStatus
from pathlib import Path
from urllib.parse import unquote

from dmf_assets.clock import KST
from dmf_assets.errors import UserError
from dmf_assets.settings import PROJECT_ROOT

_DAY = r"\d{4}-\d{2}-\d{2}"
#: the file names the product writes into reports/ (report/workbook.py and the period report)
REPORT_NAME = re.compile(rf"^DMF_(?:리포트_(?:{_DAY}|최신)|기간리포트_{_DAY}_{_DAY})\.xlsx$")
MAX_NAME_BYTES = 255  # NAME_MAX of Linux file systems
_BAD_PERCENT = re.compile(rb"%(?![0-9A-Fa-f]{2})")


def is_report_name(name: str) -> bool:
    return bool(REPORT_NAME.match(name))


def servable(root: Path, name: str) -> Path | None:
    """The file to send for `name`, or None: a report name, a regular file, resolving inside `root`."""
    if not is_report_name(name):
        return None
    target = root / name
    try:
        resolved = target.resolve(strict=True)
    except (OSError, RuntimeError):  # missing, dangling symlink, symlink loop
        return None
    return resolved if resolved.parent == root and resolved.is_file() else None


def requested_name(raw_name: bytes) -> str | tuple[int, str]:
    """The workbook name a request asks for (the raw bytes after `/reports/`, percent-encoded as they
    arrived), or (4xx status, why) for a path that is malformed before it is ever a file name."""
    if _BAD_PERCENT.search(raw_name):
        return HTTPStatus.BAD_REQUEST, "잘못된 퍼센트 인코딩 / bad percent-encoding"
    try:
        ascii_name = raw_name.decode("ascii")
    except UnicodeDecodeError:  # a request line carries only ASCII: other characters arrive percent-encoded
        return HTTPStatus.BAD_REQUEST, "퍼센트 인코딩되지 않은 경로 / path not percent-encoded"
    try:
        name = unquote(ascii_name, errors="strict")
    except UnicodeDecodeError:
        return HTTPStatus.BAD_REQUEST, "UTF-8이 아닌 경로 / path is not UTF-8"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return HTTPStatus.BAD_REQUEST, "제어 문자가 든 경로 / control character in path"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return HTTPStatus.REQUEST_URI_TOO_LONG, f"파일 이름이 너무 깁니다 / name longer than {MAX_NAME_BYTES} bytes"
    if "/" in name or "\\" in name or ".." in name:
        return HTTPStatus.NOT_FOUND, "파일이 없습니다 / not found"
    return unicodedata.normalize("NFC", name)


@dataclass(frozen=True)
class Workbook:
    name: str
    size: int
    modified: datetime


def listed_workbooks(root: Path) -> list[Workbook]:
    """The servable workbooks of `root`, newest name first."""
    found = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name, reverse=True)
    except OSError:
        return []
    for entry in entries:
        target = servable(root, entry.name)
        if target is not None:
            st = target.stat()
            found.append(Workbook(entry.name, st.st_size, datetime.fromtimestamp(st.st_mtime, KST)))
    return found


def check_reports_dir(reports_dir: str | Path) -> Path:
    """The resolved reports folder, or UserError when serving it would expose more than workbooks."""
    if not str(reports_dir).strip():
        raise UserError(
            "paths.reports_dir가 비어 있어 웹 페이지를 시작하지 않습니다 (프로젝트 폴더 전체가 됨) / reports_dir is "
            'empty, which would be the whole project folder: set paths.reports_dir = "reports" in config/dmf.local.toml'
        )
    root = Path(reports_dir).resolve()
    if root == PROJECT_ROOT or root in PROJECT_ROOT.parents or root == Path(root.anchor):
        raise UserError(
            f"리포트 폴더 {root}에는 프로젝트 파일(.env 등)이 있어 웹 페이지를 시작하지 않습니다 / refusing to serve {root}: "
            f'it holds the project (and its .env); set paths.reports_dir to a folder of its own, e.g. "reports"'
        )
    return root
