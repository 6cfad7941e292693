"""One partition per registry day, in Korean time.

`end_offset=1` makes today's partition available from 00:00 KST, so the 06:00 schedule collects
the registry of the day it runs on (and the 09:00 freshness deadline refers to that same day).
"""

from __future__ import annotations

from datetime import date

import dagster as dg

from dmf_assets.clock import TIMEZONE_NAME

FIRST_DAY = "2025-01-01"

daily_partitions = dg.DailyPartitionsDefinition(start_date=FIRST_DAY, timezone=TIMEZONE_NAME, end_offset=1)


def partition_range() -> tuple[date, date]:
    """The first and the last day a run can be launched for (today in Korea is the last)."""
    keys = daily_partitions.get_partition_keys()
    return date.fromisoformat(keys[0]), date.fromisoformat(keys[-1])
