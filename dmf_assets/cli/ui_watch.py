"""`dmf ui`'s watch over `dg dev`: when `dmf ui` is killed outright (SIGKILL — an out-of-memory kill, a service
manager's last resort), stop `dg dev` the way `dmf ui` itself would have, so the Dagster UI, the daemon and their
ports do not stay behind.

`dmf ui` starts this beside `dg dev`: `python -m dmf_assets.cli.ui_watch <dmf ui's pid> <dg dev's pid>`. It waits
for its parent to go away, then sends `dg dev` one SIGTERM — exactly one: a second one cuts `dagster dev`'s own stop
short and leaves its webserver and daemon running (the parent-death signal tried before could come twice) — waits
for it, then stops what is left of its process group (a run in progress): SIGTERM, then SIGKILL. When `dmf ui`
stops normally it stops `dg dev` itself, then ends this watch (killed in the middle of that stop, `dg dev` may get
a second SIGTERM from here: the group's SIGTERM and SIGKILL that follow still leave nothing behind). Standard library
only, so it starts in milliseconds; Linux (it reads /proc: elsewhere it ends at once and watches nothing).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

#: how often the parent is looked at; and the time `dg dev` and a run in progress get, as `dmf ui` gives them
POLL_S = 0.5
GRACE_S = 30.0
#: what is left of the group after `dg dev` has exited gets at least this long between SIGTERM and SIGKILL
LAST_GRACE_S = 5.0


def _alive(pid: int) -> bool:
    """`pid` runs (a zombie has exited: it only waits to be reaped by whoever adopted it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _wait(until_gone: int, deadline: float, *, group: bool = False) -> None:
    gone = (lambda: not _group_alive(until_gone)) if group else (lambda: not _alive(until_gone))
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.1)


def stop_orphaned(dg_dev: int, grace_s: float = GRACE_S) -> None:
    """One SIGTERM to `dg dev` (it stops its webserver and daemon, then its code server); once it has exited, or
    after `grace_s`, SIGTERM to what is left of its group for the rest of `grace_s` (at least LAST_GRACE_S);
    then SIGKILL to the group."""
    deadline = time.monotonic() + grace_s
    with contextlib.suppress(ProcessLookupError):
        os.kill(dg_dev, signal.SIGTERM)
    _wait(dg_dev, deadline - LAST_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(dg_dev, signal.SIGTERM)  # dg dev leads the group `dmf ui` started it in
    _wait(dg_dev, max(deadline, time.monotonic() + LAST_GRACE_S), group=True)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(dg_dev, signal.SIGKILL)


def main(argv: list[str]) -> int:
    parent, dg_dev = (int(a) for a in argv)
    # `dmf ui` ends this watch with SIGTERM once it has stopped `dg dev` itself
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the terminal is `dmf ui`'s to handle
    while os.getppid() == parent:
        if not _alive(dg_dev):
            return 0
        time.sleep(POLL_S)
    if _alive(dg_dev):
        stop_orphaned(dg_dev)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
