"""What each page of 「DMF 조회」 shows, read from the history database — no Starlette here.

Every read goes through one `Reader`: a brief read-only connection (`storage.db.read_only_database`: the lock
shared, waited for at most a moment, then `DatabaseBusy`), closed before the page is rendered. What was read is
remembered while the database files are unchanged (their inode, size and modification time — a commit, a
checkpoint, a rebuild or a restore changes one of them), so a repeated search costs no database open and a
run writing meanwhile is not held up.

The figures are the product's own: a day's headline counts are its `DaySummary` (report/summary.py, as in the
workbook and the mail),
the workbook's aggregates (sql/queries/report.sql), one registration's history (`analyst.queries`), the registry
as of a day (`storage.registry.registry_asof`), matching keys (`domain.text`) for search and for counting
manufacturers.
"""

from __future__ import annotations

import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import duckdb
import polars as pl

from dmf_assets.analyst import queries as analyst
from dmf_assets.domain.countries import canonical_country
from dmf_assets.domain.gates import GATE_BY_NUMBER, reason_for_the_team
from dmf_assets.domain.model import EVENT_LABEL_KO, FIELD_LABEL_KO, DayStatus
from dmf_assets.domain.text import company_key_expr, display_expr, match_key
from dmf_assets.report.day_data import DayNotReady, build_day_report, day_summary
from dmf_assets.report.model import AGGREGATES, DayReport
from dmf_assets.report.rows import EXPORT_COLUMNS, ledger_frame
from dmf_assets.report.summary import COMPANY_KINDS, EVENT_KIND_LABEL_KO, HEADLINE_KINDS, DaySummary
from dmf_assets.settings import Settings
from dmf_assets.storage import history, registry, reports
from dmf_assets.storage import web as storage
from dmf_assets.storage.db import read_only_database
from dmf_assets.storage.history import ACCEPTED_STATUSES

T = TypeVar("T")
#: a manufacturer as the page counts them (by site)
MANUFACTURER = COMPANY_KINDS["manufacturer"]
#: the last day any date arithmetic of the page reaches (the analyst queries' own upper bound)
LAST_DAY = date(9999, 12, 31)
PAGE_SIZE = 50
TOP_N = 10
#: answers kept while the database is unchanged: whole registries (the latest day's, and an as_of day's or
#: two), and small answers (pages of one day or registration)
REMEMBER_BIG = 3
REMEMBER = 64


class Reader:
    """The page's one way to the history database (see the module's docstring)."""

    def __init__(self, database: Path, *, wait_s: float = 2.0) -> None:
        self.database = Path(database)
        self.wait_s = wait_s
        # a whole registry (megabytes) is kept apart from the small answers, so many of those never push it out
        self._memory: dict[bool, OrderedDict[tuple, Any]] = {True: OrderedDict(), False: OrderedDict()}
        self._lock = threading.Lock()

    def _stamp(self) -> tuple:
        """What changes whenever DuckDB writes: the database file's and its WAL's identity, size and time."""
        parts: list[tuple[int, int, int] | None] = []
        for path in (self.database, self.database.with_name(self.database.name + ".wal")):
            try:
                st = path.stat()
                parts.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                parts.append(None)
        return tuple(parts)

    def read(self, key: Hashable, build: Callable[[duckdb.DuckDBPyConnection], T], *, big: bool = False) -> T:
        """`build(conn)` on a brief read-only connection — or what it returned last time for `key`, while the
        database files are unchanged (`big`: a whole registry, of which only a few are kept). Raises
        FileNotFoundError (no database yet), DatabaseBusy, DatabaseOutdated, DatabaseDamaged."""
        stamp = self._stamp()
        memory = self._memory[big]
        with self._lock:
            if (stamp, key) in memory:
                memory.move_to_end((stamp, key))
                return memory[(stamp, key)]
        with read_only_database(self.database, wait_s=self.wait_s) as conn:
            value = build(conn)
        with self._lock:
            memory[(stamp, key)] = value
            while len(memory) > (REMEMBER_BIG if big else REMEMBER):
                memory.popitem(last=False)
        return value


def latest_accepted(conn: duckdb.DuckDBPyConnection) -> date | None:
    return storage.last_day_with_status(conn, ACCEPTED_STATUSES)


# --- / : the registry today -------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranked:
    label: str
    registrations: int
    query: dict[str, str] | None  # the search that lists exactly them (None: a row of registrations without the value)


class Top(NamedTuple):
    title: str
    rows: tuple[Ranked, ...]


@dataclass(frozen=True)
class Home:
    latest: date | None  # the latest accepted day
    base_day: date | None
    figures: tuple[tuple[str, int], ...]  # 신규 · 변경 · 목록에서 삭제 · 번호 부여, the runs row's
    cosmetic: int
    totals: tuple[tuple[str, int], ...]  # registrations, applicants, manufacturers, countries (by matching keys)
    tops: tuple[Top, ...]
    last_day: date | None  # the latest day any run recorded, and what became of it
    last_status: str | None
    rejected_day: date | None
    rejected_reason: str | None
    rejected_gate: str | None
    rejected_covered: bool = True  # an accepted day came before it: a later comparison covers its changes


def headline_figures(summary: DaySummary) -> tuple[tuple[str, int], ...]:
    """신규 · 변경 · 목록에서 삭제 · 번호 부여 · 번호 변경 of a day — its `DaySummary`, the workbook's and the mail's
    figures (the page spells the event names out: it has the room)."""
    return tuple(
        (EVENT_LABEL_KO.get(kind, EVENT_KIND_LABEL_KO[kind]), summary.by_kind.get(kind, 0)) for kind in HEADLINE_KINDS
    )


def _site_keys(sites: pl.DataFrame) -> pl.DataFrame:
    """(record_id, name, key): each site's name with its company matching key — how the page tells manufacturers
    apart, in the home's counts and in the search for one manufacturer's registrations alike."""
    keyed = sites.with_columns(key=company_key_expr(display_expr(pl.col("name"))))
    return keyed.filter(pl.col("key").is_not_null())


def _manufacturers(sites: pl.DataFrame) -> pl.DataFrame:
    """(key, label, registrations) per manufacturer, told apart by the company matching key of each site's name."""
    return (
        _site_keys(sites)
        .group_by("key")
        .agg(label=pl.col("name").mode().sort().first(), registrations=pl.col("record_id").n_unique())
        .sort(["registrations", "label"], descending=[True, False])
    )


def _top(title: str, rows: list[tuple[str, int, str | None]], field: str) -> Top:
    """The first TOP_N (label, registrations, group key) rows, each with the search for exactly its registrations."""

    def search(key: str | None) -> dict[str, str] | None:
        group: dict[str, Any] = {field: key}
        return SearchQuery(**group).params() if key else None

    return Top(title, tuple(Ranked(label, n, search(key)) for label, n, key in rows[:TOP_N]))


def home(conn: duckdb.DuckDBPyConnection) -> Home:
    latest = latest_accepted(conn)
    span = storage.processed_span(conn)
    last_day = span[1] if span else None
    last_run = history.run_row(conn, last_day) if last_day else None
    rejected = storage.last_day_with_status(conn, (DayStatus.REJECTED.value,))
    rejected_run = history.run_row(conn, rejected) if rejected else None
    last_status = last_run["status"] if last_run else None
    gate = GATE_BY_NUMBER.get(rejected_run["rejected_gate"]) if rejected_run else None
    title = gate.title if gate else None
    # the rejected day in the team's words (the gate's observed value is on the day's page)
    why = reason_for_the_team(rejected_run["rejected_gate"], rejected_run["reason"]) if rejected_run else None
    covered = rejected_run is None or rejected_run["base_day_id"] is not None  # an accepted day came before it
    if latest is None:
        return Home(latest, None, (), 0, (), (), last_day, last_status, rejected, why, title, covered)
    run = history.run_row(conn, latest)
    assert run is not None  # the day was just found in runs
    summary = day_summary(conn, latest)
    assert summary is not None  # an accepted day has its figures
    d = history.day_id(latest)
    sites = _site_names(storage.day_sites(conn, latest))
    manufacturers = _manufacturers(sites).select("label", "registrations", "key").rows()
    # each list, and the search that lists exactly a row's registrations, by what the row counts by (the
    # manufacturers' after the applicants')
    ranked = [
        (
            a.label_ko,
            [(r["label"], r["registrations"], r["group_key"]) for r in reports.aggregate_rows(conn, a.statement, d)],
            a.group_search,
        )
        for a in AGGREGATES
    ]
    ranked.insert(2, (MANUFACTURER, manufacturers, "manufacturer_key"))
    return Home(
        latest=latest,
        base_day=history.to_date(run["base_day_id"]),
        figures=headline_figures(summary),
        cosmetic=summary.cosmetic,
        totals=(("등록", run["population"] or 0), *((label, len(rows)) for label, rows, _ in ranked[1:])),
        tops=tuple(_top(label, rows, field) for label, rows, field in ranked),
        last_day=last_day,
        last_status=last_status,
        rejected_day=rejected,
        rejected_reason=why,
        rejected_gate=title,
        rejected_covered=covered,
    )


# --- /search ---------------------------------------------------------------------------------------

#: sort key -> (label, columns, descending)
SORTS: dict[str, tuple[str, tuple[str, ...], bool]] = {
    "permit": ("등록번호순", ("permit_no", "dmf_key"), False),
    "ingredient": ("성분명순", ("ingredient", "permit_no"), False),
    "applicant": (f"{FIELD_LABEL_KO['applicant']}순", ("applicant", "permit_no"), False),
    "issued": ("발급일자 최신순", ("issue_date", "permit_no"), True),
    "first_seen": ("최초 관측 최신순", ("first_seen", "permit_no"), True),
    "changed": ("최근 실질 변경 최신순", ("last_changed", "permit_no"), True),
}


#: the query string's names of the fields it names otherwise, and the values a link leaves out
PARAM_NAMES = {
    "issued_from": "from",
    "issued_to": "to",
    "ingredient_base": "ingredient",
    "applicant_group": "applicant_id",
    "manufacturer_key": "manufacturer",
}
_PARAM_DEFAULTS: dict[str, object] = {"sort": "permit", "page": 1}


#: the fields that limit a search to one row of the home's lists (as that row counts)
GROUP_FIELDS = ("ingredient_base", "applicant_group", "manufacturer_key")


@dataclass(frozen=True)
class SearchQuery:
    """One search, as the form and its links carry it (every value checked by the route)."""

    q: str = ""
    country: str = ""
    applicant: str = ""
    target_class: str = ""
    issued_from: date | None = None
    issued_to: date | None = None
    cohort: str = ""
    as_of: date | None = None
    sort: str = "permit"
    page: int = 1
    # one row of the home's lists, exactly as it counts (a link carries them; the form keeps them)
    ingredient_base: str = ""  # this 기준명
    applicant_group: str = ""  # this applicant: its 사업자등록번호, else its matching key
    manufacturer_key: str = ""  # a site of this manufacturer (its company matching key)

    def params(self, **changes: object) -> dict[str, str]:
        """The query string of this search (with `changes`), empty and default values left out."""
        values = {PARAM_NAMES.get(k, k): v for k, v in {**asdict(self), **changes}.items()}
        return {k: str(v) for k, v in values.items() if v not in ("", None) and _PARAM_DEFAULTS.get(k) != v}

    @property
    def is_empty(self) -> bool:
        filters = (self.q, self.country, self.applicant, self.target_class, self.issued_from, self.issued_to)
        return not any((*filters, self.cohort, *self.groups))

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(getattr(self, field) for field in GROUP_FIELDS)

    def ungrouped(self) -> dict[str, str]:
        """The query string of this search without its row of the home's lists (the link that lifts it)."""
        return self.params(page="", **dict.fromkeys(GROUP_FIELDS, ""))


@dataclass(frozen=True)
class Registry:
    """The registry as of an accepted day, with the columns search compares (kept in the reader's memory)."""

    day: date
    frame: pl.DataFrame
    countries: tuple[str, ...]  # the canonical countries listed that day, for the filter


def registry_of(conn: duckdb.DuckDBPyConnection, day: date | None) -> Registry:
    """The registry as accepted on `day` (None: the latest accepted day). Raises registry.NoHistory."""
    accepted, frame = registry.registry_asof(conn, day or LAST_DAY)
    frame = frame.with_columns(
        permit_compact=pl.col("permit_no").str.replace_all(analyst.NOT_COMPACT, ""),
        applicant_group=pl.coalesce("bizrno", "applicant_key"),  # as the applicants are counted (report.by_applicant)
    )
    makers = _site_keys(_site_names(frame)).group_by("record_id").agg(manufacturer_keys=pl.col("key").unique())
    frame = frame.join(makers, on="record_id", how="left")
    countries = frame.select(pl.col("country_list").explode().drop_nulls().unique().sort()).to_series().to_list()
    return Registry(accepted, frame, tuple(countries))


def _site_names(frame: pl.DataFrame) -> pl.DataFrame:
    """(record_id, name): the manufacturers of each registration as the page counts them — each site's name, the
    whole field when no site was split out — from its `sites` and `manufacturer` (the home's day, the registry)."""
    return frame.select(
        "record_id",
        name=pl.when(pl.col("sites").list.len() > 0)
        .then(pl.col("sites").list.eval(pl.element().struct.field("name")))
        .otherwise(pl.concat_list("manufacturer")),
    ).explode("name")


def _most_common(names: pl.Series) -> str | None:
    """The spelling a group is named by, as the home's lists name it (the most common one, the first of a tie)."""
    names = names.drop_nulls()
    return names.mode().sort().first() if names.len() else None  # type: ignore[return-value]


def scope(registry_: Registry, sq: SearchQuery) -> tuple[str, ...]:
    """The rows of the home's lists a search is limited to, as those lists name them (「성분 (기준명) 이부프로펜」)."""
    frame, said = registry_.frame, []
    if sq.ingredient_base:
        title = next(a.label_ko for a in AGGREGATES if a.group_search == "ingredient_base")
        said.append(f"{title} {sq.ingredient_base}")
    if sq.applicant_group:
        names = frame.filter(pl.col("applicant_group") == sq.applicant_group)["applicant"]
        said.append(f"{FIELD_LABEL_KO['applicant']} {_most_common(names) or sq.applicant_group}")
    if sq.manufacturer_key:
        holding = frame.filter(pl.col("manufacturer_keys").list.contains(sq.manufacturer_key).fill_null(False))
        names = _site_keys(_site_names(holding)).filter(pl.col("key") == sq.manufacturer_key)["name"]
        said.append(f"{MANUFACTURER} {_most_common(names) or sq.manufacturer_key}")
    return tuple(said)


#: the text fields the search box finds by their company key (`matching`: column `<field>_key`)
_KEYED_FIELDS = ("ingredient", "applicant", "manufacturer")
#: what the search box looks in (`matching`), named by the box's hint: the number (its compact form), the keyed
#: text fields and the countries (their canonical names)
SEARCHED_FIELDS = ("permit_no", *_KEYED_FIELDS, "countries")


def _anywhere(text: str) -> pl.Expr:
    """`text` in the number, ingredient, applicant or manufacturer by their matching keys, or as a country. The company
    key is the text key without legal forms (or the text key when nothing else is left) — so "아세트 아미노펜 ㈜" looks
    for what "아세트아미노펜" does, and "(주)삼오 제약" for "삼오제약"."""
    key = match_key(text, "company")
    either = [pl.col(f"{field}_key").str.contains(key, literal=True).fill_null(False) for field in _KEYED_FIELDS if key]
    if compact := analyst.compact_key(text):
        either.append(pl.col("permit_compact").str.contains(compact, literal=True).fill_null(False))
    if country := canonical_country(text):
        either.append(pl.col("country_list").list.contains(country).fill_null(False))
    return pl.any_horizontal(either) if either else pl.lit(False)


def box_words(text: str) -> tuple[str, ...]:
    """The words of the box that say something on their own: a legal form or a dash typed apart is none."""
    return tuple(word for word in text.split() if match_key(f"x {word}", "company") != "x")


def matching(frame: pl.DataFrame, sq: SearchQuery) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """The registrations the search finds, and the words the box was looked for by (none: as one phrase). The box is
    looked for as typed, spacing aside (「이부 프로펜」 finds 이부프로펜); when nothing holds it so and it has several
    words, each word anywhere in a registration (「인도 이부프로펜」: ibuprofen made in India). Then the filters."""
    filters = _filters(sq)
    words: tuple[str, ...] = ()
    if sq.q:
        found = frame.filter(pl.all_horizontal([_anywhere(sq.q), *filters]))
        if found.is_empty() and len(typed := box_words(sq.q)) > 1:
            words = typed
            found = frame.filter(pl.all_horizontal([*(_anywhere(word) for word in words), *filters]))
    else:
        found = frame.filter(pl.all_horizontal(filters)) if filters else frame
    _, columns, descending = SORTS[sq.sort]
    return found.sort(list(columns), descending=descending, nulls_last=True), words


def _filters(sq: SearchQuery) -> list[pl.Expr]:
    conditions: list[pl.Expr] = []
    if sq.country:
        conditions.append(pl.col("country_list").list.contains(sq.country).fill_null(False))
    if sq.applicant:
        key = match_key(sq.applicant, "company") or ""
        conditions.append(pl.col("applicant_key").str.contains(key, literal=True).fill_null(False))
    if sq.target_class:
        conditions.append(pl.col("target_class") == sq.target_class)
    if sq.issued_from:
        conditions.append(pl.col("issue_date") >= sq.issued_from.isoformat())
    if sq.issued_to:
        conditions.append(pl.col("issue_date") <= sq.issued_to.isoformat())
    if sq.cohort:
        conditions.append(pl.col("cohort") == sq.cohort)
    if sq.ingredient_base:
        conditions.append(pl.col("ingredient_base") == sq.ingredient_base)
    if sq.applicant_group:
        conditions.append(pl.col("applicant_group") == sq.applicant_group)
    if sq.manufacturer_key:
        conditions.append(pl.col("manufacturer_keys").list.contains(sq.manufacturer_key).fill_null(False))
    return conditions


@dataclass(frozen=True)
class SearchResult:
    day: date  # the accepted day searched
    total: int
    rows: tuple[dict[str, Any], ...]  # this page's, with the ledger's display columns
    page: int
    pages: int
    countries: tuple[str, ...]
    scope: tuple[str, ...] = ()  # the rows of the home's lists the search is limited to (`scope`)
    words: tuple[str, ...] = ()  # the box found nothing as one phrase: these words were looked for one by one
    number_listed: bool = False  # a row found is listed under the number the box names (any spelling)


def search(registry_: Registry, sq: SearchQuery) -> SearchResult:
    found, words = matching(registry_.frame, sq)
    asked = analyst.normalize_key(sq.q) if sq.q else None
    listed = bool(asked) and not found.filter((pl.col("permit_no") == asked) | (pl.col("dmf_key") == asked)).is_empty()
    pages = max(1, -(-found.height // PAGE_SIZE))
    page = min(sq.page, pages)
    shown = ledger_frame(found.slice((page - 1) * PAGE_SIZE, PAGE_SIZE))
    return SearchResult(
        registry_.day,
        found.height,
        tuple(shown.to_dicts()),
        page,
        pages,
        registry_.countries,
        scope(registry_, sq),
        words,
        listed,
    )


def export_frame(registry_: Registry, sq: SearchQuery) -> pl.DataFrame:
    """Every registration the search finds, with the ledger's display columns (CSV and XLSX)."""
    return ledger_frame(matching(registry_.frame, sq)[0]).select([c.key for c in EXPORT_COLUMNS])


# --- /dmf/{key} ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Registration:
    key: str  # as asked
    history: analyst.RegistrationHistory
    latest: date | None  # the latest accepted day
    current: dict[str, Any]  # the values of the version listed last
    addresses: tuple[str, ...]  # its sites' addresses, one per site (() when the field is shown as written)
    listed_now: bool
    last_listed: date | None
    derived: tuple[tuple[str, str], ...] = ()  # (permit_no, applicant) of grants whose original this is
    cohort_size: int = 0
    keys: tuple[str, ...] = ()


def looks_like_a_number(text: str) -> bool:
    """A registration number or key as people type one: four digits in a row (「20181108-31-C-280-78」, 「수30-90-ND」
    has none: its registration is found by the box itself), or 'SYN-…'."""
    return bool(re.search(r"[0-9]{4}", text)) or text.strip().upper().startswith(analyst.SYNTHETIC_PREFIX)


def number_in_history(conn: duckdb.DuckDBPyConnection, text: str, day: date) -> str | None:
    """What became of the registration a number names (any spelling, '…#2', 'SYN-…'), as its page's list of periods
    says it last — 「2026-12-04부터 …-283-78로 이어짐 (등록번호 변경)」, 「목록에서 삭제: …」 — or None when the history
    knows no such number, or lists it on `day` (the day searched) all the same."""
    ids = analyst.find_records(conn, text)
    if not ids:
        return None
    spans = analyst.registration_history(conn, ids).spans
    asked = analyst.normalize_key(text)
    own = [s for s in spans if s.dmf_key == asked] or list(spans)
    if any(s.listed and s.first_day <= day <= s.last_day for s in own):
        return None
    return max(own, key=lambda s: s.last_day).text if own else None


def registration(conn: duckdb.DuckDBPyConnection, key: str, registry_: Registry | None) -> Registration | None:
    """One registration: found like `dmf history KEY` (any spelling of the number, '…#2', 'SYN-…'); None if unknown."""
    ids = analyst.find_records(conn, key)
    if not ids:
        return None
    hist = analyst.registration_history(conn, ids)
    latest = latest_accepted(conn)
    # a number asked as such also finds the other rows listed under it ('…#2': other registrations): what the page
    # calls this registration is the one that number names, never a sibling that was listed last
    asked = analyst.normalize_key(key)
    siblings = re.compile(re.escape(asked) + r"#+[0-9]+") if "#" not in asked else None
    listed = [
        s for s in hist.spans if s.version_no is not None and not (siblings and siblings.fullmatch(s.dmf_key))
    ] or [s for s in hist.spans if s.version_no is not None]
    last = max(listed, key=lambda s: s.last_day, default=None)
    versions: dict[tuple[str, int | None], analyst.HistoryVersion] = {
        (v.dmf_key, v.version_no): v for v in hist.versions
    }
    shown = versions.get((last.dmf_key, last.version_no)) if last else None
    version = shown or (hist.versions[-1] if hist.versions else None)
    current = version.values if version else {}
    derived: tuple[tuple[str, str], ...] = ()
    cohort_size = 0
    if registry_ is not None:
        frame = registry_.frame
        if current.get("permit_no"):
            grants = frame.filter(pl.col("base_permit_no") == current["permit_no"]).sort("permit_no")
            derived = tuple(
                (r["permit_no"], r["applicant"] or "") for r in grants.select("permit_no", "applicant").to_dicts()
            )
        if current.get("cohort"):
            cohort_size = frame.filter(pl.col("cohort") == current["cohort"]).height
    return Registration(
        key=key,
        history=hist,
        latest=latest,
        current=current,
        addresses=version.addresses if version else (),
        listed_now=bool(last and latest and last.last_day == latest),
        last_listed=last.last_day if last else None,
        derived=derived,
        cohort_size=cohort_size,
        keys=tuple(dict.fromkeys(v.dmf_key for v in hist.versions)),
    )


# --- /day/{D} and /days ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Day:
    day: date
    status: str | None  # the runs row's status; None: no run that day
    report: DayReport | None  # None while not judged and committed (or never run)
    covered: bool = True  # not run: an accepted day came before it, so a later comparison covers its changes


def day_page(conn: duckdb.DuckDBPyConnection, day: date, settings: Settings) -> Day:
    run = history.run_row(conn, day)
    if run is None:
        first = registry.first_accepted_day(conn)
        return Day(day, None, None, covered=first is not None and first < day)
    try:
        report = build_day_report(conn, day, settings)
    except DayNotReady:
        report = None
    return Day(day, run["status"], report)


@dataclass(frozen=True)
class Month:
    first: date
    weeks: tuple[tuple[tuple[date, str | None] | None, ...], ...]  # Sunday first; None = outside the month

    @property
    def title(self) -> str:
        return f"{self.first.year}년 {self.first.month}월"


@dataclass(frozen=True)
class Calendar:
    months: tuple[Month, ...]  # newest first
    counts: dict[str, int]  # status -> days (and "not run")


def calendar(conn: duckdb.DuckDBPyConnection, today: date) -> Calendar:
    """Every month from the first processed day to `today`: each day accepted, baseline, rejected, judged only —
    or not run (no row in runs)."""
    span = storage.processed_span(conn)
    if span is None:
        return Calendar((), {})
    first, last = span[0].replace(day=1), max(span[1], today)
    statuses = {
        history.to_date(r[0]): r[1] for r in reports.period_runs(conn, history.day_id(first), history.day_id(last))
    }
    months = []
    start = first
    while start <= last:
        nxt = (start.replace(day=28) + timedelta(days=4)).replace(day=1)
        cells: list[tuple[date, str | None] | None] = [None] * ((start.weekday() + 1) % 7)
        d = start
        while d < nxt:
            cells.append((d, statuses.get(d, DayStatus.NOT_RUN.value if span[0] <= d <= last else None)))
            d += timedelta(days=1)
        cells += [None] * (-len(cells) % 7)
        months.append(Month(start, tuple(tuple(cells[i : i + 7]) for i in range(0, len(cells), 7))))
        start = nxt
    counts = Counter(cell[1] for m in months for week in m.weeks for cell in week if cell and cell[1])
    return Calendar(tuple(reversed(months)), dict(counts))
