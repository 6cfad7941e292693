"""The real product as a user starts it: `dagster dev` (webserver + daemon) on the project's workspace,
with no MFDS_SERVICE_KEY (the embedded emulator needs none).

A temporary DAGSTER_HOME (the project's dagster.yaml) and a DMF_CONFIG override with every path in a
temporary folder keep the project's data/ and reports/ untouched; the config injects a fault on the
middle day. Through the GraphQL API: the code location loads with the six assets, the schedule and
the sensor; an asset backfill of three days, launched as the UI's "Materialize → partitions" does,
runs under the daemon; the rejected middle day shows its failing gate on its own partition, the
sensor completes its "collection failed" workbook after the backfill (one follow-up: N + 1 runs), the
day after compares with the last accepted day, with one xlsx_report materialization per day; the
rejected day is red only on the gate's asset, and gate 6 reads "skipped" there. Then today's
partition is rejected the way the 06:00 schedule would meet it and accepted on the same morning's
retry: the team receives one alert and one workbook mail. The day page and the workbook behind
`xlsx_report`'s `day_page` and `download` links are served by the team's page (`dmf web`).
"""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import date, datetime, timedelta
from datetime import time as clock_time
from pathlib import Path
from urllib.parse import quote, unquote

import httpx
import pytest

from dmf_assets.report.output import XLSX
from dmf_assets.settings import PROJECT_ROOT
from dmf_assets.storage import history
from dmf_assets.storage.db import open_database
from dmf_assets_tests.notify_servers import email_config, free_port
from dmf_assets_tests.web_support import serving

pytestmark = pytest.mark.slow

DAYS = [date(2026, 11, 26) + timedelta(days=i) for i in range(3)]
FAULT_DAY = DAYS[1]
CHAIN = ["raw_pages", "normalized_records", "integrity_verdict", "snapshot_diff", "events", "xlsx_report"]
ASSETS = set(CHAIN)
#: `dagster dev` on the project's workspace (the UI and the daemon, as `dmf ui` starts them)
DAGSTER_DEV = (sys.executable, "-m", "dagster", "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"))
STARTUP_TIMEOUT_S = 120
BACKFILL_TIMEOUT_S = 420
TERMINAL_RUN = {"SUCCESS", "FAILURE", "CANCELED"}
#: `[runs] sensor_interval_s` in the test's config (default 30): the follow-up and the settled check
#: come one tick after the backfill ends, not half a minute
SENSOR_INTERVAL_S = 5
#: the morning test's day is the daemon's today (KST), and its retry must come before `[retry] until` (23:59):
#: started this close to midnight KST, it would end on another day than it began
LAST_MINUTES_OF_THE_DAY = timedelta(minutes=5)

Q_WORKSPACE = """
query { workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus
  locationOrLoadError { __typename ... on PythonError { message } } } } ... on PythonError { message } } }
"""
Q_REPOSITORY = """
query($sel: RepositorySelector!) { repositoryOrError(repositorySelector: $sel) { __typename
  ... on Repository { name jobs { name } assetNodes { assetKey { path } }
    schedules { name cronSchedule executionTimezone }
    sensors { name minIntervalSeconds } }
  ... on PythonError { message } ... on RepositoryNotFoundError { message } } }
"""
Q_BACKFILL = """
query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename
  ... on PartitionBackfill { status numPartitions error { message }
    runs { runId status tags { key value } } }
  ... on PythonError { message } } }
"""
Q_RUNS = """
query($tags: [ExecutionTag!]) { runsOrError(filter: {tags: $tags}) { __typename
  ... on Runs { results { runId status tags { key value } } } ... on PythonError { message } } }
"""
Q_REPORT = """
query { assetOrError(assetKey: {path: ["xlsx_report"]}) { __typename
  ... on Asset { assetMaterializations(limit: 1) { partition runId
    metadataEntries { label __typename ... on UrlMetadataEntry { url } ... on PathMetadataEntry { path } } } } } }
"""


def _project_marks() -> dict[str, float | None]:
    """Modification times of what a run of DAYS would write with the project's default paths."""
    paths = []
    for d in DAYS:
        day = d.isoformat()
        paths += [
            PROJECT_ROOT / "data" / "staging" / day,
            PROJECT_ROOT / "data" / "raw" / day,
            PROJECT_ROOT / "data" / "events" / f"{day}.jsonl",
            PROJECT_ROOT / "reports" / f"DMF_리포트_{day}.xlsx",
        ]
    return {str(p): (p.stat().st_mtime if p.exists() else None) for p in paths}


def _write_config(folder: Path, web_port: int, smtp_port: int, faults: dict[str, str]) -> Path:
    """Every [paths] entry absolute inside `folder`, so nothing resolves against the project root. A run
    of `dagster dev` loads the code location anew, so a rewritten config reaches the next run."""
    names = ("database", "raw_dir", "staging_dir", "alerts_dir", "backups_dir", "reports_dir", "events_dir", "logs_dir")
    lines = ["[paths]"] + [f'{n} = "{(folder / "data" / n).as_posix()}"' for n in names]
    lines += ["", "[source]", 'base_url = "emulator://local"', "", "[emulator.faults]"]
    lines += [f'"{day}" = "{kind}"' for day, kind in faults.items()]
    lines += [
        "",
        "[web]",
        f"port = {web_port}",
        'public_base_url = ""',
        "",
        "[runs]",
        f"sensor_interval_s = {SENSOR_INTERVAL_S}",
        # today's retry a minute after its rejection, whatever the hour the suite runs at
        "",
        "[retry]",
        "interval_minutes = 1",
        'until = "23:59"',
        "",
        "[alerts]",
        'overdue_at = "23:59"',
        "",
        *email_config(smtp_port).splitlines(),
    ]
    path = folder / "dmf.smoke.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Dagit:
    """`dagster dev` in its own process group, spoken to over GraphQL."""

    def __init__(self, tmp: Path, smtp_port: int):
        self.tmp = tmp
        self.port = free_port()
        self.web_port = free_port()
        self.smtp_port = smtp_port
        self.base = f"http://127.0.0.1:{self.port}"
        home = tmp / "dagster_home"
        home.mkdir()
        shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
        self.config = self.configure({FAULT_DAY.isoformat(): "page_missing_rows"})
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "DMF_", "MFDS_"))},
            "DAGSTER_HOME": str(home),
            "DMF_CONFIG": str(self.config),
            "PYTHONUNBUFFERED": "1",
        }
        self.log_path = tmp / "dagster-dev.log"
        self.proc: subprocess.Popen | None = None
        self.project_marks_before = _project_marks()
        self.client = httpx.Client(timeout=30.0)

    def configure(self, faults: dict[str, str]) -> Path:
        return _write_config(self.tmp, self.web_port, self.smtp_port, faults)

    def start(self) -> None:
        cmd = [*DAGSTER_DEV, "-h", "127.0.0.1", "-p", str(self.port)]
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - the server's log for its lifetime, closed in stop()
        self.proc = subprocess.Popen(
            cmd, cwd=self.tmp, env=self.env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"dagster dev exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if self.client.get(f"{self.base}/server_info").status_code == 200 and self._location_loaded():
                    return
            except httpx.TransportError:
                pass
            time.sleep(1.0)
        pytest.fail(f"dagster dev not ready after {STARTUP_TIMEOUT_S} s:\n{self.log_tail()}")

    def _location_loaded(self) -> bool:
        data = self.gql(Q_WORKSPACE)["workspaceOrError"]
        entries = {e["name"]: e for e in data.get("locationEntries", [])}
        entry = entries.get("dmf_assets")
        if entry is None or entry["loadStatus"] != "LOADED":
            return False
        error = entry["locationOrLoadError"]
        assert error["__typename"] == "RepositoryLocation", error.get("message")
        return True

    def stop(self) -> None:
        self.client.close()
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the group: webserver, daemon, code server, runs
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if getattr(self, "_log", None):
            self._log.close()

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-n:])

    def gql(self, query: str, **variables) -> dict:
        response = self.client.post(f"{self.base}/graphql", json={"query": query, "variables": variables})
        assert response.status_code == 200, response.text[:500]
        body = response.json()
        assert not body.get("errors"), body["errors"]
        return body["data"]


@pytest.fixture(scope="module")
def mailbox():
    from dmf_assets_tests.notify_servers import smtp_server

    with smtp_server() as smtp:
        yield smtp


@pytest.fixture(scope="module")
def dagit(tmp_path_factory, mailbox):
    d = Dagit(tmp_path_factory.mktemp("ui_smoke"), mailbox.port)
    try:
        d.start()
        yield d
    finally:
        d.stop()


M_ASSET_BACKFILL = """
mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) { __typename
  ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message stack } } }
"""
Q_ALL_RUNS = """
query { runsOrError { __typename ... on Runs { results { runId status tags { key value } assetSelection { path } } } } }
"""


Q_PARTITIONS = """
query($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) { __typename
  ... on AssetNode { assetPartitionStatuses { __typename
    ... on TimePartitionStatuses { ranges { status startKey endKey } } } } } }
"""


def _partition_status(dagit: Dagit, asset: str) -> dict[str, str]:
    """What the asset's partitions view colours each day: MATERIALIZED (green), FAILED (red), …"""
    ranges = dagit.gql(Q_PARTITIONS, path=[asset])["assetNodeOrError"]["assetPartitionStatuses"]["ranges"]
    out = {}
    for r in ranges:
        d, end = date.fromisoformat(r["startKey"]), date.fromisoformat(r["endKey"])
        while d <= end:
            out[d.isoformat()] = r["status"]
            d += timedelta(days=1)
    return out


Q_SENSOR_TICK = """
query($sel: SensorSelector!) { sensorOrError(sensorSelector: $sel) { __typename
  ... on Sensor { sensorState { ticks(limit: 1) { timestamp status } } } ... on PythonError { message } } }
"""
SENSOR = {"repositoryLocationName": "dmf_assets", "repositoryName": "__repository__", "sensorName": "dmf_watch_sensor"}


def _wait_for_a_sensor_tick_after(dagit: Dagit, since: float, cap_s: float) -> None:
    """Until the sensor has finished a tick that started after `since` (it saw the settled state and
    had its chance to launch a duplicate) — at most `cap_s`, the sensor's interval with a margin."""
    deadline = since + cap_s
    while time.time() < deadline:
        ticks = dagit.gql(Q_SENSOR_TICK, sel=SENSOR)["sensorOrError"]["sensorState"]["ticks"]
        if ticks and ticks[0]["timestamp"] > since and ticks[0]["status"] != "STARTED":
            return
        time.sleep(1.0)


def _tag(run: dict, key: str) -> str | None:
    return next((t["value"] for t in run["tags"] if t["key"] == key), None)


def _wait_until_settled(dagit: Dagit, backfill_id: str) -> list[dict]:
    """Until the backfill is over, every run has finished and every day has its workbook — then one more
    sensor tick (at most one more interval), so a duplicate follow-up would have been launched by now."""
    deadline = time.monotonic() + BACKFILL_TIMEOUT_S
    reports = dagit.tmp / "data" / "reports_dir"
    while True:
        backfill = dagit.gql(Q_BACKFILL, id=backfill_id)["partitionBackfillOrError"]
        runs = dagit.gql(Q_ALL_RUNS)["runsOrError"]["results"]
        done = backfill["status"] in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED") and all(
            r["status"] in TERMINAL_RUN for r in runs
        )
        if done and all((reports / f"DMF_리포트_{d.isoformat()}.xlsx").exists() for d in DAYS):
            _wait_for_a_sensor_tick_after(dagit, time.time(), cap_s=SENSOR_INTERVAL_S + 15)
            return dagit.gql(Q_ALL_RUNS)["runsOrError"]["results"]
        if time.monotonic() > deadline:
            pytest.fail(
                f"not settled after {BACKFILL_TIMEOUT_S} s: backfill {backfill['status']}, runs "
                f"{[(_tag(r, 'dagster/partition'), r['status']) for r in runs]}\n{dagit.log_tail()}"
            )
        time.sleep(3.0)


def test_ui_asset_backfill_with_a_rejected_day_under_the_daemon(dagit):
    import dagster as dg
    from dagster._core.events import DagsterEventType
    from openpyxl import load_workbook

    params = {
        "assetSelection": [{"path": [a]} for a in CHAIN],
        "partitionNames": [d.isoformat() for d in DAYS],
        "fromFailure": False,
    }
    launched = dagit.gql(M_ASSET_BACKFILL, params=params)["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    runs = _wait_until_settled(dagit, launched["backfillId"])

    # N + 1 runs: one per day from the backfill, one follow-up for the rejected day (as README says)
    assert len(runs) == len(DAYS) + 1, [
        (_tag(r, "dagster/partition"), _tag(r, "dmf/trigger"), r["status"]) for r in runs
    ]
    assert all(_tag(r, "dagster/partition") for r in runs)  # every run is one day: checks land on their partition
    followup = [r for r in runs if _tag(r, "dmf/trigger") == "sensor-complete"]
    assert [_tag(r, "dagster/partition") for r in followup] == [FAULT_DAY.isoformat()]

    instance = dg.DagsterInstance.from_config(str(dagit.tmp / "dagster_home"))
    reports = instance.fetch_materializations(dg.AssetKey("xlsx_report"), limit=50).records
    assert sorted(r.partition_key for r in reports) == [d.isoformat() for d in DAYS]  # once per day
    gate2 = {}
    for run in runs:
        for e in instance.all_logs(run["runId"], of_type=DagsterEventType.ASSET_CHECK_EVALUATION):
            data = e.dagster_event.event_specific_data
            if data.check_name == "gate_2_completeness":
                gate2[data.partition] = (data.passed, data.metadata)
    assert {d: p for d, (p, _) in gate2.items()} == {
        DAYS[0].isoformat(): True,
        FAULT_DAY.isoformat(): False,
        DAYS[2].isoformat(): True,
    }
    samples = gate2[FAULT_DAY.isoformat()][1]["samples"].value
    assert samples and samples[0]["rows"] < samples[0]["expected_rows"]  # the short page, with its counts

    data = dagit.tmp / "data"
    with open_database(data / "database", backups_dir=data / "backups_dir", purpose="ui smoke test") as conn:
        rows = [history.run_row(conn, d) for d in DAYS]
    assert [r["status"] for r in rows] == ["baseline", "rejected", "accepted"], rows
    assert rows[2]["base_day_id"] == history.day_id(DAYS[0])  # the day after compares with the last accepted day
    book = data / "reports_dir" / f"DMF_리포트_{FAULT_DAY.isoformat()}.xlsx"
    first = next(load_workbook(book, read_only=True).worksheets[0].iter_rows(max_row=1, values_only=True))
    assert f"수집 실패 — 비교 기준은 여전히 {DAYS[0].isoformat()}" in str(first[0])
    assert _project_marks() == dagit.project_marks_before, "the smoke test wrote into the project's own folders"

    # the partitions view tells the truth: the rejected day is red on the gate's asset — one rejection —
    # and nowhere else: snapshot_diff recorded "rejected, base carried forward", the tail ran
    verdict = _partition_status(dagit, "integrity_verdict")
    assert [verdict.get(d.isoformat()) for d in DAYS] == ["MATERIALIZED", "FAILED", "MATERIALIZED"], verdict
    for asset in ("snapshot_diff", "events", "xlsx_report"):
        assert [_partition_status(dagit, asset).get(d.isoformat()) for d in DAYS] == ["MATERIALIZED"] * 3, asset
    # gate 6 was never evaluated on the rejected day: Dagster shows it skipped there, not "execution failed"
    from dagster._core.event_api import PartitionKeyFilter

    gate6 = dg.AssetCheckKey(dg.AssetKey("snapshot_diff"), "gate_6_churn")
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [gate6], partition_filter=PartitionKeyFilter(key=FAULT_DAY.isoformat())
    )[gate6]
    run = instance.get_run_by_id(latest.run_id)
    assert latest.status.value == "PLANNED" and run.status == dg.DagsterRunStatus.SUCCESS  # resolved: SKIPPED
    # the backfill mailed no workbook; the alerts about its rejected day say what to do, no retry promised
    instance.dispose()


M_LAUNCH_RUN = """
mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }
"""


def _rejected_today(dagit: Dagit, day: str, deadline: float) -> bool:
    import dagster as dg

    instance = dg.DagsterInstance.from_config(str(dagit.tmp / "dagster_home"))
    try:
        return bool(
            instance.fetch_observations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey("integrity_verdict"), asset_partitions=[day]), limit=1
            ).records
        )
    finally:
        instance.dispose()


def _wait_out_the_end_of_the_kst_day() -> None:
    """The daemon is a process of its own, on the real clock: a frozen clock cannot hold its day. In the last
    minutes before midnight KST, wait for the next day to begin instead (at most five minutes, once a day)."""
    from dmf_assets.clock import KST, now_kst

    now = now_kst()
    midnight = datetime.combine(now.date() + timedelta(days=1), clock_time(0), tzinfo=KST)
    if midnight - now < LAST_MINUTES_OF_THE_DAY:
        time.sleep((midnight - now).total_seconds() + 2)


def test_a_morning_rejected_then_accepted_on_retry_sends_one_alert_and_one_workbook_mail(dagit, mailbox):
    from dmf_assets.clock import today_kst

    _wait_out_the_end_of_the_kst_day()
    today = today_kst().isoformat()
    while not mailbox.received.empty():  # what the backfill test's alerts left behind
        mailbox.received.get()
    dagit.configure({FAULT_DAY.isoformat(): "page_missing_rows", today: "page_missing_rows"})  # an outage this morning
    sel = {"repositoryLocationName": "dmf_assets", "repositoryName": "__repository__", "jobName": "dmf_daily_job"}
    tags = [{"key": "dagster/partition", "value": today}, {"key": "dmf/trigger", "value": "schedule"}]
    launched = dagit.gql(M_LAUNCH_RUN, p={"selector": sel, "executionMetadata": {"tags": tags}})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    deadline = time.monotonic() + BACKFILL_TIMEOUT_S
    while not _rejected_today(dagit, today, deadline):
        assert time.monotonic() < deadline, dagit.log_tail()
        time.sleep(2.0)
    dagit.configure({FAULT_DAY.isoformat(): "page_missing_rows"})  # the source recovers before the retry
    data = dagit.tmp / "data"
    while True:  # the retry (a minute after the rejection) is accepted and its workbook mailed
        with open_database(data / "database", backups_dir=data / "backups_dir", purpose="ui smoke test") as conn:
            row = history.run_row(conn, date.fromisoformat(today))
        runs = dagit.gql(Q_RUNS, tags=[{"key": "dagster/partition", "value": today}])["runsOrError"]["results"]
        if row and row["status"] == "accepted" and all(r["status"] in TERMINAL_RUN for r in runs):
            break
        assert time.monotonic() < deadline, (row, dagit.log_tail())
        time.sleep(3.0)
    _wait_for_a_sensor_tick_after(dagit, time.time(), cap_s=SENSOR_INTERVAL_S + 15)
    mails = []
    while True:
        try:
            mails.append(mailbox.next_message(timeout=3)[1])
        except Exception:  # noqa: BLE001 - queue.Empty: nothing more arrived
            break
    mine = [m for m in mails if today in m["Subject"]]
    subjects = [m["Subject"] for m in mine]
    assert len(mine) == 2, subjects
    alert, report = sorted(mine, key=lambda m: bool(list(m.iter_attachments())))
    assert alert["Subject"] == f"[DMF 경보] {today} 수집 거부 (rejected) — 게이트 2 완전성(completeness)"
    assert "자동으로 다시 수집합니다(재시도 1/3, Dagster 데몬 실행 중)" in alert.get_body(("plain",)).get_content()
    assert "재시도 1회째 반영" in report["Subject"] and list(report.iter_attachments())
    assert "오늘 아침 1번째로 다시 받아 정상으로 반영했습니다" in report.get_body(("plain",)).get_content()
    retry = [r for r in runs if _tag(r, "dmf/retry")]
    assert [_tag(r, "dmf/retry") for r in retry] == [f"{today}#1"]


def test_repository_loads_with_assets_schedule_and_sensor(dagit):
    repo = dagit.gql(Q_REPOSITORY, sel={"repositoryLocationName": "dmf_assets", "repositoryName": "__repository__"})
    repo = repo["repositoryOrError"]
    assert repo["__typename"] == "Repository", repo
    assert {"/".join(a["assetKey"]["path"]) for a in repo["assetNodes"]} == ASSETS
    assert "dmf_daily_job" in {j["name"] for j in repo["jobs"]}
    schedules = {s["name"]: s for s in repo["schedules"]}
    assert schedules["daily_0600_kst"]["cronSchedule"] == "0 6 * * *"
    assert schedules["daily_0600_kst"]["executionTimezone"] == "Asia/Seoul"
    sensors = {s["name"]: s for s in repo["sensors"]}
    assert sensors["dmf_watch_sensor"]["minIntervalSeconds"] == SENSOR_INTERVAL_S  # the config reaches the daemon
    # the UI opens on the product, not on Dagster's "join the community" dialog (the instance's `nux: enabled: false`)
    assert dagit.gql("query { shouldShowNux }") == {"shouldShowNux": False}


def test_the_workbook_is_downloaded_through_the_link_of_its_materialization(dagit):
    from dmf_assets.clock import today_kst

    # runs after the backfill and the retried-morning tests above: the latest xlsx_report materialization
    # (one of the backfilled days, or today's) links its day page and its workbook on the team's page
    data = dagit.tmp / "data"
    asset = dagit.gql(Q_REPORT)["assetOrError"]
    latest = asset["assetMaterializations"][0]
    entries = {e["label"]: e for e in latest["metadataEntries"]}
    for label in ("download", "day_page"):
        assert entries[label]["__typename"] == "UrlMetadataEntry", entries.get(label)
    url, page_url = entries["download"]["url"], entries["day_page"]["url"]
    name = f"DMF_리포트_{latest['partition']}.xlsx"
    assert latest["partition"] in {d.isoformat() for d in DAYS} | {today_kst().isoformat()}
    # from [web] port (no public_base_url): the configured address, not a port of the moment
    assert url == f"http://127.0.0.1:{dagit.web_port}/reports/{quote(name)}"
    assert page_url == f"http://127.0.0.1:{dagit.web_port}/day/{latest['partition']}"
    reports = data / "reports_dir"
    assert (reports / name).is_file()

    with serving(reports, data / "database", port=dagit.web_port) as (base, _):
        assert base == f"http://127.0.0.1:{dagit.web_port}"
        response = httpx.get(url, timeout=10)
        assert response.status_code == 200
        assert response.headers["content-type"] == XLSX
        disposition = response.headers["content-disposition"]
        assert disposition == f"attachment; filename*=UTF-8''{quote(name)}"
        assert unquote(disposition.split("''", 1)[1]) == name  # Korean name intact
        assert response.content == (reports / name).read_bytes()
        assert response.content[:2] == b"PK"  # a zip container, i.e. a real .xlsx
        day_page = httpx.get(page_url, timeout=30)
        assert day_page.status_code == 200 and latest["partition"] in day_page.text
        # path tricks never leave the reports folder (raw request line: clients would normalise "..")
        (dagit.tmp / "data" / "secret.txt").write_text("not for download", encoding="utf-8")
        for path in (
            "/reports/../secret.txt",
            "/reports/%2e%2e/secret.txt",
            "/reports/..%2fsecret.txt",
            "/reports/../../dmf.smoke.toml",
            "/reports/%2E%2E%2F%2E%2E%2Fdmf.smoke.toml",
        ):
            conn = http.client.HTTPConnection("127.0.0.1", dagit.web_port, timeout=10)
            conn.request("GET", path)
            reply = conn.getresponse()
            body = reply.read()
            conn.close()
            assert reply.status == 404, (path, reply.status, body[:80])
            assert b"not for download" not in body


Q_JOB_RUNS = """
query($filter: RunsFilter) { runsOrError(filter: $filter) { __typename
  ... on Runs { results { runId pipelineName status tags { key value }
    repositoryOrigin { repositoryName repositoryLocationName } } } ... on PythonError { message } } }
"""


def test_dmf_backfill_runs_are_on_the_control_plane_with_their_origin_and_reason(dagit):
    """Runs of the `dmf` commands carried no code-location origin: the UI's Overview timeline (which skips a run
    without `repositoryOrigin`) and the Runs tab of dmf_daily_job (which filters on `.dagster/repository`)
    showed none of them. Asked the way those pages ask: every run of `dmf backfill` is there, and the rejected
    day's run carries its Korean reason as a tag. (Last in this module: its days re-derive the backfilled ones.)"""
    first, rejected = (DAYS[0] - timedelta(days=2)).isoformat(), (DAYS[0] - timedelta(days=1)).isoformat()
    done = subprocess.run(
        [sys.executable, "-m", "dmf_assets", "backfill", "--start", first, "--end", rejected]
        + ["--fault", f"{rejected}=page_missing_rows"],
        env=dagit.env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    job_page = {
        "pipelineName": "dmf_daily_job",
        "tags": [
            {"key": ".dagster/repository", "value": "__repository__@dmf_assets"},
            {"key": "dmf/trigger", "value": "cli-backfill"},
        ],
    }
    runs = dagit.gql(Q_JOB_RUNS, filter=job_page)["runsOrError"]["results"]
    assert sorted(_tag(r, "dagster/partition") for r in runs) == [first, rejected]
    for run in runs:
        assert run["repositoryOrigin"] == {"repositoryName": "__repository__", "repositoryLocationName": "dmf_assets"}
    [failed] = [r for r in runs if r["status"] == "FAILURE"]
    assert _tag(failed, "dagster/partition") == rejected
    assert _tag(failed, "dmf/rejected").startswith("게이트 2 완전성: ")
