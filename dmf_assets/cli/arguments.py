"""The argument types every `dmf` command shares: each value is checked while the command line is parsed,
before anything runs, and a bad one is one `dmf:` line naming the option (cli.main prints it, exit 2).

Numbers are bounded to what the code can represent (a port 1–65535, a finite number of seconds, a day
count ≤ settings.MAX_DAYS); dates are real dates in a range where adding a century stays a date; files
and folders the user names follow `fsutil.output_file` / `output_folder` (never a folder for a file,
no folder created outside the project unasked).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import socket
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import TypeVar

from dmf_assets.errors import UserError
from dmf_assets.fsutil import file_path, output_file, output_folder
from dmf_assets.korean import josa

#: dates a command accepts: any day a person could mean, far enough from Python's date.min/max that the
#: product's date arithmetic (≤ settings.MAX_DAYS days either way) never overflows
FIRST_DAY, LAST_DAY = date(1900, 1, 1), date(2999, 12, 31)

T = TypeVar("T")


def _checked(check: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse type from a check raising UserError: argparse then names the option in the message."""

    def convert(text: str) -> T:
        try:
            return check(text)
        except UserError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = check.__name__  # argparse shows it for errors it words itself
    return convert


@contextlib.contextmanager
def said_in_one_line(*kinds: type[Exception]) -> Iterator[None]:
    """An error of these kinds (a subsystem's refusal: a busy database, an unreadable dump) is the command's one
    `dmf:` line, its own text (cli.main prints it, exit 2)."""
    try:
        yield
    except kinds as exc:
        raise UserError(str(exc)) from None


def _parsed(parse: Callable[[str], T], text: str, refusal: str) -> T:
    """`parse(text)`, or the refusal said in the product's words instead of Python's ValueError."""
    try:
        return parse(text)
    except ValueError:
        raise UserError(refusal) from None


def _day(text: str) -> date:
    refusal = f"날짜는 YYYY-MM-DD 형식의 있는 날짜여야 합니다 (date must be a real date YYYY-MM-DD): {text!r}"
    value = _parsed(date.fromisoformat, text.strip(), refusal)
    if not FIRST_DAY <= value <= LAST_DAY:
        raise UserError(
            f"날짜는 {FIRST_DAY} ~ {LAST_DAY} 사이여야 합니다 (date must be {FIRST_DAY}..{LAST_DAY}): {text!r}"
        )
    return value


day = _checked(_day)


def whole(low: int, high: int, what_ko: str, what_en: str) -> Callable[[str], int]:
    """A whole number low..high (days, minutes, rows)."""

    def check(text: str) -> int:
        n = _parsed(int, text, f"{josa(what_ko, '은/는')} 정수입니다 (a whole {what_en}): {text!r}")
        if not low <= n <= high:
            raise UserError(
                f"{josa(what_ko, '은/는')} {low}–{high} 사이여야 합니다 ({what_en} must be {low}–{high}): {n}"
            )
        return n

    check.__name__ = f"whole {what_en}"
    return _checked(check)


port = whole(1, 65535, "포트", "port number")
#: a port to listen on, where 0 asks the system for any free one (the server prints which)
listen_port = whole(0, 65535, "포트", "port number")


def seconds(high: float) -> Callable[[str], float]:
    """A finite number of seconds 0..high (a lock wait): inf or nan would end in OverflowError."""

    def check(text: str) -> float:
        value = _parsed(float, text, f"초는 숫자입니다 (seconds must be a number): {text!r}")
        if not math.isfinite(value) or not 0 <= value <= high:
            raise UserError(f"초는 0–{high:g} 사이의 유한한 숫자여야 합니다 (seconds must be 0–{high:g}): {text!r}")
        return value

    check.__name__ = "seconds"
    return _checked(check)


def _existing_folder(text: str) -> Path:
    path = Path(text).expanduser().absolute()
    if not path.is_dir():
        what = (
            "폴더가 아니라 파일입니다 / is a file, not a folder"
            if path.exists()
            else "폴더가 없습니다 / no such folder"
        )
        raise UserError(f"{path}: {what}")
    return path


#: a file to write (--out): not a folder, inside a writable folder that exists
out_file = _checked(output_file)
#: a file to read or write (--database): not a folder, inside a folder that exists
file_in_existing_folder = _checked(file_path)
#: a folder to write into (created when missing, but only inside an existing folder)
out_folder = _checked(output_folder)
#: a folder that must exist already (--root, --dir)
existing_folder = _checked(_existing_folder)


def _listen_host(text: str) -> str:
    """An address this machine can listen on (checked by binding a free port there)."""
    if not text.strip():
        raise UserError("빈 주소입니다 — 예: 127.0.0.1 (empty host; e.g. 127.0.0.1)")
    try:
        infos = socket.getaddrinfo(text, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as probe:
            probe.bind(infos[0][4])
    except OSError as exc:  # gaierror: no such name; EADDRNOTAVAIL: not an address of this machine
        raise UserError(
            f"이 컴퓨터에서는 {text!r} 주소로 서버를 열 수 없습니다 (cannot listen on {text!r}: "
            f"{exc.strerror or exc}) — 예: 127.0.0.1 또는 0.0.0.0"
        ) from None
    return text


listen_host = _checked(_listen_host)


#: `--fault` of `dmf run / backfill / fetch` against another source than the in-process emulator
FAULT_NEEDS_THE_EMULATOR = (
    "--fault는 프로세스 안의 에뮬레이터(base_url = emulator://local)에서만 쓸 수 있습니다 / --fault works only with the "
    "in-process emulator (base URL emulator://local); for a loopback server pass --fault to `dmf emulator serve`"
)
