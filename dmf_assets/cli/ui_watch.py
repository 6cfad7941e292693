"""`dmf ui`'s watch over `dg dev`: when `dmf ui` is killed outright (SIGKILL — an out-of-memory kill, a service
manager's last resort), stop `dg dev` the way `dmf ui` itself would have, so the Dagster UI, the daemon and their
ports do not stay behind.

`dmf ui` starts this beside `dg dev`: `python -m dmf_assets.cli.ui_watch <dmf ui's pid> <dg dev's pid>`. It waits
for its parent to go away, then stops `dg dev`'s tree with `dmf ui`'s own stop (`cli.runs.stop_tree`): one SIGTERM
to `dg dev` — exactly one: a second one cuts `dagster dev`'s own stop short and leaves its webserver and daemon
running (the parent-death signal tried before could come twice) — then SIGTERM and SIGKILL to what is left. When
`dmf ui` stops normally it stops `dg dev` itself, then ends this watch (killed in the middle of that stop, `dg dev`
may get a second SIGTERM from here: the SIGTERM and SIGKILL to what is left still leave nothing behind). Linux
(it reads /proc: elsewhere it ends at once and watches nothing).
"""

from __future__ import annotations

import os
import signal
import sys
import time

from dmf_assets.cli.runs import process_start, stop_tree

#: how often the parent and `dg dev` are looked at (one /proc file each)
POLL_S = 0.5


def main(argv: list[str]) -> int:
    parent, dg_dev = (int(a) for a in argv)
    # `dmf ui` ends this watch with SIGTERM once it has stopped `dg dev` itself
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the terminal is `dmf ui`'s to handle
    started = process_start(dg_dev)

    def dg_dev_exited() -> bool:
        return started is None or process_start(dg_dev) != started

    while os.getppid() == parent:
        if dg_dev_exited():
            return 0
        time.sleep(POLL_S)
    if not dg_dev_exited():
        stop_tree(dg_dev, dg_dev_exited)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
