"""The emulator as a real HTTP server on loopback (stdlib ThreadingHTTPServer).

Same `EmulatorApp` as the in-process transport, so both behave identically. Logs one line per
request through the app's redacted `log_line` — the stdlib's default access log would print the
request line, which contains the service key, so every stdlib log hook is overridden.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from dmf_assets.emulator.app import EmulatorApp
from dmf_assets.source.endpoint import SERVICE_BASE_PATH

log = logging.getLogger("dmf_assets.emulator.server")


class _EmulatorHTTPServer(ThreadingHTTPServer):
    stopping = False  # set by EmulatorServer.stop(): handlers drop kept-alive connections


def _handler_class(app: EmulatorApp, emit: Callable[[str], None]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "dmf-emulator"
        sys_version = ""
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def _answer(self) -> None:
            if getattr(self.server, "stopping", False):
                # stop() was called: drop kept-alive connections too, like a server going away
                self.close_connection = True
                return
            answer = app.handle(self.command, self.path, dict(self.headers.items()))
            emit(answer.log_line)
            if answer.delay_s > 0:
                time.sleep(answer.delay_s)
            try:
                self.send_response(answer.status)
                for name, value in answer.headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (read timeout) while we were "slow"

        # The stdlib logs the raw request line (with serviceKey=...): never let it.
        def log_request(self, code: Any = "-", size: Any = "-") -> None:
            pass

        def log_error(self, format: str, *args: Any) -> None:
            emit(f"error answering {self.command or '?'} request: {args[0] if args else ''}")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class EmulatorServer:
    """A running loopback server. Use as a context manager; `base_url` is the service base URL."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        app: EmulatorApp | None = None,
        emit: Callable[[str], None] | None = None,
        **app_kwargs: Any,
    ) -> None:
        if app is not None and app_kwargs:
            raise TypeError("pass either an EmulatorApp or keyword arguments to build one, not both")
        self.app = app if app is not None else EmulatorApp(**app_kwargs)
        self._emit = emit or (lambda line: log.info("%s", line))
        self.httpd = _EmulatorHTTPServer((host, port), _handler_class(self.app, self._emit))
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def base_url(self) -> str:
        host = str(self.httpd.server_address[0])  # the same text f"{host}" gave
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{self.port}{SERVICE_BASE_PATH}"

    def start(self) -> EmulatorServer:
        # short poll interval: stop() waits for the serve loop to notice, tests stop many servers
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="dmf-emulator", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        """Stop accepting and close the listening socket (new connections are refused)."""
        self.httpd.stopping = True
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.httpd.server_close()

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def serve_in_thread(host: str = "127.0.0.1", port: int = 0, **app_kwargs: Any) -> Iterator[str]:
    """Run the emulator on loopback for the duration of the block; yields the service base URL."""
    with EmulatorServer(host, port, **app_kwargs) as server:
        yield server.base_url
