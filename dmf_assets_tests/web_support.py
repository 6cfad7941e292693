"""The team's page (`dmf_assets.web`) served in-process on a loopback port, for the tests of its files, pages
and browser use: the real app behind the real uvicorn server, only bound to a free port."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from dmf_assets.settings import Settings, load_settings
from dmf_assets.web.app import make_app
from dmf_assets.web.files import check_reports_dir
from dmf_assets.web.server import WebServer, bind


@contextlib.contextmanager
def serving(
    reports: Path,
    database: Path,
    *,
    settings: Settings | None = None,
    token: str = "",
    port: int = 0,
    loop: JumpingLoop | None = None,
    **limits: float,
) -> Iterator[tuple[str, int]]:
    """(base URL, port) of the page serving `database` and `reports` until the block ends (`port` 0: any free
    one); `limits`: request_deadline_s, max_connections, min_download_rate; `loop`: served on that loop, whose
    clock the test moves (`JumpingLoop.jump`)."""
    app = make_app(settings or load_settings(), database=database, reports_dir=check_reports_dir(reports), token=token)
    sock = bind("127.0.0.1", port, what="{port}")
    server = WebServer(app, sock, loop_factory=(lambda: loop) if loop else None, **limits)  # type: ignore[arg-type]
    server.start()
    try:
        yield f"http://127.0.0.1:{server.port}", server.port
    finally:
        server.stop()


def raw_get(port: int, path: bytes, timeout: float = 10) -> tuple[int, bytes]:
    """A request line exactly as typed (clients would normalise or refuse these paths)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    assert data, f"no response for {path!r}"
    return int(data.split(b" ", 2)[1]), data


class JumpingLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock the test moves forward: the page's deadlines (timers on this loop) come due when the
    test jumps past them, never by waiting for them — so no test of a deadline reads the wall clock. Real time still
    passes for everything else uvicorn does (its own ticks and shutdown)."""

    def __init__(self) -> None:
        super().__init__()
        self.ahead = 0.0  # seconds the test has moved the clock

    def time(self) -> float:
        return super().time() + self.ahead

    def jump(self, seconds: float) -> None:
        """Move the clock `seconds` on (called from the test's thread). The move waits until the loop has taken in
        what had already reached it (a connection accepted, its deadline set); the call returns once the loop has run
        what came due (the timers, and the closes they started)."""
        settled = threading.Event()

        def passes(n: int, then: Callable[[], None]) -> None:  # n more passes of the loop, then `then`
            if n:
                self.call_soon(passes, n - 1, then)
            else:
                then()

        def move() -> None:
            self.ahead += seconds
            passes(HOPS, settled.set)

        self.call_soon_threadsafe(passes, HOPS, move)
        assert settled.wait(10), "the page's event loop did not run"


#: passes of the loop around a jump: an accepted connection reaches its protocol (its deadline set) in a few, a
#: timer that came due closes its transport in a few more
HOPS = 6
