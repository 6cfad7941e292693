"""A server that echoes the request in its error page (issue 34): the service key never reaches a file, a log or
the output. The real-API path (the real client for the real host name, over loopback) with MFDS_SERVICE_KEY set
meets one echoing body kind a day — an HTML 500, a text 404, a JSON resultMsg (the key as \\u escapes), the
gateway's XML returnAuthMsg, a body cut short (the key encoded twice), an HTML 503 — and `dmf fetch` meets one
through a loopback base URL; then every file under data/, reports/ and dagster_home/ (gzip'd archives, SQLite,
DuckDB, parquet, workbooks) and the captured output are searched for every form of the key."""

from __future__ import annotations

import gzip
import logging
from datetime import timedelta
from urllib.parse import quote

import pytest

from dmf_assets.cli import main as dmf_main
from dmf_assets.clock import today_kst
from dmf_assets.runs import launch
from dmf_assets.source.endpoint import SERVICE_BASE_PATH
from dmf_assets_tests.client_support import fixture_rows
from dmf_assets_tests.graph_support import clocks_at, make_workspace, morning, runs_by_day
from dmf_assets_tests.real_api_support import ECHO_KINDS, EchoingApi, real_api_resources
from dmf_assets_tests.secret_search import hits, key_forms, leaks

pytestmark = pytest.mark.slow

KEY = "Ek7+ECHO/secret==Zq4Xw8Rt2Yu6Io0Pa3Sd5Fg7Hj9Kl1-TAIL9b2c5e7d"
TAIL = "TAIL9b2c5e7d"  # no URL-special character: survives every encoding
NEEDLES = key_forms(KEY, TAIL)


def test_an_echoing_server_leaves_the_key_in_no_file_log_or_output(tmp_path, monkeypatch, capfd, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MFDS_SERVICE_KEY", quote(KEY, safe=""))  # the portal's "Encoding" key, as users paste it
    ws = make_workspace(tmp_path)
    first = today_kst() - timedelta(days=len(ECHO_KINDS))
    days = [first + timedelta(days=i) for i in range(len(ECHO_KINDS) + 1)]
    with EchoingApi(fixture_rows(), service_key=KEY) as api:
        resources = real_api_resources(tmp_path, api.url)
        for day, kind in zip(days, (None, *ECHO_KINDS), strict=True):
            api.kind = kind  # the first day: the registry itself (the baseline)
            with clocks_at(morning(day)):
                launch.run_day(day, instance=ws.instance, resources=resources, run_config=launch.QUIET)
        api.kind = "text_404"  # a short text body: dmf fetch shows it
        cli_raw = tmp_path / "data" / "raw_cli"
        code = dmf_main(["fetch", "--base-url", api.url + SERVICE_BASE_PATH, "--raw-dir", str(cli_raw), "-v"])
        assert api.requests > 2 * len(ECHO_KINDS)

    runs = runs_by_day(ws)
    assert [runs[d]["status"] for d in days] == ["baseline"] + ["rejected"] * len(ECHO_KINDS)
    assert {runs[d]["rejected_gate"] for d in days[1:]} == {1}
    assert code == 1
    # every echoed page was archived (before parsing), with the key replaced where the server had put it
    for day in days[1:]:
        (page,) = (tmp_path / "data" / "raw" / day.isoformat()).glob("page-0001.*.gz")
        assert b"***" in gzip.decompress(page.read_bytes()), page

    out, err = capfd.readouterr()
    assert "HTTP 404: Not Found: " in out and "serviceKey=***" in out  # dmf fetch showed the echo, scrubbed
    for name, text in {"stdout": out, "stderr": err, "logs": caplog.text}.items():
        assert not hits(text, NEEDLES), name
    found, files, kinds = leaks(tmp_path, NEEDLES)
    assert not found, found
    assert files > 40 and {".gz", ".xlsx", ".duckdb", ".db", ".json"} <= kinds, kinds
