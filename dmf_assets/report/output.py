"""Writing a workbook file: the folder check and the product's one atomic write."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from dmf_assets.errors import UserError
from dmf_assets.faultpoints import crash_point
from dmf_assets.fsutil import atomic_output

#: a workbook's media type, wherever one is sent (a mail's attachment, the web page's download)
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


class WorkbookError(UserError):
    """The workbook could not be written (folder not writable, disk full, …): a one-line message."""


def ensure_dir(reports_dir: Path) -> None:
    try:
        reports_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkbookError(f"리포트 폴더를 만들 수 없습니다: {reports_dir} ({exc.strerror or exc})") from exc
    if not os.access(reports_dir, os.W_OK | os.X_OK):
        raise WorkbookError(f"리포트 폴더에 쓸 수 없습니다 (권한 없음): {reports_dir}")


def atomic_write(target: Path, write: Callable[[Path], object]) -> None:
    """The product's one atomic write (umask permissions: colleagues can open the shared folder's
    workbooks; fsync; the temp file removed on any failure). What `write` returns is ignored."""
    try:
        with atomic_output(target) as tmp:
            write(tmp)
            crash_point("workbook_write")  # crash-safety tests: the old workbook must survive this
    except OSError as exc:
        raise WorkbookError(f"리포트 파일을 쓸 수 없습니다: {target} ({exc.strerror or exc})") from exc
