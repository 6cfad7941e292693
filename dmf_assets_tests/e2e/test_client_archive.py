"""Client lifecycle: resume, replay, determinism, past dates, politeness for real, request cap, lock,
the Dagster resource and `dmf fetch`."""

from __future__ import annotations

import gzip
import itertools
import json
from datetime import datetime
from pathlib import Path

import dagster as dg
import httpx
import pytest

from dmf_assets.cli import main as dmf_main
from dmf_assets.clock import KST, frozen_at
from dmf_assets.emulator.app import EmulatorApp, StaticItemSource, seoul_today
from dmf_assets.emulator.client import EmulatorMfdsClient, mfds_client
from dmf_assets.emulator.server import EmulatorServer
from dmf_assets.emulator.transport import EmulatorTransport
from dmf_assets.source.archive import DayArchive
from dmf_assets.source.client import MfdsClient
from dmf_assets.source.errors import ArchiveCorrupt, FetchInProgress, PastDateUnavailable, RequestCapExceeded
from dmf_assets.source.fetch import fetch_day, replay_archive
from dmf_assets.source.politeness import fake_clock
from dmf_assets_tests.client_support import (
    FAKE_KEY,
    FAKE_KEY_ENCODED,
    FAULT_DAY,
    assert_archive_consistent,
    assert_key_absent,
    fixture_rows,
    small_source,
)

REAL_BASE = "https://apis.data.go.kr/1471000/MdcDmfInfoService01"


def _cfg(base_url: str, raw: Path, **kw) -> MfdsClient:
    values = {
        "base_url": base_url,
        "service_key": FAKE_KEY_ENCODED,
        "num_of_rows": 1000,
        "read_timeout_s": 5.0,  # the loopback server here never delays: a timeout would only be a loaded machine
        "connect_timeout_s": 5.0,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "raw_dir": str(raw),
    }
    values.update(kw)
    return mfds_client(**values)


def _items_json(items: list[dict]) -> bytes:
    return json.dumps(items, ensure_ascii=False, sort_keys=True).encode()


class _StopAfter(EmulatorApp):
    """Serves `limit` requests, then behaves like a server that went away (connections dropped)."""

    def __init__(self, *args, limit: int, **kw):
        super().__init__(*args, **kw)
        self.limit = limit
        self.server: EmulatorServer | None = None

    def handle(self, method, target, headers=None):
        answer = super().handle(method, target, headers)
        if len(self.requests) >= self.limit and self.server is not None:
            self.server.httpd.stopping = True  # the next request finds the server gone
        return answer


def test_resume_after_the_server_died_fetches_only_the_missing_pages(tmp_path, caplog):
    source = small_source(5_500)  # 6 pages
    raw = tmp_path / "raw"
    app = _StopAfter(source, service_key=FAKE_KEY, limit=3)
    server = EmulatorServer(app=app, emit=lambda line: None)
    app.server = server
    port = server.port
    with server:
        first = fetch_day(_cfg(server.base_url, raw, max_attempts=2), FAULT_DAY)
    assert first.status == "failed" and not first.transport_ok
    assert [p.status for p in first.pages] == ["ok", "ok", "ok", "failed", "failed"]
    assert any(e.startswith("aborted after 2 consecutive failed pages") for e in first.transport_errors)
    assert_archive_consistent(first.archive_dir)

    second_app = EmulatorApp(source, service_key=FAKE_KEY)
    with EmulatorServer(port=port, app=second_app, emit=lambda line: None):
        second = fetch_day(_cfg(f"http://127.0.0.1:{port}/1471000/MdcDmfInfoService01", raw), FAULT_DAY)
    assert sorted(r.page_no for r in second_app.requests) == [4, 5, 6]  # counted server-side
    assert second.status == "complete" and second.requests == 3
    assert [p.reused for p in second.pages] == [True, True, True, False, False, False]
    assert second.items == source.items(FAULT_DAY)
    man = assert_archive_consistent(second.archive_dir)
    assert man["resumed_from"] == FAULT_DAY.isoformat()
    assert not (raw / f".{FAULT_DAY}.partial").exists()
    assert_key_absent(tmp_path, caplog.text)


class _Interrupt(httpx.BaseTransport):
    """In-process emulator that dies (KeyboardInterrupt, like Ctrl-C) at request number `at`."""

    def __init__(self, inner: httpx.BaseTransport, at: int):
        self.inner, self.at, self.n = inner, at, 0

    def handle_request(self, request):
        self.n += 1
        if self.n == self.at:
            raise KeyboardInterrupt
        return self.inner.handle_request(request)


def test_interrupted_fetch_resumes_from_the_working_directory(tmp_path):
    source = small_source(4_200)  # 5 pages
    raw = tmp_path / "raw"
    cfg = _cfg("emulator://local", raw)
    with pytest.raises(KeyboardInterrupt):
        dying = _Interrupt(EmulatorTransport(EmulatorApp(source)), at=3)
        fetch_day(cfg, FAULT_DAY, http_client=httpx.Client(transport=dying))
    partial = json.loads((raw / f".{FAULT_DAY}.partial" / "manifest.json").read_text())
    assert partial["status"] == "running" and [p["page_no"] for p in partial["pages"]] == [1, 2]
    assert not (raw / FAULT_DAY.isoformat()).exists()  # nothing published while interrupted

    app = EmulatorApp(source)
    res = fetch_day(cfg, FAULT_DAY, http_client=httpx.Client(transport=EmulatorTransport(app)))
    assert sorted(r.page_no for r in app.requests) == [3, 4, 5]
    assert res.status == "complete" and res.items == source.items(FAULT_DAY)
    assert_archive_consistent(res.archive_dir)


def test_complete_day_replays_from_the_archive_without_http(tmp_path):
    source = small_source(2_500)
    app = EmulatorApp(source)
    client = httpx.Client(transport=EmulatorTransport(app))
    cfg = _cfg("emulator://local", tmp_path)
    first = fetch_day(cfg, FAULT_DAY, http_client=client)
    seen = len(app.requests)
    again = fetch_day(cfg, FAULT_DAY, http_client=client)
    assert len(app.requests) == seen == 3  # no request for the replay
    assert again.source == "archive" and again.requests == 0 and again.status == "complete"
    assert _items_json(again.items) == _items_json(first.items)
    assert (again.total_count, again.rows_received) == (first.total_count, first.rows_received)
    # --no-resume fetches again and replaces the archive
    fresh = fetch_day(cfg, FAULT_DAY, http_client=client, resume=False)
    assert fresh.source == "emulator" and len(app.requests) == 6


def test_a_failed_refetch_never_replaces_a_complete_archive(tmp_path):
    source = small_source(2_500)
    cfg = _cfg("emulator://local", tmp_path)
    good = fetch_day(cfg, FAULT_DAY, http_client=httpx.Client(transport=EmulatorTransport(EmulatorApp(source))))
    outage = EmulatorApp(source, faults={FAULT_DAY.isoformat(): "outage"})
    bad = fetch_day(cfg, FAULT_DAY, http_client=httpx.Client(transport=EmulatorTransport(outage)), resume=False)
    assert bad.status == "failed" and Path(bad.archive_dir).name == f".{FAULT_DAY}.partial"
    kept = json.loads((Path(good.archive_dir) / "manifest.json").read_text())
    assert kept["status"] == "complete"
    assert fetch_day(cfg, FAULT_DAY).items == good.items  # replay, no HTTP client needed


def test_two_fetches_of_the_same_emulator_date_are_byte_identical(tmp_path):
    """Full registry (RegistrySimulator when present) through the default in-process emulator."""
    a = fetch_day(mfds_client(raw_dir=str(tmp_path / "a"), num_of_rows=1000), "2026-06-15")
    b = fetch_day(mfds_client(raw_dir=str(tmp_path / "b"), num_of_rows=1000), "2026-06-15")
    assert a.status == b.status == "complete" and a.source == "emulator"
    assert 8_500 <= a.rows_after_dedup <= 10_500 and a.requests == -(-a.total_count // 1000)
    assert _items_json(a.items) == _items_json(b.items)
    pages_a = sorted((Path(a.archive_dir)).glob("page-*.gz"))
    assert [p.read_bytes() for p in pages_a] == [(Path(b.archive_dir) / p.name).read_bytes() for p in pages_a]
    assert _items_json(a.items) != _items_json(
        fetch_day(mfds_client(raw_dir=str(tmp_path / "c"), num_of_rows=1000), "2026-07-15").items
    )


class _NoNetwork(httpx.BaseTransport):
    def handle_request(self, request):  # pragma: no cover - must never be called
        raise AssertionError(f"unexpected request to {request.url.host}")


def test_past_date_against_the_real_api_is_refused_without_an_archive(tmp_path):
    cfg = _cfg(REAL_BASE, tmp_path)
    with pytest.raises(PastDateUnavailable) as exc:
        fetch_day(cfg, "2025-03-01", http_client=httpx.Client(transport=_NoNetwork()))
    msg = str(exc.value)
    assert (
        "등록 현황만 제공" in msg
        and "보관된 원본" in msg
        and "only the current registry" in msg
        and "2025-03-01" in msg
    )
    assert_key_absent(tmp_path, msg)
    # with its archive (fetched by the real API that morning), the past day is re-processed from it (no HTTP at all)
    with frozen_at(datetime(2025, 3, 1, 7, 0, tzinfo=KST)):
        then = fetch_day(cfg.with_service_key(FAKE_KEY), "2025-03-01", http_client=_fake_real_api(fixture_rows())[1])
    replay = fetch_day(cfg, "2025-03-01", http_client=httpx.Client(transport=_NoNetwork()), resume=False)
    assert replay.source == "archive" and replay.items == then.items and replay.source_id == "apis.data.go.kr"


def _fake_real_api(rows, **app_kw) -> tuple[EmulatorApp, httpx.Client]:
    """The emulator mounted under the real host name: the client applies real-host politeness."""
    app = EmulatorApp(StaticItemSource(rows), service_key=FAKE_KEY, **app_kw)
    return app, httpx.Client(mounts={"https://apis.data.go.kr": EmulatorTransport(app)})


def test_min_interval_and_cap_apply_to_the_real_host(tmp_path):
    rows = fixture_rows()  # 151 rows, 50 per page -> 4 pages
    app, client = _fake_real_api(rows)
    cfg = _cfg(REAL_BASE, tmp_path, num_of_rows=50, min_interval_s=0.3)
    with fake_clock() as clock:
        res = fetch_day(cfg, seoul_today(), http_client=client)
    assert res.status == "complete" and res.items == rows and res.source == "http"
    # the client spaces its request starts 0.3 s apart (the answers take no time on the fake clock): it waits the
    # whole interval before each request after the first, and the server sees them that far apart
    assert clock.sleeps == pytest.approx([0.3, 0.3, 0.3])
    starts = [r.at for r in app.requests]
    assert [b - a for a, b in itertools.pairwise(starts)] == pytest.approx([0.3, 0.3, 0.3])
    assert all(r.day == seoul_today().isoformat() for r in app.requests)  # no date header sent
    counts = json.loads((tmp_path / "_requests" / f"{seoul_today()}.json").read_text())
    assert counts["hosts"] == {"apis.data.go.kr": 4}

    # 4 pages do not fit in a cap of 2: the fetch stops after page 1 instead of spending the day's quota on a
    # list it cannot finish (the page cap), and says why
    capped = _cfg(REAL_BASE, tmp_path / "capped", num_of_rows=50, min_interval_s=0.0, daily_request_cap=2)
    stopped = fetch_day(capped, seoul_today(), http_client=_fake_real_api(rows)[1])
    assert stopped.status == "incomplete" and stopped.requests == 1 and [p.page_no for p in stopped.pages] == [1]
    assert "하루 한도 2회" in stopped.stopped and "4쪽" in stopped.stopped
    again = fetch_day(capped, seoul_today(), http_client=_fake_real_api(rows)[1], resume=False)
    assert again.status == "incomplete" and again.requests == 1  # the cap's second request
    # the cap used up: the next request is refused before it is sent
    with pytest.raises(RequestCapExceeded) as exc:
        fetch_day(capped, seoul_today(), http_client=_fake_real_api(rows)[1], resume=False)
    assert "2 of 2" in str(exc.value)
    man = json.loads((tmp_path / "capped" / seoul_today().isoformat() / "manifest.json").read_text())
    assert man["status"] == "failed" and man["pages"] == []
    assert any("daily request cap" in e for e in man["transport_errors"])


def test_lock_allows_one_fetch_per_day(tmp_path):
    with DayArchive(tmp_path, FAULT_DAY).locked(), pytest.raises(FetchInProgress):
        fetch_day(_cfg("emulator://local", tmp_path), FAULT_DAY)


def test_resource_hides_the_key_and_runs_in_dagster(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("DMF_TEST_MFDS_KEY", FAKE_KEY_ENCODED)
    # the resource names the variable; the key itself is read from the environment at run time only
    resource = EmulatorMfdsClient(service_key_env="DMF_TEST_MFDS_KEY", raw_dir=str(tmp_path), num_of_rows=1000)
    assert_key_absent(None, repr(resource), str(resource))
    seen: dict = {}

    @dg.asset
    def fetched(context, mfds: MfdsClient) -> None:
        assert_key_absent(None, repr(mfds))
        seen["result"] = mfds.fetch_day(
            "2026-03-02",
            log=context.log,
            http_client=httpx.Client(
                transport=EmulatorTransport(EmulatorApp(small_source(1_200), service_key=FAKE_KEY))
            ),
        )

    assert dg.materialize([fetched], resources={"mfds": resource}).success
    res = seen["result"]
    assert res.status == "complete" and res.rows_after_dedup == 1_200  # the key was accepted
    assert_key_absent(tmp_path, caplog.text, repr(res))


def test_dmf_fetch_command(tmp_path, capsys):
    raw = str(tmp_path)
    code = dmf_main(
        ["fetch", "--date", "2026-05-20", "--raw-dir", raw, "--num-of-rows", "1000", "--base-url", "emulator://local"]
    )
    out = capsys.readouterr().out
    assert code == 0 and "complete (완료)" in out and "transport 전송: OK" in out
    assert str(Path(raw) / "2026-05-20") in out
    total = json.loads((Path(raw) / "2026-05-20" / "manifest.json").read_text())["totals"]["total_count"]
    assert f"totalCount: {total}" in out

    code = dmf_main(
        [
            "fetch",
            "--date",
            "2026-05-21",
            "--raw-dir",
            raw,
            "--num-of-rows",
            "1000",
            "--base-url",
            "emulator://local",
            "--fault",
            "2026-05-21=page_missing_rows",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1 and "incomplete (불완전)" in out

    real_raw = str(tmp_path / "real")  # a folder of the real API's own: this one holds the emulator's days
    code = dmf_main(["fetch", "--date", "2025-02-03", "--raw-dir", real_raw, "--base-url", REAL_BASE])
    err = capsys.readouterr().err
    assert code == 2 and "only the current registry" in err and "Traceback" not in err

    code = dmf_main(["fetch", "--date", "2026-05-21", "--raw-dir", raw, "--fault", "2026-05-21=nonsense"])
    assert code == 2 and "unknown fault kind 'nonsense'" in capsys.readouterr().err

    # only the days `dmf run` takes: an archive of any other day could never be run, and `dmf rebuild` would replay it
    for outside in ("2999-12-31", "1900-01-01"):
        code = dmf_main(["fetch", "--date", outside, "--raw-dir", raw, "--base-url", "emulator://local"])
        assert code == 2 and "실행할 수 있는 날짜가 아닙니다" in capsys.readouterr().err
        assert not (Path(raw) / outside).exists()


def test_damaged_archive_is_fetched_again_or_refused(tmp_path, caplog):
    source = small_source(2_500)
    cfg = _cfg("emulator://local", tmp_path)
    client = httpx.Client(transport=EmulatorTransport(EmulatorApp(source)))
    good = fetch_day(cfg, "2025-03-03", http_client=client)
    page = Path(good.archive_dir) / "page-0002.json.gz"
    page.write_bytes(page.read_bytes()[:-40] + b"x" * 40)  # bit rot
    again = fetch_day(cfg, "2025-03-03", http_client=client)  # the emulator can serve it again
    assert again.source == "emulator" and again.items == good.items and "archive damaged" in caplog.text
    real = _cfg(REAL_BASE, tmp_path / "real").with_service_key(FAKE_KEY)
    with frozen_at(datetime(2025, 3, 3, 7, 0, tzinfo=KST)):  # that morning, the real API's own archive
        fetched = fetch_day(real, "2025-03-03", http_client=_fake_real_api(fixture_rows())[1])
    page = Path(fetched.archive_dir) / "page-0001.json.gz"
    page.write_bytes(page.read_bytes()[:-40] + b"x" * 40)
    with pytest.raises(ArchiveCorrupt):  # the real API cannot serve it again: refuse loudly, never a partial day
        fetch_day(real, "2025-03-03", http_client=httpx.Client(transport=_NoNetwork()))


def _lie(directory: Path, change) -> None:
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    change(directory, manifest)
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def _drop_last_page(directory: Path, manifest: dict) -> None:
    """The last page and its count taken out, the totals made to agree: a list one page short, 'complete'."""
    last = manifest["pages"].pop()
    (directory / last["file"]).unlink()
    rows = manifest["totals"]["rows_received"] - last["rows"]
    manifest["totals"].update(rows_received=rows, rows_after_dedup=rows, total_count=rows)


def _edit_a_page_unhashed(directory: Path, manifest: dict) -> None:
    """A page's body edited after the fetch and its hash removed, so nothing would compare it."""
    page = manifest["pages"][1]
    body = json.loads(gzip.decompress((directory / page["file"]).read_bytes()))
    body["response"]["body"]["items"][0]["MNFCTR_NAME"] = "EDITED AFTER THE FETCH Ltd."
    (directory / page["file"]).write_bytes(gzip.compress(json.dumps(body, ensure_ascii=False).encode()))
    page["sha256"] = None


@pytest.mark.parametrize(
    ("lie", "says"),
    [(_drop_last_page, "archived pages say totalCount 2500, manifest says 2000"), (_edit_a_page_unhashed, "no sha256")],
)
def test_a_manifest_the_archived_bodies_contradict_is_never_replayed(tmp_path, lie, says):
    """What the replay (`dmf rebuild`, a past day of the real API) trusts of the manifest is checked against the
    pages themselves: the counts gate 2 reads and every body's hash."""
    cfg = _cfg("emulator://local", tmp_path)
    good = fetch_day(
        cfg, FAULT_DAY, http_client=httpx.Client(transport=EmulatorTransport(EmulatorApp(small_source(2_500))))
    )
    assert good.status == "complete"
    _lie(Path(good.archive_dir), lie)
    with pytest.raises(ArchiveCorrupt, match=says):
        replay_archive(tmp_path, FAULT_DAY)
