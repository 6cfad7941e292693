"""One partition per registry day, and the product's daily schedules, in Korean time.

`end_offset=1` makes today's partition available from 00:00 KST, so the 06:00 schedule collects
the registry of the day it runs on (and the 09:00 freshness deadline refers to that same day).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

import dagster as dg

from dmf_assets.clock import FIRST_DAY, KST, TIMEZONE_NAME

daily_partitions = dg.DailyPartitionsDefinition(start_date=FIRST_DAY.isoformat(), timezone=TIMEZONE_NAME, end_offset=1)


def daily_schedule(
    job: dg.UnresolvedAssetJobDefinition | dg.JobDefinition, cron_schedule: str, description: str
) -> Callable[[Callable[..., Any]], dg.ScheduleDefinition]:
    """Every schedule of the product: once a day in Korean time, running from the moment the code location loads."""
    return dg.schedule(
        job=job,
        cron_schedule=cron_schedule,
        execution_timezone=TIMEZONE_NAME,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=description,
    )


def scheduled_day(context: dg.ScheduleEvaluationContext) -> date:
    """The Korean day a schedule's tick is for."""
    return context.scheduled_execution_time.astimezone(KST).date()
