"""The emulator's HTTP behaviour (app, in-process transport, loopback server) and fault plans."""

from __future__ import annotations

import json
from datetime import date

import httpx
import pytest

from dmf_assets.cli import main as dmf_main
from dmf_assets.emulator import faults as F
from dmf_assets.emulator.app import SERVICE_PATH, EmulatorApp, StaticItemSource, seoul_today
from dmf_assets.emulator.server import EmulatorServer, serve_in_thread
from dmf_assets.emulator.transport import EmulatorTransport
from dmf_assets.source.politeness import fake_clock
from dmf_assets_tests.client_support import (
    FAKE_KEY,
    FAKE_KEY_ENCODED,
    FAULT_DAY,
    KEY_CORE,
    USING_SIMULATOR,
    assert_key_absent,
    fixture_rows,
    registry_source,
    small_source,
)

ISO = FAULT_DAY.isoformat()


def _client(app: EmulatorApp) -> httpx.Client:
    return httpx.Client(transport=EmulatorTransport(app), base_url="emulator://local")


def _get(client, **params):
    params.setdefault("serviceKey", FAKE_KEY)
    return client.get(SERVICE_PATH, params=params, headers={"X-Emulator-Date": ISO})


def test_json_envelope_paging_and_num_of_rows_cap():
    source = small_source(2_300)
    rows = source.items(FAULT_DAY)
    c = _client(EmulatorApp(source))
    r = _get(c, pageNo=2, numOfRows=1000, type="json")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    doc = r.json()
    assert list(doc) == ["response"] and list(doc["response"]) == ["header", "body"]
    assert doc["response"]["header"] == {"resultCode": "00", "resultMsg": "NORMAL SERVICE."}
    body = doc["response"]["body"]
    assert list(body) == ["pageNo", "totalCount", "numOfRows", "items"]
    assert (body["pageNo"], body["totalCount"], body["numOfRows"]) == (2, 2_300, 1000)
    assert body["items"] == rows[1000:2000]
    capped = _get(c, pageNo=1, numOfRows=5000, type="json").json()["response"]["body"]
    assert capped["numOfRows"] == 1000 and len(capped["items"]) == 1000  # the portal caps at 1000
    beyond = _get(c, pageNo=4, numOfRows=1000, type="json").json()["response"]["body"]
    assert beyond["items"] == [] and beyond["totalCount"] == 2_300
    default = _get(c, type="json").json()["response"]["body"]
    assert default["numOfRows"] == 10 and default["items"] == rows[:10]  # data.go.kr default page size


def test_items_styles_and_unwrapped_envelope():
    rows = fixture_rows()[:3]
    one = EmulatorApp(StaticItemSource(rows), items_style="item", wrap_response=False)
    c = _client(one)
    doc = _get(c, numOfRows=1, type="json").json()
    assert set(doc) == {"header", "body"} and doc["body"]["items"] == {"item": rows[0]}
    assert _get(c, numOfRows=2, type="json").json()["body"]["items"] == {"item": rows[:2]}
    assert _get(c, numOfRows=2, pageNo=5, type="json").json()["body"]["items"] == ""
    absent = _client(EmulatorApp(StaticItemSource(rows), items_style="item_absent"))
    assert "items" not in _get(absent, numOfRows=2, pageNo=5, type="json").json()["response"]["body"]
    with pytest.raises(ValueError, match="items_style"):
        EmulatorApp(StaticItemSource(rows), items_style="weird")


def test_xml_when_type_is_absent_or_xml():
    c = _client(EmulatorApp(StaticItemSource(fixture_rows())))
    for params in ({}, {"type": "xml"}):
        r = _get(c, numOfRows=2, **params)
        assert r.headers["content-type"].startswith("text/xml")
        assert r.text.startswith("<?xml") and "<totalCount>151</totalCount>" in r.text
        assert r.text.count("<item>") == 2


def test_result_codes_for_bad_page_and_no_data():
    c = _client(EmulatorApp(StaticItemSource(fixture_rows())))
    bad = _get(c, pageNo=0, type="json").json()["response"]["header"]
    assert bad == {"resultCode": "10", "resultMsg": "INVALID_REQUEST_PARAMETER_ERROR"}
    assert _get(c, pageNo="x", type="json").json()["response"]["header"]["resultCode"] == "10"
    none = _get(c, entp_name="존재하지않는회사", type="json").json()["response"]
    assert none["header"]["resultCode"] == "03" and "body" not in none


def test_substring_filters():
    rows = fixture_rows()
    c = _client(EmulatorApp(StaticItemSource(rows)))
    some = next(r["INGR_KOR_NAME"] for r in rows if r["INGR_KOR_NAME"])
    body = _get(c, ingr_kor_name=some, numOfRows=1000, type="json").json()["response"]["body"]
    assert body["items"] == [r for r in rows if some in (r["INGR_KOR_NAME"] or "")]
    body = _get(c, entp_name="하이플", numOfRows=1000, type="json").json()["response"]["body"]
    assert body["totalCount"] == sum("하이플" in (r["ENTP_NAME"] or "") for r in rows) > 0


@pytest.mark.skipif(not USING_SIMULATOR, reason="needs the date-dependent RegistrySimulator")
def test_served_date_header_then_server_date_then_today():
    sim = registry_source()
    app = EmulatorApp(sim, default_date="2025-06-02")
    c = _client(app)

    def total(headers):
        r = c.get(SERVICE_PATH, params={"serviceKey": "k", "type": "json", "numOfRows": 1}, headers=headers)
        return r.json()["response"]["body"]["totalCount"]

    assert total({"X-Emulator-Date": "2027-03-02"}) == len(sim.items(date(2027, 3, 2)))
    assert total({}) == len(sim.items(date(2025, 6, 2)))
    assert total({}) != len(sim.items(date(2027, 3, 2)))
    today_app = _client(EmulatorApp(sim))
    r = today_app.get(SERVICE_PATH, params={"serviceKey": "k", "type": "json", "numOfRows": 1})
    assert r.json()["response"]["body"]["totalCount"] == len(sim.items(seoul_today()))
    out_of_range = c.get(SERVICE_PATH, params={"serviceKey": "k"}, headers={"X-Emulator-Date": "2031-01-01"})
    assert out_of_range.status_code == 400 and "emulator" in out_of_range.text
    assert c.get(SERVICE_PATH, params={"serviceKey": "k"}, headers={"X-Emulator-Date": "soon"}).status_code == 400


def test_service_key_rules_and_no_echo():
    app = EmulatorApp(StaticItemSource(fixture_rows()), service_key=FAKE_KEY_ENCODED)  # given encoded: decoded once
    c = _client(app)
    ok = _get(c, type="json")
    assert ok.json()["response"]["header"]["resultCode"] == "00"
    # raw query strings: once-encoded must match; double-encoded and raw '+' (-> space) must not
    once = f"{SERVICE_PATH}?serviceKey={FAKE_KEY_ENCODED}&type=json"
    double = f"{SERVICE_PATH}?serviceKey={FAKE_KEY_ENCODED.replace('%', '%25')}&type=json"
    raw_plus = f"{SERVICE_PATH}?serviceKey={FAKE_KEY}&type=json"
    missing = f"{SERVICE_PATH}?type=json"
    assert app.handle("GET", once, {"X-Emulator-Date": ISO}).status == 200
    assert b"resultCode" in app.handle("GET", once, {"X-Emulator-Date": ISO}).body
    for target in (double, raw_plus, missing, f"{SERVICE_PATH}?serviceKey=wrong&type=json"):
        answer = app.handle("GET", target, {"X-Emulator-Date": ISO})
        assert answer.status == 200 and b"SERVICE_KEY_IS_NOT_REGISTERED_ERROR" in answer.body
        assert b"<returnReasonCode>30</returnReasonCode>" in answer.body
        assert_key_absent(None, answer.body.decode(), answer.log_line, str(answer.headers))
    any_key = _client(EmulatorApp(StaticItemSource(fixture_rows())))
    assert _get(any_key, serviceKey="whatever", type="json").json()["response"]["header"]["resultCode"] == "00"
    assert b"SERVICE_KEY_IS_NOT_REGISTERED_ERROR" in _get(any_key, serviceKey="").content


def test_loopback_server_behaves_like_the_transport_and_logs_without_the_key():
    lines: list[str] = []
    source = small_source(1_500)
    kwargs = {"service_key": FAKE_KEY, "faults": {ISO: "rate_limit_429"}}
    with EmulatorServer(app=EmulatorApp(source, **kwargs), emit=lines.append) as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/1471000/MdcDmfInfoService01"
        with httpx.Client() as http:
            url = server.base_url + "/getMdcDmfList01"
            params = {"serviceKey": FAKE_KEY, "numOfRows": 1000, "type": "json"}
            over_http = [
                http.get(url, params={**params, "pageNo": p}, headers={"X-Emulator-Date": ISO}) for p in (1, 2, 1, 2)
            ]
            wrong = http.get(url, params={**params, "serviceKey": "nope"}, headers={"X-Emulator-Date": ISO})
            assert http.get(server.base_url + "/other", params=params).status_code == 404
    c = _client(EmulatorApp(source, **kwargs))
    in_process = [_get(c, pageNo=p, numOfRows=1000, type="json") for p in (1, 2, 1, 2)]
    assert [(r.status_code, r.headers.get("retry-after"), r.content) for r in over_http] == [
        (r.status_code, r.headers.get("retry-after"), r.content) for r in in_process
    ]
    assert sorted(r.status_code for r in over_http) == [200, 200, 200, 429]  # one page hit, first attempt
    assert b"SERVICE_KEY_IS_NOT_REGISTERED_ERROR" in wrong.content
    assert len(lines) == 6 and all("serviceKey=***" in line for line in lines[:5])
    assert_key_absent(None, "\n".join(lines), *(r.text for r in over_http), str(dict(wrong.headers)))


def test_serve_in_thread_yields_a_working_base_url():
    with serve_in_thread(item_source=StaticItemSource(fixture_rows())) as base_url:
        r = httpx.get(base_url + "/getMdcDmfList01", params={"serviceKey": "k", "type": "json", "numOfRows": 5})
        assert r.json()["response"]["body"]["totalCount"] == 151
    with pytest.raises(httpx.ConnectError):
        httpx.get(base_url + "/getMdcDmfList01", timeout=0.5)


def test_transport_delay_sleeps_and_times_out_like_a_server():
    app = EmulatorApp(StaticItemSource(fixture_rows()), faults={ISO: "slow_responses:delay_s=0.3"})
    c = _client(app)
    with fake_clock() as clock:
        assert _get(c, type="json").status_code == 200
        assert clock.sleeps == [0.3]  # answered after its delay
        with pytest.raises(httpx.ReadTimeout):
            c.get(
                SERVICE_PATH,
                params={"serviceKey": "k"},
                headers={"X-Emulator-Date": ISO},
                timeout=httpx.Timeout(5, read=0.1),
            )
        assert clock.sleeps == [0.3, 0.1]  # gave up at the read timeout, not after the delay


# --- fault plans ---------------------------------------------------------------------------------


def test_fault_plan_from_config_and_cli():
    plan = F.FaultPlan.parse({"2026-11-18": "page_missing_rows", "2026-11-19": "timeouts:delay_s=0.5,share=1"})
    assert plan.for_day(date(2026, 11, 18)) == F.Fault("page_missing_rows")
    t = plan.for_day("2026-11-19")
    assert (t.param("delay_s"), t.param("share")) == (0.5, 1.0) and plan.for_day("2026-11-20") is None
    cli = F.FaultPlan.from_cli(["2026-11-19=outage", "2026-12-01=row_repeated"])
    merged = plan.merged(cli)
    assert merged.to_config() == {
        "2026-11-18": "page_missing_rows",
        "2026-11-19": "outage",
        "2026-12-01": "row_repeated",
    }
    assert F.FaultPlan.parse(merged.to_config()) == merged
    for bad, match in (
        (["2026-11-18=meltdown"], "unknown fault kind"),
        (["2026-11-18"], "YYYY-MM-DD=KIND"),
        (["2026-02-30=outage"], "day is out of range|must be in"),
        (["2026-11-18=outage:delay_s=1"], "bad parameter"),
        (["2026-11-18=timeouts:delay_s=abc"], "not a number"),
    ):
        with pytest.raises(ValueError, match=match):
            F.FaultPlan.from_cli(bad)


def test_settings_faults_are_parseable():
    from dmf_assets.settings import settings

    F.FaultPlan.parse(settings().emulator.faults)  # the shipped config must always load
    assert F.FaultPlan.parse(settings().emulator.faults).to_config() == dict(sorted(settings().emulator.faults.items()))


DELAY_ONLY = {"slow_responses": "slow_responses:delay_s=0.01", "timeouts": "timeouts:delay_s=0.01"}


@pytest.mark.parametrize("kind", sorted(F.FAULT_KINDS))
def test_faults_are_reproducible_and_only_hit_their_date(kind):
    source = small_source(2_050)
    spec = {**DELAY_ONLY, "registry_shift": "registry_shift:after_page=1"}.get(kind, kind)  # 3 pages here

    def answers(app, pages=(1, 2, 3, 2)):
        c = _client(app)
        return [
            (r.status_code, r.headers.get("retry-after"), r.content)
            for r in (_get(c, pageNo=p, numOfRows=1000, type="json") for p in pages)
        ]

    faulty = answers(EmulatorApp(source, faults={ISO: spec, "2026-11-19": spec}))
    assert faulty == answers(EmulatorApp(source, faults={ISO: spec}))  # same date + kind = same fault
    clean = answers(EmulatorApp(source))
    if kind in DELAY_ONLY:
        assert faulty == clean  # delays change timing, never content
    else:
        assert faulty != clean
    assert answers(EmulatorApp(source, faults={"2026-11-20": spec})) == clean  # other dates untouched


def test_fault_helpers():
    assert [F.middle_page(n) for n in (1, 2, 3, 4, 19)] == [1, 1, 2, 2, 10]
    f = F.parse_fault("http_5xx_burst")
    pages = F.affected_pages(f, ISO, 19)
    assert len(pages) == round(19 * 0.3) and pages == F.affected_pages(f, ISO, 19)
    assert pages != F.affected_pages(f, "2026-11-19", 19)
    assert F.affected_pages(f, ISO, 1) == {1}


def test_dmf_emulator_faults_lists_every_kind(capsys):
    assert dmf_main(["emulator", "faults"]) == 0
    out = capsys.readouterr().out
    for kind in F.FAULT_KINDS.values():
        assert kind.name in out and kind.ko in out and kind.en in out
    assert dmf_main(["emulator", "faults", "--json"]) == 0
    assert [k["kind"] for k in json.loads(capsys.readouterr().out)] == list(F.FAULT_KINDS)


@pytest.mark.skipif(not USING_SIMULATOR, reason="needs RegistrySimulator.truth")
def test_dmf_emulator_truth(capsys):
    assert dmf_main(["emulator", "truth", "--old", "2026-03-02", "--new", "2026-03-09", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    truth = registry_source().truth("2026-03-02", "2026-03-09")
    assert len(doc["changes"]) == len(truth.changes) > 0
    assert dmf_main(["emulator", "truth", "--old", "2026-03-02", "--new", "2026-03-09"]) == 0
    assert "ground truth 2026-03-02 → 2026-03-09" in capsys.readouterr().out
    assert dmf_main(["emulator", "truth", "--old", "2031-01-01", "--new", "2031-01-02"]) == 2
    assert KEY_CORE not in capsys.readouterr().err


def test_dmf_emulator_serve_command_serves_and_logs_without_the_key():
    """The real command in a subprocess: prints its base URL, answers, one redacted log line per request."""
    import subprocess
    import sys

    from dmf_assets.settings import PROJECT_ROOT as root

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dmf_assets",
            "emulator",
            "serve",
            "--port",
            "0",
            "--date",
            ISO,
            "--service-key",
            FAKE_KEY_ENCODED,
            "--fault",
            f"{ISO}=total_count_inflated:delta=7",
        ],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/1471000/MdcDmfInfoService01")
        url = base_url + "/getMdcDmfList01"
        params = {"serviceKey": FAKE_KEY, "type": "json", "numOfRows": 1000}
        first = httpx.get(url, params=params, timeout=30).json()["response"]["body"]
        total = first["totalCount"]
        served = len(first["items"]) + sum(
            len(httpx.get(url, params={**params, "pageNo": p}, timeout=30).json()["response"]["body"]["items"])
            for p in range(2, total // 1000 + 2)
        )
        assert total == served + 7  # the --fault applies to --date, served when no date header is sent
        dated = httpx.get(url, params=params, headers={"X-Emulator-Date": ISO}, timeout=30)
        assert dated.json()["response"]["body"]["totalCount"] == total
        wrong = httpx.get(url, params={"serviceKey": "nope"}, timeout=30)
        assert b"SERVICE_KEY_IS_NOT_REGISTERED_ERROR" in wrong.content
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    request_lines = [line for line in err.splitlines() if line.startswith("GET ")]
    assert len(request_lines) == total // 1000 + 3 and all("serviceKey=***" in line for line in request_lines)
    assert_key_absent(None, err, base_url)
