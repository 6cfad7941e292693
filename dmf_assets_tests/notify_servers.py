"""Real servers on loopback for the notification tests: an SMTP server (aiosmtpd) and a webhook receiver.

Both record what arrives and let a test *wait* for it (a queue with a timeout, not a sleep), and both can
be told to refuse the first N deliveries (451 / HTTP 500) to exercise the retries.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

LOOPBACK = "127.0.0.1"
WAIT_S = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


@dataclass
class SmtpServer:
    port: int
    received: queue.Queue[tuple[list[str], EmailMessage]] = field(default_factory=queue.Queue)
    refuse_first: int = 0
    refused: int = 0
    logins: list = field(default_factory=list)
    raw: dict[str, bytes] = field(default_factory=dict)  # Message-ID -> the bytes as they arrived

    def next_message(self, timeout: float = WAIT_S) -> tuple[list[str], EmailMessage]:
        return self.received.get(timeout=timeout)

    def raw_of(self, msg: EmailMessage) -> bytes:
        """The message exactly as the server received it (headers unparsed)."""
        return self.raw[msg["Message-ID"]]

    async def handle_DATA(self, server, session, envelope):
        if self.refused < self.refuse_first:
            self.refused += 1
            return "451 4.3.0 temporary failure, try again"
        data = envelope.original_content or envelope.content
        msg = message_from_bytes(data, policy=policy.default)
        self.raw[msg["Message-ID"]] = data
        self.received.put((list(envelope.rcpt_tos), msg))
        return "250 OK"


@contextmanager
def smtp_server(*, port: int | None = None, refuse_first: int = 0, password: str | None = None, tls=None):
    """A real SMTP server on 127.0.0.1; with `password`, AUTH LOGIN/PLAIN is required for user 'dmf';
    with `tls` (an ssl.SSLContext), STARTTLS is offered and required."""
    pytest.importorskip(
        "aiosmtpd", reason="aiosmtpd (a test dependency) is not installed: add aiosmtpd==1.4.6 to requirements.lock"
    )
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword

    state = SmtpServer(port or free_port(), refuse_first=refuse_first)
    kwargs = {}
    if password is not None:

        def authenticator(server, session, envelope, mechanism, auth_data):
            ok = (
                isinstance(auth_data, LoginPassword)
                and auth_data.login == b"dmf"
                and auth_data.password == password.encode()
            )
            state.logins.append(ok)
            return AuthResult(success=ok)

        kwargs = {"authenticator": authenticator, "auth_required": True, "auth_require_tls": tls is not None}
    if tls is not None:
        kwargs.update(tls_context=tls, require_starttls=True)
    controller = Controller(state, hostname=LOOPBACK, port=state.port, **kwargs)
    controller.start()
    try:
        yield state
    finally:
        controller.stop()


@dataclass
class Receiver:
    port: int
    received: queue.Queue[dict] = field(default_factory=queue.Queue)
    fail_first: int = 0
    fail_status: int = 500
    failed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str = "/hook") -> str:
        return f"http://{LOOPBACK}:{self.port}{path}"

    def next(self, timeout: float = WAIT_S) -> dict:
        return self.received.get(timeout=timeout)


@contextmanager
def webhook_receiver(*, fail_first: int = 0, fail_status: int = 500):
    """A real HTTP server on 127.0.0.1 that records every POST (path, headers, JSON body)."""
    state = Receiver(0, fail_first=fail_first, fail_status=fail_status)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            return

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with state.lock:
                fail = state.failed < state.fail_first
                if fail:
                    state.failed += 1
            if fail:
                self.send_response(state.fail_status)
                self.end_headers()
                self.wfile.write(b"busy")
                return
            state.received.put({"path": self.path, "headers": dict(self.headers), "json": json.loads(body)})
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"1")

    server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def email_config(smtp_port: int) -> str:
    """The `[alerts.email]` section of a project's config file: the team's mail through the loopback SMTP server
    on `smtp_port`."""
    return (
        f'[alerts.email]\nsmtp_host = "{LOOPBACK}"\nsmtp_port = {smtp_port}\n'
        'sender = "dmf-watch@example.co.kr"\nrecipients = ["ra-team@example.co.kr"]\n'
    )


def settings_for(
    alerts_dir,
    *,
    webhooks=(),
    smtp_port: int | None = None,
    username: str = "",
    recipients=("ra-team@example.co.kr", "sourcing@example.co.kr"),
    oncall_recipients=(),
    starttls: bool = False,
    public_base_url: str = "",
    **sections,
):
    """The real `Settings` (validated like config/dmf.toml) with [alerts] pointing at the loopback servers;
    `sections` add or override whole sections, e.g. `retry={"until": "23:59"}`."""
    from dmf_assets.settings import Settings

    alerts = {
        "webhook_urls": list(webhooks),
        "email": {
            "smtp_host": LOOPBACK if smtp_port else "",
            "smtp_port": smtp_port or 25,
            "starttls": starttls,
            "username": username,
            "sender": "dmf-watch@example.co.kr",
            "recipients": list(recipients),
            "oncall_recipients": list(oncall_recipients),
            "timeout_s": 10.0,
        },
    }
    data = {"alerts": alerts, "paths": {"alerts_dir": str(alerts_dir)}, "web": {"public_base_url": public_base_url}}
    for name, values in sections.items():
        data[name] = {**data.get(name, {}), **values}
    return Settings.model_validate(data)


def notifier_for(alerts_dir, **kw):
    """A `notify.Notifier` on `settings_for(alerts_dir, **kw)`, its alerts folder resolved."""
    from pathlib import Path

    from dmf_assets import notify

    return notify.Notifier(settings_for(alerts_dir, **kw), Path(alerts_dir))
