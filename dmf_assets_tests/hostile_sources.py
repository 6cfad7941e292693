"""Hostile MFDS sources on loopback for the fetch tests (no tests of its own).

`HostileApp` is the emulator over a given registry with chosen answers rewritten (a mislabelled encoding, a
broken value, a page that answers NODATA, an absurd totalCount); it runs behind the project's real loopback
server (`EmulatorServer`). `dripping_server` is a server of its own: it sends its headers at once, then
its body one byte at a time, so every single read is quick while the whole request never ends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from dmf_assets.emulator.app import AppResponse, EmulatorApp
from dmf_assets.source.endpoint import SERVICE_BASE_PATH

#: (page number, the emulator's answer) -> the answer the hostile source gives instead
Rewrite = Callable[[int, AppResponse], AppResponse]


class HostileApp(EmulatorApp):
    """The emulator app whose answers to unfiltered page requests pass through `rewrite`."""

    def __init__(self, *args, rewrite: Rewrite, **kw) -> None:
        super().__init__(*args, **kw)
        self.rewrite = rewrite

    def handle(self, method, target, headers=None):
        answer = super().handle(method, target, headers)
        query = parse_qs(urlsplit(target).query)
        if "ingr_kor_name" in query or "entp_name" in query:
            return answer
        return self.rewrite(int(query.get("pageNo", ["1"])[0]), answer)


def json_body(answer: AppResponse) -> dict:
    return json.loads(answer.body)


def with_body(answer: AppResponse, body: bytes, *extra_headers: tuple[str, str]) -> AppResponse:
    return AppResponse(answer.status, answer.headers + extra_headers, body, answer.delay_s, answer.log_line)


def nodata(answer: AppResponse) -> AppResponse:
    """The real API's answer where no rows are: resultCode 03, no body."""
    doc = {"response": {"header": {"resultCode": "03", "resultMsg": "NODATA_ERROR"}}}
    return with_body(answer, json.dumps(doc).encode())


@contextmanager
def dripping_server(body: bytes, every_s: float) -> Iterator[str]:
    """A loopback source that answers every request with `body`, one byte per `every_s` seconds; yields its
    service base URL. Leaving the block stops the dripping (a client that gave up is not waited for)."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json;charset=UTF-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for i in range(len(body)):
                    if stop.wait(every_s):
                        return
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up: what the deadline is for

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}{SERVICE_BASE_PATH}"
    finally:
        stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
