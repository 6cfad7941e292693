"""The 06:00 KST schedule, the partition-aware on-time check, and the sensor: it completes a day stopped by a
blocking gate, leaves alone days a run or a backfill still owns, retries a transient rejection later the
same morning, and never retries a drop/churn rejection."""

from __future__ import annotations

import json
import shutil
import time
from datetime import UTC, date, datetime, timedelta
from datetime import time as dt_time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.storage.dagster_run import DagsterRun
from dagster._daemon.types import DaemonHeartbeat
from dagster._utils.schedules import cron_string_iterator

from dmf_assets.clock import KST
from dmf_assets.defs.automation import SCHEDULE_TRIGGER, _overdue_evaluation, daily_0600_kst
from dmf_assets.defs.partitions import daily_partitions
from dmf_assets.defs.resources import DmfWorkspace
from dmf_assets.notify.messages import NoRetry, Redone
from dmf_assets.orchestration import followups
from dmf_assets.runs import launch
from dmf_assets.settings import load_settings
from dmf_assets_tests.graph_support import clocks_at, make_workspace, morning, runs_by_day

D1, D2 = date(2026, 10, 5), date(2026, 10, 6)
#: the resource the schedule reads its settings through (the project's files, read on each tick)
WORKSPACE = {"workspace": DmfWorkspace()}
NOW = datetime(2026, 10, 6, 7, 0, tzinfo=KST)


def _plans(ws, now: datetime, retry: followups.RetryPolicy | None = None) -> list[followups.Plan]:
    """The follow-ups a sensor tick at `now` plans, from what the instance has on record."""
    return followups.plan_followups(
        ws.instance, followups.Tick.read(ws.instance, now, retry or followups.RetryPolicy())
    )


def _evaluate_at(tick: datetime) -> dg.RunRequest:
    """The 06:00 schedule evaluated at `tick`, its context closed when done: left to the garbage collector, the
    context's own Dagster instance is disposed at a random later moment, and SQLAlchemy prints a traceback."""
    with dg.build_schedule_context(resources=WORKSPACE, scheduled_execution_time=tick) as context:
        request = daily_0600_kst(context)
    assert isinstance(request, dg.RunRequest)
    return request


def test_schedule_runs_the_new_day_at_0600_kst(tmp_path, monkeypatch):
    # a config with its own whole-run limit: the schedule's runs carry that, not a built-in number
    config = tmp_path / "dmf.toml"
    config.write_text("[runs]\nmax_minutes = 47\n", encoding="utf-8")
    monkeypatch.setenv("DMF_CONFIG", str(config))
    # the instants the daemon evaluates this schedule at, from midnight UTC on Nov 29
    start = datetime(2026, 11, 29, 0, 0, tzinfo=UTC).timestamp()
    ticks = cron_string_iterator(start, daily_0600_kst.cron_schedule, daily_0600_kst.execution_timezone)
    for tick, kst_day in zip(ticks, ("2026-11-30", "2026-12-01", "2026-12-02"), strict=False):  # ticks: endless
        # 21:00 UTC the day before is 06:00 KST: the day is always the Korean one
        assert tick.astimezone(KST).time() == datetime.min.time().replace(hour=6)
        assert tick.astimezone(UTC).hour == 21 and tick.astimezone(KST).date().isoformat() == kst_day
        request = _evaluate_at(tick)
        assert request.partition_key == kst_day and request.run_key == f"schedule:{kst_day}"
        assert kst_day in daily_partitions.get_partition_keys(current_time=tick)  # a partition the job has
        assert request.tags == {"dmf/trigger": "schedule", "dagster/max_runtime": str(47 * 60)}
    # the same tick given in UTC or in KST asks for the same day
    utc = _evaluate_at(datetime(2026, 11, 29, 21, 0, tzinfo=UTC))
    kst = _evaluate_at(datetime(2026, 11, 30, 6, 0, tzinfo=KST))
    assert utc.partition_key == kst.partition_key == "2026-11-30"


@pytest.fixture(scope="module")
def after_d1(tmp_path_factory) -> Path:
    """A project (its history and its SQLite Dagster instance) where D1 ran and was accepted, copied by
    every test that starts from there: D2's faults do not touch D1, so its run is the same in each."""
    root = tmp_path_factory.mktemp("after_d1") / "ws"
    ws = make_workspace(root)
    assert launch.run_day(D1, instance=ws.instance, resources=ws.resources).success
    ws.instance.dispose()
    return root


def _ws(tmp_path, after_d1: Path, faults: dict[str, str] | None = None):
    """D1 accepted (a copy of `after_d1`), with the emulator's `faults` from now on."""
    shutil.copytree(after_d1, tmp_path / "ws")
    ws = make_workspace(tmp_path / "ws", faults, reuse=True)
    return ws, launch.definitions_with(ws.resources)


def _stop_at_gate(ws, defs, day: date) -> dg.JobExecutionResult:
    """What a run of a rejected day leaves behind before any sensor tick: the chain stopped at the gate."""
    result = launch.execute_day(defs, ws.instance, day.isoformat())
    assert not result.success
    assert launch.failure_of(result) is None  # only a gate check failed, no step error
    return result


@pytest.fixture(scope="module")
def after_d2_stopped(tmp_path_factory: pytest.TempPathFactory, after_d1: Path) -> Path:
    """D1 accepted; D2 rejected by gate 2 with its run stopped there (no follow-up yet) — run once, copied
    by each test that starts from there."""
    ws, defs = _ws(tmp_path_factory.mktemp("after_d2_stopped"), after_d1, {D2.isoformat(): "page_missing_rows"})
    _stop_at_gate(ws, defs, D2)
    ws.instance.dispose()
    return ws.root


@pytest.fixture()
def stopped_day(tmp_path: Path, after_d2_stopped: Path) -> tuple:
    """A copy of `after_d2_stopped`, with D2's fault still on."""
    return _ws(tmp_path, after_d2_stopped, {D2.isoformat(): "page_missing_rows"})


def test_sensor_completes_the_stopped_day_once(stopped_day):
    ws, defs = stopped_day
    result = launch.tick(defs, ws.instance)
    (request,) = result.run_requests
    assert request.partition_key == D2.isoformat()
    # snapshot_diff records "rejected — base carried forward" (gate 6 is not evaluated), then the workbook
    assert [k.path[-1] for k in request.asset_selection] == ["snapshot_diff", "events", "xlsx_report"]
    assert request.tags["dmf/trigger"] == "sensor-complete"
    # the same situation again: the same run key (Dagster launches a run key once)
    again = launch.tick(defs, ws.instance)
    assert [r.run_key for r in again.run_requests] == [request.run_key]

    launch.follow_up(defs, ws.instance)
    assert _plans(ws, NOW) == []
    assert (ws.root / "reports" / f"DMF_리포트_{D2.isoformat()}.xlsx").exists()
    assert runs_by_day(ws)[D2]["status"] == "rejected"


def test_every_run_of_the_dmf_commands_is_on_the_control_plane(stopped_day):
    """dmf run/backfill/demo runs carried no code-location origin: the UI's Overview timeline and the Runs tab of
    dmf_daily_job (which filter on it) showed none of them. Each run — the day's and the sensor's follow-up —
    is now dmf_daily_job of the workspace's code location, and the rejected day's run says why in a tag."""
    ws, defs = stopped_day
    launch.follow_up(defs, ws.instance)
    runs = [r.dagster_run for r in ws.instance.get_run_records()]
    assert len(runs) == 3  # D1; D2 stopped at its gate; D2's follow-up
    for run in runs:
        origin = run.remote_job_origin
        assert origin is not None, run.tags
        assert (origin.location_name, origin.repository_origin.repository_name, origin.job_name) == (
            "dmf_assets",
            "__repository__",
            "dmf_daily_job",
        )
    # what the Runs tab of dmf_daily_job asks for
    label = dg.RunsFilter(job_name="dmf_daily_job", tags={".dagster/repository": "__repository__@dmf_assets"})
    assert len(ws.instance.get_run_records(filters=label)) == 3
    [rejected] = [r for r in runs if r.status == dg.DagsterRunStatus.FAILURE]
    assert rejected.tags["dagster/partition"] == D2.isoformat()
    assert rejected.tags["dmf/rejected"].startswith("게이트 2 완전성: ")
    assert "관측값: 수신 " in rejected.tags["dmf/rejected"]
    assert sum("dmf/rejected" in r.tags for r in runs) == 1


def test_sensor_leaves_days_that_a_run_or_a_backfill_still_owns(stopped_day):
    ws, defs = stopped_day
    running = DagsterRun(
        job_name="dmf_daily_job",
        run_id="running-run-of-d2",
        status=dg.DagsterRunStatus.STARTED,
        tags={"dagster/partition": D2.isoformat()},
    )
    ws.instance.add_run(running)
    assert D2.isoformat() in followups.in_flight_days(ws.instance)
    assert _plans(ws, NOW) == []
    ws.instance.report_run_failed(running)
    assert [p.day for p in _plans(ws, NOW)] == [D2.isoformat()]

    from dagster._core.execution.backfill import PartitionBackfill

    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id="ui-backfill",
        asset_graph=defs.resolve_asset_graph(),
        partition_names=[D2.isoformat()],
        asset_selection=[dg.AssetKey(a) for a in followups.CHAIN],
        backfill_timestamp=time.time(),
        tags={},
        dynamic_partitions_store=ws.instance,
        all_partitions=False,
        title=None,
        description=None,
        run_config=None,
    )
    ws.instance.add_backfill(backfill)  # REQUESTED: in progress
    assert D2.isoformat() in followups.in_flight_days(ws.instance)
    assert _plans(ws, NOW) == []
    sensor = launch.tick(defs, ws.instance)
    assert not sensor.run_requests


#: the morning the retry tests live in (`clocks_at`): Dagster's clock stamps the rejection there (and so decides
#: "rejected today"). The tests then ask the same questions whatever hour the suite runs at.
TODAY = date(2026, 10, 20)
MORNING = morning(TODAY)
#: the retry rule (a same-morning retry is for today's partition, rejected today) with a window open all day
ALL_DAY = followups.RetryPolicy(attempts=3, interval=timedelta(minutes=5), until=dt_time(23, 59))


@pytest.fixture(scope="module")
def after_yesterday(tmp_path_factory) -> Path:
    """Yesterday (KST) accepted: a project where today's partition can be rejected and retried."""
    root = tmp_path_factory.mktemp("after_yesterday") / "ws"
    ws = make_workspace(root)
    with clocks_at(MORNING - timedelta(days=1)):
        assert launch.run_day(TODAY - timedelta(days=1), instance=ws.instance, resources=ws.resources).success
    ws.instance.dispose()
    return root


def _rejected_at(ws, day: date) -> datetime:
    state = followups.day_states(ws.instance, [day.isoformat()])[day.isoformat()]
    return datetime.fromtimestamp(state.rejection[0].timestamp, KST)


@pytest.fixture(scope="module")
def today_rejected(tmp_path_factory: pytest.TempPathFactory, after_yesterday: Path) -> tuple[Path, launch.DayRun]:
    """Yesterday accepted, today's partition rejected by an outage this morning (gate 2) — run once, copied
    by each test that starts from there; with that run's report."""
    ws, _ = _ws(tmp_path_factory.mktemp("today_rejected"), after_yesterday, {TODAY.isoformat(): "page_missing_rows"})
    with clocks_at(MORNING):
        first = launch.run_day(TODAY, instance=ws.instance, resources=ws.resources)
    ws.instance.dispose()
    return ws.root, first


def test_a_transient_rejection_of_today_is_retried_later_the_same_morning_and_accepted(tmp_path, today_rejected):
    template, first = today_rejected
    ws, _ = _ws(tmp_path, template, {TODAY.isoformat(): "page_missing_rows"})  # an outage this morning
    assert first.followups == 1  # the rejected day's workbook; the retry waits for the daemon
    assert runs_by_day(ws)[TODAY]["status"] == "rejected"
    rejected = _rejected_at(ws, TODAY)
    assert rejected == MORNING  # stamped by Dagster's clock
    assert _plans(ws, rejected + timedelta(minutes=4, seconds=59), retry=ALL_DAY) == []
    due = rejected + timedelta(minutes=5, seconds=1)
    (plan,) = _plans(ws, due, retry=ALL_DAY)
    assert plan.kind == "retry" and plan.assets == followups.CHAIN and plan.tags[followups.REFETCH_TAG] == "true"

    # the source recovers (the same project, its API without the fault) before the retry runs
    ws = make_workspace(tmp_path / "ws", reuse=True)
    with clocks_at(due):
        launch.execute_day(launch.definitions_with(ws.resources), ws.instance, plan.day, tags=plan.tags)
    assert runs_by_day(ws)[TODAY]["status"] == "accepted"
    assert _plans(ws, rejected + timedelta(minutes=6), retry=ALL_DAY) == []  # past the interval: accepted, no retry


def test_retries_stop_after_the_configured_attempts(tmp_path, today_rejected):
    template, _ = today_rejected
    ws, defs = _ws(tmp_path, template, {TODAY.isoformat(): "page_missing_rows"})
    retry = followups.RetryPolicy(attempts=2, interval=timedelta(minutes=1), until=dt_time(23, 59))
    for n in (1, 2):
        later = _rejected_at(ws, TODAY) + timedelta(minutes=1, seconds=1)
        (plan,) = _plans(ws, later, retry=retry)
        assert plan.run_key == f"retry:{TODAY.isoformat()}:{n}"
        assert followups.redone_of(plan.tags) is Redone.REFETCHED  # a correction would say MFDS was asked again
        with clocks_at(later):
            launch.execute_day(defs, ws.instance, plan.day, tags=plan.tags)
            # the retried day's own workbook again, by a follow-up that says what the run it completes did
            (complete,) = [p for p in _plans(ws, later, retry=retry) if p.kind == "complete"]
            assert followups.redone_of(complete.tags) is Redone.REFETCHED
            launch.follow_up(defs, ws.instance)
        assert _rejected_at(ws, TODAY) == later  # rejected again, when the retry ran
    after_the_next_interval = _rejected_at(ws, TODAY) + timedelta(minutes=2)
    assert after_the_next_interval.date() == TODAY  # still today: the answer is about retries, not the date
    assert _plans(ws, after_the_next_interval, retry=retry) == []
    state = followups.day_states(ws.instance, [TODAY.isoformat()])[TODAY.isoformat()]
    outlook = followups.retry_outlook(TODAY.isoformat(), state, after_the_next_interval, retry, daemon_alive=True)
    assert outlook.why_not is NoRetry.USED and state.retries == 2


def test_the_sensor_retries_today_but_never_an_old_day_and_promises_only_what_it_plans(
    tmp_path, after_yesterday, monkeypatch
):
    """An old day and today's partition rejected the same way, `[retry] interval_minutes = 1`: 70 s later the
    sensor — on the project's instance, with a daemon beating — asks for one retry, of today only, and the
    old day's alert promises none."""
    old = TODAY - timedelta(days=3)
    config = tmp_path / "dmf.toml"
    config.write_text(
        '[retry]\ninterval_minutes = 1\nuntil = "23:59"\n[alerts]\noverdue_at = "23:59"\n', encoding="utf-8"
    )
    monkeypatch.setenv("DMF_CONFIG", str(config))
    faults = {TODAY.isoformat(): "page_missing_rows", old.isoformat(): "page_missing_rows"}
    ws, defs = _ws(tmp_path, after_yesterday, faults)
    with clocks_at(MORNING):
        for day in (old, TODAY):
            launch.run_day(day, instance=ws.instance, resources=ws.resources)
    assert {runs_by_day(ws)[d]["status"] for d in (old, TODAY)} == {"rejected"}
    later = max(_rejected_at(ws, d) for d in (old, TODAY)) + timedelta(seconds=70)
    ws.instance.add_daemon_heartbeat(DaemonHeartbeat(later.timestamp(), "SENSOR", "test-daemon", []))
    with clocks_at(later):
        result = launch.tick(defs, ws.instance)
    retries = [r for r in result.run_requests if r.tags.get(followups.RETRY_TAG)]
    assert [(r.partition_key, r.tags[followups.RETRY_TAG]) for r in retries] == [(TODAY.isoformat(), f"{TODAY}#1")]
    alerts = ws.root / "data" / "alerts"
    old_text = json.loads((alerts / f"{old}-rejected.json").read_text(encoding="utf-8"))["text"]
    assert "자동으로 다시 수집합니다" not in old_text and "자동으로 다시 수집하지 않습니다" in old_text
    assert f"`dmf run --date {old}`" in old_text


@pytest.mark.parametrize("fault, gate", [("mass_disappearance", 3), ("garbled_text", 6)])
def test_drop_and_churn_rejections_are_never_retried(tmp_path, after_d1, fault, gate):
    ws, _ = _ws(tmp_path, after_d1, {D2.isoformat(): fault})
    launch.run_day(D2, instance=ws.instance, resources=ws.resources)
    assert runs_by_day(ws)[D2]["rejected_gate"] == gate
    # an hour after the rejection, long past a retry's interval: still none
    assert _plans(ws, _rejected_at(ws, D2) + timedelta(hours=1)) == []


def test_overdue_is_recorded_on_the_expected_partition_after_0900_kst(tmp_path, after_d1):
    ws, _ = _ws(tmp_path, after_d1)
    before = datetime(2026, 10, 6, 8, 59, tzinfo=KST)
    after = datetime(2026, 10, 6, 9, 1, tzinfo=KST)
    settings = load_settings()
    defs = launch.definitions_with(ws.resources)
    # no run of D2 had the chance to write its workbook: a new project, a demo or a backfill on its way to today
    assert _overdue_evaluation(ws.instance, after, settings) is None
    launch.execute_day(defs, ws.instance, D2.isoformat(), assets=("raw_pages",), tags={"dmf/trigger": "demo"})
    assert _overdue_evaluation(ws.instance, after, settings) is None
    # the 06:00 schedule ran D2 and its run stopped before the workbook: late after 09:00
    launch.execute_day(defs, ws.instance, D2.isoformat(), assets=("raw_pages",), tags={"dmf/trigger": SCHEDULE_TRIGGER})
    assert _overdue_evaluation(ws.instance, before, settings) is None
    evaluation = _overdue_evaluation(ws.instance, after, settings)
    assert evaluation is not None and evaluation.partition == D2.isoformat() and evaluation.passed is False
    ws.instance.report_runless_asset_event(evaluation)
    assert _overdue_evaluation(ws.instance, after + timedelta(minutes=5), settings) is None  # recorded once
    # a day whose report exists is never overdue (the backfill of an old day never looks "late")
    assert _overdue_evaluation(ws.instance, datetime(2026, 10, 5, 9, 30, tzinfo=KST), settings) is None


def test_a_rejection_that_recomputes_a_later_day_writes_that_days_events_and_workbook_again(tmp_path, after_d1):
    """D2 re-run and now refused (at its verdict) re-derives D3 against D1 in the history; D3's events file and
    workbook still said 'compared with D2' — only a day committed at its diff told the sensor what it had recomputed."""
    d3 = D2 + timedelta(days=1)
    ws, _ = _ws(tmp_path, after_d1)
    for day in (D2, d3):
        assert launch.run_day(day, instance=ws.instance, resources=ws.resources).success
    events_file = ws.root / "data" / "events" / f"{d3.isoformat()}.jsonl"
    workbook = ws.root / "reports" / f"DMF_리포트_{d3.isoformat()}.xlsx"
    assert {json.loads(line)["comparison_base"] for line in events_file.read_text().splitlines()} == {str(D2)}
    written = workbook.stat().st_mtime_ns
    ws.instance.dispose()
    again = make_workspace(ws.root, {D2.isoformat(): "page_missing_rows"}, reuse=True)
    launch.run_day(D2, instance=again.instance, resources=again.resources, extra_tags={followups.REFETCH_TAG: "true"})
    runs = runs_by_day(again)
    assert runs[D2]["status"] == "rejected" and runs[d3]["base_day_id"] == int(D1.strftime("%Y%m%d"))
    assert {json.loads(line)["comparison_base"] for line in events_file.read_text().splitlines()} == {str(D1)}
    assert workbook.stat().st_mtime_ns > written
