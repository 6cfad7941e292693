"""The product's one clock: Korean time (Asia/Seoul), timezone-aware everywhere it is written.

Every timestamp the product writes — workbook, database, metadata, alerts, file names — comes from
here, so a server running in UTC (or anywhere else) still labels "KST" correctly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import date, datetime
from zoneinfo import ZoneInfo

from dmf_assets.errors import UserError

#: the IANA name (Dagster partitions and schedules, DuckDB's session time zone, systemd timers)
TIMEZONE_NAME = "Asia/Seoul"
KST = ZoneInfo(TIMEZONE_NAME)


_fixed: datetime | None = None


def now_kst() -> datetime:
    """The current time in Korea, timezone-aware (seconds precision is the caller's choice)."""
    return _fixed.astimezone(KST) if _fixed is not None else datetime.now(KST)


@contextlib.contextmanager
def frozen_at(moment: datetime) -> Iterator[None]:
    """Tests: the product's clock reads `moment` meanwhile — a fake clock for retries and backoffs that
    would otherwise need a sleep of minutes. Nothing outside tests sets it."""
    global _fixed
    previous, _fixed = _fixed, moment
    try:
        yield
    finally:
        _fixed = previous


def today_kst() -> date:
    """Today's date in Korea: the day the 06:00 collection belongs to."""
    return now_kst().date()


#: the first registry day the product runs for (the daily partitions start here)
FIRST_DAY = date(2025, 1, 1)


def outside_run_days(day: date) -> str | None:
    """Why a run — or a fetch, or a rebuild's replay — cannot be for `day` (before FIRST_DAY, or after today in
    Korea: the registry of a day to come does not exist yet), in one line; None when it can."""
    today = today_kst()
    if FIRST_DAY <= day <= today:
        return None
    return (
        f"{day}: 실행할 수 있는 날짜가 아닙니다 — {FIRST_DAY} ~ {today}(오늘, KST) 사이만 됩니다 "
        f"(a day from {FIRST_DAY} to today, {today} KST)"
    )


class ClockBehind(UserError):
    """Today (KST) is earlier than a day the project already holds: the clock was set back. A run now would
    archive and commit "today" before days already recorded — a new base behind the history, false events."""

    def __init__(self, today: date, latest: date, where: str) -> None:
        self.today, self.latest = today, latest
        super().__init__(
            f"시계가 뒤로 갔습니다: 오늘(KST)이 {today}인데 {where}에 {latest}의 기록이 있습니다 — 이 컴퓨터의 날짜·시각과 "
            f"시간대(timedatectl, NTP)를 확인하세요. 아무것도 기록하지 않았습니다 / the clock says today is {today} (KST) "
            f"but {where} already holds {latest}: check the system clock and time zone; nothing was written"
        )


def require_not_behind(latest: date | None, where: str) -> None:
    """Time only moves forward: raise ClockBehind when today (KST) is earlier than `latest`, the newest day that
    `where` (an archive folder, the history database) holds."""
    today = today_kst()
    if latest is not None and today < latest:
        raise ClockBehind(today, latest, where)
