"""The project's Dagster instance lets one run at a time hold the history database (its DuckDB pool), and
queues backfills. Several runs at once on one history database — all finish, none fails on the DuckDB lock,
and the history is exactly what one run after the other would have written — is tested in
test_graph_e2e.py, against its in-order history of the same days (one run of those days instead of two)."""

from __future__ import annotations

import multiprocessing
import shutil
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

import dagster as dg

from dmf_assets.settings import PROJECT_ROOT


def test_project_instance_limits_the_duckdb_pool_to_one() -> None:
    instance = dg.DagsterInstance.from_config(str(PROJECT_ROOT / "dagster_home"))
    config = instance.get_concurrency_config()
    assert config.pool_config.default_pool_limit == 1
    assert config.run_queue_config is not None
    assert any(limit["key"] == "dagster/backfill" for limit in config.run_queue_config.tag_concurrency_limits)


def _open_when_told(home: str, ready: Queue, go: Event, out: Queue) -> None:
    from dmf_assets.ops.instance import open_instance  # imported (with Dagster) before the start signal

    ready.put(None)
    go.wait()
    try:
        open_instance(Path(home)).dispose()
        out.put(None)
    except Exception as exc:  # noqa: BLE001 - what the test reports
        out.put(f"{type(exc).__name__}: {str(exc)[:200]}")


def test_commands_starting_at_once_on_a_new_dagster_home_take_turns_creating_it(tmp_path: Path) -> None:
    """Three `dmf` commands opening a new DAGSTER_HOME at the same moment (`ops/instance.open_instance`): all open
    it, and it can be opened again afterwards. Without the turns, Dagster's SQLite storage was created by several
    at once: one start in two left two schema versions stamped, an instance nobody can open again ("more than one
    head present"), and others failed on "table … already exists"."""
    ctx = multiprocessing.get_context("spawn")
    for trial in range(3):
        home = tmp_path / f"home{trial}"
        home.mkdir()
        shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
        ready, go, out = ctx.Queue(), ctx.Event(), ctx.Queue()
        procs = [ctx.Process(target=_open_when_told, args=(str(home), ready, go, out)) for _ in range(3)]
        for p in procs:
            p.start()
        for _ in procs:
            ready.get(timeout=300)
        go.set()
        results = [out.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(60)
        assert results == [None, None, None], results
        dg.DagsterInstance.from_config(str(home)).dispose()  # one schema version stamped: it opens
