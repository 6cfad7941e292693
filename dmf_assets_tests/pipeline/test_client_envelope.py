"""Pure parts of the source package: envelope shapes, retry/politeness policy, endpoints, redaction."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from dmf_assets.emulator.app import KEY_ERROR_XML, QUOTA_ERROR_XML, EmulatorApp, StaticItemSource
from dmf_assets.source.endpoint import resolve_endpoint
from dmf_assets.source.envelope import parse_page
from dmf_assets.source.errors import ApiResultError, GatewayError, MalformedPage
from dmf_assets.source.politeness import Politeness, backoff_s, parse_retry_after
from dmf_assets.source.service_key import Redactor, decode_service_key
from dmf_assets_tests.client_support import FAKE_KEY, FAKE_KEY_ENCODED, KEY_CORE, fixture_rows

ROWS = fixture_rows()[:3]


def _env(items, *, wrapped=True, total=3):
    doc = {
        "header": {"resultCode": "00", "resultMsg": "NORMAL SERVICE."},
        "body": {"pageNo": 1, "totalCount": total, "numOfRows": 10},
    }
    if items is not _ABSENT:
        doc["body"]["items"] = items
    return json.dumps({"response": doc} if wrapped else doc, ensure_ascii=False).encode()


_ABSENT = object()


@pytest.mark.parametrize(
    "items, shape, expected",
    [
        (ROWS, "list", ROWS),
        ({"item": ROWS}, "item_list", ROWS),
        ({"item": ROWS[0]}, "item_object", ROWS[:1]),
        ("", "empty", []),
        (_ABSENT, "empty", []),
        (None, "empty", []),
        ({"item": ""}, "empty", []),
    ],
)
@pytest.mark.parametrize("wrapped", [True, False])
def test_json_items_shapes_with_and_without_response_wrapper(items, shape, expected, wrapped):
    page = parse_page(_env(items, wrapped=wrapped), "application/json;charset=UTF-8")
    assert (page.items, page.items_shape, page.wrapped) == (expected, shape, wrapped)
    assert (page.total_count, page.page_no, page.num_of_rows, page.result_code) == (3, 1, 10, "00")


def test_total_count_as_string_and_scalar_values_become_text():
    doc = json.loads(_env([{"DMF_PERMIT_NO": 123, "BIZRNO": None}]))
    doc["response"]["body"]["totalCount"] = "9203"
    page = parse_page(json.dumps(doc).encode(), None)
    assert page.total_count == 9203 and page.items == [{"DMF_PERMIT_NO": "123", "BIZRNO": None}]


@pytest.mark.parametrize(
    "odd",
    [True, False, 12.0, 1338124994, {"a": [1, "b"]}, [1, "a"], None, "", "\ud800x", "\U0001f600"],
    ids=["true", "false", "float", "int", "object", "list", "null", "empty", "lone surrogate", "emoji"],
)
def test_the_columnar_reader_gives_parse_pages_values(odd):
    """`dmf diff` reads archived pages with `parse_page_frame`; the live fetch and `dmf rebuild` with
    `parse_page`. A value the API should not send (a boolean on a page of text, a number, a nested object) must
    come out the same both ways, or one registration would look changed between them. A lone surrogate cannot be
    held by polars: it becomes U+FFFD, as the normalizer writes it from `parse_page`'s text."""
    from dmf_assets.domain.normalize import items_to_frame
    from dmf_assets.source.envelope import parse_page_frame

    rows = [dict(r) for r in ROWS]
    rows[1]["BIZRNO"] = odd
    body = json.dumps(
        {
            "response": {
                "header": {"resultCode": "00", "resultMsg": "NORMAL SERVICE."},
                "body": {"pageNo": 1, "totalCount": 3, "numOfRows": 10, "items": rows},
            }
        },
        ensure_ascii=True,
    ).encode()
    items = parse_page(body).items
    page, frame = parse_page_frame(body)
    assert (page.items, page.total_count) == ([], 3)
    assert frame.columns == list(items[0])
    visible = [{k: v if not isinstance(v, str) else v.replace("\ud800", "\ufffd") for k, v in i.items()} for i in items]
    assert frame.to_dicts() == visible
    assert items_to_frame(frame.to_dicts()).equals(items_to_frame(items))


def test_xml_success_body_from_the_emulator_matches_json():
    rows = [dict(r) for r in fixture_rows()]
    rows[0]["MNFCTR_PLACE"] = "line one\r\nline <two> & 'three'"
    app = EmulatorApp(StaticItemSource(rows))
    target = "/1471000/MdcDmfInfoService01/getMdcDmfList01?serviceKey=k&pageNo=1&numOfRows=1000"
    xml = parse_page(app.handle("GET", target).body, "text/xml")
    js = parse_page(app.handle("GET", target + "&type=json").body, "application/json")
    assert xml.fmt == "xml" and js.fmt == "json" and xml.total_count == js.total_count == len(rows)
    # XML has no null: absent elements are the null fields
    assert xml.items == [{k: v for k, v in r.items() if v is not None} for r in js.items]
    assert xml.items[0]["MNFCTR_PLACE"] == "line one\r\nline <two> & 'three'"


@pytest.mark.parametrize(
    ("field", "says"),
    [
        ("<MNFCTR_PLACE>Plot 7, Genome Valley<br/>Hyderabad, India</MNFCTR_PLACE>", "holds markup"),
        ("<MNFCTR_NAME>Hetero Labs</MNFCTR_NAME><MNFCTR_NAME>Hetero Drugs</MNFCTR_NAME>", "is given twice"),
    ],
)
def test_an_xml_value_it_cannot_read_whole_is_a_malformed_page(field, says):
    """Read with `.text`, a value with markup kept only what came before it and a repeated field kept the last:
    a CRITICAL address or manufacturer change reported for data that did not change."""
    xml = (
        "<response><header><resultCode>00</resultCode><resultMsg>NORMAL SERVICE.</resultMsg></header><body>"
        f"<items><item><DMF_PERMIT_NO>20110531-71-B-317-05</DMF_PERMIT_NO>{field}</item></items>"
        "<numOfRows>10</numOfRows><pageNo>1</pageNo><totalCount>1</totalCount></body></response>"
    ).encode()
    with pytest.raises(MalformedPage, match=says):
        parse_page(xml, "text/xml")


@pytest.mark.parametrize(
    "body, auth, code",
    [
        (KEY_ERROR_XML, "SERVICE_KEY_IS_NOT_REGISTERED_ERROR", "30"),
        (QUOTA_ERROR_XML, "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR", "22"),
    ],
)
def test_gateway_xml_errors_are_typed(body, auth, code):
    with pytest.raises(GatewayError) as exc:
        parse_page(body, "application/json")  # XML even though JSON was asked for
    assert (exc.value.return_auth_msg, exc.value.return_reason_code, exc.value.err_msg) == (auth, code, "SERVICE ERROR")
    assert exc.value.is_key_error == (code == "30") and exc.value.is_quota_error == (code == "22")


def test_non_00_result_codes():
    for code, transient in (("03", False), ("10", False), ("01", True), ("05", True)):
        body = json.dumps({"response": {"header": {"resultCode": code, "resultMsg": "X"}}}).encode()
        with pytest.raises(ApiResultError) as exc:
            parse_page(body, None)
        assert exc.value.result_code == code and exc.value.transient is transient
    xml = (
        b"<response><header><resultCode>10</resultCode>"
        b"<resultMsg>INVALID_REQUEST_PARAMETER_ERROR</resultMsg></header></response>"
    )
    with pytest.raises(ApiResultError, match="INVALID_REQUEST_PARAMETER_ERROR"):
        parse_page(xml, "text/xml")


@pytest.mark.parametrize(
    "body",
    [
        _env(ROWS)[: len(_env(ROWS)) // 2],  # truncated JSON
        b"",
        b"<html><body>502 Bad Gateway</body>",
        b"Service Unavailable",
        b'{"response": {"body": {}}}',  # no header
        b'{"response": {"header": {"resultCode": "00"}, "body": {"items": []}}}',  # no totalCount
        b'{"response": {"header": {"resultCode": "00"}, "body": {"totalCount": 1, "items": [1, 2]}}}',
        b"\xff\xfe{not utf-8",
        # digits str.isdigit() takes but int() does not: a ValueError traceback stopped the whole fetch
        '{"response": {"header": {"resultCode": "00"}, "body": {"totalCount": "²", "items": []}}}'.encode(),
        '{"response": {"header": {"resultCode": "00"}, "body": {"totalCount": "١٢", "items": []}}}'.encode(),
        b'{"response": {"header": {"resultCode": "00"}, "body": {"totalCount": "' + b"9" * 5000 + b'", "items": []}}}',
    ],
)
def test_malformed_bodies(body):
    with pytest.raises(MalformedPage):
        parse_page(body, "application/json")


def test_backoff_is_full_jitter_capped():
    rng = random.Random(1)
    draws = [backoff_s(3, 1.0, 30.0, rng) for _ in range(2000)]
    assert 0 <= min(draws) < 0.5 and 7.0 < max(draws) <= 8.0  # uniform(0, 1 * 2**3)
    assert max(backoff_s(10, 1.0, 30.0, rng) for _ in range(500)) <= 30.0


def test_retry_after_seconds_and_http_date():
    now = datetime(2026, 11, 30, 3, 0, 0, tzinfo=UTC)
    assert parse_retry_after("1") == 1.0 and parse_retry_after(" 120 ") == 120.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=42), usegmt=True), now) == 42.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=5), usegmt=True), now) == 0.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    # digits of other scripts are no number of seconds (float("²") raised, and the whole fetch stopped)
    assert parse_retry_after("²") is None and parse_retry_after("１２") is None and parse_retry_after("٣") is None


def test_politeness_policy_for_the_real_host():
    p = Politeness(base_s=2.0, step_s=2.0, slow_s=5.0)
    p.mark_start(100.0)
    assert not p.observe(1.0, ok=True, now=101.0)
    assert p.wait_s(101.0) == pytest.approx(1.0)  # 2 s between request starts
    pauses = []
    for t in range(6):  # slow / non-200 answers double the pause after the answer, capped at 30 s
        p.mark_start(200.0 + 100 * t)
        assert p.observe(6.0 if t % 2 else 0.1, ok=bool(t % 2), now=206.0 + 100 * t)
        pauses.append(p.pause_s)
    assert pauses == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0] and p.slowdowns == 6
    assert p.wait_s(706.0) == 30.0
    for expected in (15.0, 7.5, 3.75, 0.0):  # good answers decay it back to the base interval
        p.observe(0.2, ok=True, now=800.0)
        assert p.pause_s == expected
    assert p.max_pause_s == 30.0


def test_endpoints():
    emu = resolve_endpoint("emulator://local")
    assert emu.url == "emulator://local/1471000/MdcDmfInfoService01/getMdcDmfList01"
    assert (emu.kind, emu.local, emu.dated) == ("emulator", True, True)
    real = resolve_endpoint("https://apis.data.go.kr/1471000/MdcDmfInfoService01/")
    assert real.url == "https://apis.data.go.kr/1471000/MdcDmfInfoService01/getMdcDmfList01"
    assert (real.host, real.local, real.dated) == ("apis.data.go.kr", False, False)
    loop = resolve_endpoint("http://127.0.0.1:8089/1471000/MdcDmfInfoService01/getMdcDmfList01")
    assert loop.url.endswith("/MdcDmfInfoService01/getMdcDmfList01") and loop.local and loop.host == "127.0.0.1:8089"
    with pytest.raises(ValueError):
        resolve_endpoint("ftp://example.org/x")


def test_key_decoding_and_redaction():
    assert decode_service_key(FAKE_KEY_ENCODED) == FAKE_KEY
    assert decode_service_key(FAKE_KEY) == FAKE_KEY  # already decoded: untouched (no '+' -> ' ')
    r = Redactor(FAKE_KEY_ENCODED)
    double = FAKE_KEY_ENCODED.replace("%", "%25")
    text = (
        f"GET https://h/x?serviceKey={FAKE_KEY_ENCODED}&pageNo=1 key {FAKE_KEY} / {double} / {FAKE_KEY_ENCODED.lower()}"
    )
    out = r(text)
    assert KEY_CORE not in out and KEY_CORE.lower() not in out and "serviceKey=***&pageNo=1" in out
    assert Redactor("")("serviceKey=abc") == "serviceKey=***"


@pytest.mark.parametrize(
    "form",
    [
        FAKE_KEY_ENCODED.replace("%2B", "%2b").replace("%2F", "%2f"),  # any case of the percent-encoding
        FAKE_KEY_ENCODED.upper(),
        "".join(f"\\u{ord(c):04x}" for c in FAKE_KEY),  # JSON, every character escaped
        FAKE_KEY.replace("/", "\\/"),  # JSON's escaped slash
        "".join(f"&#{ord(c)};" for c in FAKE_KEY),  # an HTML/XML character reference each
        FAKE_KEY.replace("+", " "),  # a query decoded as a form: + read as a space
        FAKE_KEY_ENCODED.replace("%", "%25"),
    ],
)
def test_every_echoed_form_of_the_key_is_scrubbed_from_text_and_bodies(form):
    r = Redactor(FAKE_KEY)
    assert r(f"<p>{form}</p>") == "<p>***</p>"
    assert r.scrub_bytes(f"<p>{form}</p>".encode()) == b"<p>***</p>"
    assert r.scrub_bytes(b"<p>dMfW4tch</p>") == b"<p>dMfW4tch</p>"  # a part of the key is no key


@pytest.mark.parametrize("where", ["value", "name"])
def test_a_lone_surrogate_names_the_first_row_that_holds_it(where):
    """The page is searched at once, and the message still names the row (its place on the page) and the code."""
    from dmf_assets.source.fetch import _check_values

    rows = [dict(r) for r in fixture_rows()[:5]]
    for row in rows[1:]:
        row.setdefault("ITEM_NAME", None)  # a null value is no text to search
    field = next(iter(rows[3]))
    if where == "value":
        rows[3][field] = f"{rows[3][field] or ''}\udc81"
    else:
        rows[3]["X\ud83d"] = rows[3].pop(field)
    body = json.dumps({"header": {"resultCode": "00"}, "body": {"items": rows, "totalCount": 5}}).encode()
    with pytest.raises(MalformedPage, match=r"4번째 행의 값에 짝 없는 서로게이트\(\\u(dc81|d83d)\)"):
        _check_values(parse_page(body))
    del rows[3]
    _check_values(
        parse_page(json.dumps({"header": {"resultCode": "00"}, "body": {"items": rows, "totalCount": 4}}).encode())
    )
