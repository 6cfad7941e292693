"""The project's Dagster instance, opened by one `dmf` process at a time.

Dagster's SQLite storage creates its tables and stamps their schema version the first time an instance is
opened on a new DAGSTER_HOME. Two processes doing that at the same moment can stamp two versions, and then no
process can ever open the instance again ("Version table 'alembic_version' has more than one head present").
Every `dmf` command opens it here, under an exclusive lock beside dagster.yaml, so they take turns. Dagster's
own processes need no lock: `dagster dev` opens the instance in its parent before it starts the webserver and
the daemon, and `dmf ui` opens it here before that. The systemd units start the webserver and the daemon side by
side, so each first runs `python -m dmf_assets.ops.instance` (`ExecStartPre=`): whichever comes first creates
a new home's storage here, the other finds it made.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dagster import DagsterInstance

#: beside dagster.yaml; held only while an instance is being opened (under a second, longer on a new home)
LOCK_NAME = ".dmf-instance.lock"


@contextlib.contextmanager
def _taking_turns(home: Path) -> Iterator[None]:
    try:
        fh = open(home / LOCK_NAME, "a")  # noqa: SIM115 - closed below, after the instance is open
    except OSError:  # a home this user may only read: nothing can be created there, so nothing to take turns on
        yield
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # the kernel lets go if the holder dies: a killed command never blocks this
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def open_instance(dagster_home: Path | None = None) -> DagsterInstance:
    """The instance of `dagster_home` (None: DAGSTER_HOME's). Raises what Dagster raises for an instance it cannot
    read, `RuntimeError` without a home and `FileNotFoundError` without its dagster.yaml."""
    import dagster as dg

    env = os.environ.get("DAGSTER_HOME")
    if env and (dagster_home is None or Path(env).resolve() == Path(dagster_home).resolve()):
        with _taking_turns(Path(env)):
            return dg.DagsterInstance.get()
    if dagster_home is None:
        raise RuntimeError("DAGSTER_HOME이 설정되지 않았습니다 / DAGSTER_HOME is not set")
    if not (Path(dagster_home) / "dagster.yaml").is_file():
        raise FileNotFoundError(f"{dagster_home}/dagster.yaml이 없습니다 / no dagster.yaml there")
    with _taking_turns(Path(dagster_home)):
        return dg.DagsterInstance.from_config(str(dagster_home))


def cannot_open(exc: BaseException) -> str:
    """The one line said when the instance cannot be opened: DAGSTER_HOME, the innermost cause (「connection to server
    at … failed: Connection refused」, not Dagster's "too many retries") and what to check."""
    from dmf_assets.errors import causes, first_line

    cause = first_line(causes(exc)[-1])
    return (
        f"Dagster 인스턴스를 열 수 없습니다 (DAGSTER_HOME={os.environ.get('DAGSTER_HOME', '')}): {cause} — dagster.yaml의 "
        f"저장소를 확인하세요 (PostgreSQL이면 서버가 실행 중인지, DAGSTER_PG_* 값) / cannot open the Dagster instance: {cause}"
    )


def main() -> int:
    """Open DAGSTER_HOME's instance once (creating a new home's storage) and close it: 0, or 1 with one line."""
    try:
        open_instance().dispose()
    except Exception as exc:  # noqa: BLE001 - the unit's start fails with the reason in its log, then restarts
        print(cannot_open(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
