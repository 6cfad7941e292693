"""Which alerts a sensor tick raises, read from Dagster's records; `notify` sends each (day, kind) once.

Rejected day (saying whether and when a same-morning retry follows), retry succeeded, retries
exhausted, failed run, run time limit exceeded, request cap, three rejected days in a row, a run
≥ 3× slower than the median of the last 14, and the 09:00 KST overdue report. (The watchlist hit
and the withdrawal share are raised with the day's workbook delivery, in `xlsx_report`.)
"""

from __future__ import annotations

from datetime import datetime

import dagster as dg
from dagster._core.events import DagsterEventType

from dmf_assets import notify
from dmf_assets.clock import KST
from dmf_assets.orchestration.followups import TRANSIENT_GATES, RetryPolicy, is_rejection, states_of


def _run_failure(instance: dg.DagsterInstance, run_id: str) -> tuple[str, str] | None:
    """(step, first line of the error) of a step that failed for a reason other than a gate check."""
    for record in instance.all_logs(run_id, of_type=DagsterEventType.STEP_FAILURE):
        data = record.dagster_event.event_specific_data
        error = getattr(data, "error", None)
        user = getattr(data, "user_failure_data", None)
        if is_rejection(error, user):
            continue
        text = (user.description if user is not None and user.description else None) or (error.message if error else "")
        return record.dagster_event.step_key or "", (text or "").strip().splitlines()[0] if text else ""
    for record in instance.all_logs(run_id, of_type=DagsterEventType.RUN_FAILURE):
        if "maximum runtime" in (record.message or ""):
            return "", record.message
    return None


def alerts_for_tick(
    instance: dg.DagsterInstance, days: list[str], *, retry: RetryPolicy, settings, busy: set[str],
    states: dict | None = None,
) -> list[notify.Alert]:
    """`states`: `followups.day_states` of (at least) these days, when the caller has read them already."""
    todo = sorted(d for d in days if d not in busy)
    states = states_of(instance, todo, states)
    alerts: list[notify.Alert] = []
    statuses: dict[str, str] = {}
    for day in todo:
        state = states[day]
        record = state.rejection
        rejected = record.metadata if record is not None else None
        d = state.diffed
        n = state.retries
        if rejected is not None:
            statuses[day] = "rejected"
            gate = rejected.get("rejected_gate")
            transient = gate in TRANSIENT_GATES
            if transient and n >= retry.attempts > 0:
                alerts.append(notify.alert_retries_exhausted(day, attempts=n, gate=gate,
                                                             comparison_base=rejected.get("comparison_base"),
                                                             last_error=str(rejected.get("reason") or "")))
            else:
                when = datetime.fromtimestamp(record.timestamp, KST) + retry.interval
                retry_at = when.isoformat(timespec="minutes") if transient and n < retry.attempts else None
                alerts.append(notify.alert_rejected_from_metadata(day, rejected, retry_at=retry_at, attempt=n + 1,
                                                                  attempts_max=retry.attempts))
        elif d is not None and d.metadata.get("status") in ("accepted", "baseline"):
            statuses[day] = d.metadata["status"]
            if n > 0:
                alerts.append(notify.alert_retry_succeeded(day, attempt=n, status=d.metadata["status"]))
        latest = state.runs[:1]
        if latest and latest[0].dagster_run.status == dg.DagsterRunStatus.FAILURE:
            failure = _run_failure(instance, latest[0].dagster_run.run_id)
            if failure is not None:
                step, error = failure
                run_id = latest[0].dagster_run.run_id
                if "maximum runtime" in error or "Exceeded maximum runtime" in error:
                    alerts.append(notify.alert_run_timeout(day, limit_minutes=settings.runs.max_minutes, step=step,
                                                           run_id=run_id))
                elif "요청 한도" in error or "request cap" in error.lower():
                    alerts.append(notify.alert_request_cap(day, cap=settings.source.daily_request_cap, run_id=run_id))
                else:
                    alerts.append(notify.alert_run_failed(day, error=error, step=step, run_id=run_id))
    streak = notify.rejected_streak(statuses, n=settings.alerts.rejected_streak)
    if streak:
        base = states[streak[-1]].rejection.metadata.get("comparison_base")
        alerts.append(notify.alert_rejected_streak(streak[-1], days=streak, comparison_base=base))
    alerts += _slow_runs(instance, todo, settings.alerts.slow_run_factor)
    return alerts


def _slow_runs(instance: dg.DagsterInstance, days: list[str], factor: float) -> list[notify.Alert]:
    """The newest whole-day run against the median of the 14 before it."""
    records = [r for r in instance.get_run_records(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.SUCCESS]), limit=60)
               if r.dagster_run.asset_selection is None and r.start_time and r.end_time
               and "dagster/partition" in r.dagster_run.tags]
    if len(records) < 6:
        return []
    newest, before = records[0], records[1:15]
    seconds = newest.end_time - newest.start_time
    median = notify.slow_run(seconds, [r.end_time - r.start_time for r in before], factor)
    day = newest.dagster_run.tags["dagster/partition"]
    if median is None or day not in days:
        return []
    return [notify.alert_slow_run(day, seconds=seconds, median_s=median, samples=len(before), factor=factor,
                                  run_id=newest.dagster_run.run_id)]


def overdue_alert(day: str, settings) -> notify.Alert:
    return notify.alert_overdue(day, expected_at=settings.alerts.overdue_at)

