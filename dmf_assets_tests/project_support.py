"""A throw-away project for tests that run the real `dmf` CLI in a subprocess: its own config (every path under
the folder), its own Dagster home with the project's instance settings, and none of the developer's DMF_*,
DAGSTER_* or MFDS_* environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from dmf_assets.settings import PROJECT_ROOT

PATH_NAMES = (
    "database",
    "raw_dir",
    "staging_dir",
    "alerts_dir",
    "backups_dir",
    "reports_dir",
    "events_dir",
    "logs_dir",
)


def temp_project(root: Path, extra: str = "") -> dict[str, str]:
    """The environment of a project in `root`: `[paths]` name root/data/<name>; `extra` is more config."""
    root.mkdir(parents=True, exist_ok=True)
    config = root / "dmf.toml"
    config.write_text(
        "[paths]\n" + "".join(f'{n} = "{(root / "data" / n).as_posix()}"\n' for n in PATH_NAMES) + extra,
        encoding="utf-8",
    )
    home = root / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DMF_", "DAGSTER_", "MFDS_"))}
    return {**env, "DMF_CONFIG": str(config), "DAGSTER_HOME": str(home)}


def dmf(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`dmf …` in a subprocess with `env` (from `temp_project`)."""
    return subprocess.run(
        [sys.executable, "-m", "dmf_assets", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=PROJECT_ROOT,
    )
