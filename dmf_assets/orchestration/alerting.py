"""Which alerts a sensor tick raises, read from Dagster's records; `notify` sends each (day, kind) once.

Rejected day (saying whether a same-morning retry follows — only when `followups.retry_outlook` plans one
and a daemon is beating), retries exhausted, failed run, run time limit exceeded, request cap, rejected
days in a row, a run ≥ 3× slower than the median of the last 14, and the overdue report. (The watchlist
hit and the withdrawal share come with the day's workbook, in `xlsx_report`; a retry that succeeded is
said in that day's one workbook mail, not in an alert of its own.)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, time

import dagster as dg

from dmf_assets import notify
from dmf_assets.domain.model import DayStatus
from dmf_assets.orchestration.followups import (
    REQUEST_CAP_KEY,
    TIMED_OUT_TAG,
    Tick,
    fetch_failed_at,
    retry_outlook,
)
from dmf_assets.orchestration.verdict import committed_of, rejecting_steps
from dmf_assets.settings import Settings

NOT_RETRIED = notify.RetryOutlook(attempt=1, of=1, why_not=notify.NoRetry.NOT_TRANSIENT)
#: how many of the most recent days a tick raises alerts for
ALERT_DAYS = 40


@dataclass(frozen=True)
class _RunFailure:
    step: str
    error: str  # the first line of the error
    request_cap: int | None = None  # the daily request cap the step reached (its failure's metadata)


def _run_failure(instance: dg.DagsterInstance, run_id: str) -> _RunFailure | None:
    """The step that failed for a reason other than a gate check: its error's first line and what it recorded."""
    verdicts = rejecting_steps(
        (r.step_key, r.asset_observation.metadata)
        for r in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_OBSERVATION)
        if r.asset_observation
    )
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        event = record.dagster_event
        if event is None:  # a step failure is always a Dagster event
            continue
        data = event.event_specific_data
        error = getattr(data, "error", None)
        if record.step_key in verdicts:  # the step that said the day's verdict: a rejected day, not a failed run
            continue
        user = getattr(data, "user_failure_data", None)
        text = (user.description if user is not None and user.description else None) or (error.message if error else "")
        first = next((line.strip() for line in (text or "").splitlines() if line.strip()), "원인 미상 (unknown)")
        cap = user.metadata.get(REQUEST_CAP_KEY) if user is not None else None
        return _RunFailure(event.step_key or "run", first[:500], int(cap.value) if cap is not None else None)
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE):
        if "maximum runtime" in (record.message or ""):  # Dagster's run monitor stopped a run the daemon launched
            return _RunFailure("run", record.message)
    return None


def alerts_for_tick(instance: dg.DagsterInstance, tick: Tick, settings: Settings) -> list[notify.Alert]:
    """The alerts of the tick's `ALERT_DAYS` most recent days that no run or backfill owns."""
    todo = tick.todo(tick.days[:ALERT_DAYS])
    alerts: list[notify.Alert] = []
    statuses: dict[date, DayStatus] = {}
    gates: dict[date, int] = {}
    bases: dict[date, date | None] = {}  # each rejected day's comparison base
    for day in todo:
        state, d = tick.states[day], date.fromisoformat(day)
        outlook = retry_outlook(day, state, tick.now, tick.retry, daemon_alive=tick.daemon_alive)
        # why the retries ended, when they did (all used, or the morning's window closed)
        ended = (
            outlook.why_not
            if outlook is not None and outlook.why_not in (notify.NoRetry.USED, notify.NoRetry.WINDOW) and state.retries
            else None
        )
        if (rejected := state.rejection) is not None:
            record, rejection = rejected
            statuses[d], gates[d], bases[d] = DayStatus.REJECTED, rejection.gate, rejection.base_day
            assert outlook is not None  # a rejected day always has an outlook
            alerts.append(notify.Rejected(day=d, rejection=rejection, retry=outlook, run_id=record.run_id))
            if ended is not None:
                alerts.append(
                    notify.RetriesExhausted(
                        day=d, attempts=state.retries, why_stopped=ended, rejection=rejection, run_id=record.run_id
                    )
                )
        elif state.diffed is not None and (committed := committed_of(state.diffed.metadata)) is not None:
            statuses[d] = committed
        latest = state.runs[:1]
        if latest and latest[0].dagster_run.status == dg.DagsterRunStatus.FAILURE:
            run_id = latest[0].dagster_run.run_id
            failure = _run_failure(instance, run_id)
            if failure is None:
                continue
            step, error = failure.step, failure.error
            fetch_outlook = outlook if fetch_failed_at(state) is not None and outlook is not None else NOT_RETRIED
            if "maximum runtime" in error or TIMED_OUT_TAG in latest[0].dagster_run.tags:
                alerts.append(
                    notify.RunTimeout(
                        day=d, limit_minutes=settings.runs.max_minutes, retry=fetch_outlook, run_id=run_id
                    )
                )
            elif failure.request_cap is not None or "daily request cap reached" in error:
                # the words: a run an earlier release recorded carries no `request_cap` (its cap: the configured one)
                cap = failure.request_cap or settings.source.daily_request_cap
                alerts.append(notify.RequestCap(day=d, cap=cap, run_id=run_id))
            else:
                if ended is not None and state.rejection is None:
                    alerts.append(
                        notify.RetriesExhausted(
                            day=d, attempts=state.retries, why_stopped=ended, error=error, run_id=run_id
                        )
                    )
                alerts.append(notify.RunFailed(day=d, step=step, error=error, retry=fetch_outlook, run_id=run_id))
    streak = notify.rejected_streak(statuses, n=settings.alerts.rejected_streak)
    if streak:
        base = bases[streak[-1]]  # a streak is made of the rejected days above
        alerts.append(
            notify.RejectedStreak(day=streak[-1], days=tuple(streak), gates=tuple(gates[x] for x in streak), base=base)
        )
    alerts += _slow_runs(instance, todo, settings.alerts.slow_run_factor)
    return alerts


def _slow_runs(instance: dg.DagsterInstance, days: list[str], factor: float) -> list[notify.Alert]:
    """The newest whole-day run against the median of the 14 before it."""
    # (record, seconds) of each whole-day run that succeeded, newest first
    records = [
        (r, r.end_time - r.start_time)
        for r in instance.get_run_records(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.SUCCESS]), limit=60)
        if r.dagster_run.asset_selection is None
        and r.start_time
        and r.end_time
        and "dagster/partition" in r.dagster_run.tags
    ]
    if len(records) < 6:
        return []
    (newest, seconds), before = records[0], records[1:15]
    median = notify.slow_run(seconds, [s for _, s in before], factor)
    day = newest.dagster_run.tags["dagster/partition"]
    if median is None or day not in days:
        return []
    return [
        notify.SlowRun(
            day=date.fromisoformat(day),
            seconds=seconds,
            median_s=median,
            samples=len(before),
            factor=factor,
            run_id=newest.dagster_run.run_id,
        )
    ]


def overdue_alert(day: str, expected_at: time, *, latest_report: date | None) -> notify.Overdue:
    """The overdue alert of `day` (the watchdog marks it `daemon_down` when the daemon is down too)."""
    from dmf_assets.report.retention import dated_workbook_name

    d = date.fromisoformat(day)
    workbook = f"reports/{dated_workbook_name(d)}"
    return notify.Overdue(day=d, expected_at=expected_at, workbook=workbook, latest_report=latest_report)
