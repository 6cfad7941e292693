"""Asking the source again about the day's would-be withdrawals (what to ask and what the answers prove:
`domain.recheck`).

`recheck(client, day, queries)` answers each query from the day's archive when it was asked before —
a re-run of the day or `dmf rebuild` gets the same answer without a request — and otherwise, when `live`
and the source can still serve the day, asks it now with the fetch's own page machinery (politeness,
retries, the request deadline, the daily request cap, every page's checks) and archives the answer with
the day, like its pages (`replay_recheck`: from the archive only):

    raw_dir/YYYY-MM-DD/recheck/page-0001.json.gz …   every answer page, gzip'd, as received
    raw_dir/YYYY-MM-DD/recheck/manifest.json           query -> its pages, status, totalCount, rows

A query that cannot be asked any more (a replay, or the real API on a later day) has no answer.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dmf_assets.clock import today_kst
from dmf_assets.domain.recheck import Answer, Query
from dmf_assets.source.archive import MANIFEST, MANIFEST_SCHEMA, DayArchive, PageEntry, read_json, read_pages, record_of
from dmf_assets.source.endpoint import resolve_endpoint
from dmf_assets.source.envelope import parse_page
from dmf_assets.source.errors import MissingServiceKey, RequestCapExceeded
from dmf_assets.source.fetch import FetchLog, _DayFetch, _now_iso, _Page, as_date, module_log

if TYPE_CHECKING:
    from dmf_assets.source.client import MfdsClient

RECHECK_DIR = "recheck"
#: the archive schema from which a day's withdrawals are re-checked (older archives were accepted without)
RECHECK_SINCE_SCHEMA = 2
NO_ANSWER = "보관된 답이 없고 원천에 다시 물을 수 없습니다 (archive only, or a past day of the real API)"


@dataclass(frozen=True)
class RecheckAnswers:
    answers: dict[str, Answer]  # Query.key -> the answer
    requests: int  # sent now (0: every answer came from the archive)
    #: the day was archived before withdrawals were re-checked: its withdrawals were accepted unasked then, and a
    #: replay of it accepts them the same way (what `dmf rebuild` must reproduce)
    legacy: bool = False


@dataclass(frozen=True)
class FiledAnswer:
    """One query's answer as the re-check manifest records it (`queries[Query.key]`)."""

    params: Mapping[str, str] = field(default_factory=dict)
    status: str = "failed"  # "ok" | "failed"
    error: str | None = None
    total_count: int | None = None  # 0 for NODATA; None when the pages disagree
    rows: int = 0
    pages: tuple[PageEntry, ...] = ()

    @classmethod
    def of_json(cls, doc: Mapping[str, Any]) -> FiledAnswer:
        return record_of(
            cls, doc, pages=tuple(PageEntry.of_json(p) for p in doc.get("pages") or () if isinstance(p, dict))
        )

    @classmethod
    def of(cls, q: Query, pages: list[_Page]) -> FiledAnswer:
        answer = _answer(pages)
        rows, total = _received(pages)
        status = "ok" if answer.items is not None else "failed"
        return cls(q.params, status, answer.error or None, total, rows, tuple(p.entry for p in pages))

    def answer(self, directory: Path) -> Answer | None:
        """The archived answer read back; None when it was not a complete answer or its files do not read."""
        if self.status != "ok":
            return None
        items: list[dict] = []
        for archived in read_pages(directory, self.pages, parse_page):
            if archived.error is not None or not archived.entry.ok:
                return None
            items.extend(archived.parsed.items if archived.parsed else [])  # NODATA: no rows
        return Answer(items)


class _RecheckStore(DayArchive):
    """The answers of one day, inside its published archive: the same atomic page files and manifest as a
    fetch, published in one rename, under the day's own lock."""

    def __init__(self, day_archive: DayArchive) -> None:
        super().__init__(day_archive.raw_dir, day_archive.day)
        self.day_dir = day_archive.day_dir / RECHECK_DIR
        self.work_dir = day_archive.day_dir / f".{RECHECK_DIR}.partial"
        self._old_dir = day_archive.day_dir / f".{RECHECK_DIR}.old"

    def filed(self) -> dict[str, FiledAnswer]:
        """The answers archived so far, by query key."""
        queries = (read_json(self.day_dir / MANIFEST) or {}).get("queries")
        if not isinstance(queries, dict):
            return {}
        return {k: FiledAnswer.of_json(v) for k, v in queries.items() if isinstance(v, dict)}


def recheck(
    client: MfdsClient, day: date | str, queries: Sequence[Query], *, log: FetchLog | None = None
) -> RecheckAnswers:
    """Answer `queries` about `day`: archived answers replayed, the others asked now when the source can still
    serve the day (a replay can serve any day; the real API only today), then archived."""
    return _answered(client.raw_path(), as_date(day), queries, client, log or module_log)


def replay_recheck(raw_dir: Path, day: date | str, queries: Sequence[Query]) -> RecheckAnswers:
    """The archived answers to `queries` about `day`, never a request (what `dmf rebuild` replays)."""
    return _answered(Path(raw_dir), as_date(day), queries, None, module_log)


def _answered(
    raw_dir: Path, day: date, queries: Sequence[Query], client: MfdsClient | None, log: FetchLog
) -> RecheckAnswers:
    """The archived answers, and — with a `client` — the others asked now (`_ask`)."""
    archive = DayArchive(raw_dir, day)
    store = _RecheckStore(archive)
    with archive.opened() as published:
        store.recover()
        legacy = published is not None and published.schema_version < RECHECK_SINCE_SCHEMA
        filed = store.filed()
        answers: dict[str, Answer] = {}
        todo = []
        for q in queries:
            entry = filed.get(q.key)
            answer = entry.answer(store.day_dir) if entry else None
            if answer is None:
                todo.append(q)
            else:
                answers[q.key] = answer
        requests = 0
        if todo and client is not None and published is not None:
            requests = _ask(client, day, store, filed, todo, answers, log)
        for q in todo:
            answers.setdefault(q.key, Answer(None, NO_ANSWER))
    return RecheckAnswers(answers, requests, legacy)


def _ask(
    client: MfdsClient,
    day: date,
    store: _RecheckStore,
    filed: dict[str, FiledAnswer],
    todo: list[Query],
    answers: dict[str, Answer],
    log: FetchLog,
) -> int:
    """Ask the source `todo` while it can still serve the day (a replay can serve any day; the real API only
    today), archive the answers (with those filed before); returns the requests sent."""
    endpoint = resolve_endpoint(client.base_url)
    if not (endpoint.dated or day == today_kst()):
        return 0
    try:
        session = _DayFetch(client, day, endpoint, store, log, random.Random())
    except MissingServiceKey:
        return 0  # no key: nothing can be asked; the caller records no answer
    kept = [p.file for entry in filed.values() for p in entry.pages if p.file]
    store.begin(keep=[(store.day_dir, name) for name in kept])
    next_no = 1 + max((int(name[5:9]) for name in kept), default=0)  # page-NNNN.json.gz
    try:
        for q in todo:
            try:
                pages = _ask_one(session, q, next_no)
            except RequestCapExceeded as exc:
                answers[q.key] = Answer(None, session.redact(str(exc)))
                break
            next_no += len(pages)
            filed[q.key] = FiledAnswer.of(q, pages)
            answers[q.key] = _answer(pages)
            log.info("%s: 목록에서 삭제 확인 %s — %s", day, q.key, filed[q.key].status)
    finally:
        session.close()
        manifest = {
            "schema_version": MANIFEST_SCHEMA,
            "day": day.isoformat(),
            "request": {"url": endpoint.url, "headers": client.request_headers(day)},
            "asked_at": _now_iso(),
            "queries": filed,
        }
        store.write_manifest(manifest, text_filter=session.redact)
        store.publish()
    return session.requests


def _ask_one(session: _DayFetch, q: Query, first_no: int) -> list[_Page]:
    """Every page of one query's answer (NODATA = no rows), stopping at a failed page."""
    per_page = session.config.num_of_rows
    first = session.fetch_page(1, query=q.params, archive_no=first_no, nodata_is_empty=True)
    pages = [first]
    if first.entry.ok and not first.entry.nodata:
        n_pages = math.ceil(int(first.entry.total_count or 0) / (first.entry.num_of_rows or per_page))
        for page_no in range(2, n_pages + 1):
            page = session.fetch_page(page_no, query=q.params, archive_no=first_no + page_no - 1)
            pages.append(page)
            if not page.entry.ok:
                break
    return pages


def _received(pages: list[_Page]) -> tuple[int, int | None]:
    """(rows received, the consistent totalCount — 0 for NODATA, None when the pages disagree)."""
    totals = {0 if p.entry.nodata else p.entry.total_count for p in pages}
    return sum(p.entry.rows for p in pages), (totals.pop() if len(totals) == 1 else None)


def _answer(pages: list[_Page]) -> Answer:
    failed = next((p for p in pages if not p.entry.ok), None)
    if failed is not None:
        return Answer(None, f"{failed.entry.page_no}쪽: {failed.entry.error}")
    _, total = _received(pages)
    items = [row for p in pages for row in p.items]
    distinct = len({tuple(sorted(row.items())) for row in items})
    if total is None or distinct != total:
        return Answer(None, f"답이 완전하지 않습니다: {distinct:,}건 / totalCount {total} (incomplete answer)")
    return Answer(items)
