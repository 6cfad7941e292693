"""The report download server on real loopback HTTP: workbooks download, nothing else does, every malformed
request gets a 4xx answer (never a dropped connection or a traceback), slow and excess clients are bounded,
and a busy port is a clear message naming the process that holds it."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote, unquote

import httpx
import pytest

from dmf_assets.report.fileserver import (
    REQUEST_DEADLINE_S,
    XLSX,
    FileServerError,
    PortBusy,
    is_report_name,
    start_file_server,
)
from dmf_assets.settings import PROJECT_ROOT

DAY = "DMF_리포트_2026-10-08.xlsx"
LATEST = "DMF_리포트_최신.xlsx"
PERIOD = "DMF_기간리포트_2026-10-01_2026-10-08.xlsx"


@contextlib.contextmanager
def running(reports: Path, **limits):
    server, thread = start_file_server(reports, "127.0.0.1", 0, **limits)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def raw_get(port: int, path: bytes, timeout: float = 10) -> tuple[int, bytes]:
    """A request line exactly as typed (clients would normalise or refuse these paths)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    assert data, f"no response for {path!r}"
    return int(data.split(b" ", 2)[1]), data


@pytest.fixture
def reports(tmp_path):
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / DAY).write_bytes(b"PK\x03\x04 day workbook")
    (folder / PERIOD).write_bytes(b"PK\x03\x04 period workbook")
    (folder / ".env").write_text("MFDS_SERVICE_KEY=secret-key-value\n")
    (folder / "notes.txt").write_text("internal notes")
    (folder / "DMF_리포트_2026-10-07.xlsx.tmp").write_bytes(b"half")
    (folder / f".{DAY}.123.ab.tmp").write_bytes(b"half")
    (folder / "DMF_리포트_2026-10-08.xlsx.bak").write_bytes(b"old")
    (folder / "sub").mkdir()
    (folder / "sub" / DAY).write_bytes(b"PK nested")
    outside = tmp_path / "secret.xlsx"
    outside.write_bytes(b"outside the folder")
    (folder / "DMF_리포트_2026-10-01.xlsx").symlink_to(outside)  # a report name, but pointing outside
    (folder / LATEST).symlink_to(folder / DAY)  # inside: served
    return folder


def test_workbooks_download_and_nothing_else(reports, capsys):
    with running(reports) as (base, _):
        r = httpx.get(f"{base}/{quote(DAY)}", timeout=10)
        assert r.status_code == 200 and r.content == (reports / DAY).read_bytes()
        assert r.headers["content-type"] == XLSX
        assert r.headers["content-disposition"] == f"attachment; filename*=UTF-8''{quote(DAY)}"
        assert unquote(r.headers["content-disposition"].split("''", 1)[1]) == DAY  # Korean name intact
        assert httpx.get(f"{base}/{quote(PERIOD)}", timeout=10).content == b"PK\x03\x04 period workbook"
        assert httpx.get(f"{base}/{quote(LATEST)}", timeout=10).content == (reports / DAY).read_bytes()
        assert httpx.head(f"{base}/{quote(DAY)}", timeout=10).headers["content-length"] == str(
            (reports / DAY).stat().st_size
        )
        for name in (
            ".env",
            "notes.txt",
            "DMF_리포트_2026-10-07.xlsx.tmp",
            f".{DAY}.123.ab.tmp",
            "DMF_리포트_2026-10-08.xlsx.bak",
            "sub",
            f"sub/{DAY}",
            "DMF_리포트_2026-10-01.xlsx",
            "DMF_리포트_2026-10-09.xlsx",
        ):
            r = httpx.get(f"{base}/{quote(name)}", timeout=10)
            assert r.status_code == 404, (name, r.status_code)
            assert b"secret" not in r.content and b"outside" not in r.content
        index = httpx.get(f"{base}/", timeout=10).text
    for shown in (DAY, PERIOD, LATEST):
        assert shown in index
    for hidden in (".env", "notes.txt", ".tmp", ".bak", "sub", "DMF_리포트_2026-10-01.xlsx"):
        assert hidden not in index, hidden
    assert "Traceback" not in capsys.readouterr().err


def test_malformed_paths_get_4xx_and_the_server_lives_on(reports, capsys):
    long_name = "DMF_리포트_" + "가" * 100 + ".xlsx"  # > 255 bytes in UTF-8
    cases = {
        b"/%00": 400,
        b"/" + quote(DAY).encode() + b"%00": 400,
        b"/" + b"A" * 300: 414,
        b"/" + quote(long_name).encode(): 414,
        b"/%zz": 400,
        b"/%": 400,
        b"/%ff%fe": 400,
        b"/..": 404,
        b"/../secret.xlsx": 404,
        b"/%2e%2e/secret.xlsx": 404,
        b"/..%2f.env": 404,
        b"/%2e%2e%2f%2e%2e%2fetc%2fpasswd": 404,
        b"/sub%2f" + quote(DAY).encode(): 404,
        b"/%5c.env": 404,
    }
    with running(reports) as (base, port):
        for path, status in cases.items():
            got, data = raw_get(port, path)
            assert got == status, (path, got, data[:200])
            assert b"secret" not in data
        for method in ("POST", "PUT", "DELETE"):
            r = httpx.request(method, f"{base}/{quote(DAY)}", content=b"x", timeout=10)
            assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"
        assert httpx.get(f"{base}/{quote(DAY)}", timeout=10).status_code == 200  # still serving
    err = capsys.readouterr().err
    assert "Traceback" not in err, err


def test_a_silent_client_is_timed_out(reports):
    with running(reports, request_deadline_s=0.5) as (_, port), socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(10)
        started = time.monotonic()
        assert s.recv(100) == b""  # the server closed the connection
        assert time.monotonic() - started < 5


def test_sixteen_slow_clients_neither_hold_a_thread_nor_block_a_download(reports):
    """Slowloris: each client sends one byte of its request every 8 s — always inside a timeout per receive — and
    so once held all sixteen threads for a minute. With a deadline per request each is cut off after
    REQUEST_DEADLINE_S, and a normal download meanwhile completes at once (the production limits)."""
    request = b"GET /" + quote(DAY).encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    held_for: list[float] = []

    def trickle(port: int) -> None:
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.settimeout(8)
            started = time.monotonic()
            for byte in request:
                s.sendall(bytes([byte]))
                try:
                    if s.recv(1) == b"":  # the server closed the connection
                        break
                except TimeoutError:
                    continue  # 8 s later: the next byte
            held_for.append(time.monotonic() - started)

    with running(reports) as (base, port):
        clients = [threading.Thread(target=trickle, args=(port,)) for _ in range(16)]
        for c in clients:
            c.start()
        time.sleep(0.5)  # all sixteen connected and trickling
        started = time.monotonic()
        r = httpx.get(f"{base}/{quote(DAY)}", timeout=10)
        assert r.status_code == 200 and r.content == (reports / DAY).read_bytes()
        assert time.monotonic() - started < 5
        for c in clients:
            c.join(30)
    assert len(held_for) == 16
    assert all(REQUEST_DEADLINE_S - 1 < t < REQUEST_DEADLINE_S + 2 for t in held_for), held_for


def test_connections_are_bounded_with_503_beyond(reports):
    with running(reports, max_connections=2, request_deadline_s=30) as (base, port):
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]  # each holds a slot
        try:
            time.sleep(0.3)
            started = time.monotonic()
            status, data = raw_get(port, b"/" + quote(DAY).encode())
            assert status == 503 and b"Retry-After" in data
            assert time.monotonic() - started < 3  # answered at once, not queued behind the idle clients
        finally:
            for s in idle:
                s.close()
        deadline = time.monotonic() + 10
        while (r := httpx.get(f"{base}/{quote(DAY)}", timeout=10)).status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.1)  # the slots free as the server notices the closed sockets
        assert r.status_code == 200


def test_busy_port_names_the_holder_and_the_option(reports):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen();"
            "print(s.getsockname()[1], flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(holder.stdout.readline())
        with pytest.raises(PortBusy) as err:
            start_file_server(reports, "127.0.0.1", port)
        message = str(err.value)
        assert f"포트 {port}" in message and f"127.0.0.1:{port}" in message
        assert f"PID {holder.pid}" in message and "python" in message
        assert "dmf ui --report-port" in message
    finally:
        holder.kill()
        holder.wait()


def test_refuses_to_serve_the_project_or_an_empty_folder(tmp_path):
    for bad in ("", "  ", PROJECT_ROOT, PROJECT_ROOT / "."):
        with pytest.raises(FileServerError, match="reports_dir"):
            start_file_server(bad, "127.0.0.1", 0)
    assert not is_report_name(".env") and is_report_name(DAY) and is_report_name(PERIOD)
