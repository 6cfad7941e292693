"""The daily job, the 06:00 KST schedule, and the sensor that completes days and raises alerts."""


from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import dagster as dg

from dmf_assets.defs.partitions import daily_partitions
from dmf_assets.orchestration import followups
from dmf_assets.settings import PROJECT_ROOT, load_settings

KST = ZoneInfo("Asia/Seoul")

dmf_daily_job = dg.define_asset_job(
    "dmf_daily_job",
    selection=dg.AssetSelection.all(),
    partitions_def=daily_partitions,
    description="하루치 전체 그래프: 수집 → 정규화 → 게이트 → 비교·반영 → 이벤트 → 엑셀 리포트",
)


@dg.schedule(
    job=dmf_daily_job,
    cron_schedule="0 6 * * *",
    execution_timezone="Asia/Seoul",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="매일 06:00(KST) 그날의 등록 현황을 수집합니다 (부분 목록이면 게이트가 거부).",
)
def daily_0600_kst(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    day = context.scheduled_execution_time.astimezone(KST).date().isoformat()
    return dg.RunRequest(run_key=f"schedule:{day}", partition_key=day, tags={"dmf/trigger": "schedule"})


def _alerts_dir() -> Path:
    p = Path(load_settings().paths.alerts_dir)
    return p if p.is_absolute() else PROJECT_ROOT / p


@dg.sensor(
    target=dg.AssetSelection.assets("snapshot_diff", "events", "xlsx_report"),
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "게이트로 중단된 날의 나머지(거부 리포트 포함)를 마저 실행하고, 다시 계산된 날의 리포트를 새로 만들며, "
        "거부되거나 09:00(KST)까지 리포트가 없는 날을 data/alerts/에 경보로 남깁니다."
    ),
)
def dmf_watch_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    # Reads only Dagster's event log: a sensor must never open the DuckDB file (single writer).
    plans = followups.plan_followups(context.instance)
    alerts = followups.write_alerts(_alerts_dir(), followups.find_alerts(context.instance, datetime.now(KST)))
    for alert in alerts:
        context.log.warning(f"[경보:{alert.kind}] {alert.message}")
    requests = [
        dg.RunRequest(
            run_key=p.run_key,
            partition_key=p.day,
            asset_selection=[dg.AssetKey(a) for a in p.assets],
            tags={"dmf/trigger": "followup", "dmf/reason": p.reason[:200]},
        )
        for p in plans
    ]
    if not requests and not alerts:
        return dg.SensorResult(skip_reason="완료되지 않은 날도, 새 경보도 없습니다.")
    return dg.SensorResult(run_requests=requests)
