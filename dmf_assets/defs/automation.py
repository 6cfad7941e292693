"""The daily job, the 06:00 KST schedule, and the sensor that completes days, retries and watches the clock.

One mechanism for every way a day is run — the schedule, a UI backfill, `dagster asset materialize`,
`dmf run`: the sensor reads Dagster's records each tick (`orchestration.followups`) and requests the
follow-up runs (a rejected day's workbook, a re-derived day's refresh, a same-morning retry). The
`dmf` commands evaluate this same sensor after their runs, so they behave as the daemon does.
It never opens the DuckDB file (a single-writer database must not be touched from a sensor).

Nothing here reads the configuration when it is imported: the schedule and the sensor read it through
the `workspace` resource on each tick, and the sensor's interval (`[runs] sensor_interval_s`) is given
to `watch_sensor` when the code location loads (`dmf_assets/definitions.py`).
"""

from datetime import datetime

import dagster as dg

from dmf_assets import notify
from dmf_assets.clock import KST, now_kst
from dmf_assets.defs.assets import ON_TIME_CHECK
from dmf_assets.defs.partitions import daily_partitions, daily_schedule, scheduled_day
from dmf_assets.defs.resources import DmfWorkspace
from dmf_assets.orchestration import alerting, followups
from dmf_assets.settings import Settings

dmf_daily_job = dg.define_asset_job(
    "dmf_daily_job",
    selection=dg.AssetSelection.assets(*followups.CHAIN),
    partitions_def=daily_partitions,
    description="하루치 전체 그래프: 수집 → 정규화 → 게이트 → 비교·반영 → 이벤트 → 엑셀 리포트",
)


#: the `dmf/trigger` of the 06:00 schedule's runs: the only runs that promise a day's workbook by the deadline
SCHEDULE_TRIGGER = "schedule"


def run_tags(trigger: str, settings: Settings) -> dict[str, str]:
    """Tags every run the product launches carries: who started it, and the whole-run time limit
    (enforced by Dagster's run monitoring; `[runs] max_minutes`)."""
    return {followups.TRIGGER_TAG: trigger, "dagster/max_runtime": str(settings.runs.max_minutes * 60)}


@daily_schedule(
    dmf_daily_job, "0 6 * * *", "매일 06:00(KST) 그날의 등록 현황을 수집합니다 (부분 목록이면 게이트가 거부)."
)
def daily_0600_kst(context: dg.ScheduleEvaluationContext, workspace: DmfWorkspace) -> dg.RunRequest:
    day = scheduled_day(context).isoformat()
    return dg.RunRequest(
        run_key=f"schedule:{day}", partition_key=day, tags=run_tags(SCHEDULE_TRIGGER, workspace.settings())
    )


def _overdue_evaluation(
    instance: dg.DagsterInstance, now: datetime, settings: Settings
) -> dg.AssetCheckEvaluation | None:
    """After 09:00 KST with no workbook for today's partition, which the 06:00 schedule did run: record the
    on-time check as failed on it. A day no scheduled run has had the chance to produce — a new project, the demo
    or a backfill still on its way to today, `dmf run` of an earlier day — is not late."""
    local = now.astimezone(KST)
    day = local.date().isoformat()
    if local.time() < settings.alerts.overdue_at:
        return None
    if followups.latest_by_partition(instance, "xlsx_report", [day]).get(day) is not None:
        return None
    runs = followups.runs_by_day(instance, [day])[day]
    if not any(r.dagster_run.tags.get(followups.TRIGGER_TAG) == SCHEDULE_TRIGGER for r in runs):
        return None
    check = dg.AssetCheckKey(dg.AssetKey("xlsx_report"), ON_TIME_CHECK)
    # the sensor's own records are the runless check evaluations (a run's planned or passed check does not
    # undo an overdue day): one per overdue day
    recorded = instance.all_logs("", of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    if any(_is_evaluation_of(r, check, day) for r in recorded):
        return None  # already recorded for this day
    return dg.AssetCheckEvaluation(
        asset_key=dg.AssetKey("xlsx_report"),
        check_name=ON_TIME_CHECK,
        passed=False,
        partition=day,
        severity=dg.AssetCheckSeverity.ERROR,
        description=f"{day} 리포트가 {settings.alerts.overdue_at:%H:%M}(KST)까지 만들어지지 않았습니다 — 오늘 실행과 게이트를 확인하세요. "
        f"The report for {day} is overdue.",
        metadata={"checked_at_kst": local.isoformat(timespec="seconds")},
    )


def _is_evaluation_of(entry: dg.EventLogEntry, check: dg.AssetCheckKey, day: str) -> bool:
    evaluation = entry.dagster_event.event_specific_data if entry.dagster_event else None
    return (
        isinstance(evaluation, dg.AssetCheckEvaluation)
        and evaluation.asset_check_key == check
        and evaluation.partition == day
    )


def _tell_people(
    context: dg.SensorEvaluationContext,
    workspace: DmfWorkspace,
    settings: Settings,
    tick: followups.Tick,
    overdue: dg.AssetCheckEvaluation | None,
) -> None:
    """Alerts out of band (e-mail, webhooks), once per day and kind; held workbook mails whose day is
    decided; re-sends that are due. Never fails the tick."""
    from dmf_assets.report.retention import dated_workbooks

    try:
        notifier = notify.Notifier(
            settings, workspace.path("alerts_dir"), budget_s=20, config_file=workspace.config_file or None
        )
        alerts = alerting.alerts_for_tick(context.instance, tick, settings)
        if overdue is not None and overdue.partition is not None:  # `_overdue_evaluation` always names its day
            dated = dated_workbooks(workspace.path("reports_dir"))
            alerts.append(
                alerting.overdue_alert(
                    overdue.partition, settings.alerts.overdue_at, latest_report=dated[-1][0] if dated else None
                )
            )
        for alert in alerts:
            outcome = notifier.send_alert(alert)
            if outcome is not None:
                context.log.warning(f"[경보 {alert.kind}] {alert.day}: {outcome.subject} — {outcome.state}")
        _release_decided(context, notifier, tick)
        notifier.flush()
    except Exception as exc:  # noqa: BLE001 - telling people must never stop the completion of days
        context.log.error(f"경보를 보내지 못했습니다 / alerting failed: {type(exc).__name__}: {exc}")


def _release_decided(context: dg.SensorEvaluationContext, notifier: notify.Notifier, tick: followups.Tick) -> None:
    """A workbook mail held for a same-morning retry goes out once no retry is planned any more."""
    held = [m for m in notifier.held_reports() if m.day not in tick.busy]
    states = followups.day_states(context.instance, sorted({m.day for m in held}))
    for message in held:
        state = states[message.day]
        outlook = followups.retry_outlook(message.day, state, tick.now, tick.retry, daemon_alive=tick.daemon_alive)
        if outlook is None or not outlook.planned:
            note = notify.retries_failed_note(state.retries) if state.retries and state.rejection else None
            notifier.release(message.id, note)


def watch(context: dg.SensorEvaluationContext, workspace: DmfWorkspace) -> dg.SensorResult:
    """One tick of `dmf_watch_sensor` (the daemon's, or the one the `dmf` commands evaluate after their runs)."""
    settings = workspace.settings()
    now = now_kst()
    # what Dagster has on record, read once per tick for the follow-ups and the alerts
    tick = followups.Tick.read(context.instance, now, followups.RetryPolicy.of(settings))
    plans = followups.plan_followups(context.instance, tick)
    # a clock set back hides the days after "today" from the partitions: their follow-ups wait for the clock
    # (a run requested for them would fail as an unknown partition on every tick)
    last = daily_partitions.get_last_partition_key()
    if waiting := sorted({p.day for p in plans if last is None or p.day > last}):
        context.log.warning(
            f"시계가 뒤로 갔습니다: 오늘(KST)이 {last}인데 {', '.join(waiting)}의 후속 실행이 남아 있습니다 — 이 컴퓨터의 "
            "시계를 확인하세요; 시계가 맞을 때까지 미룹니다 / the clock is behind days with runs: their follow-ups wait"
        )
        plans = [p for p in plans if p.day not in waiting]
    for p in plans:
        context.log.info(f"{p.day}: {p.kind} — {p.reason} → {', '.join(p.assets)}")
    overdue = _overdue_evaluation(context.instance, now, settings)
    _tell_people(context, workspace, settings, tick, overdue)
    requests = [
        dg.RunRequest(
            run_key=p.run_key,
            partition_key=p.day,
            asset_selection=[dg.AssetKey(a) for a in p.assets],
            tags={**run_tags(f"sensor-{p.kind}", settings), "dmf/reason": p.reason[:200], **p.tags},
        )
        for p in plans
    ]
    if not requests and overdue is None:
        return dg.SensorResult(skip_reason="완료되지 않은 날도, 재시도할 날도, 지연된 리포트도 없습니다.")
    return dg.SensorResult(run_requests=requests, asset_events=[overdue] if overdue else [])


#: the sensor's name (the daemon's cursor and ticks are kept under it)
WATCH_SENSOR = "dmf_watch_sensor"


def watch_sensor(interval_s: int) -> dg.SensorDefinition:
    """`dmf_watch_sensor`, evaluated every `interval_s` seconds (`[runs] sensor_interval_s`, read when the code
    location loads — not when this module is imported)."""
    return dg.sensor(
        name=WATCH_SENSOR,
        # its runs are dmf_daily_job's (of the assets each needs), like the schedule's and the dmf commands'
        job=dmf_daily_job,
        minimum_interval_seconds=interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=(
            "차단 게이트로 멈춘 날의 나머지(거부 리포트 포함)를 마저 실행하고, 다시 계산된 날의 리포트를 새로 만들고, "
            "전송·완전성 게이트로 거부된 날은 같은 아침에 [retry] interval_minutes 간격으로 다시 수집하며, 마감 시각([alerts] "
            "overdue_at, KST)까지 06:00 일정이 실행한 "
            "오늘의 리포트가 없으면 report_by_0900_kst 검사를 실패로 기록합니다. 실행 중이거나 backfill이 처리 중인 날은 건드리지 않습니다."
        ),
    )(watch)
