"""Settings are a contract (issue 10, docs/DOMAIN.md §9): the real `dmf` CLI, run as a user would, refuses a
bad configuration with one message naming the file, the TOML line, the key and what is allowed — exit 2,
never a traceback, nothing written."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import time
from pathlib import Path

import pytest

from dmf_assets.settings import PROJECT_ROOT, ConfigError, load_settings
from dmf_assets_tests.project_support import first_day_run, project_paths, write_config

PYTHON = str(PROJECT_ROOT / ".venv" / "bin" / "python") if (PROJECT_ROOT / ".venv").is_dir() else sys.executable


def dmf(*args: str, config: Path | None = None, cwd: Path = PROJECT_ROOT, env_extra: dict | None = None):
    env = {k: v for k, v in os.environ.items() if k != "DMF_CONFIG"}
    if config is not None:
        env["DMF_CONFIG"] = str(config)
    env.update(env_extra or {})
    return subprocess.run(
        [PYTHON, "-m", "dmf_assets", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def project_config(tmp_path: Path, text: str) -> Path:
    """A config whose data folders are under tmp_path (so a command that did start would write there)."""
    folders = "\n".join(
        f'{k} = "{tmp_path / v}"'
        for k, v in (
            ("database", "data/dmf.duckdb"),
            ("raw_dir", "data/raw"),
            ("staging_dir", "data/staging"),
            ("alerts_dir", "data/alerts"),
            ("backups_dir", "data/backups"),
            ("reports_dir", "reports"),
            ("events_dir", "data/events"),
            ("logs_dir", "data/logs"),
        )
    )
    path = tmp_path / "dmf.local.toml"
    body = text if "[paths]" in text else f"[paths]\n{folders}\n\n{text}"
    path.write_text(body, encoding="utf-8")
    return path


def assert_refused(result, *expected: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert "validation error" not in result.stderr  # no pydantic dump
    assert result.stderr.startswith("dmf: 설정 오류 / configuration error"), result.stderr
    for text in expected:
        assert text in result.stderr, (text, result.stderr)


def test_a_valid_config_loads_and_the_command_runs(tmp_path):
    # the control: the same command with a good config gets past the settings (and reports the empty project)
    cfg = project_config(tmp_path, "[gates]\ndrop_max_ratio = 0.05\n")
    result = dmf("doctor", "--root", str(tmp_path), config=cfg)
    assert "설정 오류" not in result.stderr, result.stderr
    assert "DMF Watch 점검 / doctor" in result.stdout
    assert not (tmp_path / "data" / "dmf.duckdb").exists()  # doctor never creates a database


@pytest.mark.parametrize(
    "command",
    [
        ["run", "--date", "2026-10-05"],
        ["backfill", "--start", "2026-10-05", "--end", "2026-10-06"],
        ["demo", "--days", "2"],
        ["fetch", "--date", "2026-10-05"],
        ["prune", "--dry-run"],
        ["backup"],
        ["emulator", "truth", "--old", "2026-10-05", "--new", "2026-10-06"],
    ],
)
def test_every_command_refuses_before_touching_anything(tmp_path, command):
    cfg = project_config(tmp_path, "[gates]\ndrop_max_ratio = 5\nchurn_max_ratio = 10\n")
    result = dmf(*command, config=cfg)
    assert_refused(result, "drop_max_ratio = 5 means 500 %", "churn_max_ratio = 10 means 1000 %; write 0.1")
    assert not (tmp_path / "data").exists()  # no database, no archive, no staging: nothing ran


#: (config text, what the message must say, the config lines it must name by number, a secret it must not echo)
BAD_SETTINGS = [
    pytest.param(
        "[gates]\n# a user meaning 5 %\ndrop_max_ratio = 5\n",
        ("gates.drop_max_ratio", "drop_max_ratio = 5 means 500 %; write 0.05"),
        ("drop_max_ratio = 5",),
        None,
        id="percentage_for_a_ratio_with_the_fix",
    ),
    pytest.param(
        "[gates]\nnull_max_ratio = -0.01\n[quality]\nsynthetic_key_max = -1\n",
        # "(2건)": both problems in one message, not one per attempt
        ("gates.null_max_ratio", "null_max_ratio = -0.01", "0 ≤ x ≤ 1")
        + ("quality.synthetic_key_max", "synthetic_key_max = -1", "0 ≤ x", "(2건)"),
        (),
        None,
        id="negative_threshold",
    ),
    pytest.param(
        '[source]\nread_timeout_s = "30"\n',
        ("source.read_timeout_s", 'read_timeout_s = "30"', "must be a number without quotes"),
        (),
        None,
        id="string_for_a_number",
    ),
    pytest.param(
        "[gates]\ndrop_max = 0.05\n\n[alert]\nwebhook_urls = []\n",
        ("unknown key drop_max", "did you mean 'drop_max_ratio'?", "unknown section [alert]", "did you mean 'alerts'?"),
        ("drop_max = 0.05", "[alert]"),
        None,
        id="unknown_key_and_section",
    ),
    pytest.param(
        '[alerts.email]\nsmtp_host = "smtp.example.com"\npassword = "hunter2"\n',
        ("alerts.email.password", "DMF_SMTP_PASSWORD"),
        (),
        "hunter2",  # a secret typed in the wrong place is not echoed
        id="password_key_with_the_environment_hint",
    ),
]


@pytest.mark.parametrize(("text", "expected", "named_lines", "secret"), BAD_SETTINGS)
def test_a_bad_setting_is_refused_naming_file_line_key_and_rule(tmp_path, text, expected, named_lines, secret):
    cfg = project_config(tmp_path, text)
    lines = cfg.read_text().splitlines()
    result = dmf("doctor", "--root", str(tmp_path), config=cfg)
    assert_refused(result, str(cfg), *expected, *(f"line {lines.index(line) + 1}" for line in named_lines))
    if secret is not None:
        assert secret not in result.stderr


def test_malformed_toml_names_file_and_line(tmp_path):
    cfg = project_config(tmp_path, "[gates]\ndrop_max_ratio = 0.05\nchurn_max_ratio 0.1\n")
    line = cfg.read_text().splitlines().index("churn_max_ratio 0.1") + 1
    result = dmf("run", "--date", "2026-10-05", config=cfg)
    assert_refused(result, str(cfg), f"line {line}", "TOML", "churn_max_ratio 0.1")


def test_missing_dmf_config_is_an_error(tmp_path):
    missing = tmp_path / "nonexistent" / "dmf.toml"
    result = dmf("run", "--date", "2026-10-05", config=missing)
    assert_refused(result, str(missing), "DMF_CONFIG")


def test_malformed_local_config_of_a_fresh_project(tmp_path):
    # config/dmf.local.toml is found by location: a copy of the project, as a fresh clone would be
    root = tmp_path / "clone"
    for name in ("dmf_assets", "sql", "config"):
        shutil.copytree(
            PROJECT_ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "dmf.local.toml")
        )
    (root / "config" / "dmf.local.toml").write_text("[gates]\ndrop_max_ratio = = 0.05\n", encoding="utf-8")
    result = dmf("doctor", cwd=root, env_extra={"PYTHONPATH": str(root)})
    assert_refused(result, "config/dmf.local.toml", "line 2")


def test_new_sections_have_the_documented_defaults():
    s = load_settings(PROJECT_ROOT / "config" / "dmf.toml")
    assert (s.web.host, s.web.port, s.web.public_base_url, s.web.token) == ("127.0.0.1", 8765, "", "")
    assert s.alerts.webhook_urls == [] and s.alerts.slow_run_factor == 3.0
    assert (
        s.alerts.withdrawal_share_max == 0.02
        and s.alerts.rejected_streak == 3
        and s.alerts.overdue_at == time(9, 0)
        and s.retry.until == time(12, 0)
    )
    e = s.alerts.email
    assert (e.smtp_host, e.smtp_port, e.starttls, e.username, e.sender, e.recipients, e.timeout_s) == (
        "",
        25,
        False,
        "",
        "",
        [],
        30.0,
    )
    assert e.oncall_recipients == []  # the alerts then go to `recipients`
    assert (s.retry.transient_attempts, s.retry.interval_minutes, s.runs.max_minutes, s.products.file) == (
        3,
        30,
        30,
        "",
    )
    assert s.runs.sensor_interval_s == 30


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[web]\nport = 70000\n", "1 ≤ x ≤ 65535"),
        ('[web]\npublic_base_url = "dmf.example.kr"\n', "http:// or https://"),
        ('[web]\ntoken = "short"\n', "16–256 characters"),
        ('[web]\ntoken = "has spaces but is long enough"\n', "16–256 characters"),
        # the keys that moved from [report] to [web]: one line naming the new key, never a silent default
        ("[report]\nfile_server_port = 8765\n", "this key moved to [web] port"),
        ('[report]\nfile_server_host = "0.0.0.0"\n', "this key moved to [web] host"),
        ('[report]\npublic_base_url = "https://dmf.example.kr"\n', "this key moved to [web] public_base_url"),
        ("[alerts.email]\nsmtp_port = 0\n", "alerts.email.smtp_port"),
        ("[alerts.email]\ntimeout_s = 0\n", "0 < x"),
        ('[alerts.email]\nrecipients = ["ra@example.com", "ra-team"]\n', 'recipients[1] = "ra-team"'),
        ('[alerts]\nwebhook_urls = ["hooks.slack.com/x"]\n', "http:// or https://"),
        ('[source]\nbase_url = "http://[::1"\n', "source.base_url"),
        ('[source]\nbase_url = "http://[::1"\n', "not a valid URL (Invalid IPv6 URL)"),
        ('[source]\nbase_url = "http://127.0.0.1:99999/x"\n', "Port out of range"),
        ('[source]\nbase_url = "http://127.0.0.1:0"\n', "the port must be 1–65535"),
        ('[alerts]\nwebhook_urls = ["https://hooks.example.com:99999/x"]\n', "webhook_urls[0]"),
        ('[alerts]\nwebhook_urls = ["slack+https://a..b/x"]\n', "not a valid host name"),
        ('[web]\npublic_base_url = "http://reports host"\n', "web.public_base_url"),
        ('[alerts]\noverdue_at = "9시"\n', "HH:MM"),
        ("[alerts]\nrejected_streak = 1\n", "2 ≤ x"),
        ("[alerts]\nslow_run_factor = 0.5\n", "1 ≤ x"),
        ("[alerts]\nwithdrawal_share_max = 2\n", "withdrawal_share_max = 2 means 200 %; write 0.02"),
        ("[retry]\ntransient_attempts = 11\n", "0 ≤ x ≤ 10"),
        ("[retry]\ninterval_minutes = 0\n", "1 ≤ x ≤ 720"),
        ("[runs]\nmax_minutes = 2000\n", "1 ≤ x ≤ 1440"),
        ("[runs]\nsensor_interval_s = 1\n", "5 ≤ x ≤ 600"),
        ('[products]\nfile = "no/such/products.csv"\n', "no product list file"),
        (
            "[quality]\nrow_count_min = 9000\nrow_count_max = 100\n",
            "row_count_min (9000) must be ≤ row_count_max (100)",
        ),
        ("[alerts.email]\nstarttls = 1\n", "must be true or false"),
        ('[paths]\nreports_dir = ""\n', "an empty path"),
        ('[paths]\nreports_dir = "config/dmf.toml"\n', "must be a folder"),
        ('[paths]\nlogs_dir = "data"\n', "logs_dir must hold logs only: old files in it are deleted, and it holds"),
        ('[paths]\nlogs_dir = "."\n', "logs_dir must hold logs only"),  # the project itself
        ('[emulator.faults]\n"2026-11-18" = "no_such_fault"\n', "unknown fault kind"),
    ],
)
def test_each_rule(tmp_path, text, expected):
    cfg = tmp_path / "dmf.toml"
    cfg.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_settings(cfg)
    message = str(err.value)
    assert expected in message and str(cfg) in message, message
    assert "pydantic" not in message and "Traceback" not in message


def test_after_an_accepted_day_a_bad_config_changes_nothing(tmp_path_factory):
    """The issue's reproduction: drop_max_ratio = 5 + churn_max_ratio = 10 on a mass_disappearance day once
    committed thousands of false WITHDRAWN; a negative threshold rejected (and deleted) a good day."""
    import hashlib

    import duckdb

    # the accepted day: the session's one `dmf run --date 2026-10-05`, a copy of its project (database in db/)
    first = first_day_run(tmp_path_factory)
    database = first.root / "db" / "dmf.duckdb"
    assert first.returncode == 0 and database.is_file(), (first.stdout[-2000:], first.stderr[-2000:])
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    env = {"DAGSTER_HOME": first.env["DAGSTER_HOME"], "MFDS_SERVICE_KEY": "settings-contract-key"}

    def config(name: str, text: str) -> Path:  # the copy's folders, and `text`
        return write_config(first.root / name, project_paths(first.root, database=database), text)

    bad = config("bad.toml", "[gates]\ndrop_max_ratio = 5\nchurn_max_ratio = 10\n")
    result = dmf("run", "--date", "2026-10-06", "--fault", "2026-10-06=mass_disappearance", config=bad, env_extra=env)
    assert_refused(result, "gates.drop_max_ratio", "drop_max_ratio = 5 means 500 %; write 0.05")
    negative = config("negative.toml", "[gates]\nnull_max_ratio = -0.01\n")
    result = dmf("run", "--date", "2026-10-05", config=negative, env_extra=env)
    assert_refused(result, "gates.null_max_ratio")

    assert hashlib.sha256(database.read_bytes()).hexdigest() == before  # not one byte written
    conn = duckdb.connect(str(database), read_only=True)
    try:
        assert conn.execute("SELECT count(*) FROM events WHERE event_type = 'WITHDRAWN'").fetchone()[0] <= 5
        assert conn.execute("SELECT day_id, status FROM runs ORDER BY day_id").fetchall() == [(20261005, "baseline")]
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[source]\nbase_url = "http://[::1"\n', "source.base_url"),  # was ValueError: Invalid port in doctor and run
        (
            '[alerts]\nwebhook_urls = ["http://[::1"]\n',
            "alerts.webhook_urls — webhook_urls[0]",
        ),  # failed the run at xlsx_report
    ],
)
@pytest.mark.parametrize("command", [("run", "--date", "2026-10-05"), ("doctor",)])
def test_a_url_that_cannot_be_connected_to_is_refused_when_the_config_is_read(tmp_path, text, key, command):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    cfg = project_config(tmp_path, text)
    result = dmf(*command, config=cfg, env_extra={"DAGSTER_HOME": str(home)})
    assert_refused(result, key, str(cfg), "not a valid URL")
    assert not (tmp_path / "data").exists() and not (tmp_path / "reports").exists()  # nothing started


def test_a_config_written_with_a_byte_order_mark_is_read(tmp_path):
    """Windows Notepad saves UTF-8 with a BOM: it used to be a TOML syntax error at an invisible character."""
    cfg = tmp_path / "dmf.toml"
    cfg.write_bytes("\ufeff# 설정\n[gates]\nchurn_max_ratio = 0.25\n".encode())
    assert load_settings(cfg).gates.churn_max_ratio == 0.25


def test_a_webhook_token_is_not_echoed(tmp_path):
    cfg = tmp_path / "dmf.toml"
    cfg.write_text('[alerts]\nwebhook_urls = ["htps://hooks.slack.com/services/T0/B0/s3cr3tT0ken"]\n', encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_settings(cfg)
    assert "hooks.slack.com" in str(err.value) and "s3cr3tT0ken" not in str(err.value)


def _numbers(model=None, section: tuple[str, ...] = ()):
    """(section path, key, type, upper bound or None) of every number in the settings, however nested."""
    import annotated_types
    from pydantic import BaseModel

    from dmf_assets.settings import Settings

    for name, info in (model or Settings).model_fields.items():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            yield from _numbers(info.annotation, (*section, name))
        elif info.annotation in (int, float):
            upper = next((m.le for m in info.metadata if isinstance(m, annotated_types.Le)), None)
            yield section, name, info.annotation, upper


def test_every_number_is_bounded_and_finite(tmp_path):
    """What the code cannot represent is refused where it is written: inf and nan (TOML has both), and anything
    above each key's upper bound — which every number has. A new numeric setting is covered by itself."""
    numbers = list(_numbers())
    assert len(numbers) > 30
    unbounded = [".".join((*s, k)) for s, k, _, upper in numbers if upper is None]
    assert not unbounded, f"numeric settings without an upper bound: {unbounded}"
    cfg = tmp_path / "dmf.toml"
    for section, key, kind, upper in numbers:
        for value in (("inf", "nan", "-inf") if kind is float else ()) + (str(int(upper) + 1),):
            cfg.write_text(f"[{'.'.join(section)}]\n{key} = {value}\n", encoding="utf-8")
            with pytest.raises(ConfigError) as err:
                load_settings(cfg)
            message = str(err.value)
            assert f"{'.'.join((*section, key))} — " in message and f"{key} = {value}" in message, message
            said = ("finite number",) if value.lstrip("-") in ("inf", "nan") else ("out of range", "a ratio is written")
            assert any(words in message for words in said), message


def test_inf_and_huge_settings_stop_dmf_run_naming_file_and_key(tmp_path):
    """The issue's reproduction, through the real CLI: these were accepted, then ended in OverflowError (the day
    committed, no workbook). Now `dmf run` refuses before anything runs: exit 2, the file, each line and key."""
    cfg = project_config(
        tmp_path,
        "[source]\nmin_interval_s = inf\nread_timeout_s = inf\nconnect_timeout_s = inf\n"
        "[retention]\nraw_days = 9999999999\n[report]\nhistory_days = 999999999\n",
    )
    lines = cfg.read_text().splitlines()
    result = dmf("run", "--date", "2026-10-05", config=cfg)
    expected = [str(cfg), "(5건)", "must be a finite number", "0 ≤ x ≤ 36500", "1 ≤ x ≤ 36500"]
    for key, value in (
        ("source.min_interval_s", "inf"),
        ("source.read_timeout_s", "inf"),
        ("source.connect_timeout_s", "inf"),
        ("retention.raw_days", "9999999999"),
        ("report.history_days", "999999999"),
    ):
        name = key.split(".")[1]
        expected += [f"line {lines.index(f'{name} = {value}') + 1}: {key} — ", f"{name} = {value}"]
    assert_refused(result, *expected)
    assert not (tmp_path / "data").exists()
