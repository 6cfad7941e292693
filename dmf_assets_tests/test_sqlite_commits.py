"""Dagster's SQLite storage flushes at checkpoints, not at every event (dmf_assets/runs/sqlite_commits.py).

In fresh processes (the setting is per process): a process that runs the project's code opens Dagster's
SQLite files with `synchronous=NORMAL` in WAL mode, one that does not keeps SQLite's default (FULL); and an
event stored just before the process is SIGKILLed is there for the next process — a killed run loses nothing.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap

import dagster as dg

from dmf_assets.settings import PROJECT_ROOT

PRAGMAS = textwrap.dedent(
    """
    import sys, dagster as dg
    if sys.argv[1] == "project":
        from dmf_assets.definitions import defs
        defs()  # what the code server and each run worker do when they load the code location
    elif sys.argv[1] == "cli":
        from dmf_assets.cli.runs import _instance
        _instance()
    instance = dg.DagsterInstance.get()
    with instance.event_log_storage.index_connection() as c:
        index = c.exec_driver_sql("PRAGMA synchronous").scalar(), c.exec_driver_sql("PRAGMA journal_mode").scalar()
    with instance.run_storage.connect() as c:
        runs = c.exec_driver_sql("PRAGMA synchronous").scalar()
    print(index[0], index[1], runs)
    """
)


def _home(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    return {"DAGSTER_HOME": str(home)}


def _run(code: str, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env={**os.environ, **env}
    )


def test_the_projects_processes_flush_at_checkpoints_others_keep_sqlites_default(tmp_path):
    env = _home(tmp_path)
    for who, expected in (("dagster-only", "2 wal 2"), ("project", "1 wal 1"), ("cli", "1 wal 1")):
        proc = _run(PRAGMAS, who, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.split("\n")[-2] == expected, (who, proc.stdout)


def test_an_event_stored_before_a_kill_is_kept(tmp_path):
    env = _home(tmp_path)
    code = textwrap.dedent(
        """
        import os, signal, dagster as dg
        from dmf_assets.runs.sqlite_commits import flush_at_checkpoints
        flush_at_checkpoints()
        instance = dg.DagsterInstance.get()
        for i in range(5):
            instance.report_runless_asset_event(dg.AssetMaterialization("kill_probe", metadata={"i": i}))
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = _run(code, env=env)
    assert proc.returncode == -signal.SIGKILL
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        records = instance.fetch_materializations(dg.AssetKey("kill_probe"), limit=10).records
    assert sorted(r.asset_materialization.metadata["i"].value for r in records) == [0, 1, 2, 3, 4]
