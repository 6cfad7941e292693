"""The product's one clock: Korean time (Asia/Seoul), timezone-aware everywhere it is written.

Every timestamp the product writes — workbook, database, metadata, alerts, file names — comes from
here, so a server running in UTC (or anywhere else) still labels "KST" correctly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import date, datetime
from zoneinfo import ZoneInfo

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
