"""SIGKILL at each stage — fetch, history write, workbook write — never leaves a partial day, and simply
re-running the day completes it with the true events. A killed fetch resumes from its archived pages."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from datetime import date
from pathlib import Path

import polars as pl
import pytest
from openpyxl import load_workbook

from dmf_assets.defs.io import META_KEY
from dmf_assets.emulator.registry import RegistrySimulator
from dmf_assets.report.workbook import workbook_day
from dmf_assets.source.fetch import MANIFEST_EVERY_PAGES
from dmf_assets.storage import history
from dmf_assets.storage.db import open_database
from dmf_assets_tests.project_support import FIRST_DAY, dagster_home, first_day_run, project_paths, write_config
from dmf_assets_tests.scoring import score, stored_events

pytestmark = pytest.mark.slow

D1, D2 = FIRST_DAY, date(2026, 10, 6)  # D1: 2026-10-05
KEY = "crash-test-key"


def _project(root: Path) -> dict[str, str]:
    """The environment to run `dmf` in `root`, a copy of the baseline project (absolute paths through DMF_CONFIG,
    rewritten to point here; the layout of `first_day_run`: the database in db/)."""
    config = write_config(root / "dmf.toml", project_paths(root, database=root / "db" / "dmf.duckdb"))
    home = dagster_home(root)
    env = {k: v for k, v in os.environ.items() if k != "DMF_CRASH_AT"}
    env.update(DMF_CONFIG=str(config), DAGSTER_HOME=str(home), MFDS_SERVICE_KEY=KEY)
    return env


def dmf_run(env: dict[str, str], day: date, crash_at: str | None = None) -> subprocess.CompletedProcess:
    run_env = dict(env, **({"DMF_CRASH_AT": crash_at} if crash_at else {}))
    return subprocess.run(
        [sys.executable, "-m", "dmf_assets", "run", "--date", day.isoformat()],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _db(root: Path):
    return open_database(root / "db" / "dmf.duckdb", purpose="crash test")


def _day_rows(conn, day: date) -> tuple[int, int, str | None]:
    d = history.day_id(day)
    snaps = conn.execute("SELECT count(*) FROM snapshots WHERE day_id = ?", [d]).fetchone()[0]
    events = conn.execute("SELECT count(*) FROM events WHERE day_id = ?", [d]).fetchone()[0]
    run = history.run_row(conn, day)
    return snaps, events, run["status"] if run else None


@pytest.fixture(scope="module")
def sim():
    return RegistrySimulator()


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    """A project whose first day has run (`dmf run`, exit 0) — copied by each crash below, not re-run (the project
    test_read_only_database starts from too: run once per session)."""
    first = first_day_run(tmp_path_factory)
    assert first.returncode == 0, first.stdout + first.stderr
    return first.root


@pytest.mark.parametrize("crash_at", ["fetch_page:7", "history_write", "workbook_write"])
def test_sigkill_then_rerun(tmp_path, baseline, sim, crash_at):
    tmp_path = tmp_path / "project"
    # the baseline project as its first `dmf run` left it: nothing holds its files (the process is gone)
    shutil.copytree(baseline, tmp_path, ignore=shutil.ignore_patterns(".*.lock"))
    env = _project(tmp_path)
    with _db(tmp_path) as conn:
        population = history.run_row(conn, D1)["population"]

    killed = dmf_run(env, D2, crash_at)
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-2000:] + killed.stderr[-2000:]

    with _db(tmp_path) as conn:  # opens, replays DuckDB's WAL, nothing half-written
        snaps, events, status = _day_rows(conn, D2)
        if crash_at == "workbook_write":
            assert status == "accepted" and snaps > 0  # the day's transaction had committed
        else:
            assert (snaps, events) == (0, 0) and status in (None, "pending")
        assert _day_rows(conn, D1)[:1] == (population,)  # the baseline is untouched
        orphans = conn.execute(
            "SELECT count(*) FROM snapshots s LEFT JOIN record_versions v USING (version_id) WHERE v.version_id IS NULL"
        ).fetchone()[0]
        assert orphans == 0
    reports = tmp_path / "reports"
    assert not (reports / f"DMF_리포트_{D2.isoformat()}.xlsx").exists()
    assert workbook_day(reports / "DMF_리포트_최신.xlsx") == D1  # the latest copy was never half-replaced

    again = dmf_run(env, D2)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    with _db(tmp_path) as conn:
        assert _day_rows(conn, D2)[2] == "accepted"
        s = score(stored_events(conn, D2), sim.truth(D1, D2))
        assert s.perfect and sum(s.true_positive.values()) > 0, (s.missed, s.spurious)
    load_workbook(reports / f"DMF_리포트_{D2.isoformat()}.xlsx", read_only=True).close()
    assert workbook_day(reports / "DMF_리포트_최신.xlsx") == D2

    if crash_at.startswith("fetch_page"):
        # the killed fetch left its first pages archived — the manifest lists them once per batch of pages, so
        # the 6th and 7th are asked again — and the re-run reused them instead of asking again
        stored = pl.read_parquet_metadata(tmp_path / "data" / "staging" / D2.isoformat() / "raw_pages.parquet")
        fetch = json.loads(stored[META_KEY])["fields"]["fetch"]
        reused = [p for p in fetch["pages"] if p.get("reused")]
        assert len(reused) == MANIFEST_EVERY_PAGES and fetch["requests"] == len(fetch["pages"]) - len(reused)
