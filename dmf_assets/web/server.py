"""Serving the page: uvicorn, bound by us, with the guarantees the old download server had.

  * each request has a deadline, not a timeout per receive: its request line and headers must arrive within
    REQUEST_DEADLINE_S (a client trickling one byte every few seconds is cut off); once the page starts its
    answer, the answer must be delivered within the same time plus its size at MIN_DOWNLOAD_RATE (a client
    that stops reading is cut off); a kept-alive connection's next request starts a new deadline;
  * at most MAX_CONNECTIONS are served at once: the next one gets a quick 503 with Retry-After;
  * the socket is bound here, so a port in use is one line naming the program that holds it;
  * on any address but loopback it does not start without an access token (`access_rule`).

The deadlines live in uvicorn's httptools protocol (`guarded_protocol`, given to uvicorn as its `http` class);
the page tells it a download's deadline through the request's ASGI extension `DEADLINE_EXTENSION`.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from dmf_assets.errors import UserError
from dmf_assets.korean import josa
from dmf_assets.web.ports import busy_port_text

REQUEST_DEADLINE_S = 5.0  # request line + headers arrive within this, and the answer is given within this again
MIN_DOWNLOAD_RATE = 64 * 1024  # bytes/s a download may not fall below (a 3 MB workbook: 5 s + 47 s at most)
#: a team opening the morning's page, beside a few stuck clients; beyond: 503, not unbounded connections
MAX_CONNECTIONS = 64
#: scope["extensions"][DEADLINE_EXTENSION]["download"](size): the answer about to be sent is `size` bytes long —
#: its deadline becomes the request deadline plus that size at the minimum download rate (`app.Guard` calls it
#: for every answer)
DEADLINE_EXTENSION = "dmf.deadline"
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nConnection: close\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
)
_BUSY_BODY = "바쁩니다, 잠시 후 다시 / busy, retry shortly\n".encode()
log = logging.getLogger("dmf.web")


def guarded_protocol(
    request_deadline_s: float, max_connections: int, min_download_rate: float
) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with per-request deadlines and a connection limit (module docstring)."""

    class GuardedProtocol(HttpToolsProtocol):
        _deadline: asyncio.TimerHandle | None = None
        _over = False  # one connection more than the limit: answered 503 as soon as its request is read

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._over = len(self.connections) > max_connections
            self._allow(min(request_deadline_s, 2.0) if self._over else request_deadline_s)

        def _allow(self, seconds: float) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(seconds, self._expired)

        def _expired(self) -> None:
            if not self.transport.is_closing():
                # a client that stopped reading would keep close() waiting for its buffer: drop that at once
                (self.transport.abort if self.transport.get_write_buffer_size() else self.transport.close)()

        def _download(self, size: int) -> None:
            self._allow(request_deadline_s + size / min_download_rate)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.scope["extensions"] = {DEADLINE_EXTENSION: {"download": self._download}}

        def on_headers_complete(self) -> None:
            if self._over:  # read first, then answered: closing on unread bytes would reset the connection
                self.transport.write(_BUSY + f"Content-Length: {len(_BUSY_BODY)}\r\n\r\n".encode() + _BUSY_BODY)
                self.transport.close()
                return
            if self._deadline is not None:  # the request has arrived: the page works (its own limits), then
                self._deadline.cancel()  # its answer is timed as it goes out (`_download`)
                self._deadline = None
            super().on_headers_complete()

        def on_body(self, body: bytes) -> None:
            if not self._over:
                super().on_body(body)

        def on_message_complete(self) -> None:
            if not self._over:
                super().on_message_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._allow(request_deadline_s)  # a kept-alive connection's next request

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

    return GuardedProtocol


def is_loopback(host: str) -> bool:
    """Every address `host` names is a loopback address (127.0.0.0/8, ::1)."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(str(i[4][0]).split("%")[0]).is_loopback for i in infos)


def access_rule(host: str, token: str) -> None:
    """Loopback needs nothing; any other address needs the token — refused up front otherwise."""
    if not token and not is_loopback(host):
        raise UserError(
            f"{josa(host, '으로/로')} 열려면 접근 토큰이 필요합니다 — [web] token 또는 환경 변수 DMF_WEB_TOKEN을 "
            f"설정하세요 / listening on {host} needs an access token: set [web] token or DMF_WEB_TOKEN "
            "(16+ characters: python3 -c 'import secrets; print(secrets.token_urlsafe(24))')"
        )


def bind(host: str, port: int, *, what: str) -> socket.socket:
    """A listening socket on host:port, or UserError with one line (a busy port names its holder; `what`: the
    command line to suggest, with {port})."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except OSError as exc:
        raise UserError(f"주소 {host}에서 열 수 없습니다 / cannot listen on {host}: {exc.strerror or exc}") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UserError(busy_port_text("DMF 조회", "web page", host, port, what)) from None
        if exc.errno == errno.EACCES:
            raise UserError(
                f"{josa(f'포트 {port}', '을/를')} 열 권한이 없습니다 (1024 미만은 관리자 전용) / no permission to "
                f"listen on port {port}: {what.format(port=8765)}"
            ) from None
        raise UserError(
            f"주소 {host}:{port}에서 열 수 없습니다 / cannot listen on {host}:{port}: {exc.strerror or exc}"
        ) from None
    return sock


class _OneLine(logging.Formatter):
    """uvicorn's own warnings (a malformed request, a limit) as one line each, never a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"dmf web: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            text += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
        return text.splitlines()[0]


def _quiet_logs() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    for name in ("uvicorn", "uvicorn.error", "dmf.web"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(logging.WARNING)
        logger.propagate = False


class WebServer:
    """The page on a bound socket: `serve()` in the foreground (Ctrl-C / SIGTERM stop it), or `start()` in a
    thread beside something else (`dmf ui`, tests) and `stop()`."""

    def __init__(
        self,
        app: Any,
        sock: socket.socket,
        *,
        request_deadline_s: float = REQUEST_DEADLINE_S,
        max_connections: int = MAX_CONNECTIONS,
        min_download_rate: float = MIN_DOWNLOAD_RATE,
        loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
    ) -> None:
        """`loop_factory`: the event loop to serve on (default: uvicorn's choice) — tests give one whose clock they
        move forward, so a deadline is seen to pass without waiting for it."""
        _quiet_logs()
        self.sock = sock
        config = uvicorn.Config(
            app,
            http=guarded_protocol(request_deadline_s, max_connections, min_download_rate),
            lifespan="off",
            log_config=None,
            access_log=False,
            server_header=False,
            timeout_keep_alive=int(request_deadline_s) or 1,
            timeout_graceful_shutdown=5,
        )
        self.server = uvicorn.Server(config)
        self._loop_factory = loop_factory
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def serve(self) -> None:
        """In the foreground until Ctrl-C, SIGTERM or SIGHUP — then a clean stop and a normal return (uvicorn's
        own handling would end the process by the signal again)."""
        stop = threading.Event()
        signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in signals}
        try:
            self.start()
            while not stop.wait(0.5) and self._thread is not None and self._thread.is_alive():
                pass
        finally:
            self.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def start(self, timeout_s: float = 30.0) -> None:
        """Serving in a thread of this process (uvicorn leaves the signals to the main thread)."""
        run = self.server.run if self._loop_factory is None else self._run_on_given_loop
        self._thread = threading.Thread(target=run, kwargs={"sockets": [self.sock]}, name="dmf-web", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the web server did not start")
            time.sleep(0.02)

    def _run_on_given_loop(self, sockets: list[socket.socket]) -> None:
        with asyncio.Runner(loop_factory=self._loop_factory) as runner:
            runner.run(self.server.serve(sockets=sockets))

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(15)
        self.sock.close()
