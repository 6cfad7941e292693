"""Resources: the MFDS client (or its emulator twin), the history database, the day store, the workspace.

Built from config/dmf.toml when the code location loads (`dmf_assets/definitions.py`: configuration, not
secrets); `dmf run`, `dmf backfill` and the tests swap in their own (a temporary project, `--fault`). The service
key is read from the environment by the client at run time and never becomes configuration, so the
embedded emulator runs with plain `dagster dev` / `dagster asset materialize` and no key at all.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource
from pydantic import PrivateAttr

from dmf_assets.defs.io import DayStoreIOManager
from dmf_assets.emulator.client import EmulatorMfdsClient, client_class
from dmf_assets.settings import PROJECT_ROOT, Settings, load_settings
from dmf_assets.storage.db import (
    DatabaseDiskFull,
    DatabaseReadOnly,
    DatabaseUnusable,
    HistoryTraces,
    open_database,
)


class HistoryDatabase(DuckDBResource):
    """The DuckDB history file: one writer at a time (file lock), migrated on open, never silently new.

    `raw_dir`, `events_dir`, `reports_dir`: where earlier days leave files — a database that is missing
    or empty while they exist was lost, and the step fails saying `dmf restore` / `dmf rebuild`
    (`storage.db.HistoryMissing`); so does a damaged file, and a full disk says so in one line."""

    backups_dir: str = "data/backups"
    lock_timeout_s: float = 900.0
    raw_dir: str = "data/raw"
    events_dir: str = "data/events"
    reports_dir: str = "reports"
    run_limit_minutes: int = 30  # [runs] max_minutes: a younger raw archive may belong to a run in progress

    @contextlib.contextmanager
    def get_connection(self, writing: date | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """`writing`: the day a run's first access is for (its own raw archive is no trace of a lost history)."""
        traces = HistoryTraces(
            Path(self.raw_dir), Path(self.events_dir), Path(self.reports_dir), self.run_limit_minutes * 60
        )
        try:
            with open_database(
                self.database,
                backups_dir=self.backups_dir,
                lock_timeout_s=self.lock_timeout_s,
                purpose="dagster",
                traces=traces,
                writing=[writing] if writing else (),
            ) as conn:
                yield conn
        except (DatabaseUnusable, DatabaseReadOnly, DatabaseDiskFull) as exc:  # one line saying what to do
            raise dg.Failure(description=str(exc), allow_retries=False) from None


class DmfWorkspace(dg.ConfigurableResource):
    """Where the project's files live and which settings apply: read once per run (or sensor tick), not per
    process — a raised gate threshold needs no restart of the UI."""

    root: str = str(PROJECT_ROOT)
    config_file: str = ""  # empty: config/dmf.toml + config/dmf.local.toml (or $DMF_CONFIG)
    _settings: Settings | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._settings = load_settings(self.config_file or None)  # once, when the run initialises its resources

    def settings(self) -> Settings:
        # outside a run's initialisation (a resource used as built), each call reads the files as they are now
        return self._settings if self._settings is not None else load_settings(self.config_file or None)

    def path(self, name: str) -> Path:
        return self.settings().paths.resolve(name, self.root)


def build_resources(
    settings: Settings | None = None,
    *,
    root: str | Path = PROJECT_ROOT,
    config_file: str = "",
    emulator_faults: dict[str, str] | None = None,
    base_url: str | None = None,
    **client_overrides: Any,
) -> dict[str, object]:
    """The resources, consistent with one settings file and one project root."""
    settings = settings or load_settings(config_file or None)

    def resolve(name: str) -> str:
        return str(settings.paths.resolve(name, root))

    base_url = base_url or settings.source.base_url
    # the source or its replay twin: the emulator client for emulator:// and loopback URLs
    mfds_class = client_class(base_url)
    mfds_fields = {**mfds_class.settings_values(settings), "base_url": base_url, "raw_dir": resolve("raw_dir")}
    if issubclass(mfds_class, EmulatorMfdsClient) and emulator_faults is not None:
        mfds_fields["emulator_faults"] = dict(emulator_faults)
    return {
        "mfds": mfds_class(**{**mfds_fields, **client_overrides}),
        "duckdb": HistoryDatabase(
            database=resolve("database"),
            backups_dir=resolve("backups_dir"),
            raw_dir=resolve("raw_dir"),
            events_dir=resolve("events_dir"),
            reports_dir=resolve("reports_dir"),
            run_limit_minutes=settings.runs.max_minutes,
        ),
        "workspace": DmfWorkspace(root=str(root), config_file=config_file),
        "io_manager": DayStoreIOManager(staging_dir=resolve("staging_dir")),
    }
