"""The emulator's HTTP behaviour: one handler shared by the in-process transport and the server.

It imitates `apis.data.go.kr/1471000/MdcDmfInfoService01/getMdcDmfList01` as docs/DOMAIN.md §2 describes
it — JSON/XML envelopes, gateway XML errors, the serviceKey decoding rule, numOfRows capping — and
applies the fault planned for the served date. `handle()` is pure apart from per-page attempt
counters: it returns the answer and a delay, and the caller (transport or server) realises the delay.
The service key is never echoed: not in bodies, headers or log lines.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Protocol
from urllib.parse import parse_qsl, unquote, urlencode

from dmf_assets.emulator import faults as F
from dmf_assets.settings import API_OPERATION
from dmf_assets.source import politeness
from dmf_assets.source.endpoint import SERVICE_BASE_PATH
from dmf_assets.source.identity import SEED_HEADER

SERVICE_PATH = f"{SERVICE_BASE_PATH}/{API_OPERATION}"
MAX_NUM_OF_ROWS = 1000  # the portal caps page size; larger requests are served 1000 rows
DEFAULT_NUM_OF_ROWS = 10  # data.go.kr default when numOfRows is absent
DATE_HEADER = "X-Emulator-Date"
ITEMS_STYLES = ("list", "item", "item_absent")
SEOUL = timezone(timedelta(hours=9))  # Korea has no daylight saving time

log = logging.getLogger("dmf_assets.emulator")

Row = dict[str, str | None]


class ItemSource(Protocol):
    def items(self, day: date) -> list[Row]: ...


class StaticItemSource:
    """Serves the same rows for every date (fixtures, small test registries)."""

    def __init__(self, rows: list[Row]) -> None:
        self._rows = [dict(r) for r in rows]

    def items(self, day: date) -> list[Row]:
        return [dict(r) for r in self._rows]


class SubsetSource:
    """The first `n_rows` of another source's registry (keeps tests fast, same data)."""

    def __init__(self, source: ItemSource, n_rows: int) -> None:
        self._source = source
        self._n = n_rows

    def items(self, day: date) -> list[Row]:
        return self._source.items(day)[: self._n]


def seoul_today() -> date:
    return datetime.now(SEOUL).date()


@dataclass(frozen=True)
class AppResponse:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    delay_s: float = 0.0  # realised by the caller: sleep, or a read timeout if longer than allowed
    log_line: str = ""  # one redacted line describing the request and the answer


@dataclass(frozen=True)
class RequestRecord:
    """What the app saw (redacted) — lets tests count requests server-side."""

    at: float  # when the request arrived, on the fetch's clock (`source.politeness.monotonic`)
    day: str | None
    page_no: int | None
    num_of_rows: int | None
    attempt: int
    status: int
    outcome: str  # "ok" | fault kind | error name


def _gateway_xml(auth_msg: str, reason_code: str) -> bytes:
    return (
        "<OpenAPI_ServiceResponse><cmmMsgHeader><errMsg>SERVICE ERROR</errMsg>"
        f"<returnAuthMsg>{auth_msg}</returnAuthMsg><returnReasonCode>{reason_code}</returnReasonCode>"
        "</cmmMsgHeader></OpenAPI_ServiceResponse>"
    ).encode()


KEY_ERROR_XML = _gateway_xml("SERVICE_KEY_IS_NOT_REGISTERED_ERROR", "30")
QUOTA_ERROR_XML = _gateway_xml("LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR", "22")

_JSON = "application/json;charset=UTF-8"
_XML = "text/xml;charset=UTF-8"
_TEXT = "text/plain;charset=UTF-8"
_HTML = "text/html;charset=UTF-8"

_RESULT_MSGS = {
    "00": "NORMAL SERVICE.",
    "03": "NODATA_ERROR",
    "10": "INVALID_REQUEST_PARAMETER_ERROR",
}


def normalize_service_key(key: str) -> str:
    """Portal keys are issued URL-encoded ("Encoding" key); the real key is the decoded form."""
    return unquote(key) if any(t in key.upper() for t in ("%2B", "%2F", "%3D")) else key


class EmulatorApp:
    """The MFDS API for one item source, one service key and one fault plan."""

    def __init__(
        self,
        item_source: ItemSource | None = None,
        *,
        seed: int = 20250101,
        service_key: str | None = None,
        faults: F.FaultPlan | Mapping[str, str] | None = None,
        default_date: date | str | None = None,
        items_style: str = "list",
        wrap_response: bool = True,
    ) -> None:
        if items_style not in ITEMS_STYLES:
            raise ValueError(f"items_style must be one of {ITEMS_STYLES}, got {items_style!r}")
        if item_source is None:
            from dmf_assets.emulator.registry import RegistrySimulator  # heavy: only when needed

            item_source = RegistrySimulator(seed)
        self.item_source = item_source
        # every answer names the registry it comes from (source.identity): a simulator's seed; rows given to the
        # app (a test's registry) name none, and are then known by the server's host like any other server
        served = getattr(item_source, "seed", None)
        self._seed_header = ((SEED_HEADER, str(served)),) if isinstance(served, int) else ()
        self._key = normalize_service_key(service_key) if service_key is not None else None
        self.faults = faults if isinstance(faults, F.FaultPlan) else F.FaultPlan.parse(faults)
        self.default_date = date.fromisoformat(default_date) if isinstance(default_date, str) else default_date
        self.items_style = items_style
        self.wrap_response = wrap_response
        self._lock = threading.Lock()
        self._source_lock = threading.Lock()
        self._attempts: dict[tuple, int] = {}
        #: registry_shift: day -> the page size of the fetch under which that day's registry changed
        self._shifted: dict[str, int] = {}
        self._cache: OrderedDict[tuple, tuple[list[Row], int, int]] = OrderedDict()
        self.requests: deque[RequestRecord] = deque(maxlen=100_000)

    # -- public ---------------------------------------------------------------------------------

    def handle(self, method: str, target: str, headers: Mapping[str, str] | None = None) -> AppResponse:
        """Answer one request. `target` is the raw request target (path + '?' + encoded query)."""
        headers = {k.lower(): v for k, v in (headers or {}).items()}
        path, _, query = target.partition("?")
        pairs = parse_qsl(query, keep_blank_values=True)  # decodes exactly once, like the portal
        params = dict(pairs)
        shown = _redacted_query(pairs)
        started = politeness.monotonic()

        def done(
            resp: AppResponse,
            *,
            day: str | None = None,
            page: int | None = None,
            rows: int | None = None,
            attempt: int = 0,
            outcome: str = "ok",
        ) -> AppResponse:
            line = f"{method} {path}?{shown} -> {resp.status} {len(resp.body)}B date={day} {outcome}"
            if resp.delay_s:
                line += f" delay={resp.delay_s:g}s"
            self.requests.append(RequestRecord(started, day, page, rows, attempt, resp.status, outcome))
            return AppResponse(resp.status, resp.headers + self._seed_header, resp.body, resp.delay_s, line)

        if path.rstrip("/") != SERVICE_PATH:
            return done(_plain(404, "Not Found"), outcome="not_found")
        if method.upper() != "GET":
            return done(_plain(405, "Method Not Allowed"), outcome="method_not_allowed")

        try:
            day = self._served_day(headers.get(DATE_HEADER.lower()))
        except ValueError as exc:
            return done(_plain(400, f"emulator: {exc}"), outcome="bad_date")
        iso = day.isoformat()
        fault = self.faults.for_day(day)

        if fault and fault.kind == "outage":
            return done(_plain(503, "Service Unavailable", html=True), day=iso, outcome="outage")
        key = params.get("serviceKey", "")
        if not key or (self._key is not None and key != self._key):
            return done(AppResponse(200, ((("Content-Type", _XML),)), KEY_ERROR_XML), day=iso, outcome="key_error")
        if fault and fault.kind in ("xml_key_error", "xml_quota_error"):
            body = KEY_ERROR_XML if fault.kind == "xml_key_error" else QUOTA_ERROR_XML
            return done(AppResponse(200, (("Content-Type", _XML),), body), day=iso, outcome=fault.kind)

        want_json = params.get("type", "").lower() == "json"
        page_no = _int_or_none(params.get("pageNo", "1"))
        num_rows = _int_or_none(params.get("numOfRows", str(DEFAULT_NUM_OF_ROWS)))
        if page_no is None or page_no < 1 or num_rows is None or num_rows < 1:
            return done(self._result_only("10", want_json), day=iso, outcome="invalid_parameter")
        num_rows = min(num_rows, MAX_NUM_OF_ROWS)
        filters = (params.get("ingr_kor_name", ""), params.get("entp_name", ""))

        try:
            served, total_reported, n_pages = self._served(day, fault, num_rows, filters)
        except ValueError as exc:  # date outside the simulated range
            return done(_plain(400, f"emulator: {exc}"), day=iso, outcome="bad_date")

        attempt = self._next_attempt((iso, page_no, num_rows, filters))
        effect = F.request_effect(fault, iso, page_no, n_pages, attempt)
        outcome = fault.kind if fault and effect != F.NO_EFFECT else "ok"
        if effect.status is not None:
            resp = _plain(effect.status, _STATUS_TEXT.get(effect.status, "Error"), html=effect.status >= 500)
            if effect.retry_after is not None:
                resp = AppResponse(resp.status, resp.headers + (("Retry-After", effect.retry_after),), resp.body)
            return done(resp, day=iso, page=page_no, rows=num_rows, attempt=attempt, outcome=outcome)

        if total_reported == 0 and not served:
            resp = self._result_only("03", want_json)
        else:
            rows = F.page_slice(fault, iso, served, page_no, num_rows, attempt)
            resp = self._page(page_no, num_rows, total_reported, rows, want_json)
            if page_no == F.shift_page(fault) and filters == ("", ""):
                with self._lock:
                    self._shifted.setdefault(iso, num_rows)  # the registry changes once this page is out
        if effect.truncate:
            resp = AppResponse(resp.status, resp.headers, resp.body[: len(resp.body) // 2])
        if effect.delay_s:
            resp = AppResponse(resp.status, resp.headers, resp.body, effect.delay_s)
        return done(resp, day=iso, page=page_no, rows=num_rows, attempt=attempt, outcome=outcome if fault else "ok")

    # -- internals ------------------------------------------------------------------------------

    def _served_day(self, header: str | None) -> date:
        if header:
            try:
                return date.fromisoformat(header.strip())
            except ValueError:
                raise ValueError(f"{DATE_HEADER} {header!r} is not YYYY-MM-DD") from None
        return self.default_date or seoul_today()

    def _next_attempt(self, key: tuple) -> int:
        with self._lock:
            n = self._attempts.get(key, 0) + 1
            self._attempts[key] = n
            return n

    def _served(
        self, day: date, fault: F.Fault | None, num_rows: int, filters: tuple[str, str]
    ) -> tuple[list[Row], int, int]:
        """(served sequence, reported totalCount, page count of the served sequence), cached."""
        with self._lock:
            shifted_under = self._shifted.get(day.isoformat())
        cache_key = (day, fault, num_rows, filters, shifted_under)
        with self._lock:
            hit = self._cache.get(cache_key)
            if hit is not None:
                self._cache.move_to_end(cache_key)
                return hit
        with self._source_lock:  # item sources need not be thread-safe (the server is threaded)
            rows = self.item_source.items(day)
        if fault is not None and shifted_under is not None:
            rows = F.shifted_registry(fault, day.isoformat(), rows, shifted_under)
        ingr, entp = filters
        if ingr:
            rows = [r for r in rows if ingr in (r.get("INGR_KOR_NAME") or "")]
        if entp:
            rows = [r for r in rows if entp in (r.get("ENTP_NAME") or "")]
        served, total = F.served_sequence(fault, day.isoformat(), rows, num_rows)
        value = (served, total, F.page_count(len(served), num_rows))
        with self._lock:
            self._cache[cache_key] = value
            while len(self._cache) > 8:
                self._cache.popitem(last=False)
        return value

    def _page(self, page_no: int, num_rows: int, total: int, rows: list[Row], want_json: bool) -> AppResponse:
        if not want_json:
            return AppResponse(200, (("Content-Type", _XML),), _xml_page(page_no, num_rows, total, rows))
        body: dict = {"pageNo": page_no, "totalCount": total, "numOfRows": num_rows}
        items = self._items_value(rows)
        if items is not _ABSENT:
            body["items"] = items
        doc = {"header": {"resultCode": "00", "resultMsg": _RESULT_MSGS["00"]}, "body": body}
        if self.wrap_response:
            doc = {"response": doc}
        data = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return AppResponse(200, (("Content-Type", _JSON),), data)

    def _items_value(self, rows: list[Row]) -> object:  # _ABSENT: no `items` key at all
        if self.items_style == "list":
            return rows
        if not rows:
            return "" if self.items_style == "item" else _ABSENT
        return {"item": rows[0] if len(rows) == 1 else rows}

    def _result_only(self, code: str, want_json: bool) -> AppResponse:
        msg = _RESULT_MSGS.get(code, "UNKNOWN_ERROR")
        if want_json:
            doc: dict = {"header": {"resultCode": code, "resultMsg": msg}}
            if self.wrap_response:
                doc = {"response": doc}
            return AppResponse(200, (("Content-Type", _JSON),), json.dumps(doc).encode())
        xml = f"<response><header><resultCode>{code}</resultCode><resultMsg>{msg}</resultMsg></header></response>"
        return AppResponse(200, (("Content-Type", _XML),), (_XML_DECL + xml).encode())


_ABSENT = object()
_XML_DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
_STATUS_TEXT = {429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


def _plain(status: int, text: str, *, html: bool = False) -> AppResponse:
    if html:
        body = f"<html><head><title>{status} {text}</title></head><body><h1>{text}</h1></body></html>"
        return AppResponse(status, (("Content-Type", _HTML),), body.encode())
    return AppResponse(status, (("Content-Type", _TEXT),), text.encode())


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _redacted_query(pairs: list[tuple[str, str]]) -> str:
    return urlencode([(k, "***" if k == "serviceKey" else v) for k, v in pairs], safe="*")


def _xml_escape(text: str) -> str:
    # \r is escaped so CR LF inside values survives XML end-of-line normalisation.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")


def _xml_page(page_no: int, num_rows: int, total: int, rows: list[Row]) -> bytes:
    parts = [
        _XML_DECL,
        "<response><header><resultCode>00</resultCode><resultMsg>NORMAL SERVICE.</resultMsg></header>",
        f"<body><pageNo>{page_no}</pageNo><totalCount>{total}</totalCount><numOfRows>{num_rows}</numOfRows><items>",
    ]
    for row in rows:
        parts.append("<item>")
        for k, v in row.items():
            if v is not None:  # null fields are omitted; "" stays an empty element
                parts.append(f"<{k}>{_xml_escape(v)}</{k}>")
        parts.append("</item>")
    parts.append("</items></body></response>")
    return "".join(parts).encode("utf-8")
