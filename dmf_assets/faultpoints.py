"""Named crash points for the crash-safety tests: a real SIGKILL of this process at a chosen place.

Inactive unless the environment variable DMF_CRASH_AT names the point when the code gets there
(read at call time, never at import). `DMF_CRASH_AT=fetch_page:3` kills the process the 3rd time the
fetch finishes archiving a page; `history_write` inside the day's transaction; `workbook_write` after
the workbook's temporary file is written but before it replaces the real one.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

_calls: Counter[str] = Counter()


def crash_point(name: str) -> None:
    spec = os.environ.get("DMF_CRASH_AT")
    if not spec:
        return
    point, _, nth = spec.partition(":")
    if point != name:
        return
    _calls[name] += 1
    if _calls[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
