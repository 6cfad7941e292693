"""The product's one clock: Korean time (Asia/Seoul), timezone-aware everywhere it is written.

Every timestamp the product writes — workbook, database, metadata, alerts, file names — comes from
here, so a server running in UTC (or anywhere else) still labels "KST" correctly.
"""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

#: the IANA name (Dagster partitions and schedules, DuckDB's session time zone, systemd timers)
TIMEZONE_NAME = "Asia/Seoul"
KST = ZoneInfo(TIMEZONE_NAME)


def now_kst() -> datetime:
    """The current time in Korea, timezone-aware (seconds precision is the caller's choice)."""
    return datetime.now(KST)


def today_kst() -> date:
    """Today's date in Korea: the day the 06:00 collection belongs to."""
    return now_kst().date()
