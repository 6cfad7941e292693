"""Helpers for tests that run the real Dagster graph on a temporary project folder."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path

import dagster as dg

from dmf_assets.clock import KST, frozen_at
from dmf_assets.defs.resources import build_resources
from dmf_assets.emulator.registry import RegistrySimulator
from dmf_assets.settings import PROJECT_ROOT, load_settings
from dmf_assets.storage import history
from dmf_assets.storage.db import open_database
from dmf_assets_tests.scoring import Score, score, stored_events


@contextlib.contextmanager
def clocks_at(moment: datetime) -> Iterator[None]:
    """A machine whose clock says `moment`: the product's clock (`clock.frozen_at`) and Dagster's — the one its daily
    partitions are counted by (`dg.partition_loading_context`) and the one that stamps a run's events, such as a
    rejection (`freeze_time`, Dagster's own test helper: every event of the block is stamped `moment`)."""
    from dagster._core.test_utils import freeze_time  # half a second of imports: only for the tests that use it

    with frozen_at(moment), freeze_time(moment), dg.partition_loading_context(effective_dt=moment):
        yield


def morning(day: date) -> datetime:
    """07:00 KST of `day`: after the 06:00 schedule, before the 09:00 deadline."""
    return datetime.combine(day, time(7, 0), tzinfo=KST)


@dataclass
class Workspace:
    root: Path
    instance: dg.DagsterInstance
    resources: dict

    @property
    def database(self) -> Path:
        return self.root / "data" / "dmf.duckdb"

    def connect(self):
        return open_database(self.database, purpose="test")


def _resources(root: Path, faults: dict[str, str] | None, **client_overrides) -> dict:
    # the production path: a key would reach the client through the environment at run time, never as config.
    # The emulator needs none (it answers any key); a test that wants one in the environment sets it itself,
    # scoped to the test (monkeypatch.setenv("MFDS_SERVICE_KEY", …), as test_secrets does)
    return build_resources(load_settings(), root=root, emulator_faults=faults or {}, **client_overrides)


def make_workspace(
    root: Path,
    faults: dict[str, str] | None = None,
    *,
    reuse: bool = False,
    records_in_memory: bool = False,
    **client_overrides,
) -> Workspace:
    """A project folder with its own data/, reports/ and a Dagster home holding the project's instance config.
    `reuse`: the folder exists already (e.g. the same project with other emulator faults).

    `records_in_memory`: Dagster keeps this workspace's run and event records in memory
    (`DagsterInstance.ephemeral()`, the same storage API) instead of the project's SQLite files. This is
    for tests of what a day's runs write (history, workbooks, events), where no other process reads the
    instance: the graph end-to-end histories, the fault matrix. It takes ≈0.5 s off each day-run: the
    SQLite event log opens a new engine for each of a run's ≈150 events. The SQLite instance itself is
    what the CLI, daemon, automation, crash and two-process tests run on."""
    home = root / "dagster_home"
    home.mkdir(parents=True, exist_ok=reuse)
    shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    instance = dg.DagsterInstance.ephemeral() if records_in_memory else dg.DagsterInstance.from_config(str(home))
    return Workspace(root, instance, _resources(root, faults, **client_overrides))


def open_workspace(root: Path, faults: dict[str, str] | None = None, **client_overrides) -> Workspace:
    """The same workspace seen from another process (make_workspace must have created it)."""
    instance = dg.DagsterInstance.from_config(str(root / "dagster_home"))
    return Workspace(root, instance, _resources(root, faults, **client_overrides))


def runs_by_day(ws: Workspace) -> dict[date, dict]:
    with ws.connect() as conn:
        rows = conn.execute("SELECT day_id FROM runs ORDER BY day_id").fetchall()
        return {history.to_date(d): history.run_row(conn, history.to_date(d)) for (d,) in rows}


def score_history(ws: Workspace, sim: RegistrySimulator) -> tuple[Score, int]:
    """Score every accepted, non-baseline day's stored events against the emulator's ground truth."""
    total, days = Score(), 0
    runs = runs_by_day(ws)
    accepted = [d for d, r in runs.items() if r["status"] in ("accepted", "baseline")]
    with ws.connect() as conn:
        for day in accepted:
            run = runs[day]
            if run["status"] == "baseline":
                assert not stored_events(conn, day)
                continue
            base = history.to_date(run["base_day_id"])
            truth = sim.truth(base, day, seen=[d for d in accepted if d < base])
            total = total + score(stored_events(conn, day), truth)
            days += 1
    return total, days
