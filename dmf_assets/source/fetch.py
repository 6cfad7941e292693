"""The fetch of one day: page through the API, archive every body, resume, replay, and give a verdict.

`fetch_day(client, day)`, behind `MfdsClient.fetch_day`, replays a complete archived day (no HTTP), resumes an
interrupted or failed fetch by fetching only the missing pages, or pages through the API one request at a time
(`_DayFetch`): page 1, ceil(totalCount/numOfRows) pages, then more while the last page is full — a deflated
totalCount cannot hide rows; it stops early when the day's request cap cannot hold the pages totalCount promises,
or pages come back empty (`_stop`). Every body is written gzip'd to `raw_dir/YYYY-MM-DD/` BEFORE it is parsed (a
body that cannot be decoded as it was received); a page that cannot be decoded or parsed, or whose items do not
carry the API's nine fields and no other (`page_shape_problem`), is a failed page (retried, then a transport
failure naming it), never rows with a field gone. Transport failures are recorded, not raised: the day still gets
a verdict (`FetchResult`: complete | incomplete | failed, and the de-duplicated items).
The service key is a secret: it goes into the query string and nowhere else; every response body is
scrubbed of it (`Redactor.scrub_bytes`) before it is archived, parsed, logged or shown.

What differs between the real API and a replay of it (HTTP client, request headers, a key when none
is configured, manifest notes) the client decides: see `MfdsClient`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from dmf_assets.clock import now_kst, require_not_behind, today_kst
from dmf_assets.domain.model import API_FIELDS, FIELD_LABEL_KO, SOURCE_FIELDS
from dmf_assets.faultpoints import crash_point
from dmf_assets.source.archive import (
    MANIFEST_SCHEMA,
    ArchivedPage,
    DayArchive,
    Manifest,
    PageEntry,
    RequestCounter,
    newest_archived_day,
    read_pages,
    sha256_hex,
)
from dmf_assets.source.endpoint import Endpoint, resolve_endpoint
from dmf_assets.source.envelope import Page, body_format, named_charset, parse_page
from dmf_assets.source.errors import (
    ApiResultError,
    ArchiveCorrupt,
    GatewayError,
    MalformedPage,
    MissingServiceKey,
    PastDateUnavailable,
    RequestCapExceeded,
)
from dmf_assets.source.identity import SourceMismatch, answered_by, folder_source, manifest_source, require_same
from dmf_assets.source.politeness import backoff_s, monotonic, parse_retry_after, politeness_for, sleep
from dmf_assets.source.service_key import Redactor, install_key_log_filter

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
#: the most bytes a page's body may have, as it arrives and once its Content-Encoding is undone. A page of 1,000 rows
#: (the most `[source] num_of_rows` allows) is about 0.4 MB: a body 80 times that is no page of this registry, and
#: reading on would only fill the memory (an endless stream, a compression bomb)
MAX_PAGE_BYTES = 32 * 1024 * 1024
_MAX_PAGE_MB = MAX_PAGE_BYTES // (1024 * 1024)

Row = dict[str, str | None]
#: a fetch's rows in page order, de-duplicated (`_assemble`): (items, received, dropped)
_Rows = tuple[list[Row], int, int]


#: where the fetch says what it does: this module's logger, a run's (Dagster's `context.log` is a Logger too)
FetchLog = logging.Logger


if TYPE_CHECKING:  # the client that calls the fetch: its fields are the fetch's settings, its hooks a replay overrides
    from dmf_assets.source.client import MfdsClient


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
    bytes: int | None = None  # the body's size as received
    elapsed_ms: float | None = None  # the time its requests took, every attempt counted

    @classmethod
    def of(cls, e: PageEntry) -> PageSummary:
        same = {f.name: getattr(e, f.name) for f in dataclasses.fields(cls) if f.name not in ("attempts", "elapsed_ms")}
        spent = [a["elapsed_ms"] for a in e.attempts if a.get("elapsed_ms") is not None]
        return cls(**same, attempts=len(e.attempts), elapsed_ms=round(sum(spent), 1) if spent else None)


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

    @classmethod
    def of(cls, day: date, manifest: Manifest, pages: list[_Page], rows: _Rows, **run: Any) -> FetchResult:
        """The result a finished manifest records, with its pages' `rows` (`_assemble`); `run`: source, requests,
        retries, elapsed_s, archive_dir (what differs between a fetch and its replay)."""
        items, received, dropped = rows
        unexpected, missing = _field_drift(items)
        totals = manifest.totals or {}
        return cls(
            day=day,
            status=str(manifest.status),
            pages=[PageSummary.of(p.entry) for p in pages],
            total_count=totals.get("total_count"),
            total_counts=list(totals.get("total_counts") or []),
            rows_received=received,
            rows_after_dedup=len(items),
            duplicate_rows_dropped=dropped,
            transport_ok=bool(totals.get("transport_ok")),
            transport_errors=list(manifest.transport_errors),
            unexpected_fields=unexpected,
            missing_fields=missing,
            problems=list(manifest.problems),
            num_of_rows=int(manifest.num_of_rows or 0),
            gateway_error=next((p.entry.gateway_error for p in pages if p.entry.gateway_error), None),
            source_id=manifest_source(manifest),
            stopped=manifest.stopped,
            items=items,
            **run,
        )

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    def summary(self) -> dict[str, Any]:
        """Everything except the items (for metadata, logs and the CLI)."""
        left_out = ("total_counts", "num_of_rows", "items")
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in left_out}
        return {**out, "day": self.day.isoformat(), "pages": len(self.pages), "elapsed_s": round(self.elapsed_s, 3)}


@dataclass
class _Page:
    """One page while it is fetched or read back: its manifest entry so far, and its rows."""

    entry: PageEntry
    items: list[Row] = field(default_factory=list)
    fatal: bool = False  # key, quota or IP: asking again will not help
    api_retried: bool = False  # a passing API error was asked again once already

    @classmethod
    def archived(cls, archived: ArchivedPage[Page], *, reused: bool) -> _Page:
        """A page recorded ok in a manifest, read back from its archived body."""
        return cls(dataclasses.replace(archived.entry, reused=reused)).answered(archived.parsed)

    def update(self, **changes: Any) -> None:
        self.entry = dataclasses.replace(self.entry, **changes)

    def answered(self, parsed: Page | None) -> _Page:
        """ok, with the parsed page's rows — or (None) NODATA where no rows are a possible answer: no rows, no
        totalCount, the list ends here."""
        if parsed is None:
            counts: dict[str, Any] = {"rows": 0, "nodata": True}
        else:
            counts = {"rows": parsed.rows, "total_count": parsed.total_count, "num_of_rows": parsed.num_of_rows}
        self.update(status="ok", error=None, error_type=None, **counts)
        self.items = parsed.items if parsed is not None else []
        return self

    @property
    def attempt(self) -> dict[str, Any]:
        """The record of the attempt under way (`_DayFetch._attempt`), filled in as it goes."""
        return self.entry.attempts[-1]

    def failed(self, error: str, kind: str, **changes: Any) -> None:
        """The attempt under way failed: `error` (already redacted) recorded on it and on the page."""
        self.attempt["error"] = error
        self.update(error=error, error_type=kind, **changes)


def _assemble(pages: list[_Page]) -> _Rows:
    """Concatenate ok pages in page order; drop rows identical in the nine API fields to an earlier row
    (a row repeated by offset paging), keeping the first. Returns (items, received, dropped).

    The rule is the snapshot's own (`snapshot.drop_repeated_rows`: absent = null, other fields ignored), on
    this page as on earlier ones: gate 2 must count the rows the day will hold. A row served twice on one
    page in place of another counted once more than the snapshot kept, and the day passed one row short."""
    seen: set[tuple] = set()
    items: list[Row] = []
    received = dropped = 0
    for page in sorted(pages, key=lambda p: p.entry.page_no):
        if not page.entry.ok:
            continue
        for row in page.items:
            received += 1
            ident = tuple(row.get(name) for name in API_FIELDS)  # values are str or None (envelope._text)
            if ident in seen:
                dropped += 1
                continue
            items.append(row)
            seen.add(ident)
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
    client: MfdsClient,
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
    logger: FetchLog = log or module_log
    archive = DayArchive(client.raw_path(), day)
    # one source per archive folder (source.identity): a day of another registry is refused before anything is
    # written — one the configuration names here, a server on this machine when it first answers
    held_at = folder_source(archive.raw_dir, first=day)  # (source, day): this day's complete archive first
    held = (held_at[0], str(archive.raw_dir / held_at[1].isoformat())) if held_at else None
    expected = client.expected_source()
    if held is not None:
        require_same(expected, held[0], held[1])
    archive.raw_dir.mkdir(parents=True, exist_ok=True)
    with archive.opened() as published:
        today = today_kst()
        can_fetch = endpoint.dated or day == today
        complete = published is not None and published.complete
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
        fetch = _DayFetch(client, day, endpoint, archive, logger, rng or random.Random(), http_client)
        fetch.held, fetch.expected = held, expected
        try:
            return fetch.run(fetch.reusable_pages(published) if resume else {}, keep_published=complete)
        except SourceMismatch:
            archive.drop_empty_work()
            raise
        finally:
            fetch.close()


class _DayFetch:
    """One fetch of a day (or a re-check's questions about it): its page machinery — politeness, retries, the
    request deadline, the daily cap, every page archived before it is read — and the pages it got."""

    def __init__(
        self,
        config: MfdsClient,
        day: date,
        endpoint: Endpoint,
        archive: DayArchive,
        log: FetchLog,
        rng: random.Random,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.config = config  # the resource: its fields are the fetch's settings
        self.day = day
        self.endpoint = endpoint
        self.archive = archive
        self.redact = Redactor(config.service_key())
        key = config.query_key()
        if not key:
            raise MissingServiceKey(
                "MFDS_SERVICE_KEY가 설정되지 않았습니다 — 실제 API를 쓰려면 공공데이터포털 서비스 키를 프로젝트 폴더의 .env "
                "(MFDS_SERVICE_KEY=...) 또는 환경 변수에 넣으세요. / MFDS_SERVICE_KEY is not set: put the data.go.kr "
                "service key in .env or the environment (the emulator needs none)."
            )
        self._key = key  # the query string's, and nowhere else
        self.client = http_client or config.http_client()
        self._owns_client = http_client is None  # a client given by the caller is closed by the caller
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

    def close(self) -> None:
        if self._owns_client:
            self.client.close()

    # -- resume ---------------------------------------------------------------------------------

    def reusable_pages(self, published: Manifest | None) -> dict[int, _Page]:
        """Good pages of an interrupted fetch (working dir) or of a published failed one."""
        candidates = [(self.archive.partial_manifest(), self.archive.work_dir)]
        if published and published.status == "failed":
            candidates.append((published, self.archive.day_dir))
        for manifest, directory in candidates:
            if not manifest or manifest.status not in ("running", "failed"):
                continue
            if manifest.num_of_rows != self.config.num_of_rows or manifest.request.get("url") != self.endpoint.url:
                continue
            pages = {
                a.entry.page_no: _Page.archived(a, reused=True)
                for a in read_pages(directory, manifest.pages, parse_page)
                if a.entry.ok and a.error is None  # a page that does not read back is fetched again
            }
            if len({p.entry.total_count for p in pages.values() if not p.entry.nodata}) > 1:
                continue  # the interrupted fetch saw the registry change: reuse nothing
            if pages:
                self.reused_from = str(directory.name)
                self.archive.begin(keep=[(directory, p.entry.file) for p in pages.values() if p.entry.file])
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

    def _sorted_pages(self) -> list[_Page]:
        return [p for _, p in sorted(self.pages.items())]

    def _total_counts(self) -> list[int]:
        return [p.entry.total_count for p in self._sorted_pages() if p.entry.total_count is not None]

    def _get(self, page_no: int, reusable: dict[int, _Page], *, beyond_total: bool = False) -> _Page:
        """Page `page_no`, reused or fetched; `beyond_total`: past the pages totalCount promises, where NODATA
        ends the list. The running manifest is written once per MANIFEST_EVERY_PAGES pages (rewriting it after
        every page grows as pages², and a crash costs at most that many pages asked again)."""
        page = reusable.get(page_no) or self.fetch_page(page_no, nodata_is_empty=beyond_total)
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
        first = self._get(1, reusable).entry
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
            if page.entry.ok:
                failed_in_a_row = 0
                if page.entry.total_count != total:
                    return "total_count_changed"
                empty_in_a_row = 0 if page.entry.rows else empty_in_a_row + 1
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
        return self._beyond_total(n_pages, per_page, total, reusable)

    def _beyond_total(self, n_pages: int, per_page: int, total: int, reusable: dict[int, _Page]) -> str:
        """A deflated totalCount must not hide rows: keep going while the last page was full."""
        last, extra = self.pages[n_pages].entry, 0
        while last.ok and last.rows >= per_page and extra < MAX_EXTRA_PAGES:
            extra += 1
            last = self._get(n_pages + extra, reusable, beyond_total=True).entry
            if last.ok and not last.nodata and last.total_count != total:
                return "total_count_changed"
        if last.ok and last.rows >= per_page and extra >= MAX_EXTRA_PAGES:
            self.problems.append(f"extra_page_cap: still full pages after {MAX_EXTRA_PAGES} pages beyond totalCount")
        if extra:
            self.log.info(
                "%s: %d page(s) beyond ceil(totalCount/numOfRows) fetched (last page was full)", self.day, extra
            )
        return "done"

    # -- one page: send, decode + scrub + archive, read the answer --------------------------------

    def fetch_page(
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
        page = _Page(PageEntry(page_no))
        params: dict[str, str | int] = {
            "serviceKey": self._key,
            "pageNo": page_no,
            "numOfRows": num_of_rows or self.config.num_of_rows,
            "type": "json",
            **(query or {}),
        }
        headers = self.config.request_headers(self.day)
        retry_wait: float | None = 0.0
        for attempt in range(1, self.config.max_attempts + 1):
            self._attempt(page, attempt, retry_wait or 0.0)
            started = monotonic()
            try:
                status, resp_headers, raw = self._send(params, headers)
            except (_DeadlineExceeded, httpx.TransportError) as exc:
                self._failed_attempt(page, started, exc)
                retry_wait = self._backoff(page)
                continue
            body, undecodable = self._receive(page, started, status, resp_headers, raw, archive_no or page_no)
            if status != 200:
                retry_wait = self._http_error(page, status, resp_headers, body)
            else:
                retry_wait = self._read_answer(page, body, resp_headers, undecodable, nodata_is_empty)
            if retry_wait is None:
                break
        self._log_page(page)
        return page

    def _attempt(self, page: _Page, attempt: int, retry_wait: float) -> None:
        """Wait until the next request may start (spacing, pause, backoff), count it against the daily cap
        (RequestCapExceeded) and record it on the page."""
        wait = max(self.politeness.wait_s(monotonic()), retry_wait if attempt > 1 else 0.0)
        if wait > 0:
            sleep(wait)
        self.counter.take(self.endpoint.host, self.config.daily_request_cap, self.cap_day)
        rec: dict[str, Any] = {"attempt": attempt, "started_at": _now_iso(), "wait_s": round(wait, 3)}
        rec |= dict.fromkeys(("status", "bytes", "sha256", "elapsed_ms", "error", "retry_after_s"))  # as it goes
        page.update(attempts=(*page.entry.attempts, rec))
        self.requests += 1
        self.retries += attempt > 1

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
                        if len(raw) > MAX_PAGE_BYTES:  # `_receive` refuses it; what was read is archived
                            del raw[MAX_PAGE_BYTES + 1 :]
                            break
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

    def _receive(
        self, page: _Page, started: float, status: int, headers: httpx.Headers, raw: bytes, no: int
    ) -> tuple[bytes, MalformedPage | None]:
        """The answer's body — its Content-Encoding undone (as received when it cannot be: the error comes back
        beside it), scrubbed of the service key and archived as page `no` before anything reads it."""
        elapsed = monotonic() - started
        self._answered_by(headers)
        try:
            if len(raw) > MAX_PAGE_BYTES:  # `_send` stopped reading there
                raise MalformedPage(
                    f"본문이 너무 큽니다 — {_MAX_PAGE_MB} MB를 넘어 더 읽지 않았습니다(1,000행인 쪽도 약 0.4 MB) / the "
                    f"body is over {_MAX_PAGE_MB} MB: reading stopped"
                )
            body, undecodable = _decoded(raw, headers.get("content-encoding")), None
        except MalformedPage as exc:
            body, undecodable = raw[:MAX_PAGE_BYTES], exc  # archived as it was received (as far as it was read)
        body = self.redact.scrub_bytes(body)  # the one chokepoint: a server may echo the key
        rec = page.attempt
        rec.update(status=status, bytes=len(body), sha256=sha256_hex(body), elapsed_ms=round(elapsed * 1000, 1))
        # Archive before parsing: whatever came back is kept, even if it cannot be read.
        name = self.archive.write_page(no, body, body_format(body, headers.get("content-type")))
        page.update(
            file=name, sha256=rec["sha256"], bytes=len(body), charset=named_charset(headers.get("content-type"))
        )
        self._observe(page, elapsed, status == 200)
        return body, undecodable

    def _http_error(self, page: _Page, status: int, headers: httpx.Headers, body: bytes) -> float | None:
        """A non-200 answer: the wait before asking again, or None (asking again will not help)."""
        retry_after = parse_retry_after(headers.get("retry-after"))
        page.attempt["retry_after_s"] = retry_after
        error = f"HTTP {status}"
        if len(body) <= 300 and "text/plain" in (headers.get("content-type") or ""):
            error += ": " + body.decode("utf-8", errors="replace").strip()  # e.g. a replay's date range
        error = self.redact(error)
        page.failed(error, "http_status")
        if status != 429 and status < 500:
            return None  # 4xx: asking again will not change the answer
        if retry_after is not None and retry_after > max(self.config.backoff_max_s, 60.0):
            page.failed(f"{error}; Retry-After {retry_after:g} s is too long to wait", "http_status")
            return None
        wait = max(self._backoff(page), retry_after or 0.0)
        self.log.info("%s page %d: %s, retrying in %.2f s", self.day, page.entry.page_no, error, wait)
        return wait

    def _read_answer(
        self, page: _Page, body: bytes, headers: httpx.Headers, undecodable: MalformedPage | None, nodata_is_empty: bool
    ) -> float | None:
        """A 200 answer parsed and its shape checked: the page's rows (returns None), or the wait before asking
        again (a malformed page, a passing API error), or None when asking again will not help."""
        try:
            parsed = _checked(body, headers.get("content-type"), undecodable)
        except GatewayError as exc:
            gateway = {"return_reason_code": exc.return_reason_code, "return_auth_msg": exc.return_auth_msg}
            page.failed(self.redact(str(exc)), "gateway", gateway_error={**gateway, "err_msg": exc.err_msg})
            page.fatal = True  # key/quota problems do not fix themselves within seconds
            self.log.warning("%s page %d: %s", self.day, page.entry.page_no, page.entry.error)
            return None
        except ApiResultError as exc:
            if exc.result_code == NODATA and nodata_is_empty:
                page.answered(None)
                return None
            page.failed(self.redact(str(exc)), "api_result")
            page.fatal = exc.result_code in FATAL_RESULT_CODES
            if page.fatal or not exc.transient or page.api_retried:
                return None
            page.api_retried = True
            return self._backoff(page)
        except MalformedPage as exc:
            shape = isinstance(exc, _WrongShape)
            page.failed(self.redact(str(exc) if shape else f"malformed page: {exc}"), "shape" if shape else "malformed")
            self.log.info("%s page %d: %s", self.day, page.entry.page_no, page.entry.error)
            return self._backoff(page)
        page.answered(parsed)
        return None

    def _log_page(self, page: _Page) -> None:
        """A line per page that needed more than one attempt or failed; a clean page only as progress — the
        first, then at most one every PROGRESS_EVERY_S (a real fetch of 19 pages at the polite pace takes
        ≈40 s; the per-page table is in the raw_pages materialization, and each log line is a stored
        Dagster event)."""
        e = page.entry
        clean = e.ok and len(e.attempts) == 1
        now = monotonic()
        if clean and e.page_no != 1 and now - self._progress_at < PROGRESS_EVERY_S:
            return
        self._progress_at = now
        level = self.log.info if e.ok else self.log.warning
        outcome = "ok" if e.ok else f"FAILED ({e.error})"
        level(
            "%s page %d: %s, %d rows, totalCount %s, %d attempt(s)",
            self.day,
            e.page_no,
            outcome,
            e.rows,
            e.total_count,
            len(e.attempts),
        )

    def _failed_attempt(self, page: _Page, started: float, exc: Exception) -> None:
        """A request that got no answer: a timeout (the request's deadline, or httpx's) or a connection error."""
        elapsed = monotonic() - started
        page.attempt["elapsed_ms"] = round(elapsed * 1000, 1)
        if isinstance(exc, _DeadlineExceeded):
            error, kind = str(exc), "timeout"
        elif isinstance(exc, httpx.TimeoutException):
            error, kind = f"timeout: {type(exc).__name__}", "timeout"
        else:
            error, kind = f"{type(exc).__name__}: {exc}", "connection"
        page.failed(self.redact(error), kind)
        self._observe(page, elapsed, ok=False)
        self.log.info(
            "%s page %d attempt %d: %s", self.day, page.entry.page_no, page.attempt["attempt"], page.entry.error
        )

    def _observe(self, page: _Page, elapsed: float, ok: bool) -> None:
        """The politeness adapts to the answer; a pause it starts is recorded on the attempt."""
        if self.politeness.observe(elapsed, ok):
            page.attempt["pause_after_s"] = round(self.politeness.pause_s, 3)

    def _answered_by(self, headers: Any) -> None:
        """The registry the server serves, from its first answer: another one than the folder holds is refused
        (SourceMismatch) before its body is archived."""
        if self.source_id is None:
            self.source_id = answered_by(self.endpoint, headers) or self.expected
            if self.held is not None:
                require_same(self.source_id, *self.held)

    def _backoff(self, page: _Page) -> float:
        """The wait before asking `page` again, after the attempts made so far."""
        return backoff_s(len(page.entry.attempts), self.config.backoff_base_s, self.config.backoff_max_s, self.rng)

    # -- the verdict ----------------------------------------------------------------------------

    def _verdict(self, outcome: str) -> tuple[Manifest, _Rows]:
        """The fetch's verdict — complete, incomplete (a short or unsure list) or failed (the transport) — written
        as its last manifest, and its rows."""
        pages = self._sorted_pages()
        rows = items, received, dropped = _assemble(pages)
        counts = self._total_counts()
        total = counts[0] if counts and len(set(counts)) == 1 else None
        transport_ok = bool(pages) and outcome not in ("failed", "cap") and all(p.entry.ok for p in pages)
        unsure = outcome != "done" or total is None or any(pr.startswith("extra_page_cap") for pr in self.problems)
        status = "failed" if not transport_ok else "incomplete" if unsure or len(items) != total else "complete"
        if status != "complete" and total is not None and len(items) != total:
            self.problems.append(f"rows_after_dedup {len(items)} != totalCount {total}")
        errors = [f"{p.entry.page_no}쪽(page {p.entry.page_no}): {p.entry.error}" for p in pages if not p.entry.ok]
        unexpected, missing = _field_drift(items)
        totals = {
            "pages": len(pages),
            "requests": self.requests,
            "retries": self.retries,
            "rows_received": received,
            "rows_after_dedup": len(items),
            "duplicate_rows_dropped": dropped,
            "total_count": total,
            "total_counts": counts,
            "transport_ok": transport_ok,
            "elapsed_s": round(monotonic() - self.t0, 3),
        }
        manifest = self._write_manifest(
            status,
            totals=totals,
            transport_errors=tuple(self.redact(e) for e in errors + self.transport_notes),
            problems=tuple(self.redact(p) for p in self.problems),
            unexpected_fields=tuple(unexpected),
            missing_fields=tuple(missing),
            stopped=self.stopped,
        )
        return manifest, rows

    def _finish(self, outcome: str, keep_published: bool) -> FetchResult:
        manifest, rows = self._verdict(outcome)
        status = manifest.status
        if keep_published and status != "complete":
            # Never replace a complete archive with a worse one: the new attempt stays in the
            # working directory for inspection; the published day is untouched.
            self.log.warning(
                "%s: re-fetch is %s; the complete archive is kept, the attempt is in %s",
                self.day,
                status,
                self.archive.work_dir,
            )
            archive_dir = self.archive.work_dir
        else:
            archive_dir = self.archive.publish()
        elapsed = monotonic() - self.t0
        result = FetchResult.of(
            self.day,
            manifest,
            self._sorted_pages(),
            rows,
            source=self.endpoint.kind,
            requests=self.requests,
            retries=self.retries,
            elapsed_s=elapsed,
            archive_dir=str(archive_dir),
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

    def _write_manifest(self, status: str, **verdict: Any) -> Manifest:
        """The manifest of the fetch so far (`verdict`: its totals etc. once it has stopped), written through the
        redactor."""
        self._unsaved = 0
        manifest = Manifest(
            schema_version=MANIFEST_SCHEMA,
            day=self.day.isoformat(),
            status=status,
            source=self.endpoint.kind,
            source_id=self.source_id or self.expected,
            request={
                "url": self.endpoint.url,
                "method": "GET",
                "params": {"pageNo": "<page>", "numOfRows": self.config.num_of_rows, "type": "json"},
                "headers": self.config.request_headers(self.day),
            },
            num_of_rows=self.config.num_of_rows,
            started_at=self.started_at,
            finished_at=_now_iso() if status != "running" else None,
            round=self.round,
            restarts=tuple(self.restarts),
            resumed_from=self.reused_from,
            politeness={
                "min_interval_s": self.politeness.base_s,
                "pause_s": round(self.politeness.pause_s, 3),
                "max_pause_s": round(self.politeness.max_pause_s, 3),
                "slowdowns": self.politeness.slowdowns,
                "slow_answer_threshold_s": self.politeness.slow_s,
            },
            pages=tuple(p.entry for p in self._sorted_pages()),
            extra=self.config.manifest_extra(self.day),
            **verdict,
        )
        self.archive.write_manifest(manifest, text_filter=self.redact)
        return manifest


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
    # fed to the decoder in pieces, so a compression bomb is stopped after at most one piece past the limit
    pieces = (raw[i : i + 64 * 1024] for i in range(0, len(raw), 64 * 1024))
    body = bytearray()
    try:
        for part in httpx.Response(200, headers={"Content-Encoding": content_encoding}, content=pieces).iter_bytes():
            body += part
            if len(body) > MAX_PAGE_BYTES:
                raise MalformedPage(
                    f"본문의 압축을 풀면 {_MAX_PAGE_MB} MB를 넘어 더 풀지 않았습니다(1,000행인 쪽도 약 0.4 MB) / the "
                    f"body decodes to over {_MAX_PAGE_MB} MB: decoding stopped"
                )
        return bytes(body)
    except httpx.DecodingError as exc:
        raise MalformedPage(
            f"본문을 풀 수 없습니다 — Content-Encoding {content_encoding}이라고 했지만 그렇게 압축된 본문이 아닙니다 "
            f"({exc}) / the body cannot be decoded as its Content-Encoding says"
        ) from None


def _checked(body: bytes, content_type: str | None, undecodable: MalformedPage | None) -> Page:
    """The page a 200 answer holds, if it can be read as Unicode text and has the day's shape; raises the parser's
    errors, or MalformedPage (`_WrongShape` for the shape)."""
    if undecodable is not None:
        raise undecodable
    parsed = parse_page(body, content_type)
    _check_values(parsed)
    problem = page_shape_problem(parsed)
    if problem is not None:
        raise _WrongShape(problem)
    return parsed


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_values(page: Page) -> None:
    """A value holding a lone surrogate (a JSON escape such as \\ud800 that encodes no character) is not text:
    the page cannot be read as Unicode (it could not be stored or shown), so it fails like a malformed one."""
    # one search over the page's names and values at once (every page is checked); the rows only when it finds one
    names = "".join(chain.from_iterable(page.items))
    values = "".join(chain.from_iterable(filter(None, item.values()) for item in page.items))
    if _LONE_SURROGATE.search(names) is None and _LONE_SURROGATE.search(values) is None:
        return
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
    carried = Counter(chain.from_iterable(page.items))  # how many items carry each name, in first-seen order
    writes_nulls = page.fmt == "json" and any(None in item.values() for item in page.items)
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


# --- replay --------------------------------------------------------------------------------------


def _replay(archive: DayArchive, manifest: Manifest, log: FetchLog) -> FetchResult:
    """Rebuild the FetchResult of a finished fetch from its archive, without any HTTP."""
    t0 = monotonic()
    directory = archive.day_dir
    pages: list[_Page] = []
    for archived in read_pages(directory, manifest.pages, parse_page):
        if isinstance(archived.error, ArchiveCorrupt):
            raise archived.error
        if archived.error is not None:
            raise ArchiveCorrupt(
                f"{directory.name}/{archived.entry.file}: recorded ok but unreadable: {archived.error}"
            )
        entry = archived.entry  # a failed page as recorded: its error, its attempts
        pages.append(_Page.archived(archived, reused=entry.reused) if entry.ok else _Page(entry))
    run = {"source": "archive", "requests": 0, "retries": 0, "elapsed_s": 0.0, "archive_dir": str(directory)}
    result = FetchResult.of(archive.day, manifest, pages, _assemble(pages), **run)
    totals = manifest.totals or {}
    recorded = (totals.get("rows_received"), totals.get("rows_after_dedup"))
    if totals and recorded != (result.rows_received, result.rows_after_dedup):
        raise ArchiveCorrupt(
            f"{directory.name}: archived pages give {result.rows_received}/{result.rows_after_dedup} rows, "
            f"manifest says {recorded[0]}/{recorded[1]}"
        )
    # gate 2 reads the manifest's totalCount: the archived bodies must say the same (a page and its count
    # removed from the manifest would otherwise prove a list one registration short complete)
    said = {p.entry.total_count or 0 for p in pages if p.entry.ok and not p.entry.nodata}
    if result.total_count is not None and said - {result.total_count}:
        raise ArchiveCorrupt(
            f"{directory.name}: archived pages say totalCount {', '.join(map(str, sorted(said)))}, "
            f"manifest says {result.total_count}"
        )
    log.info("%s: replayed from archive (%s, %d rows)", archive.day, manifest.status, result.rows_after_dedup)
    return dataclasses.replace(result, elapsed_s=monotonic() - t0)


def replay_archive(raw_dir: Path, day: date | str, log: FetchLog | None = None) -> FetchResult:
    """The day exactly as its published archive holds it — never a request, whatever the source (what `dmf
    rebuild` replays). Raises ArchiveCorrupt when there is no published archive or it is damaged, and
    FetchInProgress while a fetch of the day runs."""
    archive = DayArchive(Path(raw_dir), as_date(day))
    with archive.opened() as manifest:
        if manifest is None:
            raise ArchiveCorrupt(f"{archive.day_dir}: 보관된 수집본(manifest.json)이 없습니다 / no published archive")
        return _replay(archive, manifest, log or module_log)
