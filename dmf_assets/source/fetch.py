"""The fetch of one day: page through the API, archive every body, resume, replay, and give a verdict.

`fetch_day(client, day)` is the engine behind `MfdsClient.fetch_day`. A fetch:
1. replays the day from the archive if it is already complete (no HTTP), or resumes an
   interrupted/failed fetch by fetching only the missing pages;
2. pages through the API (page 1 first, ceil(totalCount/numOfRows) pages, then more while the
   last page is full — a deflated totalCount cannot hide rows; a page beyond them that answers
   NODATA ends the list), one request at a time, with retries, backoff + jitter, Retry-After,
   adaptive slow-down, a deadline for each whole request (connect + every read) and a daily request
   cap for every source; it stops early when totalCount promises more pages than the cap allows or
   the pages come back empty (a page cap derived from totalCount and numOfRows);
3. writes every body gzip'd to `raw_dir/YYYY-MM-DD/` BEFORE parsing it (a body that cannot be
   decoded as it was received), and writes the manifest once per batch of pages and when it stops;
4. checks every page's shape: its items carry the API's nine fields, no other (`page_shape_problem`);
   a page that does not — like one that cannot be decoded or parsed — is a failed page (retried,
   then a transport rejection naming the page and the fields), never rows with a field gone;
5. returns a `FetchResult` with a status (complete | incomplete | failed) and the de-duplicated
   items. Transport failures are recorded, not raised: the day still gets a verdict.
The service key is a secret: it goes into the query string and nowhere else; every response body is
scrubbed of it (`Redactor.scrub_bytes`) before it is archived, parsed, logged or shown.

What differs between the real API and a replay of it (HTTP client, request headers, a key when none
is configured, manifest notes) the client decides: see `MfdsClient`.
"""

from __future__ import annotations

import logging
import math
import random
import re
import threading
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Protocol

import httpx

from dmf_assets.clock import now_kst, require_not_behind, today_kst
from dmf_assets.domain.model import API_FIELDS, FIELD_LABEL_KO, SOURCE_FIELDS
from dmf_assets.faultpoints import crash_point
from dmf_assets.settings import PROJECT_ROOT
from dmf_assets.source.archive import DayArchive, RequestCounter, newest_archived_day, sha256_hex
from dmf_assets.source.endpoint import Endpoint, resolve_endpoint
from dmf_assets.source.envelope import Page, body_format, parse_page
from dmf_assets.source.errors import (
    ApiResultError,
    ArchiveCorrupt,
    GatewayError,
    MalformedPage,
    MissingServiceKey,
    PastDateUnavailable,
    RequestCapExceeded,
    SourceError,
)
from dmf_assets.source.identity import SourceMismatch, answered_by, folder_source, manifest_source, require_same
from dmf_assets.source.politeness import backoff_s, monotonic, parse_retry_after, politeness_for, sleep
from dmf_assets.source.service_key import Redactor, decode_service_key, install_key_log_filter

module_log = logging.getLogger("dmf_assets.source")

MAX_EXTRA_PAGES = 5  # pages fetched beyond ceil(totalCount/numOfRows) while the last page is full
MAX_CONSECUTIVE_FAILED_PAGES = 2  # the source is down: stop instead of burning quota
#: empty pages in a row before the last page totalCount promises: the list is shorter than it claims, stop
MAX_CONSECUTIVE_EMPTY_PAGES = 2
#: the running manifest is written once per this many pages (a crash re-fetches at most that many)
MANIFEST_EVERY_PAGES = 5
NODATA = "03"  # resultCode NODATA_ERROR: no rows at this offset
#: a clean page is logged as progress at most this often (the first page always; retries and failures always)
PROGRESS_EVERY_S = 5.0
FATAL_RESULT_CODES = frozenset({"20", "22", "30", "31", "32", "33"})  # key/quota/IP: retrying won't help
#: 2: the day's would-be withdrawals are asked about again and the answers archived with it (source.recheck)
MANIFEST_SCHEMA = 2

Row = dict[str, str | None]


class FetchLog(Protocol):
    def info(self, msg: str, *args: Any) -> Any: ...
    def warning(self, msg: str, *args: Any) -> Any: ...


class FetchConfig(Protocol):
    """What the fetch reads from its client (`source.client.MfdsClient` and its replay twin): its settings and
    the hooks a replay twin overrides. A protocol, so this module never imports the client that calls it."""

    @property
    def base_url(self) -> str: ...
    @property
    def num_of_rows(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def connect_timeout_s(self) -> float: ...
    @property
    def read_timeout_s(self) -> float: ...
    @property
    def min_interval_s(self) -> float: ...
    @property
    def backoff_base_s(self) -> float: ...
    @property
    def backoff_max_s(self) -> float: ...
    @property
    def daily_request_cap(self) -> int: ...

    def service_key(self) -> str: ...
    def anonymous_key(self) -> str | None: ...
    def http_client(self) -> httpx.Client: ...
    def request_headers(self, day: date) -> dict[str, str]: ...
    def manifest_extra(self, day: date) -> dict[str, Any]: ...
    def expected_source(self) -> str | None: ...
    def raw_path(self) -> Path: ...


# --- results -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageSummary:
    page_no: int
    status: str  # "ok" | "failed"
    rows: int
    total_count: int | None
    attempts: int
    reused: bool  # taken from an earlier, interrupted fetch (no request this time)
    file: str | None
    sha256: str | None
    error: str | None
    error_type: str | None = None  # timeout | connection | http_status | gateway | api_result | malformed


@dataclass(frozen=True)
class FetchResult:
    day: date
    source: str  # the endpoint kind (the in-process scheme | "http") | "archive"
    status: str  # "complete" | "incomplete" | "failed"
    pages: list[PageSummary]
    total_count: int | None  # the consistent totalCount, None if pages disagreed or none arrived
    total_counts: list[int]  # totalCount as reported by each page, in page order
    rows_received: int
    rows_after_dedup: int
    duplicate_rows_dropped: int
    transport_ok: bool
    transport_errors: list[str]
    requests: int
    retries: int
    elapsed_s: float
    archive_dir: str
    unexpected_fields: list[str]
    missing_fields: list[str]
    problems: list[str] = field(default_factory=list)
    num_of_rows: int = 0
    #: the gateway's XML error when one stopped the fetch: return_reason_code, return_auth_msg, err_msg
    gateway_error: dict[str, str] | None = None
    #: which registry the rows are (source.identity): the answering source, or the archived day's
    source_id: str | None = None
    #: why the fetch stopped before the last page totalCount promises (Korean, for gate 2); "" otherwise
    stopped: str = ""
    items: list[Row] = field(default_factory=list, repr=False)

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    def summary(self) -> dict[str, Any]:
        """Everything except the items (for metadata, logs and the CLI)."""
        return {
            "day": self.day.isoformat(),
            "source": self.source,
            "status": self.status,
            "pages": len(self.pages),
            "total_count": self.total_count,
            "rows_received": self.rows_received,
            "rows_after_dedup": self.rows_after_dedup,
            "duplicate_rows_dropped": self.duplicate_rows_dropped,
            "transport_ok": self.transport_ok,
            "transport_errors": list(self.transport_errors),
            "requests": self.requests,
            "retries": self.retries,
            "elapsed_s": round(self.elapsed_s, 3),
            "archive_dir": self.archive_dir,
            "unexpected_fields": list(self.unexpected_fields),
            "missing_fields": list(self.missing_fields),
            "problems": list(self.problems),
            "gateway_error": self.gateway_error,
            "source_id": self.source_id,
            "stopped": self.stopped,
        }


@dataclass
class _Page:
    """One page while fetching (mutable); becomes a PageSummary."""

    page_no: int
    status: str = "failed"
    rows: int = 0
    total_count: int | None = None
    num_of_rows: int | None = None
    file: str | None = None
    sha256: str | None = None
    size: int | None = None
    reused: bool = False
    error: str | None = None
    error_type: str | None = None
    gateway: dict[str, str] | None = None
    fatal: bool = False
    nodata: bool = False  # resultCode NODATA beyond the last page totalCount promises: the list ends here
    attempts: list[dict[str, Any]] = field(default_factory=list)
    items: list[Row] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def summary(self) -> PageSummary:
        return PageSummary(
            self.page_no,
            self.status,
            self.rows,
            self.total_count,
            len(self.attempts),
            self.reused,
            self.file,
            self.sha256,
            self.error,
            self.error_type,
        )

    def manifest(self) -> dict[str, Any]:
        return {
            "page_no": self.page_no,
            "status": self.status,
            "rows": self.rows,
            "total_count": self.total_count,
            "num_of_rows": self.num_of_rows,
            "file": self.file,
            "sha256": self.sha256,
            "bytes": self.size,
            "reused": self.reused,
            "error": self.error,
            "error_type": self.error_type,
            "gateway_error": self.gateway,
            "nodata": self.nodata,
            "attempts": self.attempts,
        }


def _assemble(pages: list[_Page]) -> tuple[list[Row], int, int]:
    """Concatenate ok pages in page order; drop rows identical to a row of an EARLIER page (a row
    repeated across pages by offset paging), keeping the first. Returns (items, received, dropped)."""
    seen: set[tuple] = set()
    items: list[Row] = []
    received = dropped = 0
    for page in sorted(pages, key=lambda p: p.page_no):
        if not page.ok:
            continue
        this_page: list[tuple] = []
        for row in page.items:
            received += 1
            # a parsed item's values are all str or None (envelope._clean_item): its sorted (field, value)
            # pairs identify it exactly, at a third of the cost of a sorted-keys JSON text
            ident = tuple(sorted(row.items()))
            if ident in seen:
                dropped += 1
                continue
            items.append(row)
            this_page.append(ident)
        seen.update(this_page)
    return items, received, dropped


def _field_drift(items: list[Row]) -> tuple[list[str], list[str]]:
    present: set[str] = set()
    for row in items:
        present.update(row)
    unexpected = sorted(present - set(API_FIELDS))
    missing = [f for f in API_FIELDS if f not in present] if items else []
    return unexpected, missing


def _now_iso() -> str:
    return now_kst().isoformat(timespec="milliseconds")  # the manifest says KST, as the README promises


# --- the fetch -----------------------------------------------------------------------------------


def as_date(day: date | str) -> date:
    if isinstance(day, datetime):
        return day.date()
    if isinstance(day, date):
        return day
    try:
        return date.fromisoformat(str(day).strip())
    except ValueError:
        raise ValueError(f"day {day!r} is not YYYY-MM-DD") from None


def fetch_day(
    client: FetchConfig,
    day: date | str,
    *,
    http_client: httpx.Client | None = None,
    log: FetchLog | None = None,
    resume: bool = True,
    rng: random.Random | None = None,
) -> FetchResult:
    """Fetch (or replay) the registry of `day` with `client`'s settings. See the module docstring.

    `http_client` replaces the client's own (`client.http_client()`) and is not closed here.
    Raises PastDateUnavailable, RequestCapExceeded, FetchInProgress, ArchiveCorrupt (past date whose
    archive is damaged), ClockBehind (today is earlier than a day already archived: nothing is written) and
    ValueError for bad configuration; transport failures are recorded.
    """
    install_key_log_filter()
    day = as_date(day)
    # time only moves forward: a clock set back would archive "today" before days already archived
    require_not_behind(newest_archived_day(client.raw_path()), str(client.raw_path()))
    endpoint = resolve_endpoint(client.base_url)
    service_key = client.service_key()
    redact = Redactor(service_key)
    logger: FetchLog = log or module_log
    archive = DayArchive(client.raw_path(), day)
    # one source per archive folder (source.identity): a day of another registry is refused before anything is
    # written — one the configuration names here, a server on this machine when it first answers
    held = _held_source(archive)
    expected = client.expected_source()
    if held is not None:
        require_same(expected, held[0], held[1])
    archive.raw_dir.mkdir(parents=True, exist_ok=True)
    with archive.locked():
        archive.recover()
        published = archive.published_manifest()
        today = today_kst()
        can_fetch = endpoint.dated or day == today
        complete = bool(published and published.get("status") == "complete")
        # a server on this machine is asked again rather than replayed: only its answers say which registry it is
        if published and expected is not None and (not can_fetch or (resume and complete)):
            if not can_fetch and not resume:
                logger.warning("%s: the real API cannot serve a past date again; replaying the archive", day)
            try:
                return _replay(archive, published, logger)
            except ArchiveCorrupt as exc:
                if not can_fetch:
                    raise
                logger.warning("%s: archive damaged (%s); fetching again", day, exc)
        if not can_fetch:
            raise PastDateUnavailable(day.isoformat(), today.isoformat())
        key = decode_service_key(service_key) or client.anonymous_key()
        if not key:
            raise MissingServiceKey(
                "MFDS_SERVICE_KEY가 설정되지 않았습니다 — 실제 API를 쓰려면 공공데이터포털 서비스 키를 프로젝트 폴더의 .env "
                "(MFDS_SERVICE_KEY=...) 또는 환경 변수에 넣으세요. / MFDS_SERVICE_KEY is not set: put the data.go.kr "
                "service key in .env or the environment (the emulator needs none)."
            )
        owns_client = http_client is None
        http = http_client or client.http_client()
        try:
            fetch = _DayFetch(client, day, endpoint, archive, http, key, redact, logger, rng or random.Random())
            fetch.held, fetch.expected = held, expected
            reusable = fetch.reusable_pages(published) if resume else {}
            return fetch.run(reusable, keep_published=complete)
        except SourceMismatch:
            archive.drop_empty_work()
            raise
        finally:
            if owns_client:
                http.close()


class _DayFetch:
    def __init__(
        self,
        config: FetchConfig,
        day: date,
        endpoint: Endpoint,
        archive: DayArchive,
        client: httpx.Client,
        key: str,
        redact: Redactor,
        log: FetchLog,
        rng: random.Random,
    ) -> None:
        self.config = config  # the resource: its fields are the fetch's settings
        self.day = day
        self.endpoint = endpoint
        self.archive = archive
        self.client = client
        self._key = key
        self.redact = redact
        self.log = log
        self.rng = rng
        self.politeness = politeness_for(
            endpoint, min_interval_s=config.min_interval_s, read_timeout_s=config.read_timeout_s
        )
        self.counter = RequestCounter(archive.raw_dir)
        # the daily cap counts every source's requests: the real API's per calendar day (its quota), a replay's
        # (the emulator, in process or on loopback, serves any date) per day it serves — a backfill of many
        # days is not capped as one day, one day's fetch is, whatever its totalCount claims
        self.cap_day = day if endpoint.dated else today_kst()
        #: a whole request (connect + every read) must end within this; httpx's timeouts bound each step alone
        self.deadline_s = config.connect_timeout_s + config.read_timeout_s
        self.timeout = httpx.Timeout(
            connect=config.connect_timeout_s,
            read=config.read_timeout_s,
            write=config.read_timeout_s,
            pool=config.connect_timeout_s,
        )
        self.requests = 0
        self.retries = 0
        self.started_at = _now_iso()
        self.t0 = monotonic()
        self._progress_at = self.t0  # when a page line was last logged (`_log_page`)
        self.pages: dict[int, _Page] = {}
        self.problems: list[str] = []
        self.transport_notes: list[str] = []  # fetch-level transport failures (abort, request cap)
        self.restarts: list[dict[str, Any]] = []
        self.round = 1
        self.reused_from: str | None = None
        self.held: tuple[str, str] | None = None  # (source, where): what the folder (or this day) holds already
        self.expected: str | None = None  # the configured source, when known before asking
        self.source_id: str | None = None  # the source that answered (source.identity.answered_by)
        self.stopped = ""  # why the round stopped before its last page (Korean), see `_stop`
        self._unsaved = 0  # pages not yet in a written manifest

    # -- resume ---------------------------------------------------------------------------------

    def reusable_pages(self, published: dict[str, Any] | None) -> dict[int, _Page]:
        """Good pages of an interrupted fetch (working dir) or of a published failed one."""
        candidates = [(self.archive.partial_manifest(), self.archive.work_dir)]
        if published and published.get("status") == "failed":
            candidates.append((published, self.archive.day_dir))
        for manifest, directory in candidates:
            if not manifest or manifest.get("status") not in ("running", "failed"):
                continue
            if manifest.get("num_of_rows") != self.config.num_of_rows:
                continue
            if (manifest.get("request") or {}).get("url") != self.endpoint.url:
                continue
            pages: dict[int, _Page] = {}
            for entry in manifest.get("pages") or []:
                if entry.get("status") != "ok" or not entry.get("file"):
                    continue
                try:
                    page = _archived_page(directory, entry, reused=True)
                except (SourceError, OSError):
                    continue  # re-fetch that page
                pages[page.page_no] = page
            if len({p.total_count for p in pages.values() if not p.nodata}) > 1:
                continue  # the interrupted fetch saw the registry change: reuse nothing
            if pages:
                self.reused_from = str(directory.name)
                self.archive.begin(keep=[(directory, p.file) for p in pages.values() if p.file])
                self.log.info("%s: resuming — %d archived page(s) reused", self.day, len(pages))
                return pages
        return {}

    # -- the whole fetch ------------------------------------------------------------------------

    def run(self, reusable: dict[int, _Page], *, keep_published: bool) -> FetchResult:
        if not reusable:
            self.archive.begin()
        outcome = "done"
        try:
            while True:
                self.pages = {}
                outcome = self._round(reusable)
                if outcome == "total_count_changed" and self.round == 1:
                    self.restarts.append({"round": 1, "total_counts": self._total_counts()})
                    self.log.warning(
                        "%s: totalCount changed between pages %s; restarting the fetch once",
                        self.day,
                        self._total_counts(),
                    )
                    self.round, reusable = 2, {}
                    self.archive.begin()
                    continue
                break
        except RequestCapExceeded as exc:
            self.problems.append(self.redact(str(exc)))
            self.transport_notes.append(self.redact(str(exc)))
            self._finish("cap", keep_published)
            raise
        except SourceMismatch:
            raise  # another registry answered: nothing of it is kept (fetch_day drops the empty work folder)
        except BaseException:
            self._write_manifest("running")  # the pages archived so far, for the re-run that resumes them
            raise
        if outcome == "total_count_changed":
            self.problems.append("total_count_unstable: totalCount changed again after a restart")
        return self._finish(outcome, keep_published)

    def _total_counts(self) -> list[int]:
        return [p.total_count for _, p in sorted(self.pages.items()) if p.total_count is not None]

    def _get(self, page_no: int, reusable: dict[int, _Page], *, beyond_total: bool = False) -> _Page:
        """Page `page_no`, reused or fetched; `beyond_total`: past the pages totalCount promises, where NODATA
        ends the list. The running manifest is written once per MANIFEST_EVERY_PAGES pages (rewriting it after
        every page grows as pages², and a crash costs at most that many pages asked again)."""
        page = reusable.get(page_no) or self._fetch_page(page_no, nodata_is_empty=beyond_total)
        self.pages[page_no] = page
        self._unsaved += 1
        if self._unsaved >= MANIFEST_EVERY_PAGES:
            self._write_manifest("running")
        crash_point("fetch_page")  # crash-safety tests: the archive must let a re-run resume here
        return page

    def _stop(self, why_ko: str, note: str) -> str:
        """Stop the round before the last page: `why_ko` for the completeness gate, `note` for the manifest."""
        self.stopped = why_ko
        self.problems.append(note)
        self.log.warning("%s: %s", self.day, note)
        return "stopped"

    def _round(self, reusable: dict[int, _Page]) -> str:
        first = self._get(1, reusable)
        if not first.ok:
            return "failed"
        total = int(first.total_count or 0)
        per_page = first.num_of_rows or self.config.num_of_rows  # the server may cap numOfRows
        n_pages = max(1, math.ceil(total / per_page))
        # the page cap: what totalCount and the page size promise must fit in the requests the day has left
        cap = self.config.daily_request_cap
        left = cap - self.counter.count(self.endpoint.host, self.cap_day)
        if n_pages - 1 > left:
            return self._stop(
                f"totalCount {total:,}건은 {per_page:,}행씩 {n_pages:,}쪽인데, 오늘 남은 요청({left:,}회, 하루 한도 "
                f"{cap:,}회)으로는 다 받을 수 없어 1쪽만 받고 멈췄습니다.",
                f"page_cap: totalCount {total} needs {n_pages} pages of {per_page}, {left} requests left of {cap}",
            )
        failed_in_a_row = empty_in_a_row = 0
        for page_no in range(2, n_pages + 1):
            page = self._get(page_no, reusable)
            if page.fatal:
                return "failed"
            if page.ok:
                failed_in_a_row = 0
                if page.total_count != total:
                    return "total_count_changed"
                empty_in_a_row = 0 if page.rows else empty_in_a_row + 1
                if empty_in_a_row >= MAX_CONSECUTIVE_EMPTY_PAGES and page_no < n_pages:
                    return self._stop(
                        f"{page_no - empty_in_a_row + 1}–{page_no}쪽이 연달아 비어 있어 {page_no:,}쪽에서 멈췄습니다 — "
                        f"totalCount {total:,}건이면 {n_pages:,}쪽까지 행이 있어야 합니다.",
                        f"empty_pages: pages {page_no - empty_in_a_row + 1}-{page_no} empty, {n_pages} promised",
                    )
                continue
            failed_in_a_row += 1
            if failed_in_a_row >= MAX_CONSECUTIVE_FAILED_PAGES:
                note = f"aborted after {failed_in_a_row} consecutive failed pages (page {page_no} of {n_pages})"
                self.problems.append(note)
                self.transport_notes.append(note)
                return "failed"
        # A deflated totalCount must not hide rows: keep going while the last page was full.
        last, extra = self.pages[n_pages], 0
        while last.ok and last.rows >= per_page and extra < MAX_EXTRA_PAGES:
            extra += 1
            last = self._get(n_pages + extra, reusable, beyond_total=True)
            if last.ok and not last.nodata and last.total_count != total:
                return "total_count_changed"
        if last.ok and last.rows >= per_page and extra >= MAX_EXTRA_PAGES:
            self.problems.append(f"extra_page_cap: still full pages after {MAX_EXTRA_PAGES} pages beyond totalCount")
        if extra:
            self.log.info(
                "%s: %d page(s) beyond ceil(totalCount/numOfRows) fetched (last page was full)", self.day, extra
            )
        return "done"

    # -- one page -------------------------------------------------------------------------------

    def _fetch_page(
        self,
        page_no: int,
        *,
        query: dict[str, str] | None = None,
        num_of_rows: int | None = None,
        archive_no: int | None = None,
        nodata_is_empty: bool = False,
    ) -> _Page:
        """Ask for one page (with `query`'s filters and `num_of_rows`, default: the whole registry at the
        configured page size), archive its body as `archive_no` (default `page_no`) and judge it.
        `nodata_is_empty`: resultCode NODATA means no rows here (beyond the list's end, or a filter that
        matches nothing), not a failure."""
        cfg = self.config
        page = _Page(page_no)
        retry_wait = 0.0
        api_retry_used = False
        params: dict[str, str | int] = {
            "serviceKey": self._key,
            "pageNo": page_no,
            "numOfRows": num_of_rows or cfg.num_of_rows,
            "type": "json",
            **(query or {}),
        }
        headers = self.config.request_headers(self.day)
        for attempt in range(1, cfg.max_attempts + 1):
            wait = max(self.politeness.wait_s(monotonic()), retry_wait if attempt > 1 else 0.0)
            if wait > 0:
                sleep(wait)
            self.counter.take(self.endpoint.host, cfg.daily_request_cap, self.cap_day)
            rec: dict[str, Any] = {
                "attempt": attempt,
                "started_at": _now_iso(),
                "wait_s": round(wait, 3),
                "status": None,
                "bytes": None,
                "sha256": None,
                "elapsed_ms": None,
                "error": None,
                "retry_after_s": None,
            }
            page.attempts.append(rec)
            self.requests += 1
            self.retries += attempt > 1
            started = monotonic()
            try:
                status, resp_headers, raw = self._send(params, headers)
            except _DeadlineExceeded as exc:
                self._failed_attempt(page, rec, started, str(exc), "timeout")
                retry_wait = self._backoff(attempt)
                continue
            except httpx.TimeoutException as exc:
                self._failed_attempt(page, rec, started, f"timeout: {type(exc).__name__}", "timeout")
                retry_wait = self._backoff(attempt)
                continue
            except httpx.TransportError as exc:
                self._failed_attempt(page, rec, started, f"{type(exc).__name__}: {exc}", "connection")
                retry_wait = self._backoff(attempt)
                continue
            elapsed = monotonic() - started
            self._answered_by(resp_headers)
            content_type = resp_headers.get("content-type")
            try:
                body, undecodable = _decoded(raw, resp_headers.get("content-encoding")), None
            except MalformedPage as exc:
                body, undecodable = raw, exc  # archived as it was received
            body = self.redact.scrub_bytes(body)  # the one chokepoint: a server may echo the key
            rec.update(status=status, bytes=len(body), sha256=sha256_hex(body), elapsed_ms=round(elapsed * 1000, 1))
            # Archive before parsing: whatever came back is kept, even if it cannot be read.
            page.file = self.archive.write_page(archive_no or page_no, body, body_format(body, content_type))
            page.sha256, page.size = rec["sha256"], len(body)
            if self.politeness.observe(elapsed, status == 200):
                rec["pause_after_s"] = round(self.politeness.pause_s, 3)
            if status != 200:
                retry_after = parse_retry_after(resp_headers.get("retry-after"))
                rec["retry_after_s"] = retry_after
                error = f"HTTP {status}"
                if len(body) <= 300 and "text/plain" in (content_type or ""):
                    error += ": " + body.decode("utf-8", errors="replace").strip()  # e.g. a replay's date range
                error = self.redact(error)
                rec["error"] = page.error = error
                page.error_type = "http_status"
                if status != 429 and status < 500:
                    break  # 4xx: asking again will not change the answer
                if retry_after is not None and retry_after > max(cfg.backoff_max_s, 60.0):
                    page.error = rec["error"] = f"{error}; Retry-After {retry_after:g} s is too long to wait"
                    break
                retry_wait = max(self._backoff(attempt), retry_after or 0.0)
                self.log.info("%s page %d: %s, retrying in %.2f s", self.day, page_no, error, retry_wait)
                continue
            try:
                if undecodable is not None:
                    raise undecodable
                parsed = parse_page(body, content_type)
                _check_values(parsed)
                problem = page_shape_problem(parsed)
                if problem is not None:
                    raise _WrongShape(problem)
            except GatewayError as exc:
                rec["error"] = page.error = self.redact(str(exc))
                page.error_type = "gateway"
                page.gateway = {
                    "return_reason_code": exc.return_reason_code,
                    "return_auth_msg": exc.return_auth_msg,
                    "err_msg": exc.err_msg,
                }
                page.fatal = True  # key/quota problems do not fix themselves within seconds
                self.log.warning("%s page %d: %s", self.day, page_no, page.error)
                break
            except ApiResultError as exc:
                if exc.result_code == NODATA and nodata_is_empty:
                    _fill_empty(page)
                    break
                rec["error"] = page.error = self.redact(str(exc))
                page.error_type = "api_result"
                if exc.result_code in FATAL_RESULT_CODES:
                    page.fatal = True
                    break
                if exc.transient and not api_retry_used:
                    api_retry_used = True
                    retry_wait = self._backoff(attempt)
                    continue
                break
            except MalformedPage as exc:
                shape = isinstance(exc, _WrongShape)
                rec["error"] = page.error = self.redact(str(exc) if shape else f"malformed page: {exc}")
                page.error_type = "shape" if shape else "malformed"
                self.log.info("%s page %d: %s", self.day, page_no, page.error)
                retry_wait = self._backoff(attempt)
                continue
            _fill_page(page, parsed)
            break
        self._log_page(page)
        return page

    def _send(self, params: dict[str, str | int], headers: dict[str, str]) -> tuple[int, httpx.Headers, bytes]:
        """One whole request — connect, headers and every read of the body, as received (not decoded) — within
        `deadline_s`: httpx's read timeout bounds each read alone, so a server dripping bytes would hold the fetch
        for as long as it likes. The request runs in a worker thread, abandoned when the deadline passes (it
        stops at its next chunk); raises `_DeadlineExceeded` then, or whatever the request raised."""
        outcome: dict[str, Any] = {}
        abandoned = threading.Event()

        def request() -> None:
            self.politeness.mark_start(monotonic())  # when the request really leaves
            try:
                with self.client.stream(
                    "GET", self.endpoint.url, params=params, headers=headers, timeout=self.timeout
                ) as resp:
                    raw = bytearray()
                    # a response made in process arrives read already (httpx decodes a body given as bytes at
                    # once); its stream still holds the bytes as they were given
                    chunks = resp.stream if resp.is_stream_consumed else resp.iter_raw()
                    for chunk in chunks:  # type: ignore[union-attr]
                        if abandoned.is_set():
                            return
                        raw += chunk
                    outcome["answer"] = (resp.status_code, resp.headers, bytes(raw))
            except BaseException as exc:  # noqa: BLE001 - raised again in the fetch's own thread
                outcome["error"] = exc

        worker = threading.Thread(target=request, name=f"dmf-fetch-{self.day}", daemon=True)
        worker.start()
        worker.join(self.deadline_s)
        if worker.is_alive():
            abandoned.set()
            raise _DeadlineExceeded(self.deadline_s)
        if "error" in outcome:
            raise outcome["error"]
        return outcome["answer"]

    def _log_page(self, page: _Page) -> None:
        """A line per page that needed more than one attempt or failed; a clean page only as progress — the
        first, then at most one every PROGRESS_EVERY_S (a real fetch of 19 pages at the polite pace takes
        ≈40 s; the per-page table is in the raw_pages materialization, and each log line is a stored
        Dagster event)."""
        clean = page.ok and len(page.attempts) == 1
        now = monotonic()
        if clean and page.page_no != 1 and now - self._progress_at < PROGRESS_EVERY_S:
            return
        self._progress_at = now
        level = self.log.info if page.ok else self.log.warning
        level(
            "%s page %d: %s, %d rows, totalCount %s, %d attempt(s)",
            self.day,
            page.page_no,
            "ok" if page.ok else f"FAILED ({page.error})",
            page.rows,
            page.total_count,
            len(page.attempts),
        )

    def _failed_attempt(self, page: _Page, rec: dict[str, Any], started: float, error: str, kind: str) -> None:
        elapsed = monotonic() - started
        rec["elapsed_ms"] = round(elapsed * 1000, 1)
        rec["error"] = page.error = self.redact(error)
        page.error_type = kind
        if self.politeness.observe(elapsed, ok=False):
            rec["pause_after_s"] = round(self.politeness.pause_s, 3)
        self.log.info("%s page %d attempt %d: %s", self.day, page.page_no, rec["attempt"], page.error)

    def _answered_by(self, headers: Any) -> None:
        """The registry the server serves, from its first answer: another one than the folder holds is refused
        (SourceMismatch) before its body is archived."""
        if self.source_id is None:
            self.source_id = answered_by(self.endpoint, headers) or self.expected
            if self.held is not None:
                require_same(self.source_id, *self.held)

    def _backoff(self, attempt: int) -> float:
        return backoff_s(attempt, self.config.backoff_base_s, self.config.backoff_max_s, self.rng)

    # -- the verdict ----------------------------------------------------------------------------

    def _verdict(self, outcome: str) -> dict[str, Any]:
        pages = [p for _, p in sorted(self.pages.items())]
        items, received, dropped = _assemble(pages)
        totals = self._total_counts()
        total = totals[0] if totals and len(set(totals)) == 1 else None
        transport_ok = bool(pages) and outcome not in ("failed", "cap") and all(p.ok for p in pages)
        errors = [f"{p.page_no}쪽(page {p.page_no}): {p.error}" for p in pages if not p.ok]
        errors += self.transport_notes
        if not transport_ok:
            status = "failed"
        elif (
            outcome != "done"
            or total is None
            or len(items) != total
            or any(pr.startswith("extra_page_cap") for pr in self.problems)
        ):
            status = "incomplete"
        else:
            status = "complete"
        unexpected, missing = _field_drift(items)
        return {
            "pages": pages,
            "items": items,
            "received": received,
            "dropped": dropped,
            "totals": totals,
            "total": total,
            "transport_ok": transport_ok,
            "errors": [self.redact(e) for e in errors],
            "status": status,
            "unexpected": unexpected,
            "missing": missing,
        }

    def _finish(self, outcome: str, keep_published: bool) -> FetchResult:
        v = self._verdict(outcome)
        if v["status"] != "complete" and v["total"] is not None and len(v["items"]) != v["total"]:
            self.problems.append(f"rows_after_dedup {len(v['items'])} != totalCount {v['total']}")
        self._write_manifest(v["status"], v)
        if keep_published and v["status"] != "complete":
            # Never replace a complete archive with a worse one: the new attempt stays in the
            # working directory for inspection; the published day is untouched.
            self.log.warning(
                "%s: re-fetch is %s; the complete archive is kept, the attempt is in %s",
                self.day,
                v["status"],
                self.archive.work_dir,
            )
            archive_dir = self.archive.work_dir
        else:
            archive_dir = self.archive.publish()
        elapsed = monotonic() - self.t0
        result = FetchResult(
            day=self.day,
            source=self.endpoint.kind,
            status=v["status"],
            pages=[p.summary() for p in v["pages"]],
            total_count=v["total"],
            total_counts=v["totals"],
            rows_received=v["received"],
            rows_after_dedup=len(v["items"]),
            duplicate_rows_dropped=v["dropped"],
            transport_ok=v["transport_ok"],
            transport_errors=v["errors"],
            requests=self.requests,
            retries=self.retries,
            elapsed_s=elapsed,
            archive_dir=str(archive_dir),
            unexpected_fields=v["unexpected"],
            missing_fields=v["missing"],
            problems=[self.redact(p) for p in self.problems],
            num_of_rows=self.config.num_of_rows,
            gateway_error=next((p.gateway for p in v["pages"] if p.gateway), None),
            source_id=self.source_id or self.expected,
            stopped=self.stopped,
            items=v["items"],
        )
        self.log.info(
            "%s: fetch %s — %d pages, %d rows (%d after de-dup), totalCount %s, %d requests, %d retries, %.1f s",
            self.day,
            result.status,
            len(result.pages),
            result.rows_received,
            result.rows_after_dedup,
            result.total_count,
            result.requests,
            result.retries,
            elapsed,
        )
        return result

    def _write_manifest(self, status: str, verdict: dict[str, Any] | None = None) -> None:
        self._unsaved = 0
        pages = [p for _, p in sorted(self.pages.items())]
        manifest: dict[str, Any] = {
            "schema_version": MANIFEST_SCHEMA,
            "day": self.day.isoformat(),
            "status": status,
            "source": self.endpoint.kind,
            "source_id": self.source_id or self.expected,
            "request": {
                "url": self.endpoint.url,
                "method": "GET",
                "params": {"pageNo": "<page>", "numOfRows": self.config.num_of_rows, "type": "json"},
                "headers": self.config.request_headers(self.day),
            },
            "num_of_rows": self.config.num_of_rows,
            "started_at": self.started_at,
            "finished_at": _now_iso() if status != "running" else None,
            "round": self.round,
            "restarts": self.restarts,
            "resumed_from": self.reused_from,
            "politeness": {
                "min_interval_s": self.politeness.base_s,
                "pause_s": round(self.politeness.pause_s, 3),
                "max_pause_s": round(self.politeness.max_pause_s, 3),
                "slowdowns": self.politeness.slowdowns,
                "slow_answer_threshold_s": self.politeness.slow_s,
            },
            "pages": [p.manifest() for p in pages],
        }
        manifest.update(self.config.manifest_extra(self.day))
        if verdict is not None:
            manifest["totals"] = {
                "pages": len(pages),
                "requests": self.requests,
                "retries": self.retries,
                "rows_received": verdict["received"],
                "rows_after_dedup": len(verdict["items"]),
                "duplicate_rows_dropped": verdict["dropped"],
                "total_count": verdict["total"],
                "total_counts": verdict["totals"],
                "transport_ok": verdict["transport_ok"],
                "elapsed_s": round(monotonic() - self.t0, 3),
            }
            manifest["transport_errors"] = verdict["errors"]
            manifest["problems"] = self.problems
            manifest["unexpected_fields"] = verdict["unexpected"]
            manifest["missing_fields"] = verdict["missing"]
            manifest["stopped"] = self.stopped
        self.archive.write_manifest(manifest, text_filter=self.redact)


def _held_source(archive: DayArchive) -> tuple[str, str] | None:
    """(source, where) of what is archived already: this day's complete archive, else the folder's newest."""
    manifest = archive.published_manifest()
    if manifest and manifest.get("status") == "complete" and (source := manifest_source(manifest)):
        return source, str(archive.day_dir)
    held = folder_source(archive.raw_dir)
    return (held[0], str(archive.raw_dir / held[1].isoformat())) if held else None


def _fill_page(page: _Page, parsed: Page) -> None:
    page.status = "ok"
    page.error = page.error_type = None
    page.rows = parsed.rows
    page.total_count = parsed.total_count
    page.num_of_rows = parsed.num_of_rows
    page.items = parsed.items


def _fill_empty(page: _Page) -> None:
    """A page that answered NODATA where no rows are a possible answer: ok, no rows, no totalCount."""
    page.status = "ok"
    page.error = page.error_type = None
    page.rows, page.items, page.nodata = 0, [], True


class _DeadlineExceeded(Exception):
    def __init__(self, deadline_s: float) -> None:
        super().__init__(
            f"timeout: 요청 전체가 {deadline_s:g}초 안에 끝나지 않았습니다 (연결 + 모든 읽기) / the whole request "
            f"took longer than {deadline_s:g} s (connect + every read)"
        )


class _WrongShape(MalformedPage):
    """A page whose items do not carry the API's nine fields (`page_shape_problem`)."""


def _decoded(raw: bytes, content_encoding: str | None) -> bytes:
    """The body with its Content-Encoding undone (httpx's own decoders); MalformedPage when it cannot be."""
    content_encoding = (content_encoding or "").strip()
    if content_encoding.lower() in ("", "identity"):
        return raw
    try:
        return httpx.Response(200, headers={"Content-Encoding": content_encoding}, content=raw).content
    except httpx.DecodingError as exc:
        raise MalformedPage(
            f"본문을 풀 수 없습니다 — Content-Encoding {content_encoding}이라고 했지만 그렇게 압축된 본문이 아닙니다 "
            f"({exc}) / the body cannot be decoded as its Content-Encoding says"
        ) from None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_values(page: Page) -> None:
    """A value holding a lone surrogate (a JSON escape such as \\ud800 that encodes no character) is not text:
    the page cannot be read as Unicode (it could not be stored or shown), so it fails like a malformed one."""
    for row_no, item in enumerate(page.items, 1):
        for value in (*item, *item.values()):  # a field's name is text too
            found = _LONE_SURROGATE.search(value) if value is not None else None
            if found is not None:
                code = f"\\u{ord(found.group()):04x}"
                raise MalformedPage(
                    f"{row_no}번째 행의 값에 짝 없는 서로게이트({code})가 있어 유니코드 문자열로 읽을 수 없습니다 / "
                    f"a value of item {row_no} holds a lone surrogate ({code}): not valid Unicode"
                )


def _field_label(name: str) -> str:
    """'제조소명' for one of the API's nine fields, the name itself (as the source sent it) for any other."""
    internal = SOURCE_FIELDS.get(name)
    return FIELD_LABEL_KO[internal] if internal else name


def page_shape_problem(page: Page) -> str | None:
    """Why a page does not have the day's shape — the API's nine fields on its items, and no other
    (docs/DOMAIN.md §2.1) — or None. Every page is held to the same nine, so a field renamed or left out on one
    page, or renamed on some rows, never reaches the diff as a value that disappeared.

    A null field: the real API writes every field of a JSON item (the real rows carry all nine, an empty value
    as ""), XML leaves a null field's element out. So a field counts as missing when no item of the page
    carries it, and — on a JSON page that writes a null as null — when any item leaves it out."""
    if not page.items:
        return None
    expected = set(API_FIELDS)
    carried: dict[str, int] = {}
    for item in page.items:
        for name in item:
            carried[name] = carried.get(name, 0) + 1
    writes_nulls = page.fmt == "json" and any(v is None for item in page.items for v in item.values())
    n = len(page.items)
    missing = {f: n - carried.get(f, 0) for f in API_FIELDS if not carried.get(f) or (writes_nulls and carried[f] < n)}
    unexpected = {f: c for f, c in carried.items() if f not in expected}
    if not (missing or unexpected):
        return None
    parts = []
    if missing:
        parts.append("빠진 항목: " + ", ".join(f"{_field_label(f)} ({n:,}행 중 {c:,}행)" for f, c in missing.items()))
    if unexpected:
        parts.append("처음 보는 항목: " + ", ".join(f"{f} ({n:,}행 중 {c:,}행)" for f, c in sorted(unexpected.items())))
    return f"응답 항목이 API의 9개 항목과 다릅니다 — {' · '.join(parts)} / the items' fields differ from the API's nine"


def _archived_page(directory: Path, entry: dict[str, Any], *, reused: bool) -> _Page:
    """A page recorded ok in a manifest, read back from its archived body. Raises ArchiveCorrupt (a file that
    does not match) or the parser's SourceError."""
    page = _Page(
        int(entry["page_no"]),
        file=entry.get("file"),
        sha256=entry.get("sha256"),
        size=entry.get("bytes"),
        reused=reused or bool(entry.get("reused")),
        attempts=list(entry.get("attempts") or []),
    )
    body = DayArchive.read_page(directory, entry["file"], entry.get("sha256"))
    if entry.get("nodata"):  # NODATA where no rows were a possible answer (the body is the NODATA envelope)
        _fill_empty(page)
        return page
    _fill_page(page, parse_page(body, "json" if ".json." in entry["file"] else None))
    return page


# --- replay --------------------------------------------------------------------------------------


def _replay(archive: DayArchive, manifest: dict[str, Any], log: FetchLog) -> FetchResult:
    """Rebuild the FetchResult of a finished fetch from its archive, without any HTTP."""
    t0 = monotonic()
    directory = archive.day_dir
    pages: list[_Page] = []
    for entry in manifest.get("pages") or []:
        if entry.get("status") == "ok":
            try:
                pages.append(_archived_page(directory, entry, reused=bool(entry.get("reused"))))
            except ArchiveCorrupt:
                raise
            except SourceError as exc:
                raise ArchiveCorrupt(f"{directory.name}/{entry['file']}: recorded ok but unreadable: {exc}") from None
        else:
            pages.append(
                _Page(
                    int(entry["page_no"]),
                    status="failed",
                    error=entry.get("error"),
                    error_type=entry.get("error_type"),
                    gateway=entry.get("gateway_error"),
                    file=entry.get("file"),
                    sha256=entry.get("sha256"),
                    attempts=list(entry.get("attempts") or []),
                )
            )
    items, received, dropped = _assemble(pages)
    totals = manifest.get("totals") or {}
    if totals and (totals.get("rows_received"), totals.get("rows_after_dedup")) != (received, len(items)):
        raise ArchiveCorrupt(
            f"{directory.name}: archived pages give {received}/{len(items)} rows, "
            f"manifest says {totals.get('rows_received')}/{totals.get('rows_after_dedup')}"
        )
    unexpected, missing = _field_drift(items)
    status = str(manifest.get("status"))
    log.info("%s: replayed from archive (%s, %d rows)", archive.day, status, len(items))
    return FetchResult(
        day=archive.day,
        source="archive",
        status=status,
        pages=[p.summary() for p in pages],
        total_count=totals.get("total_count"),
        total_counts=list(totals.get("total_counts") or []),
        rows_received=received,
        rows_after_dedup=len(items),
        duplicate_rows_dropped=dropped,
        transport_ok=bool(totals.get("transport_ok")),
        transport_errors=list(manifest.get("transport_errors") or []),
        requests=0,
        retries=0,
        elapsed_s=monotonic() - t0,
        archive_dir=str(directory),
        unexpected_fields=unexpected,
        missing_fields=missing,
        problems=list(manifest.get("problems") or []),
        num_of_rows=int(manifest.get("num_of_rows") or 0),
        gateway_error=next((p.gateway for p in pages if p.gateway), None),
        source_id=manifest_source(manifest),
        stopped=str(manifest.get("stopped") or ""),
        items=items,
    )


def replay_archive(raw_dir: Path, day: date | str, log: FetchLog | None = None) -> FetchResult:
    """The day exactly as its published archive holds it — never a request, whatever the source (what `dmf
    rebuild` replays). Raises ArchiveCorrupt when there is no published archive or it is damaged, and
    FetchInProgress while a fetch of the day runs."""
    archive = DayArchive(Path(raw_dir), as_date(day))
    with archive.locked():
        archive.recover()
        manifest = archive.published_manifest()
        if manifest is None:
            raise ArchiveCorrupt(f"{archive.day_dir}: 보관된 수집본(manifest.json)이 없습니다 / no published archive")
        return _replay(archive, manifest, log or module_log)


def read_manifest(raw_dir: str | Path, day: date | str) -> dict[str, Any] | None:
    """The published manifest of a day (None if the day was never fetched)."""
    p = Path(raw_dir)
    p = p if p.is_absolute() else PROJECT_ROOT / p
    return DayArchive(p, as_date(day)).published_manifest()
