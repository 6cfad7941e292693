"""The team's page (`dmf_assets.web`) served in-process on a loopback port, for the tests of its files, pages
and browser use: the real app behind the real uvicorn server, only bound to a free port."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
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
    **limits: float,
) -> Iterator[tuple[str, int]]:
    """(base URL, port) of the page serving `database` and `reports` until the block ends (`port` 0: any free
    one); `limits`: request_deadline_s, max_connections, min_download_rate."""
    app = make_app(settings or load_settings(), database=database, reports_dir=check_reports_dir(reports), token=token)
    server = WebServer(app, bind("127.0.0.1", port, what="{port}"), **limits)  # type: ignore[arg-type]
    server.start()
    try:
        yield f"http://127.0.0.1:{server.port}", server.port
    finally:
        server.stop()
