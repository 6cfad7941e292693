"""The routes of 「DMF 조회」: one module over `web/data.py` (which alone reads the database), rendered with the
templates in `templates/`. Read-only: GET and HEAD only (405 otherwise).

    /                     the registry today: the latest accepted day, its headline counts, the last rejected
                          day, registrations · applicants · manufacturers · countries, top-10 lists
    /search               one box over number · ingredient · applicant · manufacturer · country (matching keys), filters, sort,
                          paging, as_of=YYYY-MM-DD; /search.csv (UTF-8 with BOM) and /search.xlsx export it
    /dmf/{number or key}  one registration: current values, versions, listed spans, events before → after
    /day/{YYYY-MM-DD}     a day's verdict, gates, events as the workbook's sentences, its workbook
    /days                 the calendar: accepted · rejected · not run
    /reports/             the workbooks; /reports/{name} downloads one (`files`: names, no traversal)

With a token (`[web] token`, DMF_WEB_TOKEN) every request carries it — once as ?token=… (then a cookie) or as
`Authorization: Bearer …` — or gets 401. Pages hold no command, no configuration key, no local path and never the
service key: a failure is a sentence for the team, the details go to the terminal (one line).
"""

from __future__ import annotations

import csv
import functools
import hmac
import io
import tempfile
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dmf_assets import links
from dmf_assets.clock import today_kst
from dmf_assets.domain.gates import GATE_BY_NUMBER
from dmf_assets.domain.keys import SYNTHETIC_PREFIX
from dmf_assets.domain.model import (
    FIELD_LABEL_KO,
    SEVERITY_LABEL_KO,
    SITES_FIELD,
    TARGET_CLASSES,
    DayStatus,
    event_label,
    field_labels,
    missing,
)
from dmf_assets.domain.sites import describe_site_change
from dmf_assets.korean import josa
from dmf_assets.report.columns import csv_cell
from dmf_assets.report.nedrug import SOURCE_BASE_FALLBACK, nedrug_search
from dmf_assets.report.output import XLSX
from dmf_assets.report.retention import LATEST_NAME, dated_workbook_name
from dmf_assets.report.rows import FLAG_LABELS, LEDGER_COLUMNS, change_lines, sample_table, sorted_events
from dmf_assets.report.sentences import summary_sentences
from dmf_assets.report.tables import ATTRIBUTION
from dmf_assets.settings import Settings
from dmf_assets.storage.db import DatabaseBusy, DatabaseDamaged, DatabaseOutdated
from dmf_assets.storage.registry import NoHistory
from dmf_assets.web import data
from dmf_assets.web.files import is_report_name, listed_workbooks, requested_name, servable
from dmf_assets.web.server import DEADLINE_EXTENSION, log

TOKEN_COOKIE = "dmf_web_token"
MAX_TEXT = 200  # characters of a search box or filter: longer is no registration's value
SECURITY_HEADERS = [
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),  # a ?token= address never leaves in a Referer
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
        b"base-uri 'none'; frame-ancestors 'none'",
    ),
]
#: labels of the ledger's own columns (base permit, cohort, first seen …), said once in report/rows.py
COLUMN_LABEL = {c.key: c.header for c in LEDGER_COLUMNS}


class Problem(Exception):
    """A request the page answers with a sentence (bad input, nothing found)."""

    def __init__(self, status: int, title: str, text: str) -> None:
        super().__init__(title)
        self.status, self.title, self.text = status, title, text


@dataclass(frozen=True)
class Site:
    """What the routes need: the settings read once, the database reader, the reports folder, the templates."""

    settings: Settings
    reader: data.Reader
    reports_dir: Path
    templates: Jinja2Templates

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return self.templates.TemplateResponse(request, name, {"today": today_kst(), **context}, status_code=status)

    def message(self, request: Request, status: int, title: str, text: str, **context: Any) -> Response:
        """A page that says one thing: a problem, or that there is nothing yet."""
        return self.page(request, "message.html", status, title=title, text=text, **context)

    def registry_of(self, day: date | None) -> data.Registry:
        try:
            return self.reader.read(("registry", day), lambda conn: data.registry_of(conn, day), big=True)
        except NoHistory:
            raise Problem(
                404,
                "그날까지 정상 수집된 날이 없습니다",
                f"{day or '지금'}까지 반영된 등록 현황이 없습니다. 날짜별 현황에서 수집된 날을 확인하십시오.",
            ) from None

    # --- the app's exception handlers: a failure is a page for the team

    async def problem(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Problem)
        return self.message(request, exc.status, exc.title, exc.text)

    async def http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 405:
            return PlainTextResponse(
                "읽기 전용입니다 / read-only: GET or HEAD\n", status_code=405, headers={"Allow": "GET, HEAD"}
            )
        title = "페이지가 없습니다" if exc.status_code == 404 else HTTPStatus(exc.status_code).phrase
        return self.message(request, exc.status_code, title, "주소를 확인하십시오.")

    async def unavailable(self, request: Request, exc: Exception) -> Response:
        if isinstance(exc, FileNotFoundError):
            return self.message(request, 200, "아직 수집된 날이 없습니다", "첫 수집이 끝나면 여기에 보입니다.")
        log.warning("%s %s: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        if isinstance(exc, DatabaseBusy):
            title, text = "지금 수집 결과를 기록하는 중입니다", "몇 초 뒤에 자동으로 다시 불러옵니다."
        elif isinstance(exc, DatabaseOutdated):
            title, text = "프로그램이 갱신되었습니다", "갱신 뒤 첫 수집이 끝나면 다시 보입니다."
        else:
            title, text = (
                "이력을 읽을 수 없습니다",
                "담당 엔지니어에게 알려 주십시오. 리포트 파일은 그대로 받을 수 있습니다.",
            )
        response = self.message(request, 503, title, text, refresh=isinstance(exc, DatabaseBusy))
        response.headers["Retry-After"] = "5"
        return response


# --- reading the query -----------------------------------------------------------------------------


def _text(request: Request, name: str) -> str:
    # control characters (a NUL typed as %00) are no search text, and never go back into the page
    value = "".join(ch for ch in request.query_params.get(name, "") if unicodedata.category(ch) != "Cc").strip()
    if len(value) > MAX_TEXT:
        raise Problem(400, "검색어가 너무 깁니다", f"{MAX_TEXT}자 이내로 입력하십시오.")
    return value


def _day(text: str, what: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise Problem(
            400, "날짜 형식이 아닙니다", f"{josa(what, '은/는')} 2026-11-30처럼 YYYY-MM-DD로 입력하십시오."
        ) from None


def _optional_day(request: Request, name: str, what: str) -> date | None:
    value = _text(request, name)
    return _day(value, what) if value else None


def search_query(request: Request) -> data.SearchQuery:
    sort = request.query_params.get("sort") or "permit"
    if sort not in data.SORTS:
        raise Problem(400, "정렬 방식을 알 수 없습니다", "목록에서 정렬 방식을 고르십시오.")
    target = _text(request, "target_class")
    if target and target not in TARGET_CLASSES:
        raise Problem(400, "대상의약품 구분을 알 수 없습니다", f"{', '.join(TARGET_CLASSES)} 가운데 고르십시오.")
    try:
        page = int(request.query_params.get("page") or 1)
    except ValueError:
        page = 0
    if not 1 <= page <= 100_000:
        raise Problem(400, "쪽 번호가 올바르지 않습니다", "1 이상의 쪽 번호를 쓰십시오.")
    return data.SearchQuery(
        q=_text(request, "q"),
        country=_text(request, "country"),
        applicant=_text(request, "applicant"),
        target_class=target,
        issued_from=_optional_day(request, data.PARAM_NAMES["issued_from"], "발급일자 시작"),
        issued_to=_optional_day(request, data.PARAM_NAMES["issued_to"], "발급일자 끝"),
        cohort=_text(request, "cohort"),
        as_of=_optional_day(request, "as_of", "기준일"),
        sort=sort,
        page=page,
        **{field: _text(request, data.PARAM_NAMES[field]) for field in data.GROUP_FIELDS},
    )


def registration_href(key: str) -> str:
    return "/dmf/" + quote(key, safe="")


def shown_key(key: str) -> str:
    """A registration's key as a page shows it: its number, or 「(등록번호 없음)」 for the key the history gives a
    registration listed without one (the team never sees those keys; the link behind the text still uses it)."""
    return missing("permit_no") if key.upper().startswith(SYNTHETIC_PREFIX) else key


# --- the pages -------------------------------------------------------------------------------------


def home(site: Site, request: Request) -> Response:
    return site.page(request, "home.html", home=site.reader.read("home", data.home))


def search(site: Site, request: Request) -> Response:
    sq = search_query(request)
    result = data.search(site.registry_of(sq.as_of), sq)
    # a number nothing is listed under (a grant of it may be: 「…-280-78(1)」): a number the registration had
    # before, or one gone from the list, is still in the history — say what became of it, and link its page
    typed = sq.q or ""
    since = (
        site.reader.read(("number", typed, result.day), lambda conn: data.number_in_history(conn, typed, result.day))
        if typed and not result.number_listed and data.looks_like_a_number(typed)
        else None
    )
    return site.page(
        request,
        "search.html",
        sq=sq,
        result=result,
        since=since,
        sorts={k: v[0] for k, v in data.SORTS.items()},
        target_classes=TARGET_CLASSES,
    )


def export(site: Site, request: Request) -> Response:
    sq = search_query(request)
    registry = site.registry_of(sq.as_of)
    frame = data.export_frame(registry, sq)
    stem = f"DMF_검색_{registry.day}"
    if request.url.path.endswith(".csv"):
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow([c.header for c in data.EXPORT_COLUMNS])
        writer.writerows([csv_cell(v) for v in row] for row in frame.iter_rows())
        body = ("\ufeff" + out.getvalue()).encode("utf-8")  # the BOM: Excel reads the Hangul
        return Response(body, media_type="text/csv; charset=utf-8", headers=_attachment(f"{stem}.csv"))
    from dmf_assets.analyst.sheets import write_registry_workbook

    what = " · ".join(filter(None, (sq.q, *data.scope(registry, sq)))) or "전체"
    with tempfile.TemporaryDirectory(prefix="dmf-web-") as folder:
        path = write_registry_workbook(
            Path(folder) / "export.xlsx",
            frame,
            sheet="검색 결과",
            title=f"검색 결과 · {registry.day} 기준",
            note=f"검색: {what} — 등록 {frame.height:,}건",
            banner=f"{registry.day} 기준 등록 현황 검색 — {what}: {frame.height:,}건",
            doc_title=f"DMF 검색 {registry.day}",
        )
        body = path.read_bytes()
    return Response(body, media_type=XLSX, headers=_attachment(f"{stem}.xlsx"))


def registration(site: Site, request: Request) -> Response:
    key = request.path_params["key"].strip()
    if not key or len(key) > MAX_TEXT:
        raise Problem(404, "등록을 찾을 수 없습니다", "등록번호를 확인하십시오.")
    try:
        latest: data.Registry | None = site.registry_of(None)
    except Problem:
        latest = None
    reg = site.reader.read(("dmf", key), lambda conn: data.registration(conn, key, latest))
    if reg is None:
        raise Problem(
            404,
            "등록을 찾을 수 없습니다",
            f"이력에 {key!r} 등록이 없습니다. 띄어쓰기·문장부호는 상관없으니 번호를 확인하거나 검색을 이용하십시오.",
        )
    text, url = nedrug_search(reg.current.get("ingredient"), None, SOURCE_BASE_FALLBACK)
    return site.page(request, "dmf.html", reg=reg, nedrug=(text, url), change_rows=_change_rows)


def day_page(site: Site, request: Request) -> Response:
    day = _day(request.path_params["day"], "날짜")
    view = site.reader.read(("day", day), lambda conn: data.day_page(conn, day, site.settings))
    workbook = dated_workbook_name(day)  # written after the day's commit: looked for now, not remembered
    sentences = summary_sentences(view.report.events, limit=10_000)[0] if view.report else []
    events = sorted_events(view.report.headline_events) if view.report else []
    return site.page(
        request,
        "day.html",
        view=view,
        workbook=workbook if servable(site.reports_dir, workbook) else None,
        sentences=sentences,
        events=events,
        change_lines=change_lines,
        sample_table=sample_table,
        headline=data.headline_figures,
        # asked now, never cached with the day's view; no 「다음 날」 from today on: a day to come has no list yet
        future=day > (today := today_kst()),
        next_day=day + timedelta(days=1) if day < today else None,
    )


def days(site: Site, request: Request) -> Response:
    today = today_kst()  # read once: a request at midnight keeps one day's calendar under that day's key
    return site.page(
        request, "days.html", cal=site.reader.read(("days", today), lambda conn: data.calendar(conn, today))
    )


def reports_index(site: Site, request: Request) -> Response:
    return site.page(request, "reports.html", workbooks=listed_workbooks(site.reports_dir))


def reports_folder(site: Site, request: Request) -> Response:
    return RedirectResponse("/reports/", status_code=308)


def download(site: Site, request: Request) -> Response:
    raw = request.scope.get("raw_path") or request.url.path.encode()
    name = requested_name(raw.split(b"?", 1)[0][len(b"/reports/") :])
    if isinstance(name, tuple):
        return PlainTextResponse(name[1] + "\n", status_code=name[0])
    target = servable(site.reports_dir, name)
    if target is None:
        return PlainTextResponse("파일이 없습니다 / not found\n", status_code=404)
    return FileResponse(target, media_type=XLSX, headers=_attachment(name))


def former_link(site: Site, request: Request) -> Response:
    """A workbook link of the former download server (`http://host:8765/DMF_리포트_….xlsx`): same port by
    default, so an old day's Dagster link keeps working."""
    name = request.path_params["name"]
    if not is_report_name(name):
        raise HTTPException(404)
    return RedirectResponse("/reports/" + quote(name), status_code=308)


#: the page's addresses, in the order Starlette tries them
ROUTES: list[tuple[str, Callable[[Site, Request], Response]]] = [
    ("/", home),
    ("/search", search),
    ("/search.csv", export),
    ("/search.xlsx", export),
    ("/dmf/{key}", registration),
    ("/day/{day}", day_page),
    ("/days", days),
    ("/reports/", reports_index),
    ("/reports", reports_folder),
    ("/reports/{rest:path}", download),
    ("/{name}", former_link),
]


# --- the app ---------------------------------------------------------------------------------------


def make_app(settings: Settings, *, database: Path, reports_dir: Path, token: str = "") -> ASGIApp:
    """The whole page as an ASGI app: the routes, behind the token rule and the security headers."""
    site = Site(settings, data.Reader(database), reports_dir, _templates())

    app = Starlette(
        routes=[Route(path, _endpoint(site, fn)) for path, fn in ROUTES],
        exception_handlers={
            Problem: site.problem,
            HTTPException: site.http_error,
            **dict.fromkeys(_UNAVAILABLE, site.unavailable),
        },
    )
    return Guard(app, token)


def _templates() -> Jinja2Templates:
    """The templates, with the central label tables as globals (the pages name nothing themselves)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("dmf_assets.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = lambda n: f"{n:,}" if isinstance(n, int) else ("" if n is None else n)
    env.filters["josa"] = lambda value, pair: josa(str(value), pair)  # 「{{ day | josa('은/는') }}」
    env.globals.update(
        # a link inside the page: relative to the host, it works behind any address
        href=functools.partial(links.link, ""),
        registration_href=registration_href,
        KEY=shown_key,
        SEARCH_HINT=field_labels(*data.SEARCHED_FIELDS, sep=", "),
        GROUP_FIELDS=data.GROUP_FIELDS,
        PARAM_NAMES=data.PARAM_NAMES,
        FIELD=FIELD_LABEL_KO,
        COLUMN=COLUMN_LABEL,
        EVENT=event_label,  # an event's own name: 「등록번호 변경」 and 「등록번호 부여」 apart from 「변경」
        SEVERITY=SEVERITY_LABEL_KO,
        STATUS={s.value: s.word_ko for s in DayStatus},
        FLAG=FLAG_LABELS,
        GATE=GATE_BY_NUMBER,
        ATTRIBUTION=ATTRIBUTION,
        LATEST_NAME=LATEST_NAME,
    )
    return Jinja2Templates(env=env)


#: what makes the whole page unavailable for a while (answered 503, or "nothing yet" without a database)
_UNAVAILABLE = (FileNotFoundError, DatabaseBusy, DatabaseOutdated, DatabaseDamaged)


def _endpoint(site: Site, fn: Callable[[Site, Request], Response]) -> Callable[[Request], Response]:
    """A route run in a worker thread (its database reads never stall the server), whose unexpected fault
    is a page for the team and one line on the terminal — never a traceback."""

    def run(request: Request) -> Response:
        try:
            return fn(site, request)
        except (Problem, HTTPException, *_UNAVAILABLE):
            raise  # answered by the app's exception handlers
        except Exception as exc:  # noqa: BLE001 - the page says it failed; the terminal says why
            log.warning("%s %s: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
            return site.message(request, 500, "페이지를 만들지 못했습니다", "담당 엔지니어에게 알려 주십시오.")

    run.__name__ = fn.__name__
    return run


def _attachment(name: str) -> dict[str, str]:
    # RFC 6266 + RFC 5987: the Korean name survives every browser
    return {"Content-Disposition": f"attachment; filename*=UTF-8''{quote(name)}"}


def _change_rows(changes: Any) -> list[tuple[str, str | None, str | None, bool, str | None]]:
    """(label, before, after, cosmetic, site line) per field change of an event: a site row as one line
    ('제조소 추가: Name (country)'), every other field before → after."""
    return [
        (FIELD_LABEL_KO[SITES_FIELD], None, None, c.is_cosmetic, describe_site_change(c.before, c.after))
        if c.field == SITES_FIELD
        else (FIELD_LABEL_KO.get(c.field, c.field), c.before, c.after, c.is_cosmetic, None)
        for c in changes
    ]


# --- who may look ----------------------------------------------------------------------------------


class Guard:
    """Every response with the security headers; with a token, every request must carry it: `?token=` once
    (answered with a cookie and the same address without it), the cookie, or `Authorization: Bearer` — 401
    otherwise."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        deadline = scope.get("extensions", {}).get(DEADLINE_EXTENSION)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                message["headers"] = [*headers, *SECURITY_HEADERS]
                if deadline is not None:  # the answer's size sets how long its delivery may take
                    size = next((int(v) for k, v in headers if k.lower() == b"content-length"), 0)
                    deadline["download"](size)
            await send(message)

        if not self.token:
            return await self.app(scope, receive, with_headers)
        request = Request(scope)
        given = request.query_params.get("token")
        if given is not None:
            if not self._same(given):
                return await _unauthorized(scope, receive, with_headers)
            rest = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1")) if k != "token"]
            target = quote(scope["path"]) + (f"?{urlencode(rest)}" if rest else "")
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict", path="/")
            return await response(scope, receive, with_headers)
        bearer = request.headers.get("authorization", "")
        carried = bearer[7:].strip() if bearer.lower().startswith("bearer ") else request.cookies.get(TOKEN_COOKIE, "")
        if not self._same(carried):
            return await _unauthorized(scope, receive, with_headers)
        await self.app(scope, receive, with_headers)

    def _same(self, given: str) -> bool:
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())


async def _unauthorized(scope: Scope, receive: Receive, send: Send) -> None:
    body = (
        "<!doctype html><html lang='ko'><meta charset='utf-8'><title>DMF 조회 — 접근 권한 필요</title>"
        "<body style='font-family:sans-serif;margin:3rem'><h1>접근 권한이 필요합니다</h1>"
        "<p>이 페이지는 팀에서 받은 주소(접근 토큰이 붙은 링크)로 여십시오. 한 번 열면 이 브라우저가 기억합니다.</p>"
        "</body></html>"
    )
    response = Response(
        body, status_code=401, media_type="text/html; charset=utf-8", headers={"WWW-Authenticate": "Bearer"}
    )
    await response(scope, receive, send)
