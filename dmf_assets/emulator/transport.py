"""In-process transport: httpx talks to the emulator app without a socket (`emulator://local`).

Behaves like the loopback server — including real delays: a delayed answer sleeps, and one that
would arrive after the request's read timeout sleeps that long and raises `httpx.ReadTimeout`,
exactly what a real slow server does to the client. It sleeps on the fetch's clock (`source.politeness`):
under a test's fake clock the delays and timeouts are exact and take no time.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx

from dmf_assets.emulator.app import EmulatorApp
from dmf_assets.source import politeness

log = logging.getLogger("dmf_assets.emulator")


class EmulatorTransport(httpx.BaseTransport):
    def __init__(self, app: EmulatorApp | None = None, **app_kwargs: Any) -> None:
        if app is not None and app_kwargs:
            raise TypeError("pass either an EmulatorApp or keyword arguments to build one, not both")
        self.app = app if app is not None else EmulatorApp(**app_kwargs)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        target = request.url.raw_path.decode("ascii")
        answer = self.app.handle(request.method, target, dict(request.headers))
        log.debug("emulator %s", answer.log_line)
        if answer.delay_s > 0:
            read_timeout = (request.extensions.get("timeout") or {}).get("read")
            if read_timeout is not None and answer.delay_s > read_timeout:
                politeness.sleep(read_timeout)
                raise httpx.ReadTimeout(f"emulator: no answer within {read_timeout:g} s", request=request)
            politeness.sleep(answer.delay_s)
        return httpx.Response(answer.status, headers=list(answer.headers), content=answer.body, request=request)
