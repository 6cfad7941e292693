"""`dmf service install | uninstall` (systemd units, checked by systemd-analyze) and `dmf web` (or its former
name `dmf serve-reports`) as the real process that dmf-web.service runs."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from dmf_assets.cli import main
from dmf_assets.service.units import ALL_UNITS, MARKER, SERVICES, TIMERS, default_options, render_units
from dmf_assets.settings import PROJECT_ROOT
from dmf_assets_tests.notify_servers import free_port

VENV_BIN = Path(sys.executable).parent


def _units(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir()) if p.is_file()}


def test_install_user_units_and_print_the_systemctl_commands(tmp_path, capsys):
    target = tmp_path / "systemd" / "user"
    target.parent.mkdir()  # the command creates the folder it is given, never the folders above it
    assert main(["service", "install", "--user", "--unit-dir", str(target)]) == 0
    out = capsys.readouterr().out
    units = _units(target)
    assert set(units) == set(SERVICES + TIMERS)
    root = PROJECT_ROOT
    for name in ("dmf-dagster-webserver.service", "dmf-dagster-daemon.service", "dmf-web.service"):
        text = units[name]
        assert text.startswith(MARKER)
        for line in (
            f"WorkingDirectory={root}",
            f"Environment=DAGSTER_HOME={root / 'dagster_home'}",
            f"EnvironmentFile=-{root / '.env'}",
            "Restart=on-failure",
            "WantedBy=default.target",
        ):
            assert line in text.splitlines(), (name, line)
        assert "User=" not in text  # a user unit runs as its owner
    assert (
        f"ExecStart={VENV_BIN / 'dagster-daemon'} run -w {root / 'workspace.yaml'}"
        in units["dmf-dagster-daemon.service"]
    )
    assert (
        f"ExecStart={VENV_BIN / 'dagster-webserver'} -w {root / 'workspace.yaml'} -h 127.0.0.1 -p 3000"
        in units["dmf-dagster-webserver.service"]
    )
    assert f"ExecStart={VENV_BIN / 'dmf'} web" in units["dmf-web.service"].splitlines()
    # the webserver and the daemon start side by side: each first opens the instance in turn (ops/instance.py)
    pre = f"ExecStartPre={VENV_BIN / 'python'} -m dmf_assets.ops.instance"
    assert all(pre in units[n].splitlines() for n in ("dmf-dagster-webserver.service", "dmf-dagster-daemon.service"))
    watchdog = units["dmf-watchdog.service"]
    assert "Type=oneshot" in watchdog and f"ExecStart={VENV_BIN / 'dmf'} doctor --alert" in watchdog
    assert "Restart=" not in watchdog and "SuccessExitStatus=1 2" in watchdog
    assert f"ExecStartPre={VENV_BIN / 'python'} -m dmf_assets.settings" in watchdog.splitlines()
    timer = units["dmf-watchdog.timer"]
    assert (
        "OnCalendar=*:0/10" in timer and "OnCalendar=*-*-* 09:01:00 Asia/Seoul" in timer and "Persistent=true" in timer
    )
    assert "loginctl enable-linger" in out
    assert (
        "systemctl --user enable --now dmf-dagster-webserver.service dmf-dagster-daemon.service "
        "dmf-web.service dmf-watchdog.timer"
    ) in out


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed on this machine")
def test_units_pass_systemd_analyze_verify(tmp_path):
    for mode in (["--user"], []):
        target = tmp_path / ("user" if mode else "system")
        assert main(["service", "install", *mode, "--unit-dir", str(target)]) == 0
        files = sorted(str(p) for p in target.iterdir())
        result = subprocess.run(
            ["systemd-analyze", "verify", "--man=no", *files], capture_output=True, text=True, timeout=60, cwd=target
        )
        assert result.returncode == 0, result.stderr
        assert "dmf-" not in result.stderr, result.stderr  # no warning about our units


def test_a_watchdog_that_cannot_read_its_configuration_fails_its_unit(tmp_path):
    """`dmf doctor --alert` exits 2 for a FAIL it found and alerted, which the unit counts as success
    (SuccessExitStatus=1 2) — and 2 for a configuration it cannot read. The unit reads the configuration first
    (ExecStartPre, whose failure fails the unit): the command it runs, as systemd would run it, exits 2 with the
    one message for a broken file and 0 for a good one."""
    units = render_units(default_options(tmp_path, user_mode=True))
    [pre] = [line for line in units["dmf-watchdog.service"].splitlines() if line.startswith("ExecStartPre=")]
    command = shlex.split(pre.removeprefix("ExecStartPre="))
    broken = tmp_path / "broken.toml"
    broken.write_text("[gates]\nchurn_max_ratio = 7\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DMF_", "DAGSTER_"))}
    for config, code in ((broken, 2), (None, 0)):
        run_env = {**env, "DMF_CONFIG": str(config)} if config else env
        result = subprocess.run(command, env=run_env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert result.returncode == code, result.stderr
        assert result.stdout == ""
        if config:
            assert (
                result.stderr.startswith("dmf: 설정 오류 / configuration error:") and "churn_max_ratio" in result.stderr
            )
            assert "Traceback" not in result.stderr
        else:
            assert result.stderr == ""


def test_dry_run_prints_the_files_and_writes_nothing(tmp_path, capsys):
    target = tmp_path / "units"
    assert main(["service", "install", "--user", "--dry-run", "--unit-dir", str(target)]) == 0
    out = capsys.readouterr().out
    assert not target.exists()
    for name in SERVICES + TIMERS:
        assert f"# ---- {target / name}" in out
    assert "Restart=on-failure" in out and "systemctl --user daemon-reload" in out


def test_system_units_run_as_an_account_and_wait_for_postgres(tmp_path):
    project = tmp_path / "project"
    (project / "dagster_home").mkdir(parents=True)
    (project / "workspace.yaml").write_text("load_from: []\n", encoding="utf-8")
    (project / "dagster_home" / "dagster.yaml").write_text(
        (PROJECT_ROOT / "dagster_home" / "dagster.postgres.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    units = render_units(default_options(project, user_mode=False, user="dmf"))
    daemon = units["dmf-dagster-daemon.service"].splitlines()
    assert "User=dmf" in daemon and "WantedBy=multi-user.target" in daemon
    assert "After=network-online.target postgresql.service" in daemon
    assert f"WorkingDirectory={project.resolve()}" in daemon


def test_uninstall_removes_only_our_units(tmp_path, capsys):
    target = tmp_path / "units"
    assert main(["service", "install", "--user", "--unit-dir", str(target)]) == 0
    wants = target / "default.target.wants"
    wants.mkdir()
    (wants / "dmf-dagster-daemon.service").symlink_to(target / "dmf-dagster-daemon.service")
    (target / "other.service").write_text("[Service]\nExecStart=/bin/true\n", encoding="utf-8")
    # the download server an earlier version installed goes too
    (target / "dmf-reports.service").write_text(f"{MARKER}\n[Service]\nExecStart=/x/dmf serve-reports\n")
    capsys.readouterr()
    assert main(["service", "uninstall", "--user", "--dry-run", "--unit-dir", str(target)]) == 0
    assert len(_units(target)) == len(ALL_UNITS) + 1
    assert main(["service", "uninstall", "--user", "--unit-dir", str(target)]) == 0
    out = capsys.readouterr().out
    assert _units(target) == {"other.service": "[Service]\nExecStart=/bin/true\n"}
    assert not list(wants.iterdir())
    assert "systemctl --user stop" in out and "systemctl --user daemon-reload" in out


def test_install_refuses_a_folder_that_is_not_the_project(tmp_path, capsys):
    assert main(["service", "install", "--user", "--root", str(tmp_path), "--unit-dir", str(tmp_path / "u")]) == 2
    assert "workspace.yaml" in capsys.readouterr().err


def test_install_refuses_a_project_path_a_unit_cannot_hold(tmp_path, capsys):
    """`%` is a systemd specifier, `$` a variable and `"` ends the quoting: such a path would be a broken unit."""
    project = tmp_path / 'dmf "x" 100%'
    project.mkdir()
    (project / "workspace.yaml").write_text("load_from: []\n", encoding="utf-8")
    target = tmp_path / "units"
    assert main(["service", "install", "--user", "--root", str(project), "--unit-dir", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dmf: ") and err.count("\n") == 1 and "systemd 유닛에 그대로 쓸 수 없는 문자('\"' '%')" in err
    assert not target.exists()


def test_install_refuses_an_account_for_user_units(tmp_path, capsys):
    """A user unit runs as the user who installs it: `--run-as` was dropped without a word."""
    target = tmp_path / "units"
    assert main(["service", "install", "--user", "--run-as", "root", "--unit-dir", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dmf: --run-as는 시스템 유닛에만 쓸 수 있습니다") and err.count("\n") == 1
    assert not target.exists()


def test_install_refuses_a_ui_port_that_is_the_pages(tmp_path, capsys):
    """The Dagster UI's unit and the page's unit (`dmf web`, on [web] port 8765) would fight for one port, and one
    of them would restart for ever; `dmf ui` refuses the same pair."""
    target = tmp_path / "units"
    assert main(["service", "install", "--user", "--web-port", "8765", "--unit-dir", str(target)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("dmf: Dagster UI 포트와 조회 페이지 포트([web] port)가 같습니다 (8765)") and err.count("\n") == 1
    )
    assert not target.exists()


def test_install_over_an_earlier_version_replaces_the_download_server_with_the_page(tmp_path, capsys):
    target = tmp_path / "units"
    target.mkdir()
    former = target / "dmf-reports.service"
    former.write_text(f"{MARKER}\n[Service]\nExecStart=/x/dmf serve-reports\n", encoding="utf-8")
    assert main(["service", "install", "--user", "--unit-dir", str(target)]) == 0
    out = capsys.readouterr().out
    assert not former.exists() and (target / "dmf-web.service").is_file()
    assert "systemctl --user disable --now dmf-reports.service" in out  # it is still running until then
    assert out.index("disable --now dmf-reports.service") < out.index("enable --now")


@pytest.mark.parametrize("command", ["web", "serve-reports"])
def test_the_page_is_a_real_server_that_stops_on_sigterm(tmp_path, command):
    """What dmf-web.service runs (`dmf web`; an earlier version's unit runs `dmf serve-reports`, the same)."""
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "DMF_리포트_2026-11-26.xlsx").write_bytes(b"PK\x03\x04 workbook bytes")
    config = tmp_path / "dmf.toml"
    config.write_text(f'[paths]\nreports_dir = "{reports}"\ndatabase = "{tmp_path / "dmf.duckdb"}"\n', encoding="utf-8")
    port = free_port()
    proc = subprocess.Popen(
        [str(VENV_BIN / "dmf"), command, "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "DMF_CONFIG": str(config)},
    )
    try:
        first = proc.stdout.readline()  # printed once the socket is listening
        assert f"http://127.0.0.1:{port}/" in first, (first, proc.stderr.read() if proc.poll() is not None else "")
        response = httpx.get(
            f"http://127.0.0.1:{port}/reports/DMF_%EB%A6%AC%ED%8F%AC%ED%8A%B8_2026-11-26.xlsx", timeout=10
        )
        assert response.status_code == 200 and response.content == b"PK\x03\x04 workbook bytes"
        home = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)  # no history yet: said, not a failure
        assert home.status_code == 200 and "아직 수집된 날이 없습니다" in home.text
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 0, err
    assert "중지됨 / stopped" in out and "Traceback" not in err


def test_notify_test_command_reaches_a_real_receiver(tmp_path, capsys):
    from dmf_assets_tests.notify_servers import webhook_receiver

    with webhook_receiver() as hook:
        config = tmp_path / "local.toml"
        config.write_text(
            f'[alerts]\nwebhook_urls = ["{hook.url()}"]\n[paths]\nalerts_dir = "{tmp_path / "alerts"}"\n',
            encoding="utf-8",
        )
        assert main(["notify", "test", "--config", str(config)]) == 0
        body = hook.next()["json"]
    assert body["kind"] == "test" and "알림 시험" in body["subject"]
    assert "시험 발송 완료" in capsys.readouterr().out
    assert main(["notify", "status", "--config", str(config)]) == 0  # a test is not stored: nothing waits
    assert "메시지 없음" in capsys.readouterr().out
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    assert main(["notify", "test", "--config", str(empty)]) == 2
    assert "알림 채널이 설정되지 않았습니다" in capsys.readouterr().err


def test_service_without_an_action_shows_its_own_help(capsys):
    assert main(["service"]) == 2
    out = capsys.readouterr().out
    assert "install" in out and "uninstall" in out and "serve-reports" not in out


def test_the_units_pre_start_step_creates_a_new_dagster_home(tmp_path):
    """The daemon's and the webserver's `ExecStartPre=`, run as systemd runs it (the unit's DAGSTER_HOME, a home
    never used): it exits 0 and leaves the instance's storage made, so neither Dagster process creates it beside
    the other. With a dagster.yaml it cannot read, it fails with one line (the unit then restarts), no traceback."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    unit = render_units(default_options(PROJECT_ROOT, user_mode=True))["dmf-dagster-daemon.service"]
    [pre] = [line.removeprefix("ExecStartPre=") for line in unit.splitlines() if line.startswith("ExecStartPre=")]
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    done = subprocess.run(shlex.split(pre), env=env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (home / "history" / "runs.db").is_file() and (home / "schedules" / "schedules.db").is_file()
    (home / "dagster.yaml").write_text("run_storage: [not, a, storage\n", encoding="utf-8")  # an edit gone wrong
    done = subprocess.run(shlex.split(pre), env=env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("Dagster 인스턴스를 열 수 없습니다") and len(done.stderr.splitlines()) == 1
