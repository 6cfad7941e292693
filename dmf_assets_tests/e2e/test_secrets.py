"""The service key appears nowhere: not in any file a run produces, nor in any log or output.

A distinctive fake key with URL-special characters goes the production way (environment variable
MFDS_SERVICE_KEY, read by the client at run time, never configuration) through 4 days of the real Dagster graph — a good day, a day with
the gateway's XML key error, a day of outage, a recovery day — while `dmf emulator serve` (checking
that exact key) and several `dmf fetch` calls run as subprocesses: against the served emulator with
the key as issued ("Encoding" form) and decoded, on a gateway-error day, against a closed port, and
in-process. Then every file under the workspace (data/, reports/, dagster_home/ with its SQLite
event log and compute logs, staging, alerts, the CLI archives) is searched — gzip members, xlsx/zip
members, SQLite rows (zlib-compressed blobs inflated), DuckDB tables and parquet frames read back —
together with the captured logs, stdout/stderr and failure messages, for the key raw, URL-encoded
(quote, quote_plus), double-encoded and by its distinctive tail.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
import zlib
from datetime import date
from pathlib import Path
from urllib.parse import quote, quote_plus

import duckdb
import polars as pl
import pytest

from dmf_assets.runs import launch
from dmf_assets.settings import PROJECT_ROOT
from dmf_assets_tests.graph_support import make_workspace, runs_by_day
from dmf_assets_tests.notify_servers import free_port
from dmf_assets_tests.secret_search import hits, key_forms, leaks

pytestmark = pytest.mark.slow

SECRET = "Zk9+FAKE/key==SECRET-7f3a"
SECRET_TAIL = "SECRET-7f3a"  # no URL-special characters: survives every encoding
DAYS = (date(2026, 10, 6), date(2026, 10, 7), date(2026, 10, 8), date(2026, 10, 9))
FAULTS = {"2026-10-07": "xml_key_error", "2026-10-08": "outage"}
CLI_DAY, CLI_FAULT_DAY = "2026-10-12", "2026-10-13"


NEEDLES = key_forms(SECRET, SECRET_TAIL)


def _hits(text: str) -> list[str]:
    return hits(text, NEEDLES)


def _leaks(root: Path) -> tuple[list[str], int, set[str]]:
    return leaks(root, NEEDLES)


# --- subprocesses ---------------------------------------------------------------------------------


def _env(config: Path, key: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MFDS_SERVICE_KEY"}
    env.update(MFDS_SERVICE_KEY=key, DMF_CONFIG=str(config), PYTHONUNBUFFERED="1")
    return env


def _dmf(args: list[str], out: Path, env: dict[str, str]) -> subprocess.Popen:
    with open(out.with_suffix(".out"), "wb") as stdout, open(out.with_suffix(".err"), "wb") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "dmf_assets", *args], cwd=PROJECT_ROOT, env=env, stdout=stdout, stderr=stderr
        )


def _wait_for_url(path: Path, proc: subprocess.Popen, timeout_s: float = 120.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if text.startswith("http://") and "\n" in text:  # `serve` prints its base URL first
            return text.split("\n", 1)[0].strip()
        assert proc.poll() is None, f"emulator exited: {path.with_suffix('.err').read_text(errors='replace')}"
        time.sleep(0.1)
    raise AssertionError("emulator did not start")


def test_the_fake_key_appears_in_no_file_log_or_output(tmp_path, caplog, capfd, monkeypatch):
    caplog.set_level(logging.DEBUG)
    root, captured = tmp_path / "workspace", tmp_path / "captured"
    captured.mkdir()
    cli_raw = root / "data" / "raw_cli"
    cli_raw.mkdir(parents=True)  # --raw-dir creates the folder it names, never the folders above it
    config = captured / "dmf.test.toml"  # fast retries for the CLI; the key is never in a config file
    config.write_text(
        f'[paths]\nraw_dir = "{cli_raw}"\n[source]\nbackoff_base_s = 0.05\nbackoff_max_s = 0.2\n', encoding="utf-8"
    )
    encoded = quote(SECRET, safe="")  # the portal's "Encoding" key

    # the loopback emulator checks this exact key; one of its dates answers with the gateway key error
    server = _dmf(
        [
            "emulator",
            "serve",
            "--port",
            "0",
            "--service-key",
            SECRET,
            "--date",
            CLI_DAY,
            "--fault",
            f"{CLI_FAULT_DAY}=xml_key_error",
        ],
        captured / "serve",
        _env(config, SECRET),
    )
    in_process = _dmf(
        [
            "fetch",
            "--date",
            CLI_DAY,
            "--fault",
            f"{CLI_DAY}=xml_key_error",
            "-v",
            "--raw-dir",
            str(cli_raw / "in_process"),
        ],
        captured / "fetch_in_process",
        _env(config, SECRET),
    )
    try:
        # the graph, the production way: the key only in the environment, read by the client at run time
        monkeypatch.setenv("MFDS_SERVICE_KEY", SECRET)
        ws = make_workspace(root, FAULTS)
        reports = launch.run_days(DAYS, instance=ws.instance, resources=ws.resources)
        monkeypatch.delenv("MFDS_SERVICE_KEY")
        runs = runs_by_day(ws)
        assert [runs[d]["status"] for d in DAYS] == ["baseline", "rejected", "rejected", "accepted"]
        assert [runs[d]["rejected_gate"] for d in DAYS[1:3]] == [1, 1]

        url = _wait_for_url(captured / "serve.out", server)
        calls = {
            "fetch_loopback_encoded": (["fetch", "--base-url", url, "--date", CLI_DAY, "-v"], encoded, 0),
            "fetch_loopback_gateway_error": (["fetch", "--base-url", url, "--date", CLI_FAULT_DAY, "-v"], SECRET, 1),
            "fetch_closed_port": (
                [
                    "fetch",
                    "--base-url",
                    f"http://127.0.0.1:{free_port()}/1471000/MdcDmfInfoService01",  # nobody listens there
                    "--date",
                    CLI_DAY,
                    "-v",
                    "--raw-dir",
                    str(cli_raw / "closed"),
                ],
                SECRET,
                1,
            ),
        }
        procs = {name: _dmf(args, captured / name, _env(config, key)) for name, (args, key, _) in calls.items()}
        codes = {name: p.wait(timeout=180) for name, p in procs.items()}
        assert in_process.wait(timeout=180) == 1
    finally:
        for proc in (server, in_process):
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)  # `dmf emulator serve` stops cleanly on Ctrl-C
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    # the calls really used the key: the server accepted it (decoded once), and refused nothing else
    assert codes == {name: expected for name, (_, _, expected) in calls.items()}, {
        n: (captured / n).with_suffix(".err").read_text(errors="replace")[-2000:] for n in calls
    }
    outputs = {p.name: p.read_text(encoding="utf-8", errors="replace") for p in sorted(captured.iterdir())}
    assert f"DMF fetch {CLI_DAY} — complete" in outputs["fetch_loopback_encoded.out"]
    assert "SERVICE_KEY_IS_NOT_REGISTERED_ERROR" in outputs["fetch_loopback_gateway_error.out"]
    assert "SERVICE_KEY_IS_NOT_REGISTERED_ERROR" in outputs["fetch_in_process.out"]
    assert "serviceKey=***" in outputs["serve.err"]  # the server logged requests, redacted
    manifest = json.loads((cli_raw / CLI_DAY / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "complete" and manifest["totals"]["rows_after_dedup"] > 9000

    out, err = capfd.readouterr()
    texts = {
        "caplog": caplog.text,
        "stdout": out,
        "stderr": err,
        "run failures": "\n".join(str(r) for r in reports),
        **{f"captured/{name}": text for name, text in outputs.items()},
    }
    assert caplog.text and err  # the runs did log (httpx request lines included, redacted)
    assert "HTTP Request: GET" in caplog.text and "serviceKey=***" in caplog.text
    leaked_texts = {name: _hits(text) for name, text in texts.items() if _hits(text)}
    assert not leaked_texts, leaked_texts

    leaks, files, kinds = _leaks(root)
    assert not leaks, leaks
    # the walk covered what the runs produce: archives, workbooks, DuckDB, staging, the Dagster instance
    assert files > 50
    assert {".gz", ".xlsx", ".duckdb", ".parquet", ".db", ".jsonl", ".json"} <= kinds, kinds
    for sub in ("data/raw", "data/staging", "data/events", "reports", "dagster_home/storage", "data/raw_cli"):
        assert any((root / sub).rglob("*")), sub


def test_the_search_finds_every_form_in_every_container(tmp_path):
    """The walk above can fail: each encoding of the key, hidden in each container, is found."""
    forms = [
        SECRET,
        quote(SECRET, safe=""),
        quote(SECRET),
        quote_plus(SECRET),
        quote(quote(SECRET, safe=""), safe=""),
        quote(SECRET, safe="").lower(),
    ]
    for i, form in enumerate(forms):
        (tmp_path / f"log{i}.txt").write_text(f"GET /x?serviceKey={form}&pageNo=1", encoding="utf-8")
    (tmp_path / "page.json.gz").write_bytes(gzip.compress(json.dumps({"url": forms[1]}).encode()))
    with zipfile.ZipFile(tmp_path / "book.xlsx", "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("xl/sharedStrings.xml", f"<sst><si><t>{SECRET}</t></si></sst>")
    con = sqlite3.connect(tmp_path / "runs.db")
    con.execute("CREATE TABLE snapshots (id INTEGER, snapshot_body BLOB)")
    con.execute("INSERT INTO snapshots VALUES (1, ?)", [zlib.compress(json.dumps({"service_key": SECRET}).encode())])
    con.commit()
    con.close()
    db = duckdb.connect(str(tmp_path / "dmf.duckdb"))
    db.execute("CREATE TABLE runs AS SELECT 'row ' || range AS reason FROM range(5000)")
    db.execute("INSERT INTO runs VALUES (?)", [f"key {SECRET}"])
    db.close()
    pl.DataFrame({"v": [f"x{i}" for i in range(5000)] + [SECRET]}).write_parquet(
        tmp_path / "items.parquet", compression="zstd"
    )
    (tmp_path / "clean.txt").write_text("serviceKey=***", encoding="utf-8")
    leaks, files, _ = _leaks(tmp_path)
    found = {line.split(":")[0] for line in leaks}
    assert found == {f"log{i}.txt" for i in range(len(forms))} | {
        "page.json.gz",
        "book.xlsx",
        "runs.db",
        "dmf.duckdb",
        "items.parquet",
    }
    assert files == len(forms) + 6
