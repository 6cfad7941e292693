"""A throw-away project for tests that run the real `dmf` CLI in a subprocess: its own config (every path under
the folder, laid out as the shipped config lays them out), its own Dagster home with the project's instance
settings, and none of the developer's DMF_*, DAGSTER_* or MFDS_* environment."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

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


def wait_until(ready: Callable[[], object], proc: subprocess.Popen, timeout_s: float) -> None:
    """Ask `ready()` once a second until it answers true — a server or daemon `proc` just started coming up. Fails
    when `proc` exits first (saying what it printed, when its output is piped) or after `timeout_s` (a bound for a
    loaded machine, never a verdict on speed)."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert proc.poll() is None, f"exited ({proc.returncode}): {proc.stdout.read() if proc.stdout else ''}"
        assert time.monotonic() < deadline, f"not up after {timeout_s:g} s"
        time.sleep(1)


def read_rows(database: Path, sql: str, params: list | None = None) -> list[tuple]:
    """The rows of `sql` on a history database opened read-only (no lock taken, nothing migrated)."""
    with contextlib.closing(duckdb.connect(str(database), read_only=True)) as conn:
        return conn.execute(sql, params or []).fetchall()


@dataclass(frozen=True)
class ProjectCopy:
    """A project's own copy of what a `dmf` command left behind (`project_after`), and what the command said."""

    root: Path  #: this copy
    env: dict[str, str]  #: the copy's environment: its config and Dagster home, the build's extra variables
    built_in: Path  #: the folder the command ran in (paths it wrote down name this one, not `root`)
    returncode: int
    stdout: str
    stderr: str


def _shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every xdist worker of this session sees (the parent of each worker's basetemp), or the basetemp."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-projects"
    shared.mkdir(exist_ok=True)
    return shared


def built_once(tmp_path_factory: pytest.TempPathFactory, key: object, build: Callable[[Path], Any]) -> tuple[Path, Any]:
    """(a copy of its own of the folder `build` filled, what `build` returned) — `build` runs once per session for
    each `key`, under a lock in a folder the xdist workers share, and returns JSON (e.g. the folder it filled, which
    paths written inside the copy still name); every caller, the first too, gets a fresh copy it may change."""
    name = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    shared = _shared_folder(tmp_path_factory)
    built, result = shared / name, shared / f"{name}.json"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first caller builds; the others wait for it, then copy
        if not result.exists():
            shutil.rmtree(built, ignore_errors=True)  # a build that failed half-way
            built.mkdir()
            result.write_text(json.dumps(build(built)), encoding="utf-8")
    copy = tmp_path_factory.mktemp("built-once")
    shutil.copytree(built, copy, dirs_exist_ok=True)
    return copy, json.loads(result.read_text(encoding="utf-8"))


def project_after(
    tmp_path_factory: pytest.TempPathFactory,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 1200,
    **elsewhere: str,
) -> ProjectCopy:
    """A project in a folder of its own holding what `dmf *args` left behind (`temp_project`, the folders named in
    `elsewhere` at those paths under it, `env` added to its environment).

    A day-run costs seconds of CPU, a multi-day backfill tens, and several modules start from the same one: it runs
    once per session (`built_once`) and each caller gets a copy of its own, the config and Dagster home pointing
    into it."""
    extra = dict(env or {})

    def build(root: Path) -> list:
        done = dmf(_project_env(root, extra, elsewhere), *args, timeout=timeout)
        return [str(root), done.returncode, done.stdout, done.stderr]

    root, (built, returncode, stdout, stderr) = built_once(tmp_path_factory, ["dmf", args, extra, elsewhere], build)
    return ProjectCopy(root, _project_env(root, extra, elsewhere), Path(built), returncode, stdout, stderr)


def _project_env(root: Path, extra: Mapping[str, str], elsewhere: Mapping[str, str]) -> dict[str, str]:
    return temp_project(root, **{name: root / path for name, path in elsewhere.items()}) | dict(extra)


#: ten emulator days, the sixth refused by gate 2 (a page short of rows): the backfill test_web and test_one_figure read
TEN_DAYS = [date(2026, 11, 16) + timedelta(days=i) for i in range(10)]
TEN_DAYS_REJECTED = date(2026, 11, 21)
TEN_DAYS_SERVICE_KEY = "web-test-service-key-must-never-show"


def ten_days_one_short(tmp_path_factory: pytest.TempPathFactory) -> ProjectCopy:
    """A copy of `dmf backfill` over TEN_DAYS with TEN_DAYS_REJECTED short of rows, run with a service key set (no
    page, sheet or file may show it) and every folder under data/ named after its setting (the readers follow the
    config, not the default layout)."""
    return project_after(
        tmp_path_factory,
        *("backfill", "--start", TEN_DAYS[0].isoformat(), "--end", TEN_DAYS[-1].isoformat()),
        *("--fault", f"{TEN_DAYS_REJECTED}=page_missing_rows"),
        env={"MFDS_SERVICE_KEY": TEN_DAYS_SERVICE_KEY},
        **{name: f"data/{name}" for name in PATH_NAMES},
    )


#: a project whose first day, 2026-10-05, `dmf run` accepted, its database alone in db/ (a folder a test can make
#: unwritable without touching the rest): what test_crash_safety and test_read_only_database start from
FIRST_DAY = date(2026, 10, 5)


def first_day_run(tmp_path_factory: pytest.TempPathFactory) -> ProjectCopy:
    """A copy of the project `dmf run --date FIRST_DAY` left behind (database: db/dmf.duckdb)."""
    return project_after(tmp_path_factory, "run", "--date", FIRST_DAY.isoformat(), database="db/dmf.duckdb")
