"""The real-API path on this machine (no tests of its own): the real client (`MfdsClient`, not the emulator twin)
for the real host name — politeness, the daily request cap, "only today can be fetched" — whose requests travel
over real HTTP to a server on loopback (`ToLoopback` rewrites only where the connection goes). The network
outside the machine is unavailable; this is how a test meets the real API's code path.

`EchoingApi`: a loopback server that answers like the real API (a small registry of real rows) or, when told,
with an error page echoing the request it received, in the body kinds a real gateway or proxy produces."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx

from dmf_assets.defs.resources import build_resources
from dmf_assets.emulator.app import EmulatorApp, StaticItemSource
from dmf_assets.settings import REAL_API_URL, Settings, load_settings
from dmf_assets.source.client import USER_AGENT, MfdsClient


class ToLoopback(httpx.BaseTransport):
    """Real HTTP, sent to `target` (http://127.0.0.1:PORT) whatever host the request names."""

    def __init__(self, target: str) -> None:
        self._target = httpx.URL(target)
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(scheme="http", host=self._target.host, port=self._target.port)
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


class RealApiOverLoopback(MfdsClient):
    """`MfdsClient` for the real API's URL, its connections made to `loopback`."""

    loopback: str = ""

    def http_client(self) -> httpx.Client:
        return httpx.Client(
            transport=ToLoopback(self.loopback), headers={"User-Agent": USER_AGENT}, follow_redirects=False
        )


def real_api_resources(root: Path, loopback: str, settings: Settings | None = None, **fields: Any) -> dict:
    """The project's resources for `root`, with the real-API client routed to `loopback` (fast retries, no
    spacing unless `fields` say otherwise)."""
    settings = settings or load_settings()
    resources = build_resources(settings, root=root, base_url=REAL_API_URL)
    values = {
        **MfdsClient.settings_values(settings),
        "raw_dir": str(settings.paths.resolve("raw_dir", root)),
        "min_interval_s": 0.0,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.02,
        **fields,
        "base_url": REAL_API_URL,
    }
    resources["mfds"] = RealApiOverLoopback(loopback=loopback, **values)
    return resources


#: the kinds of error body a server may echo the request in (issue 34), each with the form of the key it shows
ECHO_KINDS = ("html_500", "text_404", "json_result_msg", "gateway_xml", "malformed", "html_503")


def _echo(kind: str, target: str) -> tuple[int, str, bytes]:
    """(status, content type, body) of an error page echoing the request `target` (path + encoded query)."""
    decoded = unquote(target)
    if kind == "html_500":  # as received: the key URL-encoded once
        return 500, "text/html", f"<html><body><h1>500</h1><p>error handling GET {target}</p></body></html>".encode()
    if kind == "text_404":  # decoded
        return 404, "text/plain", f"Not Found: {decoded}".encode()
    if kind == "json_result_msg":  # the percent-encoding lower-cased, and the key as \u escapes
        key = decoded.split("serviceKey=", 1)[1].split("&", 1)[0]
        escaped = "".join(f"\\u{ord(c):04x}" for c in key)
        body = {"response": {"header": {"resultCode": "99", "resultMsg": f"invalid request {target.lower()} key=KEY"}}}
        return 200, "application/json", json.dumps(body).replace("KEY", escaped).encode()
    if kind == "gateway_xml":  # the gateway's XML, its auth message quoting the decoded key
        return (
            200,
            "text/xml",
            (
                "<OpenAPI_ServiceResponse><cmmMsgHeader><errMsg>SERVICE ERROR</errMsg>"
                f"<returnAuthMsg>SERVICE_KEY_IS_NOT_REGISTERED_ERROR for {decoded}</returnAuthMsg>"
                "<returnReasonCode>30</returnReasonCode></cmmMsgHeader></OpenAPI_ServiceResponse>"
            ).encode(),
        )
    if kind == "malformed":  # a body cut short, the key encoded twice
        return (
            200,
            "application/json",
            ('{"response": {"header": {"resultCode": "00", "echo": "' + quote(target)).encode(),
        )
    if kind == "html_503":
        return 503, "text/html", f"<html>Service Unavailable — {decoded.upper()} {target}</html>".encode()
    raise ValueError(kind)


class EchoingApi:
    """A loopback server answering as the real API over `rows` (no emulator date header is needed: it serves
    the same registry every day), or with the echoing error page of `kind` while `kind` is set."""

    def __init__(self, rows: list[dict], service_key: str | None = None) -> None:
        self.kind: str | None = None
        self.requests = 0
        app = EmulatorApp(StaticItemSource(rows), service_key=service_key)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                outer.requests += 1
                if outer.kind is None:
                    answer = app.handle("GET", self.path, dict(self.headers.items()))
                    status, headers, body = answer.status, list(answer.headers), answer.body
                else:
                    status, ctype, body = _echo(outer.kind, self.path)
                    headers = [("Content-Type", ctype)]
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # the request line holds the key
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> EchoingApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self._thread.join(timeout=5)
        self.httpd.server_close()
