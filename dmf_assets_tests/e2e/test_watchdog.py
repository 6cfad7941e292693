"""The outside watchdog (`dmf doctor --alert`): daemon heartbeats from a real Dagster instance (and a
real `dagster-daemon` process), the 09:00 KST report deadline, alerts through notify to a real receiver."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from dagster._daemon.types import DaemonHeartbeat

from dmf_assets.clock import KST, frozen_at
from dmf_assets.notify import Notifier
from dmf_assets.ops.common import project_paths
from dmf_assets.ops.doctor import FAIL, OK, WARN
from dmf_assets.ops.instance import open_instance
from dmf_assets.ops.watchdog import daemon_check, delivery_check, report_check, watch
from dmf_assets.settings import PROJECT_ROOT
from dmf_assets_tests.notify_servers import settings_for, webhook_receiver
from dmf_assets_tests.project_support import dmf, wait_until

MORNING = datetime(2026, 11, 27, 8, 59, tzinfo=KST)
LATE = datetime(2026, 11, 27, 9, 0, tzinfo=KST)


def _home(root: Path) -> Path:
    home = root / "dagster_home"
    home.mkdir(parents=True)
    shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    return home


def _beat(home: Path, at: datetime, daemons=("SCHEDULER", "SENSOR")) -> None:
    instance = dg.DagsterInstance.from_config(str(home))
    try:
        for d in daemons:
            instance.add_daemon_heartbeat(DaemonHeartbeat(at.timestamp(), d, "test-daemon", []))
    finally:
        instance.dispose()


def test_daemon_heartbeat_fresh_stale_and_missing(tmp_path):
    home = _home(tmp_path)
    check, _ = daemon_check(home, LATE)
    assert check.status == FAIL and "하트비트 기록이 없습니다" in check.message_ko
    _beat(home, LATE - timedelta(seconds=40))
    check, _ = daemon_check(home, LATE)
    assert check.status == OK, check
    _beat(home, LATE - timedelta(minutes=42), daemons=("SCHEDULER",))
    check, alert = daemon_check(home, LATE, stale_minutes=5)
    assert check.status == FAIL and "SCHEDULER 42분 전" in check.message_ko
    assert alert.kind == "daemon_down" and alert.daemons == ("SCHEDULER",) and alert.limit_minutes == 5
    # an instance that cannot be read is not a daemon that stopped: its own kind, never daemon_down
    check, alert = daemon_check(tmp_path / "nowhere", LATE)
    assert check.status == FAIL and "dagster.yaml" in check.message_ko and alert.kind == "watchdog_error"


def test_report_deadline_is_0900_kst_for_today(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "DMF_리포트_2026-11-26.xlsx").write_bytes(b"x")
    assert report_check(reports, MORNING)[0].status == OK
    check, alert = report_check(reports, LATE)
    assert check.status == FAIL and "2026-11-27" in check.message_ko
    assert (alert.kind, alert.workbook, str(alert.latest_report)) == (
        "overdue",
        "reports/DMF_리포트_2026-11-27.xlsx",
        "2026-11-26",
    )
    # a server clock in UTC: 00:30 UTC is 09:30 in Korea, and the expected day is Korea's today
    check, _ = report_check(reports, datetime(2026, 11, 27, 0, 30, tzinfo=UTC))
    assert check.status == FAIL and "2026-11-27" in check.message_ko
    assert report_check(reports, datetime(2026, 11, 26, 23, 59, tzinfo=UTC))[0].status == OK
    (reports / "DMF_리포트_2026-11-27.xlsx").write_bytes(b"x")
    assert report_check(reports, LATE)[0].status == OK


def _paths_for(tmp_path, **settings_kw):
    settings = settings_for(tmp_path / "data" / "alerts", **settings_kw)
    return settings, project_paths(settings, tmp_path)


def test_watch_alerts_once_per_day_through_notify(tmp_path):
    home = _home(tmp_path)
    _beat(home, LATE - timedelta(hours=3))
    (tmp_path / "reports").mkdir()
    with webhook_receiver() as hook:
        settings, paths = _paths_for(tmp_path, webhooks=[hook.url()])
        assert paths.dagster_home == home
        first = watch(settings, paths, now=LATE)
        posts = {p["json"]["kind"]: p["json"] for p in (hook.next(), hook.next())}
        again = watch(settings, paths, now=LATE + timedelta(minutes=15))
        assert hook.received.empty()
    assert [c.status for c in first.checks] == [FAIL, FAIL]
    assert sorted(o.stored.kind for o in first.alerts) == ["daemon_down", "overdue"] and again.alerts == []
    down, overdue = posts["daemon_down"], posts["overdue"]
    assert down["day"] == "2026-11-27" and "SCHEDULER" in down["text"] and "2026-11-27 06:00 KST" in down["text"]
    assert "systemctl --user restart dmf-dagster-daemon" in down["text"]
    assert overdue["subject"] == "[DMF 경보] 2026-11-27 리포트 지연 (report overdue, 09:00 KST)"
    assert "DMF_리포트_2026-11-27.xlsx" in overdue["text"] and "데몬도 멈춰" in overdue["text"]
    assert (tmp_path / "data" / "alerts" / "2026-11-27-daemon_down.json").is_file()


def test_an_unreadable_instance_is_a_watchdog_error_and_leaves_the_daemon_down_slot_free(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        "storage:\n  postgres:\n    postgres_db:\n      username:\n        env: DMF_PG_USER\n"
    )
    with webhook_receiver() as hook:
        settings, paths = _paths_for(tmp_path, webhooks=[hook.url()])
        first = watch(settings, paths, now=MORNING - timedelta(minutes=30))
        post = hook.next()["json"]
        assert hook.received.empty()
        # the instance becomes readable and the daemon really is silent: that is still told the same day
        shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
        later = watch(settings, paths, now=MORNING - timedelta(minutes=20))
        down = hook.next()["json"]
    assert [o.stored.kind for o in first.alerts] == ["watchdog_error"] and post["kind"] == "watchdog_error"
    assert "데몬이 멈췄다는 뜻은 아닙니다" in post["text"] and "None" not in post["text"]
    assert [o.stored.kind for o in later.alerts] == ["daemon_down"] and down["kind"] == "daemon_down"


def test_watch_resends_what_is_due_and_doctor_shows_what_waits(tmp_path):
    _beat(_home(tmp_path), LATE)
    with webhook_receiver(fail_first=1) as hook:  # the first try fails; the next round (1 minute on) works
        settings, paths = _paths_for(tmp_path, webhooks=[hook.url()])
        with frozen_at(LATE):
            first = watch(settings, paths, now=LATE)
        assert [o.stored.kind for o in first.alerts] == ["overdue"] and first.alerts[0].state == "pending"
        notifier = Notifier(settings, paths.alerts_dir)
        assert delivery_check(notifier).status == WARN and "재발송 대기 1건" in delivery_check(notifier).message_ko
        with frozen_at(LATE + timedelta(minutes=2)):
            second = watch(settings, paths, now=LATE + timedelta(minutes=2))
        assert [o.state for o in second.resent] == ["delivered"] and hook.next()["json"]["kind"] == "overdue"
    assert delivery_check(notifier).status == OK


def test_dmf_doctor_alert_from_the_command_line(tmp_path):
    _home(tmp_path)  # an instance without any heartbeat: the daemon never ran
    (tmp_path / "local.toml").write_text("# the documented defaults only\n", encoding="utf-8")
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster_home"), "DMF_CONFIG": str(tmp_path / "local.toml")}
    out = dmf(env, "doctor", "--alert", "--root", str(tmp_path), "--json", timeout=120)
    report = json.loads(out.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert out.returncode == 2 and checks["daemon"]["status"] == FAIL
    assert {"daemon", "report", "deliveries"} <= set(checks)
    alerts = list((tmp_path / "data" / "alerts").glob("*-daemon_down.json"))
    assert len(alerts) == 1 and "Traceback" not in out.stderr


def test_dmf_doctor_alert_reads_the_projects_env_file_as_dagster_dev_does(tmp_path):
    """The watchdog timer starts without the service's environment: a PostgreSQL instance whose password
    lives in .env must be readable by `dmf doctor --alert` exactly as by `dagster dev`."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        "run_storage:\n  module: dagster.core.storage.runs\n  class: SqliteRunStorage\n  config:\n"
        "    base_dir:\n      env: DMF_TEST_RUN_DIR\n",
        encoding="utf-8",
    )
    (tmp_path / ".env").write_text(f"DMF_TEST_RUN_DIR={tmp_path / 'runs'}\n", encoding="utf-8")
    (tmp_path / "local.toml").write_text("# defaults\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "DMF_TEST_RUN_DIR"}
    env.update(DAGSTER_HOME=str(home), DMF_CONFIG=str(tmp_path / "local.toml"))
    out = dmf(env, "doctor", "--alert", "--root", str(tmp_path), "--json", timeout=120)
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert "cannot read" not in checks["daemon"]["message_en"], checks["daemon"]
    assert not list((tmp_path / "data" / "alerts").glob("*-watchdog_error.json"))


@pytest.mark.slow
def test_a_real_dagster_daemon_is_seen_alive_then_dead(tmp_path):
    home = _home(tmp_path)
    defs = tmp_path / "tiny_defs.py"
    defs.write_text("import dagster as dg\n\n@dg.asset\ndef a():\n    return 1\n\ndefs = dg.Definitions(assets=[a])\n")
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    # the home's storage created first, as `dmf ui` does before it starts the daemon: the daemon and this check
    # creating a new home at the same moment is the race `ops/instance.py` prevents between `dmf` commands (the
    # daemon does not take turns), and it once left this test's instance unreadable for the whole 240 s
    open_instance(home).dispose()
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster-daemon"), "run", "-f", str(defs)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        # the daemon's first heartbeats (240 s: a loaded CI machine starts the daemon slowly)
        wait_until(lambda: daemon_check(home, datetime.now(KST))[0].status == OK, proc, 240)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    check, _ = daemon_check(home, datetime.now(KST) + timedelta(minutes=10))
    assert check.status == FAIL and "SCHEDULER" in check.message_ko
