"""One partition per registry day, in Korean time.

`end_offset=1` makes today's partition available from 00:00 KST, so the 06:00 schedule collects
the registry of the day it runs on (and the 09:00 freshness deadline refers to that same day).
"""

from __future__ import annotations

import dagster as dg

from dmf_assets.clock import FIRST_DAY, TIMEZONE_NAME

daily_partitions = dg.DailyPartitionsDefinition(start_date=FIRST_DAY.isoformat(), timezone=TIMEZONE_NAME, end_offset=1)
