"""The outside watchdog (`dmf doctor --alert`): daemon heartbeats from a real Dagster instance (and a
real `dagster-daemon` process), the 09:00 KST report deadline, alerts through notify to a real receiver."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time as _time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import pytest
from dagster._daemon.types import DaemonHeartbeat

from dmf_assets.clock import KST
from dmf_assets.ops.common import project_paths
from dmf_assets.ops.doctor import FAIL, OK, WARN
from dmf_assets.ops.watchdog import daemon_check, report_check, watch
from dmf_assets.settings import PROJECT_ROOT, load_settings
from dmf_assets_tests.notify_servers import settings_for, webhook_receiver

FAST = {"delivery_backoff_s": (0.05,)}
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
    check, facts = daemon_check(home, LATE, stale_minutes=5)
    assert check.status == FAIL and "SCHEDULER 42분 전" in check.message_ko
    assert facts["daemons"] == ["SCHEDULER"] and round(facts["age_minutes"]) == 42
    check, _ = daemon_check(tmp_path / "nowhere", LATE)
    assert check.status == FAIL and "dagster.yaml" in check.message_ko


def test_report_deadline_is_0900_kst_for_today(tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "DMF_리포트_2026-11-26.xlsx").write_bytes(b"x")
    assert report_check(reports, MORNING)[0].status == OK
    check, facts = report_check(reports, LATE)
    assert check.status == FAIL and "2026-11-27" in check.message_ko
    assert facts == {"expected_at": "09:00", "latest_report": "2026-11-26", "workbook": "reports/DMF_리포트_2026-11-27.xlsx"}
    # a server clock in UTC: 00:30 UTC is 09:30 in Korea, and the expected day is Korea's today
    check, _ = report_check(reports, datetime(2026, 11, 27, 0, 30, tzinfo=timezone.utc))
    assert check.status == FAIL and "2026-11-27" in check.message_ko
    assert report_check(reports, datetime(2026, 11, 26, 23, 59, tzinfo=timezone.utc))[0].status == OK
    (reports / "DMF_리포트_2026-11-27.xlsx").write_bytes(b"x")
    assert report_check(reports, LATE)[0].status == OK


def test_watch_alerts_once_per_day_through_notify(tmp_path):
    home = _home(tmp_path)
    _beat(home, LATE - timedelta(hours=3))
    (tmp_path / "reports").mkdir()
    paths = project_paths(load_settings(), tmp_path)
    assert paths.dagster_home == home
    with webhook_receiver() as hook:
        settings = settings_for(tmp_path / "data" / "alerts", webhooks=[hook.url()])
        first = watch(settings, paths, now=LATE, **FAST)
        posts = {p["json"]["kind"]: p["json"] for p in (hook.next(), hook.next())}
        again = watch(settings, paths, now=LATE + timedelta(minutes=15), **FAST)
        assert hook.received.empty()
    assert [c.status for c in first.checks] == [FAIL, FAIL, OK]
    assert sorted(r.kind for r in first.alerts) == ["daemon_down", "overdue"] and again.alerts == []
    down, overdue = posts["daemon_down"], posts["overdue"]
    assert down["day"] == "2026-11-27" and "SCHEDULER" in down["text"] and "180분 전" in down["text"]
    assert "systemctl --user restart dmf-dagster-daemon" in down["text"]
    assert overdue["subject"] == "[DMF 경보] 2026-11-27 리포트 지연 (report overdue, 09:00 KST)"
    assert "DMF_리포트_2026-11-27.xlsx" in overdue["text"] and "데몬도 멈춰" in overdue["text"]
    assert (tmp_path / "data" / "alerts" / "2026-11-27-daemon_down.json").is_file()


def test_watch_resends_failed_deliveries_and_reports_them(tmp_path):
    _beat(_home(tmp_path), LATE)
    paths = project_paths(load_settings(), tmp_path)
    with webhook_receiver(fail_first=3) as hook:  # the first round (3 attempts) fails, the re-send works
        settings = settings_for(tmp_path / "data" / "alerts", webhooks=[hook.url()])
        first = watch(settings, paths, now=LATE, **FAST)
        assert [r.kind for r in first.alerts] == ["overdue"] and first.alerts[0].status == "failed"
        assert [r.status for r in first.resent] == ["sent"] and hook.next()["json"]["kind"] == "overdue"
    assert first.checks[-1].status == OK
    with webhook_receiver(fail_first=99) as hook:  # a dead channel stays visible in the doctor table
        settings = settings_for(tmp_path / "data2" / "alerts", webhooks=[hook.url()])
        second = watch(settings, paths, now=LATE, **FAST)
    assert second.checks[-1].status == WARN and "발송 실패 1건" in second.checks[-1].message_ko


def test_dmf_doctor_alert_from_the_command_line(tmp_path):
    _home(tmp_path)  # an instance without any heartbeat: the daemon never ran
    (tmp_path / "local.toml").write_text("# the documented defaults only\n", encoding="utf-8")
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster_home"), "DMF_CONFIG": str(tmp_path / "local.toml")}
    out = subprocess.run([sys.executable, "-m", "dmf_assets", "doctor", "--alert", "--root", str(tmp_path), "--json"],
                         capture_output=True, text=True, env=env, timeout=120, cwd=PROJECT_ROOT)
    report = json.loads(out.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert out.returncode == 2 and checks["daemon"]["status"] == FAIL
    assert {"daemon", "report", "deliveries"} <= set(checks)
    alerts = list((tmp_path / "data" / "alerts").glob("*-daemon_down.json"))
    assert len(alerts) == 1 and "Traceback" not in out.stderr


@pytest.mark.slow
def test_a_real_dagster_daemon_is_seen_alive_then_dead(tmp_path):
    home = _home(tmp_path)
    defs = tmp_path / "tiny_defs.py"
    defs.write_text("import dagster as dg\n\n@dg.asset\ndef a():\n    return 1\n\ndefs = dg.Definitions(assets=[a])\n")
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    proc = subprocess.Popen([str(Path(sys.executable).parent / "dagster-daemon"), "run", "-f", str(defs)], env=env,
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = _time.monotonic() + 240  # a loaded CI machine starts the daemon slowly
        check = None
        while _time.monotonic() < deadline:  # bounded: wait for the daemon's first heartbeats
            check, _ = daemon_check(home, datetime.now(KST))
            if check.status == OK:
                break
            assert proc.poll() is None, "dagster-daemon exited"
            _time.sleep(1)
        assert check is not None and check.status == OK, check
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    check, _ = daemon_check(home, datetime.now(KST) + timedelta(minutes=10))
    assert check.status == FAIL and "SCHEDULER" in check.message_ko
