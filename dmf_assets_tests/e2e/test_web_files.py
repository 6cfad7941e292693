"""The page's workbook downloads (`/reports/…`) on real loopback HTTP, with every attack the former download
server (report/fileserver.py) was tested with: workbooks download, nothing else does, every malformed or
traversing path gets a 4xx answer (never a dropped connection or a traceback), slow and excess clients are
bounded, and a busy port is a clear message naming the process that holds it."""

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

from dmf_assets.errors import UserError
from dmf_assets.report.output import XLSX
from dmf_assets.settings import PROJECT_ROOT
from dmf_assets.web.files import check_reports_dir, is_report_name, requested_name
from dmf_assets.web.server import bind
from dmf_assets_tests.web_support import JumpingLoop, raw_get, serving

DAY = "DMF_리포트_2026-10-08.xlsx"
LATEST = "DMF_리포트_최신.xlsx"
PERIOD = "DMF_기간리포트_2026-10-01_2026-10-08.xlsx"


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


@pytest.fixture
def database(tmp_path) -> Path:
    return tmp_path / "no-history-yet.duckdb"  # the downloads never need the database


def test_workbooks_download_and_nothing_else(reports, database, capsys):
    with serving(reports, database) as (base, _):
        r = httpx.get(f"{base}/reports/{quote(DAY)}", timeout=10)
        assert r.status_code == 200 and r.content == (reports / DAY).read_bytes()
        assert r.headers["content-type"] == XLSX
        assert r.headers["content-disposition"] == f"attachment; filename*=UTF-8''{quote(DAY)}"
        assert unquote(r.headers["content-disposition"].split("''", 1)[1]) == DAY  # Korean name intact
        assert httpx.get(f"{base}/reports/{quote(PERIOD)}", timeout=10).content == b"PK\x03\x04 period workbook"
        assert httpx.get(f"{base}/reports/{quote(LATEST)}", timeout=10).content == (reports / DAY).read_bytes()
        assert httpx.head(f"{base}/reports/{quote(DAY)}", timeout=10).headers["content-length"] == str(
            (reports / DAY).stat().st_size
        )
        # the former server's addresses (http://host:8765/DMF_리포트_….xlsx in old days' links) lead there
        moved = httpx.get(f"{base}/{quote(DAY)}", timeout=10, follow_redirects=True)
        assert moved.status_code == 200 and moved.content == (reports / DAY).read_bytes()
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
            r = httpx.get(f"{base}/reports/{quote(name)}", timeout=10)
            assert r.status_code == 404, (name, r.status_code)
            assert b"secret" not in r.content and b"outside" not in r.content
        index = httpx.get(f"{base}/reports/", timeout=10).text
    for shown in (DAY, PERIOD, LATEST):
        assert shown in index
    for hidden in (".env", "notes.txt", ".tmp", ".bak", "DMF_리포트_2026-10-01.xlsx"):
        assert hidden not in index, hidden
    assert str(reports) not in index  # no local path on the page
    assert "Traceback" not in capsys.readouterr().err


def test_malformed_and_traversing_paths_get_4xx_and_the_server_lives_on(reports, database, capsys):
    (reports.parent / "pyproject.toml").write_text("[project]\nname = 'secret'\n")
    long_name = "DMF_리포트_" + "가" * 100 + ".xlsx"  # > 255 bytes in UTF-8
    cases = {
        b"/reports/%00": 400,
        b"/reports/" + quote(DAY).encode() + b"%00": 400,
        b"/reports/" + b"A" * 300: 414,
        b"/reports/" + quote(long_name).encode(): 414,
        b"/reports/%zz": 400,
        b"/reports/%": 400,
        b"/reports/%ff%fe": 400,
        b"/reports/..": 404,
        b"/reports/../secret.xlsx": 404,
        b"/reports/../pyproject.toml": 404,
        b"/reports/%2e%2e/pyproject.toml": 404,
        b"/reports/%2E%2E%2Fpyproject.toml": 404,
        b"/reports/..%2fpyproject.toml": 404,
        b"/reports/..%5cpyproject.toml": 404,
        b"/reports/%252e%252e%252fpyproject.toml": 404,  # encoded twice: decoded once, still not a workbook
        b"/reports/%2e%2e%2f%2e%2e%2fetc%2fpasswd": 404,
        b"/reports/sub%2f" + quote(DAY).encode(): 404,
        b"/reports/%5c.env": 404,
        b"/reports/.env": 404,
        b"/../pyproject.toml": 404,
        b"/%2e%2e/pyproject.toml": 404,
        b"/..%2fpyproject.toml": 404,
        b"/reports/\xed\x95\x9c.xlsx": 400,  # raw bytes that are not ASCII in the request line
    }
    with serving(reports, database) as (base, port):
        for path, status in cases.items():
            got, data = raw_get(port, path)
            assert got == status, (path, got, data[:300])
            assert b"secret" not in data and b"[project]" not in data
        for method in ("POST", "PUT", "DELETE"):
            r = httpx.request(method, f"{base}/reports/{quote(DAY)}", content=b"x", timeout=10)
            assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"
        assert httpx.get(f"{base}/reports/{quote(DAY)}", timeout=10).status_code == 200  # still serving
        assert b"path is not UTF-8" in raw_get(port, b"/reports/%ff%fe")[1]  # the refusal says why
    # raw UTF-8 in the request line: the HTTP server refuses it first; should one pass it on, it is named as such
    assert requested_name("한.xlsx".encode()) == (400, "퍼센트 인코딩되지 않은 경로 / path not percent-encoded")
    assert requested_name(b"%ed%95%9c.xlsx") == "한.xlsx"
    err = capsys.readouterr().err
    assert "Traceback" not in err, err


#: the page's request deadline in these tests: far longer than any of them runs, so it passes only when the test
#: moves the page's clock past it (`JumpingLoop.jump`), never by waiting on a loaded machine
DEADLINE_S = 600.0


def _open(s: socket.socket) -> bool:
    """The server has not closed `s` (nothing to read, no end of stream): a quick look, after `jump` has let the
    loop run what came due."""
    s.settimeout(0.2)
    try:
        return s.recv(1, socket.MSG_PEEK) != b""
    except TimeoutError:
        return True
    except ConnectionResetError:
        return False


def _read_until_closed(s: socket.socket) -> int:
    """Bytes received on `s` until the server closes it (end of stream or reset). A connection still open after
    10 s without a byte raises TimeoutError — a bound, not a verdict."""
    received = 0
    s.settimeout(10)
    with contextlib.suppress(ConnectionResetError):
        while chunk := s.recv(1 << 20):
            received += len(chunk)
    return received


def test_a_silent_client_is_cut_off_when_its_request_deadline_passes(reports, database):
    loop = JumpingLoop()
    with (
        serving(reports, database, request_deadline_s=DEADLINE_S, loop=loop) as (_, port),
        socket.create_connection(("127.0.0.1", port)) as s,
    ):
        loop.jump(DEADLINE_S - 1)
        assert _open(s)  # a second before its deadline: still waiting for the request
        loop.jump(2)
        assert _read_until_closed(s) == 0  # the server closed the connection, having said nothing


def test_sixteen_slow_clients_are_cut_off_at_the_deadline_and_block_no_download(reports, database):
    """Slowloris: each client sends a byte of its request headers every 0.2 s, forever. The page's clock moves on
    100 s at a time, and every client sends another byte after each step — never idle for long, so a timeout per
    receive would never end them. With a deadline per request each is cut off once 600 s have passed since it
    connected (and not before), and a normal download meanwhile is answered."""
    loop = JumpingLoop()
    head = b"GET /reports/" + quote(DAY).encode() + b" HTTP/1.1\r\nHost: x\r\nX-Slow: "
    sent = [0] * 16  # bytes each client has sent
    cut: list[int] = []  # the clients the server closed

    def trickle(i: int, port: int) -> None:
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.settimeout(0.2)
            while sent[i] < 600:  # a bound: the test's steps end it long before
                s.sendall(head[sent[i] : sent[i] + 1] or b"a")
                sent[i] += 1
                try:
                    closed = s.recv(1) == b""
                except TimeoutError:
                    continue
                except ConnectionResetError:
                    closed = True
                if closed:  # the server closed the connection
                    cut.append(i)
                    return

    def step(seconds: float) -> None:
        """The clock `seconds` on, then every client still connected sends at least one more byte."""
        before = list(sent)
        loop.jump(seconds)
        deadline = time.monotonic() + 30
        while any(sent[i] == before[i] and i not in cut for i in range(16)):
            assert time.monotonic() < deadline, "the clients stopped sending"
            time.sleep(0.05)

    with serving(reports, database, request_deadline_s=DEADLINE_S, loop=loop) as (base, port):
        clients = [threading.Thread(target=trickle, args=(i, port)) for i in range(16)]
        for c in clients:
            c.start()
        step(0)  # all sixteen connected and trickling
        r = httpx.get(f"{base}/reports/{quote(DAY)}", timeout=10)
        assert r.status_code == 200 and r.content == (reports / DAY).read_bytes()
        for _ in range(5):
            step(DEADLINE_S / 6)
        assert cut == []  # 500 s on: none cut before its deadline
        step(DEADLINE_S / 6 + 1)
        for c in clients:
            c.join(30)
    assert sorted(cut) == list(range(16)), cut


def test_a_download_nobody_reads_is_cut_off_at_its_deadline(reports, database):
    """A client that asks for a workbook and stops reading holds its connection for the request deadline plus
    the workbook's size at the minimum rate — here 600 s + 16 MiB at 1 MiB/s — not for as long as it likes, and
    not less: a client that reads again within that time gets the whole workbook."""
    big = "DMF_리포트_2026-10-02.xlsx"
    size = 16 * 1024 * 1024
    (reports / big).write_bytes(b"PK" + b"\x00" * (size - 2))
    request = b"GET /reports/" + quote(big).encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    loop = JumpingLoop()
    limits = {"request_deadline_s": DEADLINE_S, "min_download_rate": 1024 * 1024}

    def stalled_then_read(port: int, stalled_for: float) -> int:
        """Bytes of the answer received by a client that stops reading while the clock moves `stalled_for` on."""
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            s.sendall(request)
            assert _open(s)  # the answer has started: the buffers fill, and the client reads nothing
            loop.jump(stalled_for)
            return _read_until_closed(s)

    with serving(reports, database, loop=loop, **limits) as (_, port):
        header_and_body = stalled_then_read(port, DEADLINE_S + 1)  # past the request deadline, within the size's
        assert header_and_body > size  # delivered whole
        assert stalled_then_read(port, DEADLINE_S + 16 + 1) < size  # past 600 s + 16 s: cut off, not delivered late
        r = httpx.get(f"http://127.0.0.1:{port}/reports/{quote(DAY)}", timeout=10)
        assert r.status_code == 200  # the server itself is fine


def test_connections_are_bounded_with_503_beyond(reports, database):
    with serving(reports, database, max_connections=2, request_deadline_s=DEADLINE_S) as (base, port):
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]  # each holds a slot
        try:
            for s in idle:
                assert _open(s)  # accepted, and holding its slot
            # answered at once, not queued behind the idle clients: they hold their slots until their deadline
            # (600 s), far beyond this request's own 10 s timeout
            status, data = raw_get(port, b"/reports/" + quote(DAY).encode())
            assert status == 503 and b"Retry-After" in data
        finally:
            for s in idle:
                s.close()
        deadline = time.monotonic() + 10
        while (r := httpx.get(f"{base}/reports/{quote(DAY)}", timeout=10)).status_code == 503 and (
            time.monotonic() < deadline
        ):
            time.sleep(0.1)  # the slots free as the server notices the closed sockets
        assert r.status_code == 200


def test_busy_port_names_the_holder_and_the_option():
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
        with pytest.raises(UserError) as err:
            bind("127.0.0.1", port, what="dmf web --port {port}")
        message = str(err.value)
        assert f"포트 {port}" in message and f"127.0.0.1:{port}" in message
        assert f"PID {holder.pid}" in message and "python" in message
        assert f"dmf web --port {port + 1}" in message
    finally:
        holder.kill()
        holder.wait()


def test_refuses_to_serve_the_project_or_an_empty_folder():
    for bad in ("", "  ", PROJECT_ROOT, PROJECT_ROOT / "."):
        with pytest.raises(UserError, match="reports_dir"):
            check_reports_dir(bad)
    assert not is_report_name(".env") and is_report_name(DAY) and is_report_name(PERIOD)


def test_every_written_link_starts_with_the_configured_address_not_the_port_of_the_moment(tmp_path):
    """Dagster metadata, mail and webhook links come from [web] public_base_url through `links.link`: with it set,
    a different port changes no link; without it, the configured port on this machine."""
    from datetime import date

    from dmf_assets import links
    from dmf_assets.settings import load_settings

    config = tmp_path / "dmf.toml"
    config.write_text('[web]\nport = 8810\npublic_base_url = "https://intra.example.kr/dmf/"\n', encoding="utf-8")
    web = load_settings(config).web
    base = links.base_url(web)
    assert base == "https://intra.example.kr/dmf"
    assert links.day_link(base, date(2026, 11, 6)) == "https://intra.example.kr/dmf/day/2026-11-06"
    assert links.workbook_link(base, DAY) == f"https://intra.example.kr/dmf/reports/{quote(DAY)}"
    assert (
        links.link(base, "search", {"q": "㈜ 삼오"})
        == "https://intra.example.kr/dmf/search?q=%E3%88%9C%20%EC%82%BC%EC%98%A4"
    )
    config.write_text("[web]\nport = 8810\n", encoding="utf-8")
    assert links.base_url(load_settings(config).web) == "http://127.0.0.1:8810"
