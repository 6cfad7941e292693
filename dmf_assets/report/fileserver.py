"""A small read-only HTTP server for reports/: the download link on every xlsx_report materialization.

dagster-webserver serves no arbitrary files, so `dmf ui` starts this beside it. It serves workbooks
and nothing else:
  * only names of the product's workbooks (`DMF_리포트_YYYY-MM-DD.xlsx`, `DMF_리포트_최신.xlsx`,
    `DMF_기간리포트_YYYY-MM-DD_YYYY-MM-DD.xlsx`) directly inside the reports folder — no dotfiles,
    no other extensions, no subfolders; a symlink only if it resolves to a file inside the folder;
  * every malformed path (NUL, bad percent-encoding, `..`, a name over 255 bytes) gets a 4xx
    response, any unexpected fault a 500 — never a dropped connection and a traceback;
  * each request has a deadline, not just a timeout per receive: its request line and headers must arrive
    within REQUEST_DEADLINE_S and its response may take that plus its size at MIN_DOWNLOAD_RATE — a client
    trickling one byte every few seconds holds a thread for seconds, not for as long as it likes;
  * at most MAX_CONNECTIONS are served at once (503 beyond), more than a few slow clients can take;
  * it refuses to start on an empty reports_dir or one that holds the project (it would be `.env`'s folder).
"""

from __future__ import annotations

import errno
import html
import io
import os
import re
import shutil
import socket
import sys
import threading
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, cast
from urllib.parse import quote, unquote, urlsplit

from dmf_assets.clock import KST
from dmf_assets.korean import josa
from dmf_assets.settings import PROJECT_ROOT

if TYPE_CHECKING:  # typeshed's names for what socketserver passes around
    from _socket import _RetAddress
    from socketserver import _RequestType

    from _typeshed import ReadableBuffer, WriteableBuffer

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
_DAY = r"\d{4}-\d{2}-\d{2}"
#: the file names the product writes into reports/ (report/workbook.py and the period report)
REPORT_NAME = re.compile(rf"^DMF_(?:리포트_(?:{_DAY}|최신)|기간리포트_{_DAY}_{_DAY})\.xlsx$")
MAX_NAME_BYTES = 255  # NAME_MAX of Linux file systems
MAX_CONNECTIONS = (
    64  # a team downloading the morning workbook, beside a few stuck clients; beyond: 503, not unbounded threads
)
REQUEST_DEADLINE_S = 5.0  # a whole request (line + headers) arrives within this, or the connection is closed
MIN_DOWNLOAD_RATE = 64 * 1024  # bytes/s a download may not fall below (a 3 MB workbook: 5 s + 47 s at most)
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


class FileServerError(Exception):
    """The report server cannot start; the message says why and what to do."""


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


class PortBusy(FileServerError):
    """The port is taken by another program."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        super().__init__(
            busy_port_text(
                "리포트 다운로드",
                "report download",
                host,
                port,
                "dmf ui --report-port {port} (dmf serve-reports --port {port}, or report.file_server_port in "
                "config/dmf.local.toml)",
            )
        )


def is_report_name(name: str) -> bool:
    return bool(REPORT_NAME.match(name))


def servable(root: Path, name: str) -> Path | None:
    """The file to send for `name`, or None: a report name, a regular file, resolving inside `root`."""
    if not is_report_name(name):
        return None
    target = root / name
    try:
        resolved = target.resolve(strict=True)
    except (OSError, RuntimeError):  # missing, dangling symlink, symlink loop
        return None
    return resolved if resolved.parent == root and resolved.is_file() else None


def _reject_reason(raw_path: str) -> tuple[int, str] | None:
    """A 4xx for a malformed request path, before it is ever used as a file name."""
    if _BAD_PERCENT.search(raw_path):
        return HTTPStatus.BAD_REQUEST, "잘못된 퍼센트 인코딩 / bad percent-encoding"
    try:
        name = unquote(raw_path, errors="strict").lstrip("/")
    except UnicodeDecodeError:
        return HTTPStatus.BAD_REQUEST, "UTF-8이 아닌 경로 / path is not UTF-8"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return HTTPStatus.BAD_REQUEST, "제어 문자가 든 경로 / control character in path"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return HTTPStatus.REQUEST_URI_TOO_LONG, f"파일 이름이 너무 깁니다 / name longer than {MAX_NAME_BYTES} bytes"
    if "/" in name or "\\" in name or ".." in name:
        return HTTPStatus.NOT_FOUND, "파일이 없습니다 / not found"
    return None


class _Deadline(io.RawIOBase):
    """A connection read and written only until a deadline: each receive and send gets just the time left,
    so the deadline holds however the client spreads its bytes (a socket timeout restarts with every byte)."""

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self._sock = sock
        self.allow(seconds)

    def allow(self, seconds: float) -> None:
        """From now on, `seconds` more."""
        self.until = time.monotonic() + seconds

    def _arm(self) -> None:
        left = self.until - time.monotonic()
        if left <= 0:
            raise TimeoutError("요청 기한 초과 / request deadline passed")
        self._sock.settimeout(left)

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        self._arm()
        return self._sock.recv_into(buffer)

    def write(self, data: ReadableBuffer) -> int:
        self._arm()
        self._sock.sendall(data)
        return memoryview(data).nbytes  # len(data) for the bytes it is given


def _handler(root: Path, request_deadline_s: float) -> type[BaseHTTPRequestHandler]:
    class ReportHandler(BaseHTTPRequestHandler):
        server_version = "DMFWatchReports/2"

        def setup(self) -> None:
            # instead of StreamRequestHandler's socket files with a timeout per receive: one deadline per
            # request (HTTP/1.0: a connection carries one request); BaseHTTPRequestHandler closes the
            # connection on the TimeoutError a missed deadline raises
            self.connection = self.request
            self.deadline = _Deadline(self.connection, request_deadline_s)
            self.rfile = io.BufferedReader(self.deadline)
            # only .write() is used, and _Deadline.write sends every byte, as BufferedIOBase.write does
            self.wfile = cast(io.BufferedIOBase, self.deadline)

        def log_message(self, fmt: str, *args: object) -> None:  # quiet: the UI terminal is busy enough
            return

        def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _text(self, status: int, text: str) -> None:
            self._send(status, (text + "\n").encode("utf-8"), "text/plain; charset=utf-8")

        def do_HEAD(self) -> None:
            self.do_GET()

        def _read_only(self) -> None:
            self.deadline.allow(request_deadline_s)  # the request has arrived: now the time to answer
            self.close_connection = True  # the request body, if any, is never read
            self._send(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "읽기 전용입니다 / read-only: GET or HEAD\n".encode(),
                "text/plain; charset=utf-8",
                {"Allow": "GET, HEAD"},
            )

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _read_only

        def do_GET(self) -> None:
            self.deadline.allow(request_deadline_s)  # the request has arrived: now the time to answer
            try:
                self._get()
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                self.close_connection = True  # the client went away mid-download
            except Exception as exc:  # noqa: BLE001 - never a traceback on the terminal and a dropped connection
                print(f"dmf report server: {type(exc).__name__}: {exc}", file=sys.stderr)
                self.close_connection = True
                with suppress(OSError):
                    self._text(HTTPStatus.INTERNAL_SERVER_ERROR, "서버 오류 / internal error")

        def _get(self) -> None:
            raw = urlsplit(self.path).path
            if rejected := _reject_reason(raw):
                return self._text(*rejected)
            name = unicodedata.normalize("NFC", unquote(raw).lstrip("/"))
            if name in ("", "index.html"):
                return self._send(HTTPStatus.OK, self._index(), "text/html; charset=utf-8")
            target = servable(root, name)
            if target is None:
                return self._text(HTTPStatus.NOT_FOUND, "파일이 없습니다 / not found")
            with open(target, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                self.deadline.allow(request_deadline_s + size / MIN_DOWNLOAD_RATE)
                self.send_response(HTTPStatus.OK)
                self.send_header("Content-Type", XLSX)
                self.send_header("Content-Length", str(size))
                self.send_header("Cache-Control", "no-store")
                self.send_header("X-Content-Type-Options", "nosniff")
                # RFC 6266 + RFC 5987: the Korean name survives every browser
                self.send_header("Content-Disposition", f"attachment; filename*=UTF-8''{quote(name)}")
                self.end_headers()
                if self.command != "HEAD":
                    shutil.copyfileobj(fh, self.wfile, length=256 * 1024)

        def _index(self) -> bytes:
            files = []
            for entry in sorted(os.scandir(root), key=lambda e: e.name, reverse=True):
                target = servable(root, entry.name)
                if target is not None:
                    st = target.stat()
                    files.append((entry.name, st.st_size, datetime.fromtimestamp(st.st_mtime, KST)))
            rows = "".join(
                f'<tr><td><a href="/{quote(name)}">{html.escape(name)}</a></td>'
                f"<td>{size:,}</td><td>{mtime:%Y-%m-%d %H:%M}</td></tr>"
                for name, size, mtime in files
            )
            page = (
                "<!doctype html><html lang='ko'><meta charset='utf-8'><title>DMF Watch 리포트</title>"
                "<body style='font-family:sans-serif'><h1>DMF Watch 일일 리포트</h1>"
                "<table cellpadding='4'><tr><th>파일</th><th>크기(bytes)</th><th>수정 시각 (KST)</th></tr>"
                f"{rows}</table></body></html>"
            )
            return page.encode("utf-8")

    return ReportHandler


class ReportServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with at most `MAX_CONNECTIONS` handler threads; the rest get a quick 503."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], max_connections: int = MAX_CONNECTIONS
    ) -> None:
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request: _RequestType, client_address: _RetAddress) -> None:
        if not self._slots.acquire(blocking=False):
            sock = cast(socket.socket, request)  # a TCP server's request is its connection
            try:
                sock.settimeout(2.0)
                body = "바쁩니다, 잠시 후 다시 / busy, retry shortly\n".encode()
                sock.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nConnection: close\r\n"
                    b"Content-Type: text/plain; charset=utf-8\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
            except OSError:
                pass
            finally:
                self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: _RequestType, client_address: _RetAddress) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: _RequestType, client_address: _RetAddress) -> None:
        # a fault outside do_GET (e.g. a client that resets during the request line): one line, no traceback
        exc = sys.exc_info()[1]
        print(f"dmf report server: {client_address[0]}: {type(exc).__name__}: {exc}", file=sys.stderr)


def check_reports_dir(reports_dir: str | Path) -> Path:
    """The resolved reports folder, or FileServerError when serving it would expose more than workbooks."""
    if not str(reports_dir).strip():
        raise FileServerError(
            "paths.reports_dir가 비어 있어 리포트 서버를 시작하지 않습니다 (프로젝트 폴더 전체가 됨) / reports_dir is "
            'empty, which would be the whole project folder: set paths.reports_dir = "reports" in config/dmf.local.toml'
        )
    root = Path(reports_dir).resolve()
    if root == PROJECT_ROOT or root in PROJECT_ROOT.parents or root == Path(root.anchor):
        raise FileServerError(
            f"리포트 폴더 {root}에는 프로젝트 파일(.env 등)이 있어 서버를 시작하지 않습니다 / refusing to serve {root}: "
            f'it holds the project (and its .env); set paths.reports_dir to a folder of its own, e.g. "reports"'
        )
    return root


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


def make_server(
    reports_dir: Path,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    request_deadline_s: float = REQUEST_DEADLINE_S,
    max_connections: int = MAX_CONNECTIONS,
) -> ReportServer:
    """A bound, not yet serving, report server. Raises PortBusy / FileServerError with a clear message."""
    root = check_reports_dir(reports_dir)
    root.mkdir(parents=True, exist_ok=True)
    try:
        return ReportServer((host, port), _handler(root, request_deadline_s), max_connections)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortBusy(host, port) from None
        if exc.errno == errno.EACCES:
            raise FileServerError(
                f"{josa(f'포트 {port}', '을/를')} 열 권한이 없습니다 (1024 미만은 관리자 전용) / no permission to "
                f"listen on port {port}: use dmf ui --report-port 8765"
            ) from None
        if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
            raise FileServerError(
                f"주소 {host}에서 열 수 없습니다 / cannot listen on {host}: {exc.strerror or exc} — "
                f"report.file_server_host를 확인하세요 / check report.file_server_host"
            ) from None
        raise


def start_file_server(
    reports_dir: str | Path,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    request_deadline_s: float = REQUEST_DEADLINE_S,
    max_connections: int = MAX_CONNECTIONS,
) -> tuple[ReportServer, threading.Thread]:
    """Serve reports in a daemon thread; returns (server, thread); `limits`: request_deadline_s, max_connections.
    Stop with server.shutdown(); server.server_close()."""
    server = make_server(
        Path(reports_dir), host, port, request_deadline_s=request_deadline_s, max_connections=max_connections
    )
    thread = threading.Thread(target=server.serve_forever, name="dmf-report-server", daemon=True)
    thread.start()
    return server, thread


@contextmanager
def serve_reports(reports_dir: Path, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve in a background thread; yields the base URL (port 0 = any free port)."""
    server, _ = start_file_server(reports_dir, host, port)
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
