"""The MFDS client against the emulator (real loopback HTTP and in-process): every fault kind, the
archive it leaves, and the service key never leaking."""

from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from dmf_assets.domain.model import API_FIELDS
from dmf_assets.emulator import faults as F
from dmf_assets.emulator.app import EmulatorApp
from dmf_assets.emulator.client import mfds_client
from dmf_assets.emulator.server import EmulatorServer
from dmf_assets.emulator.transport import EmulatorTransport
from dmf_assets.source.client import MfdsClient
from dmf_assets.source.fetch import fetch_day
from dmf_assets.source.politeness import fake_clock
from dmf_assets_tests.client_support import (
    FAKE_KEY,
    FAKE_KEY_ENCODED,
    FAULT_DAY,
    USING_SIMULATOR,
    assert_archive_consistent,
    assert_key_absent,
    small_source,
)

N_ROWS = 2_050  # 3 pages of 1000: a first, a middle and a short last page
PER_PAGE = 1_000
ISO = FAULT_DAY.isoformat()


def _config(base_url: str, raw_dir: Path, **kw) -> MfdsClient:
    values = {
        "base_url": base_url,
        "service_key": FAKE_KEY_ENCODED,
        "num_of_rows": PER_PAGE,
        "read_timeout_s": 0.5,
        "connect_timeout_s": 0.5,
        "backoff_base_s": 0.02,
        "backoff_max_s": 0.2,
        "raw_dir": str(raw_dir),
    }
    values.update(kw)
    return mfds_client(**values)


# Over loopback the server really waits and a loaded CI machine can take a few hundred milliseconds for a clean
# page, so the read timeout there is 4x the in-process one, and so are the delays that must beat or miss it.
LOOPBACK_TIMEOUT_S = 2.0


def _on_loopback_time(kind_spec: str) -> str:
    fault = F.parse_fault(kind_spec)
    return replace(fault, params=tuple((k, v * 4 if k == "delay_s" else v) for k, v in fault.params)).spec()


def _run(kind_spec: str | None, tmp_path: Path, caplog, via: str = "loopback", **cfg):
    """Serve the small registry with one fault on FAULT_DAY — over loopback HTTP or in-process —
    fetch it, and return everything the checks need. In process, the fetch and the emulator share a fake clock:
    delays, pauses, backoffs and Retry-After are exact (and cost no time); over loopback the server really waits,
    and the checks read no time from it."""
    source = small_source(N_ROWS)
    rows = source.items(FAULT_DAY)
    lines: list[str] = []
    if via == "loopback" and kind_spec:
        kind_spec = _on_loopback_time(kind_spec)
    app = EmulatorApp(source, service_key=FAKE_KEY, faults={ISO: kind_spec} if kind_spec else None)
    caplog.set_level(logging.DEBUG)
    if via == "loopback":
        with EmulatorServer(app=app, emit=lines.append) as server:
            slack = {"read_timeout_s": LOOPBACK_TIMEOUT_S, "connect_timeout_s": LOOPBACK_TIMEOUT_S, **cfg}
            result = fetch_day(_config(server.base_url, tmp_path / "raw", **slack), FAULT_DAY)
    else:
        client = httpx.Client(transport=EmulatorTransport(app))
        with fake_clock():
            result = fetch_day(_config("emulator://local", tmp_path / "raw", **cfg), FAULT_DAY, http_client=client)
    manifest = assert_archive_consistent(result.archive_dir)
    assert_key_absent(tmp_path, caplog.text, "\n".join(lines), repr(result), json.dumps(result.summary()))
    return result, manifest, list(app.requests), rows, lines


def _pages_of(records, status=None):
    return [r.page_no for r in records if status is None or r.status == status]


def _fault(kind: str) -> F.Fault:
    return F.parse_fault(kind)


def _on_fake_clock(res) -> bool:
    """The in-process runs (`_run`) are on the fake clock: their times are exact."""
    return res.source == "emulator"


# --- expected outcome per fault kind -------------------------------------------------------------


def check_http_5xx_burst(res, man, reqs, rows, kind):
    hit = F.affected_pages(_fault(kind), ISO, 3)
    assert res.status == "complete" and res.transport_ok
    assert res.items == rows
    assert res.retries == 2 * len(hit)
    bad = [(r.page_no, r.status) for r in reqs if r.status != 200]
    assert sorted(p for p, _ in bad) == sorted(list(hit) * 2)
    assert {s for _, s in bad} <= {500, 502, 503}
    for page in man["pages"]:
        statuses = [a["status"] for a in page["attempts"]]
        assert statuses[-1] == 200 and len(statuses) == (3 if page["page_no"] in hit else 1)
    assert man["politeness"]["slowdowns"] >= 2 * len(hit)  # non-200 answers slowed us down


def check_rate_limit_429(res, man, reqs, rows, kind):
    hit = F.affected_pages(_fault(kind), ISO, 3)
    assert res.status == "complete" and res.items == rows and res.retries == len(hit)
    for page_no in hit:
        first, second = [r for r in reqs if r.page_no == page_no]
        assert first.status == 429 and second.status == 200
        attempts = man["pages"][page_no - 1]["attempts"]
        assert attempts[0]["retry_after_s"] == 1.0 and attempts[1]["wait_s"] >= 1.0  # Retry-After: 1 honoured
        if _on_fake_clock(res):  # … and seen server-side: the second request came that much later
            assert second.at - first.at == pytest.approx(attempts[1]["wait_s"], abs=1e-3)


def check_slow_responses(res, man, reqs, rows, kind):
    assert res.status == "complete" and res.items == rows and res.retries == 0
    pol = man["politeness"]
    # every answer slower than half the read timeout counts as slow here: each slowed us down
    assert pol["slowdowns"] == len(man["pages"]) and pol["max_pause_s"] > 0
    if _on_fake_clock(res):
        assert all(a["elapsed_ms"] == 300 for p in man["pages"] for a in p["attempts"])
        # the adaptive pause is applied before the next request: each page waits the pause the answer before left
        pages = [p["attempts"] for p in man["pages"]]
        assert [a[0]["wait_s"] for a in pages[1:]] == [a[-1]["pause_after_s"] for a in pages[:-1]] == [0.1, 0.2]


def check_timeouts(res, man, reqs, rows, kind):
    hit = F.affected_pages(_fault(kind), ISO, 3)
    assert res.status == "complete" and res.items == rows and res.retries == len(hit)
    for page in man["pages"]:
        attempts = page["attempts"]
        if page["page_no"] in hit:
            assert attempts[0]["status"] is None and attempts[0]["error"] == "timeout: ReadTimeout"
            if _on_fake_clock(res):
                assert attempts[0]["elapsed_ms"] == 500  # gave up at the 0.5 s read timeout
            assert attempts[1]["status"] == 200
        else:
            assert len(attempts) == 1


def check_truncated_json(res, man, reqs, rows, kind):
    bad = F.middle_page(3)
    assert res.status == "failed" and not res.transport_ok
    assert _pages_of(reqs).count(bad) == 3  # retried up to max_attempts
    page = man["pages"][bad - 1]
    assert page["status"] == "failed" and page["error_type"] == "malformed"
    assert all("malformed page" in a["error"] for a in page["attempts"])
    assert page["file"] == f"page-{bad:04d}.json.gz"  # the truncated body is archived as received
    assert res.rows_received == len(rows) - PER_PAGE
    assert any(e.startswith(f"{bad}쪽(page {bad}): malformed page") for e in res.transport_errors)


def check_total_count_inflated(res, man, reqs, rows, kind):
    assert res.status == "incomplete" and res.transport_ok
    assert res.total_count == len(rows) + 150 and res.rows_after_dedup == len(rows)
    assert res.items == rows


def check_total_count_deflated(res, man, reqs, rows, kind):
    assert res.status == "incomplete" and res.transport_ok
    assert res.total_count == len(rows) - 150 and res.rows_after_dedup == len(rows)
    planned = math.ceil(res.total_count / PER_PAGE)
    assert planned == 2 and sorted(set(_pages_of(reqs))) == [1, 2, 3]  # kept going: page 2 was full
    assert res.items == rows


def check_page_missing_rows(res, man, reqs, rows, kind):
    assert res.status == "incomplete" and res.transport_ok
    assert res.total_count == len(rows) and res.rows_after_dedup == len(rows) - 20
    assert [p["rows"] for p in man["pages"]] == [PER_PAGE, PER_PAGE - 20, len(rows) - 2 * PER_PAGE]


def check_row_repeated(res, man, reqs, rows, kind):
    assert res.status == "complete" and res.transport_ok
    assert res.rows_received == len(rows) + 1 and res.duplicate_rows_dropped == 1
    assert res.items == rows  # de-duplicated, in order, nothing lost


def check_page_order_unstable(res, man, reqs, rows, kind):
    assert res.status == "incomplete" and res.transport_ok and res.total_count == len(rows)
    assert res.rows_received == len(rows)
    assert res.duplicate_rows_dropped > 0 and res.rows_after_dedup < len(rows)
    served = {json.dumps(r, sort_keys=True, ensure_ascii=False) for r in res.items}
    assert served < {json.dumps(r, sort_keys=True, ensure_ascii=False) for r in rows}


def check_empty_page(res, man, reqs, rows, kind):
    assert res.status == "incomplete" and res.transport_ok
    assert [p["rows"] for p in man["pages"]] == [PER_PAGE, 0, len(rows) - 2 * PER_PAGE]
    assert res.rows_after_dedup == len(rows) - PER_PAGE


def _check_gateway(res, man, reqs, auth_msg, code):
    assert res.status == "failed" and not res.transport_ok
    assert len(reqs) == 1 and res.requests == 1 and res.retries == 0  # never retried
    assert res.gateway_error == {"return_reason_code": code, "return_auth_msg": auth_msg, "err_msg": "SERVICE ERROR"}
    assert man["pages"][0]["file"] == "page-0001.xml.gz" and man["pages"][0]["error_type"] == "gateway"
    assert auth_msg in res.transport_errors[0]


def check_xml_key_error(res, man, reqs, rows, kind):
    _check_gateway(res, man, reqs, "SERVICE_KEY_IS_NOT_REGISTERED_ERROR", "30")


def check_xml_quota_error(res, man, reqs, rows, kind):
    _check_gateway(res, man, reqs, "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR", "22")


def _check_shape_failure(res, man, failed_pages, *, says):
    """The pages whose items lack the API's nine fields failed (every attempt), naming the fields; their rows
    never reach the items (a field gone would be read as a value gone)."""
    assert res.status == "failed" and not res.transport_ok
    assert [p.page_no for p in res.pages if p.status == "failed"] == failed_pages
    for page_no in failed_pages:
        page = man["pages"][page_no - 1]
        assert page["error_type"] == "shape" and len(page["attempts"]) == 3  # retried, like a malformed page
        assert all(word in page["error"] for word in says), page["error"]
        assert any(
            e.startswith(f"{page_no}쪽(page {page_no}): 응답 항목이 API의 9개 항목과 다릅니다")
            for e in res.transport_errors
        )
    assert all(set(r) == set(API_FIELDS) for r in res.items)


def check_schema_drift_renamed(res, man, reqs, rows, kind):
    _check_shape_failure(res, man, [1], says=("빠진 항목: 신청인 (1,000행 중 1,000행)", "처음 보는 항목: ENTP_NM"))
    assert res.requests == 3  # page 1 failed: the fetch stops there


def check_schema_drift_missing(res, man, reqs, rows, kind):
    _check_shape_failure(res, man, [1], says=("빠진 항목: 제조소명 (1,000행 중 1,000행)",))
    assert "처음 보는 항목" not in man["pages"][0]["error"]


def check_field_renamed_on_page(res, man, reqs, rows, kind):
    bad = F.middle_page(3)
    _check_shape_failure(
        res, man, [bad], says=("빠진 항목: 제조소명 (1,000행 중 1,000행)", "처음 보는 항목: MNFCTR_NM")
    )
    assert res.rows_after_dedup == len(rows) - PER_PAGE  # the other pages are whole


def check_field_missing_on_page(res, man, reqs, rows, kind):
    bad = F.middle_page(3)
    _check_shape_failure(res, man, [bad], says=("빠진 항목: 제조소 소재지 (1,000행 중 1,000행)",))


def check_field_renamed_on_rows(res, man, reqs, rows, kind):
    renamed, _ = F.served_sequence(_fault(kind), ISO, rows, PER_PAGE)
    hit = [i for i, r in enumerate(renamed) if "ENTP_NM" in r]
    assert len(hit) == 50
    first_page = hit[0] // PER_PAGE + 1
    on_page = sum(1 for i in hit if i // PER_PAGE + 1 == first_page)
    # the first page holding a renamed row fails; the fetch stops there when it is page 1
    failing = [first_page] if first_page == 1 else sorted({i // PER_PAGE + 1 for i in hit})
    _check_shape_failure(
        res, man, failing, says=(f"빠진 항목: 신청인 (1,000행 중 {on_page:,}행)", f"ENTP_NM (1,000행 중 {on_page:,}행)")
    )


def check_registry_shift(res, man, reqs, rows, kind):
    """The blind spot the withdrawal re-check closes: the fetch itself looks complete (rows = totalCount), yet it
    misses the row that moved up across the cursor and still holds the row deleted behind it."""
    after = int(_fault(kind).param("after_page"))
    shifted = F.shifted_registry(_fault(kind), ISO, rows, PER_PAGE)
    assert res.status == "complete" and res.rows_after_dedup == res.total_count == len(rows)
    skipped = rows[after * PER_PAGE]
    deleted = next(r for r in rows if r not in shifted)
    assert skipped in shifted and skipped not in res.items  # listed, never served
    assert deleted in res.items and shifted[-1] in res.items  # gone, served before; the appended one


def check_garbled_text(res, man, reqs, rows, kind):
    assert res.status == "complete" and res.rows_after_dedup == len(rows)
    garbled = sum(any("\ufffd" in (v or "") for v in r.values()) for r in res.items)
    assert 0.30 < garbled / len(rows) < 0.40
    assert not any("\ufffd" in (v or "") for r in rows for v in r.values())


def check_mass_disappearance(res, man, reqs, rows, kind):
    assert res.status == "complete" and res.total_count == res.rows_after_dedup
    gone = 1 - res.rows_after_dedup / len(rows)
    assert 0.3 <= gone <= 0.6
    original = {json.dumps(r, sort_keys=True, ensure_ascii=False) for r in rows}
    assert all(json.dumps(r, sort_keys=True, ensure_ascii=False) in original for r in res.items)


def check_outage(res, man, reqs, rows, kind):
    assert res.status == "failed" and not res.transport_ok and res.total_count is None
    assert [r.status for r in reqs] == [503, 503, 503] and res.requests == 3
    assert res.items == [] and "HTTP 503" in res.transport_errors[0]


def check_hostile_text(res, man, reqs, rows, kind):
    hostile = F.hostile_rows(ISO, rows)
    assert res.status == "complete" and res.transport_ok and len(hostile) == len(F.HOSTILE_PAYLOADS)
    # served verbatim (control characters, U+FFFD, RTL mark, 100 KB included), every other row untouched
    assert res.items == [{**r, **hostile[i]} if i in hostile else r for i, r in enumerate(rows)]
    assert any(r.get("MNFCTR_NAME") == F.HOSTILE_CONTROLS for r in res.items)


def check_dates_restyled(res, man, reqs, rows, kind):
    # every row served, each issue date in the official style and nothing else touched
    assert res.status == "complete" and res.transport_ok and len(res.items) == len(rows)
    assert res.items == [{**r, "DMF_PERMIT_DATE": F.official_style(r["DMF_PERMIT_DATE"])} for r in rows]
    dated = [r for r in rows if re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["DMF_PERMIT_DATE"] or "")]
    official = [r for r in res.items if re.fullmatch(r"\d{4}\. [1-9]\d?\. [1-9]\d?\.", r["DMF_PERMIT_DATE"] or "")]
    assert len(official) == len(dated) > 1_000


CASES = {
    "http_5xx_burst": ("http_5xx_burst", {}),
    "rate_limit_429": ("rate_limit_429", {}),
    "slow_responses": ("slow_responses:delay_s=0.3", {}),  # > half the 0.5 s read timeout = slow (x4 on loopback)
    "timeouts": ("timeouts:delay_s=1.0", {}),
    "truncated_json": ("truncated_json", {}),
    "total_count_inflated": ("total_count_inflated", {}),
    "total_count_deflated": ("total_count_deflated", {}),
    "page_missing_rows": ("page_missing_rows", {}),
    "row_repeated": ("row_repeated", {}),
    "page_order_unstable": ("page_order_unstable", {}),
    "empty_page": ("empty_page", {}),
    "xml_key_error": ("xml_key_error", {}),
    "xml_quota_error": ("xml_quota_error", {}),
    "schema_drift_renamed": ("schema_drift_renamed", {}),
    "schema_drift_missing": ("schema_drift_missing", {}),
    "field_renamed_on_page": ("field_renamed_on_page", {}),
    "field_missing_on_page": ("field_missing_on_page", {}),
    "field_renamed_on_rows": ("field_renamed_on_rows", {}),
    "registry_shift": ("registry_shift:after_page=1", {}),
    "garbled_text": ("garbled_text", {}),
    "mass_disappearance": ("mass_disappearance", {}),
    "outage": ("outage", {}),
    "hostile_text": ("hostile_text", {}),
    "dates_restyled": ("dates_restyled", {}),
}


def test_every_fault_kind_has_a_case():
    assert set(CASES) == set(F.FAULT_KINDS)


@pytest.mark.parametrize("via", ["loopback", "in_process"])
@pytest.mark.parametrize("kind", list(CASES))
def test_fault_outcome(kind, via, tmp_path, caplog):
    spec, cfg = CASES[kind]
    res, man, reqs, rows, _ = _run(spec, tmp_path, caplog, via, **cfg)
    assert man["status"] == res.status
    assert man["totals"]["rows_after_dedup"] == res.rows_after_dedup
    assert man["totals"]["requests"] == res.requests == len(reqs)
    assert Path(res.archive_dir).name == ISO
    if via == "loopback":
        assert res.source == "http" and "emulator" not in man
    else:
        assert res.source == "emulator" and man["emulator"]["fault"] is None  # fault lives in the app here
    globals()[f"check_{kind}"](res, man, reqs, rows, spec)


def test_clean_day_over_loopback(tmp_path, caplog):
    res, man, reqs, rows, lines = _run(None, tmp_path, caplog)
    assert res.status == "complete" and res.items == rows and res.total_count == len(rows)
    assert res.requests == 3 and res.retries == 0 and _pages_of(reqs) == [1, 2, 3]
    assert [p.rows for p in res.pages] == [1000, 1000, 50]
    assert man["request"]["params"] == {"pageNo": "<page>", "numOfRows": 1000, "type": "json"}
    assert man["request"]["headers"] == {"X-Emulator-Date": ISO}  # loopback = an emulator: dated
    assert len(lines) == 3 and all("serviceKey=***" in line for line in lines)
    print(f"\n[data source: {'RegistrySimulator' if USING_SIMULATOR else 'replicated fixture rows'}]")


def _page_lines(caplog) -> dict[int, str]:
    return {
        int(m.group(1)): r.getMessage()
        for r in caplog.records
        if (m := re.search(r" page (\d+): (?:ok|FAILED)", r.getMessage()))
    }


def test_clean_pages_are_logged_as_progress_and_retried_pages_always(tmp_path, caplog):
    """A fast clean fetch logs its first page as progress (the per-page table is in the materialization);
    a page that needed retries, or failed, always has its line — with the attempts it took."""
    _run(None, tmp_path / "clean", caplog, via="in_process")
    assert list(_page_lines(caplog)) == [1] and "1 attempt(s)" in _page_lines(caplog)[1]
    caplog.clear()
    hit = F.affected_pages(_fault("http_5xx_burst"), ISO, 3)
    _run("http_5xx_burst", tmp_path / "burst", caplog, via="in_process")
    lines = _page_lines(caplog)
    assert set(hit) <= set(lines) and all("3 attempt(s)" in lines[p] for p in hit), lines
    assert set(lines) <= {1, *hit}


def test_wrong_key_gets_the_gateway_xml_error_through_the_real_server(tmp_path, caplog):
    app = EmulatorApp(small_source(N_ROWS), service_key=FAKE_KEY)
    with EmulatorServer(app=app, emit=lambda line: None) as server:
        wrong = fetch_day(_config(server.base_url, tmp_path / "a", service_key="NotTheKey123"), FAULT_DAY)
        # the classic mistake: the portal's already-encoded key encoded once more by hand
        double = fetch_day(
            _config(server.base_url, tmp_path / "b", service_key=FAKE_KEY_ENCODED.replace("%", "%25")), FAULT_DAY
        )
        # the decoded ("Decoding") key and the encoded ("Encoding") key both work
        decoded = fetch_day(_config(server.base_url, tmp_path / "c", service_key=FAKE_KEY), FAULT_DAY)
        encoded = fetch_day(_config(server.base_url, tmp_path / "d"), FAULT_DAY)
    for res in (wrong, double):
        assert res.status == "failed" and res.requests == 1
        assert res.gateway_error["return_auth_msg"] == "SERVICE_KEY_IS_NOT_REGISTERED_ERROR"
        assert res.gateway_error["return_reason_code"] == "30"
    assert decoded.status == encoded.status == "complete"
    assert decoded.items == encoded.items
    assert_key_absent(tmp_path, caplog.text, repr(double), repr(decoded))


def test_restart_once_when_total_count_changes_between_pages(tmp_path):
    """A wrapper transport bumps totalCount on chosen requests; the client restarts once, then gives up."""

    class Bumping(httpx.BaseTransport):
        def __init__(self, inner, bump_on):
            self.inner, self.bump_on, self.n = inner, bump_on, 0

        def handle_request(self, request):
            self.n += 1
            resp = self.inner.handle_request(request)
            body = resp.read()
            if self.n in self.bump_on:
                doc = json.loads(body)
                doc["response"]["body"]["totalCount"] += 1
                body = json.dumps(doc, ensure_ascii=False).encode()
            return httpx.Response(resp.status_code, headers={"Content-Type": "application/json"}, content=body)

    source = small_source(N_ROWS)
    cfg = _config("emulator://local", tmp_path / "once")
    bumped = Bumping(EmulatorTransport(EmulatorApp(source)), bump_on={2})
    once = fetch_day(cfg, FAULT_DAY, http_client=httpx.Client(transport=bumped))
    assert once.status == "complete" and once.items == source.items(FAULT_DAY)
    assert once.requests == 2 + 3  # pages 1-2 of the first round, then a full second round
    man = json.loads((Path(once.archive_dir) / "manifest.json").read_text())
    assert man["round"] == 2 and man["restarts"][0]["total_counts"] == [N_ROWS, N_ROWS + 1]

    cfg = _config("emulator://local", tmp_path / "twice")
    bumped = Bumping(EmulatorTransport(EmulatorApp(source)), bump_on={2, 4})
    twice = fetch_day(cfg, FAULT_DAY, http_client=httpx.Client(transport=bumped))
    assert twice.status == "incomplete" and twice.total_count is None
    assert any(p.startswith("total_count_unstable") for p in twice.problems)
    assert twice.requests == 4


class _ResultCode(httpx.BaseTransport):
    """Answers resultCode `code` (normal envelope, HTTP 200) on the requests numbered in `on`."""

    def __init__(self, inner, code, on):
        self.inner, self.code, self.on, self.n = inner, code, on, 0

    def handle_request(self, request):
        self.n += 1
        if self.n in self.on:
            body = {"response": {"header": {"resultCode": self.code, "resultMsg": "SERVICETIMEOUT_ERROR"}}}
            return httpx.Response(200, json=body)
        return self.inner.handle_request(request)


@pytest.mark.parametrize(
    "code, on, status, requests",
    [
        ("05", {2}, "complete", 4),  # transient server error: retried once, then fine
        ("05", {2, 3}, "failed", 1 + 2 + 1),  # transient twice: only ONE retry; page 2 failed, page 3 fetched
        ("10", {2}, "failed", 1 + 1 + 1),  # INVALID_REQUEST_PARAMETER: not retried
        ("30", {2}, "failed", 2),  # key error in the normal envelope: fatal, the fetch stops
    ],
)
def test_non_00_result_codes_retry_policy(code, on, status, requests, tmp_path):
    source = small_source(N_ROWS)
    client = httpx.Client(transport=_ResultCode(EmulatorTransport(EmulatorApp(source)), code, on))
    res = fetch_day(_config("emulator://local", tmp_path), FAULT_DAY, http_client=client)
    assert res.status == status and res.requests == requests
    page2 = res.pages[1]
    assert page2.status == ("ok" if status == "complete" else "failed")
    if status == "failed":
        assert page2.error_type == "api_result" and f"resultCode {code}" in page2.error
