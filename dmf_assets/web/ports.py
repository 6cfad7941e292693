"""Who holds a port, and the one line for a port another program listens on — shared by every server the
product starts (the web page, the emulator, Dagster's UI in `dmf ui`). Standard library only."""

from __future__ import annotations

import os
from pathlib import Path

from dmf_assets.korean import josa


def port_holder(port: int) -> str | None:
    """'PID 1234 (python -m http.server)' for a process listening on `port`, from /proc (Linux); None if unknown."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A = LISTEN
                inodes.add(fields[9])
    if not inodes:
        return None
    wanted = {f"socket:[{i}]" for i in inodes}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") in wanted for fd in fds):
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                return f"PID {pid} ({cmd[:120]})" if cmd else f"PID {pid}"
        except OSError:  # another user's process, or it just exited
            continue
    return None


def busy_port_text(what_ko: str, what_en: str, host: str, port: int, fix: str) -> str:
    """The one line for a port another program listens on (named, when /proc tells), and how to choose another:
    `fix` is the command line, with {port} for the next port."""
    holder = port_holder(port)
    other = port + 1 if port < 65535 else port - 1
    return (
        f"{what_ko} {josa(f'포트 {port}', '을/를')} 이미 다른 프로그램이 쓰고 있습니다 / the {what_en} port {host}:{port} "
        f"is already in use{f' — {holder}' if holder else ''}. 그 프로그램을 끝내거나 다른 포트를 쓰세요 / stop it or "
        f"pick another port: {fix.format(port=other)}"
    )
