"""Run days through the real Dagster graph in this process (no daemon needed).

Used by `dmf demo`, `dmf run`, `dmf backfill` and the end-to-end tests. Runs are recorded in the
Dagster instance (DAGSTER_HOME), so they appear in the UI afterwards. After each run it does what the
sensor does under `dagster dev`: completes days whose chain a blocking gate check stopped, and
refreshes days whose events were re-derived.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import dagster as dg

from dmf_assets.orchestration import followups
from dmf_assets.settings import PROJECT_ROOT

KST = ZoneInfo("Asia/Seoul")
DEMO_SERVICE_KEY = "emulator-demo-key"
#: run config for command-line runs: Dagster's step-by-step log stays in the instance (the UI shows it);
#: the terminal gets the command's own one-line-per-day summary
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def kst_today() -> date:
    return datetime.now(KST).date()


def all_assets() -> list:
    from dmf_assets.defs import assets as a

    return [a.raw_pages, a.normalized_records, a.integrity_verdict, a.snapshot_diff, a.events, a.xlsx_report]


def use_project_instance() -> Path:
    """DAGSTER_HOME = the project's dagster_home/ (with its pool limits), unless set already."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / "dagster_home")))
    home.mkdir(parents=True, exist_ok=True)
    return home


def load_dotenv(path: Path = PROJECT_ROOT / ".env") -> None:
    """KEY=VALUE lines from .env (as `dagster dev` does); never overrides the real environment."""
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            os.environ.setdefault(key.strip(), value.strip().strip("'\""))


def ensure_service_key(base_url: str) -> bool:
    """The emulator accepts any non-empty key; give it a demo key when none is set. True if defaulted."""
    if os.environ.get("MFDS_SERVICE_KEY"):
        return False
    if base_url.startswith("emulator://") or "127.0.0.1" in base_url or "localhost" in base_url:
        os.environ["MFDS_SERVICE_KEY"] = DEMO_SERVICE_KEY
        return True
    return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover_orphaned_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark runs whose process died (SIGKILL, power loss) as failed and free their pool slots.

    A killed in-process run would otherwise hold the `duckdb` pool slot forever and every later run
    would wait for it. (`dagster dev`'s run monitoring does the same for runs it launched.)
    """
    recovered = []
    in_flight = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING]))
    for run in in_flight:
        records = instance.get_records_for_run(run.run_id, limit=50, ascending=False).records
        pids = {r.event_log_entry.dagster_event.pid for r in records if r.event_log_entry.dagster_event}
        pids.discard(None)
        if pids and not any(_pid_alive(pid) for pid in pids):
            instance.report_run_failed(run, "실행 프로세스가 사라졌습니다 (강제 종료 등). The run's process died; marked failed.")
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
            recovered.append(run.run_id)
    return recovered


@dataclass(frozen=True)
class RunReport:
    day: str
    success: bool
    followups: int
    failure: str | None


def _failure_message(result: dg.ExecuteInProcessResult) -> str | None:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data is not None:
            err = event.step_failure_data.error
            if err is not None and "DagsterAssetCheckFailedError" not in (err.cls_name or ""):
                return f"{event.step_key}: {err.message.strip().splitlines()[0]}"
    return None


def complete_days(
    instance: dg.DagsterInstance, resources: dict, partitions: list[str] | None = None, *, tags=None, run_config=None
) -> int:
    """Run the follow-ups the sensor would request, oldest day first. Returns how many ran.

    Like the sensor, each situation (run key) is attempted once: a step that *failed* is left for a
    human, only chains stopped by a blocking gate check continue.
    """
    attempted: set[str] = set()
    for _ in range(4):  # a follow-up can itself stop at gate 6 and need one more
        plans = [p for p in followups.plan_followups(instance, partitions) if p.run_key not in attempted]
        if not plans:
            break
        for plan in plans:
            attempted.add(plan.run_key)
            dg.materialize(
                all_assets(),
                selection=list(plan.assets),
                partition_key=plan.day,
                instance=instance,
                resources=resources,
                raise_on_error=False,
                tags={"dmf/trigger": "followup", **(tags or {})},
                run_config=run_config,
            )
    return len(attempted)


def run_day(
    day: date, *, instance: dg.DagsterInstance, resources: dict, tags: dict | None = None, run_config: dict | None = None
) -> RunReport:
    recover_orphaned_runs(instance)
    result = dg.materialize(
        all_assets(),
        partition_key=day.isoformat(),
        instance=instance,
        resources=resources,
        raise_on_error=False,
        tags=tags or {},
        run_config=run_config,
    )
    n = complete_days(instance, resources, None, tags=tags, run_config=run_config)
    return RunReport(day.isoformat(), result.success, n, None if result.success else _failure_message(result))


def run_range_single(
    start: date, end: date, *, instance: dg.DagsterInstance, resources: dict, tags: dict | None = None,
    run_config: dict | None = None,
) -> RunReport:
    """One run for the whole range (what a single-run backfill launches); days processed in date order."""
    recover_orphaned_runs(instance)
    result = dg.materialize(
        all_assets(),
        instance=instance,
        resources=resources,
        raise_on_error=False,
        tags={
            "dagster/asset_partition_range_start": start.isoformat(),
            "dagster/asset_partition_range_end": end.isoformat(),
            **(tags or {}),
        },
        run_config=run_config,
    )
    n = complete_days(instance, resources, None, tags=tags, run_config=run_config)
    return RunReport(f"{start}..{end}", result.success, n, None if result.success else _failure_message(result))


def run_days(
    days: Iterable[date],
    *,
    instance: dg.DagsterInstance,
    resources: dict,
    tags: dict | None = None,
    progress: Callable[[RunReport, float], None] | None = None,
    run_config: dict | None = None,
) -> list[RunReport]:
    import time

    reports = []
    for day in sorted(days):
        started = time.monotonic()
        report = run_day(day, instance=instance, resources=resources, tags=tags, run_config=run_config)
        reports.append(report)
        if progress:
            progress(report, time.monotonic() - started)
    return reports
