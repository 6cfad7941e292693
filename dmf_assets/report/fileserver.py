"""A small read-only HTTP server for reports/: the download link on every xlsx_report materialization.

dagster-webserver serves no arbitrary files, so `dmf ui` starts this beside it. It serves only the
files directly inside the reports folder (no subfolders, no path tricks), with a Korean index page
and download headers that keep Korean file names intact.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
TYPES = {".xlsx": XLSX, ".jsonl": "application/x-ndjson; charset=utf-8", ".pdf": "application/pdf"}


def _handler(reports_dir: Path) -> type[BaseHTTPRequestHandler]:
    root = reports_dir.resolve()

    class ReportHandler(BaseHTTPRequestHandler):
        server_version = "DMFWatchReports/1"

        def log_message(self, fmt: str, *args) -> None:  # quiet: the UI terminal is busy enough
            return

        def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self) -> None:  # noqa: N802
            self.do_GET()

        def do_GET(self) -> None:  # noqa: N802
            name = unquote(urlsplit(self.path).path).lstrip("/")
            if name in ("", "index.html"):
                return self._send(HTTPStatus.OK, self._index(), "text/html; charset=utf-8")
            target = (root / name).resolve()
            if "/" in name or "\\" in name or target.parent != root or not target.is_file():
                return self._send(HTTPStatus.NOT_FOUND, "파일이 없습니다 (not found)".encode(), "text/plain; charset=utf-8")
            body = target.read_bytes()
            disposition = f"attachment; filename*=UTF-8''{quote(target.name)}"
            self._send(HTTPStatus.OK, body, TYPES.get(target.suffix, "application/octet-stream"),
                       {"Content-Disposition": disposition})

        def _index(self) -> bytes:
            files = sorted((p for p in root.glob("*") if p.is_file() and not p.name.startswith(".")), reverse=True)
            rows = "".join(
                f'<tr><td><a href="/{quote(p.name)}">{html.escape(p.name)}</a></td>'
                f"<td>{p.stat().st_size:,}</td><td>{datetime.fromtimestamp(p.stat().st_mtime):%Y-%m-%d %H:%M}</td></tr>"
                for p in files
            )
            page = (
                "<!doctype html><html lang='ko'><meta charset='utf-8'><title>DMF Watch 리포트</title>"
                "<body style='font-family:sans-serif'><h1>DMF Watch 일일 리포트</h1>"
                "<table cellpadding='4'><tr><th>파일</th><th>크기(bytes)</th><th>수정 시각</th></tr>"
                f"{rows}</table></body></html>"
            )
            return page.encode("utf-8")

    return ReportHandler


def make_server(reports_dir: Path, host: str = "127.0.0.1", port: int = 8765) -> ThreadingHTTPServer:
    reports_dir.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer((host, port), _handler(reports_dir))
    server.daemon_threads = True
    return server


@contextmanager
def serve_reports(reports_dir: Path, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve in a background thread; yields the base URL (port 0 = any free port)."""
    server = make_server(reports_dir, host, port)
    thread = threading.Thread(target=server.serve_forever, name="dmf-report-server", daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
