"""A throw-away project for tests that run the real `dmf` CLI in a subprocess: its own config (every path under
the folder, laid out as the shipped config lays them out), its own Dagster home with the project's instance
settings, and none of the developer's DMF_*, DAGSTER_* or MFDS_* environment."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import duckdb

from dmf_assets.settings import PROJECT_ROOT, Paths

#: the `[paths]` settings, in their order
PATH_NAMES = tuple(Paths.model_fields)


def project_paths(root: Path, **elsewhere: Path) -> dict[str, Path]:
    """The folders of a project under `root` (data/dmf.duckdb, data/raw, …, reports: the documented defaults), those
    named in `elsewhere` put there instead."""
    defaults = Paths()
    return {name: defaults.resolve(name, root) for name in PATH_NAMES} | elsewhere


def write_config(config: Path, folders: Mapping[str, Path], extra: str = "") -> Path:
    """`config`: a `[paths]` section naming `folders`, then `extra` (more sections)."""
    config.parent.mkdir(parents=True, exist_ok=True)
    paths = "".join(f'{name} = "{Path(folder).as_posix()}"\n' for name, folder in folders.items())
    config.write_text("[paths]\n" + paths + extra, encoding="utf-8")
    return config


def dagster_home(root: Path) -> Path:
    """root/dagster_home, with the project's instance settings (dagster_home/dagster.yaml)."""
    home = root / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    return home


def clean_environ() -> dict[str, str]:
    """This process's environment without the developer's DMF_*, DAGSTER_* or MFDS_* variables."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("DMF_", "DAGSTER_", "MFDS_"))}


def temp_project(root: Path, extra: str = "", **elsewhere: Path) -> dict[str, str]:
    """The environment of a project in `root` (`project_paths`: the folders named in `elsewhere` put there
    instead); `extra` is more config."""
    config = write_config(root / "dmf.toml", project_paths(root, **elsewhere), extra)
    return {**clean_environ(), "DMF_CONFIG": str(config), "DAGSTER_HOME": str(dagster_home(root))}


def dmf(env: Mapping[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`dmf …` in a subprocess with `env` (from `temp_project`)."""
    return subprocess.run(
        [sys.executable, "-m", "dmf_assets", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=PROJECT_ROOT,
    )


def read_rows(database: Path, sql: str, params: list | None = None) -> list[tuple]:
    """The rows of `sql` on a history database opened read-only (no lock taken, nothing migrated)."""
    with contextlib.closing(duckdb.connect(str(database), read_only=True)) as conn:
        return conn.execute(sql, params or []).fetchall()
