"""Issue 31: one figure, everywhere — and every figure an analyst reads is in analyst words.

A real `dmf backfill` of ten emulator days (2026-11-16 … 11-25) with 11-21 refused by gate 2 (a short page),
in a subprocess on a temporary project, as a user runs it (the one test_web reads: run once, each module reads
its own copy). Then, for every day, the day's `DaySummary` (read from the database with
`report.day_data.day_summary`) is checked against the database itself (the `events` rows, the `runs` counts), and
every figure of every sheet of that day's workbook, the CLI's per-day line and table, and the Dagster UI's metadata
(events, snapshot_diff, xlsx_report) is checked against the summary: withdrawals are in 요약's severity breakdown,
a number assignment (번호 부여) is never counted as a 실질 변경, 업체별 counts the day's events once. Then the
analyst sheets of the real workbooks are scanned for English words, config keys, internal keys and unfilled
particles.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from dmf_assets.domain.model import (
    EVENT_LABEL_KO,
    NUMBER_ASSIGNED_LABEL_KO,
    NUMBER_CHANGED_LABEL_KO,
    SEVERITY_LABEL_KO,
    WITHDRAWN_FIRST_MENTION_KO,
    DayStatus,
)
from dmf_assets.korean import display_width, josa
from dmf_assets.report.day_data import day_summary
from dmf_assets.report.model import (
    SHEET_BY_APPLICANT,
    SHEET_EVENTS,
    SHEET_FIELDS,
    SHEET_LEDGER,
    SHEET_META,
    SHEET_NAMES,
    SHEET_NEW_WITHDRAWN,
    SHEET_QUALITY,
    SHEET_RECENT,
    SHEET_SUMMARY,
)
from dmf_assets.report.summary import CHANGE_KIND_LABEL_KO, EVENT_KIND_LABEL_KO, HEADLINE_SEVERITIES, DaySummary
from dmf_assets.report.workbook import KPI_LABELS, NOT_REFLECTED
from dmf_assets.storage import history
from dmf_assets.storage.db import open_database
from dmf_assets_tests.project_support import TEN_DAYS, TEN_DAYS_REJECTED, ten_days_one_short
from dmf_assets_tests.workbook_reader import hidden_columns, sheet_values, table_rows

pytestmark = pytest.mark.slow

DAYS, REJECTED = TEN_DAYS, TEN_DAYS_REJECTED
#: the sheets an analyst reads (메타 and 품질 are the administrator's: setup, API words, run ids)
ANALYST_SHEETS = tuple(name for name in SHEET_NAMES if name not in (SHEET_META, SHEET_QUALITY))


class Backfill:
    def __init__(self, root: Path, stdout: str):
        self.root, self.stdout = root, stdout
        self.database = root / "data" / "database"  # every folder named after its setting
        self.reports = root / "data" / "reports_dir"
        with open_database(self.database, purpose="test") as conn:
            self.summaries: dict[date, DaySummary] = {d: s for d in DAYS if (s := day_summary(conn, d)) is not None}
            self.runs = {d: history.run_row(conn, d) for d in DAYS}

    def workbook(self, day: date) -> Path:
        return self.reports / f"DMF_리포트_{day.isoformat()}.xlsx"

    def sql(self, statement: str, params: list | None = None) -> list[tuple]:
        with open_database(self.database, purpose="test") as conn:
            return conn.execute(statement, params or []).fetchall()


@pytest.fixture(scope="module")
def backfill(tmp_path_factory) -> Backfill:
    done = ten_days_one_short(tmp_path_factory)  # the backfill test_web reads: built once, each module a copy
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]  # one day rejected by a gate
    return Backfill(done.root, done.stdout)


def test_the_backfill_has_the_days_the_issue_needs(backfill):
    s = backfill.summaries
    assert set(s) == set(DAYS) and s[REJECTED].status is DayStatus.REJECTED
    assert s[DAYS[0]].status is DayStatus.BASELINE
    accepted = [x for x in s.values() if x.status is DayStatus.ACCEPTED]
    # a withdrawal, a number assignment, a site added, a cosmetic change and a multi-site registration happened
    assert sum(x.withdrawn for x in accepted) and sum(x.number_assigned for x in accepted)
    assert sum(x.cosmetic for x in accepted) and any(x.manufacturers > x.applicants for x in accepted)


def test_the_summary_is_what_the_database_holds(backfill):
    """Each day's summary against the raw `events` rows and the `runs` row written in the same transaction."""
    for day, s in backfill.summaries.items():
        d = history.day_id(day)
        kinds = backfill.sql(
            "SELECT CASE WHEN is_cosmetic THEN 'COSMETIC' WHEN event_type = 'CHANGED' AND number_assigned "
            "THEN 'NUMBER_ASSIGNED' WHEN event_type = 'CHANGED' AND number_changed THEN 'NUMBER_CHANGED' "
            "ELSE event_type END, severity, count(*) FROM events WHERE day_id = ? GROUP BY ALL",
            [d],
        )
        assert dict(s.by_kind_severity) == {(k, sev): n for k, sev, n in kinds}, day
        by_severity: Counter[str] = Counter()
        for k, sev, n in kinds:
            by_severity[sev] += n if k != "COSMETIC" else 0
        by_severity += Counter()  # (zeros dropped)
        assert dict(s.by_severity) == dict(by_severity) and sum(by_severity.values()) == s.headline_events, day
        rows = dict(
            backfill.sql(
                "SELECT CASE WHEN c.is_cosmetic THEN 'COSMETIC' WHEN c.field <> 'permit_no' THEN 'SUBSTANTIVE' "
                "WHEN e.number_changed THEN 'NUMBER_CHANGED' ELSE 'NUMBER_ASSIGNED' END, count(*) "
                "FROM event_changes c JOIN events e USING (event_id) WHERE c.day_id = ? GROUP BY ALL",
                [d],
            )
        )
        assert dict(s.field_rows) == rows, day
        run = backfill.runs[day]
        assert (s.received, s.total_count) == (run["rows_received"], run["total_count"]), day
        if s.is_rejected:
            assert s.events == 0 and s.registry_size is None and run["population"] is None
            assert s.base_registry_size == backfill.runs[s.comparison_base]["population"]
            continue
        assert s.registry_size == run["population"], day
        assert (s.new, s.changed, s.withdrawn, s.number_assigned, s.number_changed, s.cosmetic) == (
            run["new_count"],
            # the stored count holds the number assignments and changes
            run["changed_count"] - run["assigned_count"] - run["renumbered_count"],
            run["withdrawn_count"],
            run["assigned_count"],
            run["renumbered_count"],
            run["cosmetic_count"],
        ), day


def _kpis(rows: list[list]) -> dict[str, object]:
    labels = {v: k for k, v in KPI_LABELS.items()}
    return {labels[r[0]]: r[1] for r in rows if r and r[0] in labels}


def test_every_sheet_says_the_summarys_figures(backfill):
    for day, s in backfill.summaries.items():
        book = backfill.workbook(day)
        summary = sheet_values(book, SHEET_SUMMARY)
        banner = summary[0][0]
        kpis = _kpis(summary)
        assert kpis["registry_size"] == s.shown_registry_size, day
        if s.is_rejected:
            # the rejected day says what it received and the base's registry, apart
            assert s.rejection_text in banner and kpis["received"] == s.received == 9_183, day
            assert f"받은 목록 {s.received:,}건" in banner and f"등록 {s.base_registry_size:,}건" in banner
            assert all(v == "미반영" for k, v in kpis.items() if k not in ("registry_size", "received")), kpis
            for name in (SHEET_EVENTS, SHEET_FIELDS, SHEET_NEW_WITHDRAWN):  # nothing applied: no table at all
                rows = sheet_values(book, name)
                assert NOT_REFLECTED in rows[2][0] and not any(r and r[0] in ("심각도", "구분") for r in rows)
            continue
        if s.status is DayStatus.BASELINE:
            assert all(v == "해당 없음" for k, v in kpis.items() if k not in ("registry_size", "product_hits")), kpis
            continue
        figures = {
            "new": s.new,
            "changed": s.changed,
            "withdrawn": s.withdrawn,
            "number_assigned": s.number_assigned,
            "reappeared": s.reappeared,
            "headline_events": s.headline_events,
            "cosmetic": s.cosmetic,
            "watchlist_hits": s.watchlist_hits,
            **{f"severity_{sev}": s.by_severity.get(sev, 0) for sev in HEADLINE_SEVERITIES},
        }
        assert {k: kpis[k] for k in figures} == figures, day
        if s.status is DayStatus.ACCEPTED:
            assert s.counts_text in banner, day
        else:
            assert banner.startswith("변경 없음 — ") and not s.events, day
        trend = {r["날짜"]: r for r in table_rows(summary, "날짜")}[day.isoformat()]
        headers = [EVENT_KIND_LABEL_KO[k] for k in ("NEW", "CHANGED", "WITHDRAWN", "NUMBER_ASSIGNED", "COSMETIC")]
        assert [trend[h] for h in headers] == [
            s.new,
            s.changed,
            s.withdrawn,
            s.number_assigned,
            s.cosmetic,
        ], day
        if s.headline_events:
            heading = next(r[0] for r in summary if r and str(r[0]).startswith("주요 이벤트 "))
            assert heading.startswith(f"주요 이벤트 {s.headline_events:,}건 ({s.counts_text})"), day
        _events_sheet(book, s)
        _fields_sheet(book, s)
        _new_withdrawn_sheet(book, s)
        _company_sheet(book, s)
        recent = table_rows(sheet_values(book, SHEET_RECENT), "관측일")
        assert sum(1 for r in recent if r["관측일"] == day.isoformat()) == s.events, day


def _events_sheet(book: Path, s: DaySummary) -> None:
    rows = sheet_values(book, SHEET_EVENTS)
    if s.headline_events:
        assert f"이벤트 {s.headline_events:,}건 ({s.counts_text}; {s.severity_text})" in rows[2][0], rows[2][0]
    table = table_rows(rows, "심각도")
    assert len(table) == s.headline_events
    labels = {v: k for k, v in SEVERITY_LABEL_KO.items()}
    assert Counter(labels[r["심각도"]] for r in table) == Counter(dict(s.by_severity))
    kinds = Counter(r["이벤트"] for r in table)
    assert (
        kinds
        == Counter(
            {
                EVENT_LABEL_KO["NEW"]: s.new,
                EVENT_LABEL_KO["WITHDRAWN"]: s.withdrawn,
                EVENT_LABEL_KO["CHANGED"]: s.changed,
                # CHANGED events too, counted apart from 변경: each has its own name, so a reader who counts the
                # 이벤트 column gets the headline's figures
                NUMBER_ASSIGNED_LABEL_KO: s.number_assigned,
                NUMBER_CHANGED_LABEL_KO: s.number_changed,
            }
        )
        - Counter()
    )  # (zeros dropped)
    # … and the number assignments are flagged as such, never as a 실질 변경
    assert sum(EVENT_KIND_LABEL_KO["NUMBER_ASSIGNED"] in (r["표시"] or "") for r in table) == s.number_assigned


def _fields_sheet(book: Path, s: DaySummary) -> None:
    rows = sheet_values(book, SHEET_FIELDS)
    note = rows[2][0]
    for kind, label in CHANGE_KIND_LABEL_KO.items():
        if s.status is DayStatus.ACCEPTED:  # an unchanged day's note says there was nothing
            assert f"{label} {s.field_rows.get(kind, 0):,}행" in note, (kind, note)
    table = table_rows(rows, "심각도")
    by_kind = Counter(r["구분"] for r in table)
    assert (
        by_kind
        == Counter({label: s.field_rows.get(kind, 0) for kind, label in CHANGE_KIND_LABEL_KO.items()}) - Counter()
    )
    # a number event's 등록번호 row is 번호 부여 or 번호 변경, never among the 실질 변경 rows (issue 31)
    numbers = (CHANGE_KIND_LABEL_KO["NUMBER_ASSIGNED"], CHANGE_KIND_LABEL_KO["NUMBER_CHANGED"])
    assert all(r["구분"] in numbers for r in table if r["항목"] == "등록번호")


def _new_withdrawn_sheet(book: Path, s: DaySummary) -> None:
    rows = sheet_values(book, SHEET_NEW_WITHDRAWN)
    new, gone = EVENT_KIND_LABEL_KO["NEW"], WITHDRAWN_FIRST_MENTION_KO
    if s.new or s.withdrawn:
        assert f"{new} {s.new:,}건, {gone} {s.withdrawn:,}건" in rows[2][0]
    table = table_rows(rows, "구분")
    listed = Counter({EVENT_LABEL_KO["NEW"]: s.new, EVENT_LABEL_KO["WITHDRAWN"]: s.withdrawn})
    assert Counter(r["구분"] for r in table) == listed - Counter()


def _company_sheet(book: Path, s: DaySummary) -> None:
    """업체별: 「신청인별 (N곳, M건)」 and 「제조소별 (N곳, M건)」 — M is the day's events, each counted once
    (issue 31: 「제조소별 (9곳, 9건)」 on a day of 7 events); N the companies listed."""
    rows = sheet_values(book, SHEET_BY_APPLICANT)
    if not s.headline_events:
        return
    for kind, companies in (("신청인", s.applicants), ("제조소", s.manufacturers)):
        at = next(i for i, r in enumerate(rows) if r and str(r[0]).startswith(f"오늘의 이벤트 — {kind}별"))
        assert rows[at][0].startswith(f"오늘의 이벤트 — {kind}별 ({companies:,}곳, {s.headline_events:,}건)"), rows[at]
        listed = table_rows(rows, "심각도", start=at)
        assert len({r[kind] for r in listed}) == companies
        if kind == "신청인":  # an event has one applicant: one row per event
            assert len(listed) == s.headline_events


def test_a_number_assignment_is_no_substantive_change_on_the_ledger(backfill):
    """전체현황's 최근 실질 변경일 and 변경 횟수 leave a number assignment out (issue 31: a registration whose
    only event was getting its number had a 「최근 실질 변경일」)."""
    checked = 0
    for day, s in backfill.summaries.items():
        if not s.number_assigned:
            continue
        numbered = backfill.sql(
            "SELECT e.permit_no, (SELECT count(*) FROM events x WHERE x.record_id = e.record_id AND x.event_type = "
            "'CHANGED' AND NOT x.is_cosmetic AND NOT x.number_assigned AND x.day_id <= ?) FROM events e "
            "WHERE e.day_id = ? AND e.number_assigned",
            [history.day_id(day), history.day_id(day)],
        )
        rows = table_rows(sheet_values(backfill.workbook(day), SHEET_LEDGER), "등록번호")
        assert len(rows) == s.registry_size
        ledger = {r["등록번호"]: r for r in rows}
        for permit_no, substantive in numbered:
            row = ledger[permit_no]
            assert row["변경 횟수"] == substantive, row
            if substantive == 0:
                assert row["최근 실질 변경일"] is None, row
                checked += 1
    assert checked >= 1


def test_meta_says_no_commit_time_for_a_day_that_committed_nothing(backfill):
    for day, s in backfill.summaries.items():
        rows = [r for r in sheet_values(backfill.workbook(day), SHEET_META) if len(r) >= 3]
        meta = {r[1]: r[2] for r in rows if r[0] == "실행 정보"}
        assert meta["받은 건수"] == f"{s.received:,}", day
        if s.is_rejected:
            assert meta["반영 시각"] == "반영하지 않음 (거부된 날)"
        else:
            assert re.match(r"\d{4}-\d{2}-\d{2}", str(meta["반영 시각"])), meta
        # the definitions never call a number assignment a change (issue 31: 「한 건의 변경」)
        texts = [str(r[2]) for r in rows if r[1] == "번호 부여"]
        assert texts and not any("한 건의 변경" in t for t in texts)


def test_the_cli_line_and_table_say_the_summarys_figures(backfill):
    """What `dmf backfill` printed, per day: the line as it ran and the table at the end."""
    lines = {
        date.fromisoformat(m[1]): m[2]
        for m in re.finditer(r"^  (\d{4}-\d{2}-\d{2}) +[\d.]+s  (.*)$", backfill.stdout, re.M)
    }
    table = {
        date.fromisoformat(m[1]): m[2].split()
        for m in re.finditer(r"^(\d{4}-\d{2}-\d{2})  (.*)$", backfill.stdout, re.M)
    }
    assert set(lines) == set(table) == set(DAYS)
    # the table gives the figures in the order its day lines give them: a reader going from one to the other
    # finds 표기 last in both
    header = next(line for line in backfill.stdout.splitlines() if line.startswith("날짜 "))
    columns = header.split("  비고")[0].replace("등록 수", "등록").split()[2:]
    named = {"번호 부여": "번호", "번호 변경": "번호변경"}
    for line in lines.values():
        said = [
            named.get(label, label)
            for label in re.findall(r"(등록|신규|변경|삭제|번호 부여|번호 변경|표기) [\d,]+", line)
        ]
        assert said == [c for c in columns if c in said], (line, header)
    for day, s in backfill.summaries.items():
        if s.is_rejected:  # nothing was compared: its reason, and no figure, never a 0
            assert lines[day].startswith(f"{s.status.word_ko} — ")
            assert table[day][1:8] == ["-"] * 7, table[day]
            continue
        assert lines[day].startswith(
            f"{s.status.word_ko} · 등록 {s.registry_size:,} · {s.counts_text} · 표기 {s.cosmetic}"
        )
        # 날짜 판정 등록 수 신규 변경 삭제 번호 번호변경 표기, then the note (a status word may hold a space)
        row = table[day]
        assert " ".join(row).startswith(s.status.word_ko)
        numbers = [int(v.replace(",", "")) for v in row if re.fullmatch(r"[\d,]+", v)]
        assert numbers[:7] == [
            s.registry_size,
            s.new,
            s.changed,
            s.withdrawn,
            s.number_assigned,
            s.number_changed,
            s.cosmetic,
        ], row


def test_the_cli_table_lines_up_in_a_terminal(backfill):
    """Each figure ends in the column its header ends in, counting a Hangul syllable as two terminal columns
    (「변경 없음」 is wider than 「반영」)."""

    def ends(line: str, token: str) -> list[int]:
        return [display_width(line[: m.end()]) for m in re.finditer(token, line)][:7]

    header = next(line for line in backfill.stdout.splitlines() if line.startswith("날짜 "))
    expected = ends(header, r"등록 수|번호변경|번호|신규|변경|표기|삭제")
    assert len(expected) == 7, header
    rows = re.findall(r"^\d{4}-\d{2}-\d{2}  .*$", backfill.stdout, re.M)
    assert len(rows) == len(DAYS)
    for row in rows:
        assert ends(row, r"(?<= )([\d,]+|-)(?= |$)") == expected, (row, header)


def test_the_dagster_metadata_says_the_summarys_figures_and_korean_statuses(backfill):
    instance = dg.DagsterInstance.from_config(str(backfill.root / "dagster_home"))

    def metadata(asset: str, day: date) -> dict:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[day.isoformat()]), limit=1
        ).records
        return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}

    for day, s in backfill.summaries.items():
        figures = {
            "new": s.new,
            "changed": s.changed,
            "withdrawn": s.withdrawn,
            "number_assigned": s.number_assigned,
            "number_changed": s.number_changed,
            "cosmetic": s.cosmetic,
        }
        for asset in ("events", "snapshot_diff", "xlsx_report"):
            assert metadata(asset, day)["status"] == s.status.label_ko_en, (asset, day)
        events, diff = metadata("events", day), metadata("snapshot_diff", day)
        # the UI renders these as Markdown: a line of a lone "-" or "*" would be an empty bullet, not a word
        for text in (events["summary"], events["preview"]):
            assert text.strip() and not any(re.fullmatch(r"\s*[-*+]\s*", line) for line in text.splitlines()), day
        if s.is_rejected:  # nothing was compared: no figure at all, as the workbook leaves them blank — never a 0
            totals = {*figures, "headline_events", "cosmetic_events", "by_severity"}
            assert not totals & set(events) and not totals & set(diff), (day, events, diff)
        else:
            assert {k: events[k] for k in figures} == figures == {k: diff[k] for k in figures}, day
            assert (events["headline_events"], events["cosmetic_events"]) == (s.headline_events, s.cosmetic)
            assert events["by_severity"] == s.severity_text
        report = metadata("xlsx_report", day)["summary"]
        if s.is_rejected:
            assert f"| {s.received:,} | {s.total_count:,} | {s.base_registry_size:,} |" in report
        else:
            assert (
                f"| {s.registry_size:,} | {s.new:,} | {s.changed:,} | {s.withdrawn:,} | {s.number_assigned:,} | "
                f"{s.number_changed:,} | {s.reappeared:,} |" in report
            )
    assert metadata("events", REJECTED)["status"] == "거부 (rejected)"
    assert {metadata("xlsx_report", d)["status"] for d in DAYS} >= {
        "거부 (rejected)",
        "변경 없음 (unchanged)",
        "반영 (accepted)",
    }


def test_every_table_the_dagster_ui_shows_writes_its_counts_as_the_product_does(backfill):
    """The tables of the runs' metadata (each asset's and each check's, on every day): a count of 1,000 or more has its
    thousands separator, as in the sentence beside it (「9,206건」) — never a bare 9206."""
    instance = dg.DagsterInstance.from_config(str(backfill.root / "dagster_home"))
    tables, bare = 0, []
    for record in instance.get_run_records():
        for entry in instance.all_logs(record.dagster_run.run_id):
            data = entry.dagster_event.event_specific_data if entry.dagster_event else None
            # a materialization carries its metadata on the event; a check evaluation on the data itself
            metadata = getattr(getattr(data, "materialization", data), "metadata", None) or {}
            for key, value in metadata.items():
                text = str(getattr(value, "value", value))
                rows = [line for line in text.splitlines() if line.startswith("| ") and line.endswith(" |")]
                tables += bool(rows)
                bare += [
                    (key, cell) for row in rows for cell in row[2:-2].split(" | ") if re.fullmatch(r"\d{4,}", cell)
                ]
    assert tables > 50 and not bare, bare[:10]


# --- analyst words --------------------------------------------------------------------------------

#: open particles, English run words, config keys: none may be on an analyst's sheet. Two Latin words are the
#: reader's own terms: DMF (the registry, 「원료의약품 등록(DMF)」) and KST (the time zone of every time shown)
OPEN_PARTICLES = ("이(가)", "가(이)", "을(를)", "를(을)", "은(는)", "는(은)", "와(과)", "과(와)", "(으)로")
ENGLISH_WORD = re.compile(r"[A-Za-z]{2,}")
CONFIG_KEY = re.compile(r"\[[a-z_]+(\.[a-z_]+)?\]|\b[a-z]+_[a-z_]+\b")


def _data_words(backfill: Backfill) -> set[str]:
    """Every Latin word of the registry's own values (names, addresses, numbers): the data an analyst reads."""
    values = backfill.sql(
        "SELECT DISTINCT unnest([ingredient, applicant, manufacturer, address, countries, permit_no, target_class, "
        "issue_date]) FROM record_versions"
    )
    return {w for (v,) in values if v for w in ENGLISH_WORD.findall(v)}


def test_analyst_sheets_hold_no_english_word_config_key_internal_key_or_open_particle(backfill):
    data = _data_words(backfill)
    found: list[tuple] = []
    for day in (DAYS[0], date(2026, 11, 19), date(2026, 11, 20), REJECTED, date(2026, 11, 23), date(2026, 11, 24)):
        book = backfill.workbook(day)
        for name in ANALYST_SHEETS:
            hidden = hidden_columns(book, name)
            for r, row in enumerate(sheet_values(book, name, max_row=400 if name == SHEET_LEDGER else None), 1):
                for c, value in enumerate(row, 1):
                    if not isinstance(value, str) or c in hidden or value == "성분 검색":
                        continue
                    words = set(ENGLISH_WORD.findall(value)) - data - {"DMF", "KST"}
                    bad = (
                        words
                        or "SYN-" in value
                        or CONFIG_KEY.search(value)
                        or any(p in value for p in OPEN_PARTICLES)
                        or value in ("관리 키", "이전 관리 키")
                        or "코호트" in value
                    )
                    if bad:
                        found.append((day.isoformat(), name, r, c, words or value[:120]))
    assert not found, found[:20]


def test_the_sentences_the_issue_quotes_now_read_as_korean(backfill):
    """A site added, a number assignment, a registration without a number, countries named once."""
    summary = {d: sheet_values(backfill.workbook(d), SHEET_SUMMARY) for d in (date(2026, 11, 19), date(2026, 11, 23))}
    texts = [str(v) for rows in summary.values() for r in rows for v in r if isinstance(v, str)]
    added = [t for t in texts if t.endswith("추가되었습니다.")]
    assert added and all(re.search(r"에 [가-힣]+ 제조소 .+[이가] 추가되었습니다\.$", t) for t in added), added
    assert not any("제조소(추가" in t or "((" in t or "인도,인도" in t or "인도, 인도" in t for t in texts)
    unnumbered = [t for t in texts if "등록번호 없음" in t]
    assert unnumbered and all("제조소 " in t and "SYN" not in t for t in unnumbered), unnumbered
    assert josa("2026-12-04", "과/와").endswith("와")


def test_stored_counts_that_disagree_with_the_events_are_said_on_meta(backfill, tmp_path):
    """The `runs` counts are written with the events in one transaction; if they ever disagree, the workbook shows
    what the events say and 메타 names the difference — never two figures for one thing without a word."""
    import shutil

    from dmf_assets.report.day_data import build_day_report
    from dmf_assets.settings import load_settings

    copy = tmp_path / "dmf.duckdb"
    shutil.copy(backfill.database, copy)
    day = date(2026, 11, 25)
    with open_database(copy, purpose="test") as conn:
        conn.execute("UPDATE runs SET new_count = new_count + 7 WHERE day_id = ?", [history.day_id(day)])
        report = build_day_report(conn, day, load_settings())
    s = backfill.summaries[day]
    assert report.summary == s  # the figures are the events'
    said = report.run_info["저장된 건수"]
    assert said.startswith(f"실행 기록의 건수(신규 {s.new + 7:,} · ") and f"이벤트로 센 건수({s.counts_text}" in said
