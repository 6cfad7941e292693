"""Hostile sources over real rows, on loopback: every body the fetch cannot read, every shape it must not
trust and every claim that would make it work without end ends in a verdict — a failed page with its
cause, or a fetch stopped early with the reason — never a traceback and never an endless fetch."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import httpx
import pytest

from dmf_assets.domain.gates import gate_completeness
from dmf_assets.domain.snapshot import build_snapshot
from dmf_assets.emulator.app import AppResponse, EmulatorApp, StaticItemSource
from dmf_assets.emulator.client import mfds_client
from dmf_assets.emulator.server import EmulatorServer
from dmf_assets.emulator.transport import EmulatorTransport
from dmf_assets.orchestration import pipeline
from dmf_assets.source.dumps import DumpError, load_dump
from dmf_assets.source.envelope import Page
from dmf_assets.source.fetch import (
    MANIFEST_EVERY_PAGES,
    MAX_PAGE_BYTES,
    fetch_day,
    page_shape_problem,
    replay_archive,
)
from dmf_assets_tests.client_support import FAKE_KEY, FAKE_KEY_ENCODED, FAULT_DAY, fixture_rows, small_source
from dmf_assets_tests.hostile_sources import HostileApp, dripping_server, json_body, nodata, with_body
from dmf_assets_tests.project_support import dmf, temp_project

ISO = FAULT_DAY.isoformat()


def _config(base_url: str, raw_dir: Path, **kw):
    values = {
        "base_url": base_url,
        "service_key": FAKE_KEY_ENCODED,
        "num_of_rows": 50,
        "read_timeout_s": 2.0,
        "connect_timeout_s": 2.0,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "raw_dir": str(raw_dir),
    }
    values.update(kw)
    return mfds_client(**values)


def _fetch(app: EmulatorApp, tmp_path: Path, **cfg):
    with EmulatorServer(app=app, emit=lambda line: None) as server:
        return fetch_day(_config(server.base_url, tmp_path / "raw", **cfg), FAULT_DAY), server.port


def _hostile(rewrite, rows=None, key: str | None = FAKE_KEY) -> HostileApp:
    return HostileApp(StaticItemSource(fixture_rows() if rows is None else rows), service_key=key, rewrite=rewrite)


def test_a_gzip_label_on_a_plain_body_is_a_failed_page_with_its_cause_archived_as_received(tmp_path):
    plain: dict[int, bytes] = {}

    def mislabelled(page_no, answer):
        if page_no != 2:
            return answer
        plain[page_no] = answer.body
        return with_body(answer, answer.body, ("Content-Encoding", "gzip"))

    res, _ = _fetch(_hostile(mislabelled), tmp_path)
    assert res.status == "failed" and not res.transport_ok
    assert [p.status for p in res.pages] == ["ok", "failed", "ok", "ok"]
    page = res.pages[1]
    assert page.error_type == "malformed" and page.attempts == 3  # retried: a passing glitch may heal
    assert "Content-Encoding gzip" in page.error and "본문을 풀 수 없습니다" in page.error
    # archived as it arrived: the plain body, readable by a person
    assert gzip.decompress((Path(res.archive_dir) / page.file).read_bytes()) == plain[2]
    assert res.transport_errors[0].startswith("2쪽(page 2): malformed page: 본문을 풀 수 없습니다")
    # the verdict the gates read: gate 1 fails with the page and its cause
    facts = pipeline.facts_from_fetch(res)
    assert not facts.transport_ok and facts.pages_failed == 1


def _padded_past_the_limit(answer: AppResponse, extra: int) -> bytes:
    """The page's own JSON, valid, with whitespace after it up to `extra` bytes past the page size limit."""
    return answer.body + b" " * (MAX_PAGE_BYTES + extra - len(answer.body))


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
def test_a_body_past_the_page_size_limit_is_a_failed_page_read_no_further(encoding, tmp_path):
    """A page padded to over MAX_PAGE_BYTES (32 MB; a page of 1,000 rows is about 0.4 MB) — as sent, or as a few
    kilobytes of gzip that would decode to it — is not read or decoded further: a failed page that says so, never
    the memory of an endless stream or a compression bomb."""

    def huge(page_no, answer):
        if page_no != 2:
            return answer
        padded = _padded_past_the_limit(answer, 5_000_000)
        if encoding == "identity":
            return with_body(answer, padded)
        return with_body(answer, gzip.compress(padded, 1), ("Content-Encoding", "gzip"))

    res, _ = _fetch(_hostile(huge), tmp_path, max_attempts=1)  # asking again would send the same
    assert res.status == "failed" and [p.status for p in res.pages] == ["ok", "failed", "ok", "ok"]
    page = res.pages[1]
    said = "본문이 너무 큽니다 — 32 MB를 넘어" if encoding == "identity" else "압축을 풀면 32 MB를 넘어"
    assert page.error_type == "malformed" and said in page.error, page.error
    archived = gzip.decompress((Path(res.archive_dir) / page.file).read_bytes())
    assert len(archived) <= MAX_PAGE_BYTES  # what was read, no more
    assert not pipeline.facts_from_fetch(res).transport_ok  # gate 1 refuses the day, naming the page


def test_a_lone_surrogate_in_a_value_is_a_failed_page_never_a_unicode_error(tmp_path):
    def broken(page_no, answer):
        if page_no != 3:
            return answer
        return with_body(answer, answer.body.replace(b'"DMF_PERMIT_DATE":"', b'"DMF_PERMIT_DATE":"\\ud800', 1))

    res, _ = _fetch(_hostile(broken), tmp_path)
    assert res.status == "failed" and [p.status for p in res.pages] == ["ok", "ok", "failed", "ok"]
    assert "짝 없는 서로게이트(\\ud800)" in res.pages[2].error and res.pages[2].error_type == "malformed"
    fetched = pipeline.fetched(res, 0.0)  # raw_pages' value: the rows of the good pages, nothing unencodable
    assert fetched.items.height == 151 - 50 and not fetched.facts.transport_ok


def test_a_server_dripping_bytes_is_cut_off_at_the_request_deadline(tmp_path):
    """Each byte arrives well within the read timeout; the whole answer would take 30 s. The request as a whole
    (connect + every read) ends at connect_timeout_s + read_timeout_s."""
    body = json.dumps({"response": {"header": {"resultCode": "00"}, "body": {"totalCount": 0}}}).encode()
    body += b" " * (600 - len(body))
    with dripping_server(body, every_s=0.05) as base_url:
        cfg = _config(base_url, tmp_path / "raw", connect_timeout_s=0.3, read_timeout_s=0.5, max_attempts=1)
        res = fetch_day(cfg, FAULT_DAY)
    assert res.status == "failed" and res.requests == 1
    page = res.pages[0]
    assert page.error_type == "timeout" and "요청 전체가 0.8초 안에 끝나지 않았습니다" in page.error


def _claiming(total: int):
    def rewrite(page_no, answer):
        doc = json_body(answer)
        doc["response"]["body"].update(totalCount=total, items=[])
        return with_body(answer, json.dumps(doc).encode())

    return rewrite


def test_a_source_claiming_a_billion_rows_is_asked_once_not_paged_for_ever(tmp_path):
    app = _hostile(_claiming(1_000_000_000))
    res, _ = _fetch(app, tmp_path)
    assert res.status == "incomplete" and res.requests == 1 and len(app.requests) == 1
    assert "totalCount 1,000,000,000건은 50행씩 20,000,000쪽" in res.stopped and "하루 한도 300회" in res.stopped
    # gate 2 says why, in its sentence
    assert res.stopped in gate_completeness(pipeline.facts_from_fetch(res)).detail


def test_empty_pages_within_the_cap_stop_the_fetch_after_two(tmp_path):
    app = _hostile(_claiming(5_000))  # 100 pages of 50 promised, every one empty
    res, _ = _fetch(app, tmp_path)
    assert res.status == "incomplete" and res.requests == 3 and len(app.requests) == 3
    assert res.stopped.startswith("2–3쪽이 연달아 비어 있어 3쪽에서 멈췄습니다")


def test_the_daily_request_cap_counts_a_loopback_source_too(tmp_path):
    app = EmulatorApp(StaticItemSource(fixture_rows()), service_key=FAKE_KEY)  # 151 rows: 4 pages of 50
    res, port = _fetch(app, tmp_path, daily_request_cap=3)
    # the 3 pages after the first do not fit in what the cap leaves: stopped, not over the cap
    assert res.status == "incomplete" and res.requests == 1 and "하루 한도 3회" in res.stopped
    counts = json.loads((tmp_path / "raw" / "_requests" / f"{ISO}.json").read_text())
    assert counts["hosts"] == {f"127.0.0.1:{port}": 1}


def test_n_full_pages_then_nodata_is_a_complete_registry(tmp_path):
    rows = fixture_rows()[:100]  # exactly 2 full pages of 50: page 3 is asked (the last page was full)

    def ends(page_no, answer):
        return nodata(answer) if page_no > 2 else answer

    res, _port = _fetch(_hostile(ends, rows), tmp_path)
    assert res.status == "complete" and res.items == rows and res.total_count == 100
    assert [(p.page_no, p.status, p.rows) for p in res.pages] == [(1, "ok", 50), (2, "ok", 50), (3, "ok", 0)]
    manifest = json.loads((Path(res.archive_dir) / "manifest.json").read_text())
    assert [p["nodata"] for p in manifest["pages"]] == [False, False, True]
    # replayed (a server on this machine is asked again rather than replayed by `fetch_day`: only its answers say
    # which registry it is — `dmf rebuild` and `dmf diff` read the archive itself)
    again = replay_archive(tmp_path / "raw", FAULT_DAY)
    assert again.source == "archive" and again.status == "complete" and again.items == rows
    assert load_dump(res.archive_dir).rows == 100  # `dmf diff` reads the archive the same way


def test_the_running_manifest_is_written_once_per_batch_of_pages(tmp_path):
    """What a crash would find: the partial manifest, read at each request, lists the pages of the last whole
    batch — not one page more per request (a manifest rewritten per page grows as pages²)."""
    raw = tmp_path / "raw"
    partial = raw / f".{ISO}.partial" / "manifest.json"
    seen: list[int | None] = []

    class Watching(httpx.BaseTransport):
        def __init__(self, inner):
            self.inner = inner

        def handle_request(self, request):
            seen.append(len(json.loads(partial.read_text())["pages"]) if partial.exists() else None)
            return self.inner.handle_request(request)

    client = httpx.Client(transport=Watching(EmulatorTransport(EmulatorApp(small_source(5_400)))))
    res = fetch_day(_config("emulator://local", raw, num_of_rows=500), FAULT_DAY, http_client=client)
    assert res.status == "complete" and len(res.pages) == 11
    b = MANIFEST_EVERY_PAGES
    assert seen == [None] * b + [b] * b + [2 * b] * (11 - 2 * b)


def _page(items: list[dict], fmt: str = "json") -> Page:
    return Page(fmt, "00", "", 1, len(items), len(items), items, "list", True)


def test_a_page_of_real_rows_has_the_days_shape_and_nulls_are_not_missing_fields():
    rows = fixture_rows()
    assert page_shape_problem(_page(rows)) is None
    # JSON writes a null as null: still every field
    assert page_shape_problem(_page([{**rows[0], "DMF_PERMIT_NO": None}, *rows[1:]])) is None
    # XML leaves a null field's element out: a row without it is a null, not a missing field
    xml_rows = [{k: v for k, v in rows[0].items() if k != "DMF_PERMIT_NO"}, *rows[1:]]
    assert page_shape_problem(_page(xml_rows, "xml")) is None


def test_a_page_not_of_the_days_shape_names_the_fields():
    rows = fixture_rows()[:10]
    renamed = [{("MNFCTR_NM" if k == "MNFCTR_NAME" else k): v for k, v in r.items()} for r in rows]
    problem = page_shape_problem(_page(renamed))
    assert "빠진 항목: 제조소명 (10행 중 10행)" in problem and "처음 보는 항목: MNFCTR_NM (10행 중 10행)" in problem
    on_rows = [renamed[0], *rows[1:]]  # one row renamed: the page holds a field the API does not have
    assert "처음 보는 항목: MNFCTR_NM (10행 중 1행)" in page_shape_problem(_page(on_rows))
    # a JSON page that writes nulls as null and leaves a field out on some rows
    gone = [{**rows[0], "NOTICE_CODE": None}, {k: v for k, v in rows[1].items() if k != "BIZRNO"}, *rows[2:]]
    assert "빠진 항목: 사업자등록번호 (10행 중 1행)" in page_shape_problem(_page(gone))


@pytest.mark.slow
def test_dmf_run_rejects_a_day_whose_page_is_mislabelled_gzip_exit_3_no_traceback(tmp_path):
    """The probe's case end to end: `dmf run` against a loopback source whose page 2 says Content-Encoding: gzip
    over a plain body — the day is rejected by the transport gate (exit 3), its cause on one line, no traceback."""

    def mislabelled(page_no, answer):
        return with_body(answer, answer.body, ("Content-Encoding", "gzip")) if page_no == 2 else answer

    # the loopback source answers any key, as `dmf emulator serve` does (`dmf run` sends no real one to it)
    with EmulatorServer(app=_hostile(mislabelled, key=None), emit=lambda line: None) as server:
        source = f'[source]\nbase_url = "{server.base_url}"\nnum_of_rows = 50\nbackoff_base_s = 0.01\n'
        out = dmf(temp_project(tmp_path, source), "run", "--date", ISO)
    assert out.returncode == 3, out.stdout[-2000:] + out.stderr[-2000:]
    assert "거부 — 1번 전송" in out.stdout and "본문을 풀 수 없습니다" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr and "zlib.error" not in out.stdout + out.stderr
    archived = tmp_path / "data" / "raw" / ISO / "page-0002.json.gz"
    assert json.loads(gzip.decompress(archived.read_bytes()))["response"]["body"]["pageNo"] == 2


def test_a_row_served_twice_on_one_page_in_place_of_another_is_one_row_short(tmp_path):
    """Gate 2 counts the rows the snapshot keeps: a page serving one row twice (another never served) was
    'complete, 151/151' while the stored day held 150 — the lost row came back the next day as a false NEW."""
    rows = fixture_rows()

    def doubled(page_no, answer):
        if page_no != 2:
            return answer
        doc = json_body(answer)
        items = doc["response"]["body"]["items"]
        items[5] = dict(items[4])  # the 56th registration is never served: the 55th twice instead
        return with_body(answer, json.dumps(doc, ensure_ascii=False).encode())

    res, _ = _fetch(_hostile(doubled, rows), tmp_path)
    fetched = pipeline.fetched(res, 0.0)
    outcome = gate_completeness(fetched.facts)
    assert (res.rows_received, res.rows_after_dedup, res.total_count) == (151, 150, 151)
    assert outcome.passed is False and outcome.observed == "수신 150건 / totalCount 151건 (반복된 동일 행 1건 제외)"
    assert res.status == "incomplete" and build_snapshot(fetched.items).height == res.rows_after_dedup
    # `dmf diff` refuses the same archive as the day was refused (it counted the snapshot's rows already)
    with pytest.raises(DumpError, match="incomplete"):
        load_dump(Path(res.archive_dir))


def test_a_body_in_the_charset_its_answer_names_is_read_back_alike_from_the_archive(tmp_path):
    """The fetch read an EUC-KR body with the charset its Content-Type named, but the archive kept no Content-Type:
    the replay (`dmf rebuild`) and `dmf diff` read it as UTF-8 — 'recorded ok but unreadable', for ever."""
    rows = [r for r in fixture_rows() if all(_euc_kr_can_write(v) for v in r.values())]

    def euc_kr(page_no, answer):
        headers = tuple((k, v) for k, v in answer.headers if k.lower() != "content-type")
        body = answer.body.decode("utf-8").encode("euc-kr")
        return AppResponse(answer.status, (*headers, ("Content-Type", "application/json;charset=EUC-KR")), body)

    res, _ = _fetch(_hostile(euc_kr, rows), tmp_path)
    assert res.status == "complete" and res.rows_after_dedup == len(rows)
    assert {r["INGR_KOR_NAME"] for r in res.items} == {r["INGR_KOR_NAME"] for r in rows}
    again = replay_archive(tmp_path / "raw", FAULT_DAY)
    assert again.items == res.items
    dump = load_dump(Path(res.archive_dir))
    assert dump.frame["INGR_KOR_NAME"].to_list() == [r["INGR_KOR_NAME"] for r in res.items]


def _euc_kr_can_write(value: str | None) -> bool:
    try:
        (value or "").encode("euc-kr")
    except UnicodeEncodeError:
        return False
    return True
