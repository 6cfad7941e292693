"""Issue 23: the workbook an analyst forwards as it is, and a history asked in one line.

One history, built like `dmf backfill` leaves it (the storage layer's own commits, `histories.py`):
ten emulator days 2026-11-16 … 11-25 with 11-24 rejected and the weekend quiet. Its newest workbook
(11-25, whose comparison covers the rejected day) is read back cell by cell: 요약 says its events as the
mail's sentences, its counts agree with each other, the mail and the UI, the change rate is in words, the
trend's status column holds words, 이력 counts its days from the runs, every date is a date and every
value fits its column. `dmf history` is asked through the real CLI.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import subprocess
import sys
from dataclasses import replace
from datetime import date, datetime, timedelta

import pytest
from openpyxl import load_workbook

from dmf_assets.notify import messages
from dmf_assets.report.cells import _display_width
from dmf_assets.report.day_data import build_day_report, build_period_report
from dmf_assets.report.model import (
    SHEET_BY_APPLICANT,
    SHEET_EVENTS,
    SHEET_LEDGER,
    SHEET_META,
    SHEET_RECENT,
    SHEET_SUMMARY,
)
from dmf_assets.report.nedrug import NEDRUG_LINK_TEXT
from dmf_assets.report.period_workbook import write_period_workbook
from dmf_assets.report.summary import headline_text
from dmf_assets.report.workbook import KPI_LABELS, write_workbook
from dmf_assets.settings import PROJECT_ROOT, load_settings
from dmf_assets.storage import history
from dmf_assets.storage.db import open_database
from dmf_assets_tests.histories import build_emulated_history, commit_items

DAYS = [date(2026, 11, 16) + timedelta(days=i) for i in range(10)]
REJECTED, QUIET, NEWEST = date(2026, 11, 24), date(2026, 11, 22), DAYS[-1]
ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    root = tmp_path_factory.mktemp("forwardable")
    database = build_emulated_history(root / "dmf.duckdb", DAYS, (REJECTED,))
    settings = load_settings()
    with open_database(database) as conn:
        reports = {d: build_day_report(conn, d, settings) for d in (NEWEST, REJECTED, QUIET)}
        runs = {d: history.run_row(conn, d) for d in DAYS}
        period = build_period_report(conn, DAYS[0], NEWEST, settings)
    paths = {d: write_workbook(r, root / "reports").path for d, r in reports.items()}
    period_path = write_period_workbook(period, root / "period.xlsx")
    # read back whole (styles, widths, merges) with 전체현황 cut to 300 of its 9.2 k rows: the same column
    # rules and the same streamed path (≥ 200 rows), without five seconds of parsing the rest
    cut = replace(reports[NEWEST], ledger=reports[NEWEST].ledger.head(300))
    whole = load_workbook(write_workbook(cut, root / "cut").path)
    return database, reports, runs, paths, whole, load_workbook(period_path)


def _texts(ws) -> list[str]:
    return [c.value for row in ws.iter_rows() for c in row if isinstance(c.value, str)]


def _section_rows(ws, heading: str) -> list[tuple]:
    """The rows under a 요약 section heading, up to the next heading (a bold navy SECTION cell)."""
    rows = list(ws.iter_rows())
    start = next(i for i, r in enumerate(rows) if isinstance(r[0].value, str) and r[0].value.startswith(heading))
    out = []
    for r in rows[start + 1 :]:
        if r[0].style == "dmf_section":
            break
        out.append(tuple(c.value for c in r))
    return out


def test_the_backfill_has_its_rejected_and_its_quiet_day(books):
    _, reports, runs, *_ = books
    assert runs[REJECTED]["status"] == "rejected" and runs[NEWEST]["base_day_id"] == history.day_id(
        REJECTED - timedelta(1)
    )
    assert runs[QUIET]["status"] == "accepted" and not any(
        runs[QUIET][k] for k in ("new_count", "changed_count", "withdrawn_count", "cosmetic_count")
    )
    assert reports[NEWEST].summary.number_assigned >= 1  # the newest day names a number assignment apart


def test_the_copy_read_back_whole_has_the_newest_workbooks_summary(books):
    *_, paths, wb, _ = books
    newest = load_workbook(paths[NEWEST], read_only=True)[SHEET_SUMMARY]
    assert [r for r in newest.iter_rows(values_only=True) if r[0] != "생성 시각 (KST)"] == [
        r for r in wb[SHEET_SUMMARY].iter_rows(values_only=True) if r[0] != "생성 시각 (KST)"
    ]


def test_summary_tells_the_events_as_sentences_without_scientific_notation(books):
    _, reports, _, _, wb, _ = books
    summary = wb[SHEET_SUMMARY]
    texts = _texts(summary)
    for bad in ("e-0", "e+0", "-0.0", "λ", "이(가)", "을(를)", "과(와)", "은(는)"):
        assert not any(bad in t for t in texts), bad
    events = [row[1] for row in _section_rows(summary, "주요 이벤트") if row[1]]
    assert len([t for t in events if t.endswith("습니다.")]) >= 3, events
    # a change says what it became: 「…의 신청인이 A에서 B로 바뀌었습니다」, never 「신청인(A → B)이」 (brackets nest)
    assert any(re.search(r"[이가] .+에서 .+로 바뀌었습니다\.$", t) for t in events), events
    assert not any("→" in t or "((" in t for t in events), events
    rate = next(row[1] for row in summary.iter_rows(values_only=True) if row[0] == "변경률")
    assert re.fullmatch(
        r"최근 14일 하루 평균 \d+\.\d건 변경 — 평소\(전체 기간\)의 \d+\.\d배 \(전체 기간 하루 평균 \d+\.\d건\)", rate
    )
    # the same sentences as the morning mail
    report = reports[NEWEST]
    mail = messages.ReportDelivery.from_day_report(report, None, top=15)
    assert [s.full_text for s in mail.sentences] == events


def test_counts_agree_on_the_page_in_the_mail_and_with_the_stored_events(books):
    _, reports, runs, _, wb, _ = books
    report, run, summary = reports[NEWEST], runs[NEWEST], wb[SHEET_SUMMARY]
    kpi = {row[0]: row[1] for row in summary.iter_rows(values_only=True) if row[0] in KPI_LABELS.values()}
    changed = sum(e.is_substantive_change for e in report.events)
    assigned = sum(e.number_assigned for e in report.events)
    assert (kpi[KPI_LABELS["changed"]], kpi[KPI_LABELS["number_assigned"]]) == (changed, assigned)
    renumbered = sum(e.number_changed for e in report.events)
    assert changed + assigned + renumbered == run["changed_count"]  # the stored count holds all three
    counts = headline_text(
        new=kpi[KPI_LABELS["new"]],
        changed=changed,
        withdrawn=kpi[KPI_LABELS["withdrawn"]],
        number_assigned=assigned,
        number_changed=renumbered,
    )
    assert counts in summary["A1"].value
    heading = next(v for v in _texts(summary) if v.startswith("주요 이벤트"))
    assert heading.startswith(f"주요 이벤트 {len(report.headline_events):,}건 ({counts})")
    gate6 = next(row[4] for row in wb["품질"].iter_rows(values_only=True) if row[2] == "변동률 (churn)")
    assert gate6.startswith(counts)
    trend = _trend(summary)
    assert [trend[NEWEST][k] for k in ("신규", "변경", "삭제", "번호 부여")] == [
        report.summary.new,
        changed,
        report.summary.withdrawn,
        assigned,
    ]
    mail = messages.ReportDelivery.from_day_report(report, None)
    assert counts in messages.report_subject(mail)
    assert counts in messages.compose_report(mail, messages.MessageContext(emulator=True)).title


def _trend(summary) -> dict[date, dict]:
    rows = list(summary.iter_rows(values_only=True))
    top = next(i for i, r in enumerate(rows) if r[:2] == ("날짜", "상태"))
    header = rows[top]
    out = {}
    for r in rows[top + 1 :]:
        if not isinstance(r[0], datetime):
            break
        out[r[0].date()] = dict(zip(header, r, strict=True))
    return out


def test_trend_status_is_a_word_and_history_counts_its_days_from_the_runs(books):
    _database, reports, runs, _, wb, _ = books
    trend = _trend(wb[SHEET_SUMMARY])
    assert set(trend) == set(DAYS)
    assert all(isinstance(row["상태"], str) for row in trend.values())
    assert trend[REJECTED]["상태"] == "거부" and trend[REJECTED]["변경"] is None  # no count on a rejected day
    hidden = [col for col, dim in wb[SHEET_SUMMARY].column_dimensions.items() if dim.hidden]
    assert hidden == ["J"]  # the chart's rejected-day series, outside the table
    note = wb[SHEET_RECENT]["A3"].value
    accepted = sum(1 for r in runs.values() if r["status"] in ("accepted", "baseline"))
    window = reports[NEWEST].recent_days
    # the days before the first run are no missing runs (issue 31: 「실행 기록 없음 80일」 read as an outage)
    assert f"정상 반영 {accepted}일 · 거부 1일 · 실행 기록 없음 0일 (감시 시작 전 {window - len(DAYS)}일)." in note


def test_every_date_is_a_date_in_both_workbooks(books):
    *_, wb, period = books
    for book in (wb, period):
        for ws in book.worksheets:
            as_text = [
                c.coordinate
                for row in ws.iter_rows()
                for c in row
                if isinstance(c.value, str) and ISO_DAY.match(c.value)
            ]
            assert not as_text, (ws.title, as_text[:5])
    net = period["순변경"]
    col = next(c.column_letter for c in net[4] if c.value == "처음 관측일")
    dated = [c.value for c in net[col][4:] if c.value is not None]
    assert dated and all(isinstance(v, datetime) for v in dated)


def _merged(ws) -> set[str]:
    return {c for rng in ws.merged_cells.ranges for row in ws[rng.coord] for c in (x.coordinate for x in row)}


@pytest.mark.parametrize("book", ["daily", "period"])
def test_every_value_fits_its_column(books, book):
    """A value that does not wrap is cut where the next cell holds something: it must fit its column."""
    *_, wb, period = books
    cut = []
    for ws in (wb if book == "daily" else period).worksheets:
        merged = _merged(ws)
        widths = {col: dim.width for col, dim in ws.column_dimensions.items()}
        for row in ws.iter_rows(min_row=4):
            for cell, right in itertools.pairwise(row):
                if cell.value is None or right.value is None or cell.coordinate in merged or cell.alignment.wrap_text:
                    continue
                if (ws.title, ws.cell(row=4, column=cell.column).value) == (SHEET_LEDGER, "제조소 소재지 (원문)"):
                    continue  # one line by design: the raw addresses, many hundred characters (the sites column wraps)
                if _display_width(_shown(cell)) > widths.get(cell.column_letter, 8.43):
                    cut.append((ws.title, cell.coordinate, _shown(cell)))
    assert not cut, cut[:10]


def _shown(cell) -> str:
    """A cell's text as its number format shows it."""
    value = cell.value
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S" if value.time() != datetime.min.time() else "%Y-%m-%d")
    if isinstance(value, float) and "%" in cell.number_format:
        return f"{value:.1%}"
    return f"{value:,}" if isinstance(value, int | float) else str(value)


def test_links_are_ingredient_searches_and_say_so(books):
    *_, wb, _ = books
    links = [c for row in wb[SHEET_EVENTS].iter_rows(min_row=5) for c in row if c.hyperlink]
    assert links and all(c.value == NEDRUG_LINK_TEXT and "searchIngrKorName=" in c.hyperlink.target for c in links)
    meta = " ".join(_texts(wb[SHEET_META]))
    assert f"'{NEDRUG_LINK_TEXT}' 링크" in meta and "성분명으로 검색" in meta and "등록 건별 조회" not in meta


def test_gate_verdicts_never_wrap(books):
    *_, wb, _ = books
    summary = wb[SHEET_SUMMARY]
    verdicts = [r[1] for r in summary.iter_rows() if isinstance(r[0].value, str) and re.match(r"^\d\. ", r[0].value)]
    assert len(verdicts) == 6
    assert all(
        not c.alignment.wrap_text and _display_width(c.value) + 2 <= summary.column_dimensions["B"].width
        for c in verdicts
    )


def test_company_sheet_lists_the_days_events_per_applicant_and_manufacturer(books):
    _, reports, _, _, wb, _ = books
    ws = wb[SHEET_BY_APPLICANT]
    report = reports[NEWEST]
    for kind in ("신청인", "제조소"):
        rows = [r for r in _section_rows(ws, f"오늘의 이벤트 — {kind}별") if r[0] and r[0] != "심각도"]
        assert rows and all(r[2].endswith("습니다.") for r in rows)
        ranks = {"심각": 3, "높음": 2, "보통": 1, "정보": 0}
        worst = {}
        for severity, company, _ in (r[:3] for r in rows):
            worst.setdefault(company, ranks[severity])  # each company's first row is its most severe event
        assert list(worst.values()) == sorted(worst.values(), reverse=True)
    applicants = {r[1] for r in _section_rows(ws, "오늘의 이벤트 — 신청인별") if r[0] and r[0] != "심각도"}
    assert applicants == {e.applicant for e in report.headline_events}


def test_rejected_and_quiet_days_say_what_they_are(books):
    _, reports, _, paths, _, _ = books
    rejected = load_workbook(paths[REJECTED], read_only=True)[SHEET_SUMMARY]
    texts = [v for row in rejected.iter_rows(values_only=True) for v in row if isinstance(v, str)]
    assert not any("주요 이벤트" in t for t in texts)  # nothing was applied: no events to tell
    assert "거부" in [row[1] for row in rejected.iter_rows(values_only=True) if isinstance(row[0], datetime)]
    quiet = load_workbook(paths[QUIET], read_only=True)[SHEET_SUMMARY]
    texts = [v for row in quiet.iter_rows(values_only=True) for v in row if isinstance(v, str)]
    assert "주요 이벤트 — 없음" in texts and "-0.0" not in " ".join(texts) and "과(와)" not in " ".join(texts)
    assert reports[QUIET].change_rate.text_ko.startswith("최근 14일 하루 평균 ")
    # setting up a product list is the administrator's: on 메타, never on 요약 (issue 31)
    assert not any("products" in t or "자사 제품 목록을 설정하면" in t for t in texts)
    meta = load_workbook(paths[QUIET], read_only=True)[SHEET_META]
    hint = next(row[2] for row in meta.iter_rows(values_only=True) if row[0] == "자사 제품")
    assert (
        "config/products.example.csv를 config/products.csv로 복사" in hint
        and '[products] file = "config/products.csv"' in hint
    )
    assert (PROJECT_ROOT / "config" / "products.example.csv").is_file()  # the hint names a file that exists


# --- dmf history -----------------------------------------------------------------------------------


def _dmf(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dmf_assets", *args], capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT
    )


def test_history_csv_of_a_range_and_a_key_typed_with_spaces_through_the_cli(books):
    database, reports, *_ = books
    day = NEWEST
    ingredient = next(e.ingredient for e in reports[NEWEST].headline_events if e.event_type == "NEW")
    start, end = day - timedelta(days=1), day
    out = _dmf(
        "history",
        "--ingredient",
        ingredient,
        "--from",
        str(start),
        "--to",
        str(end),
        "--changes-only",
        "--format",
        "csv",
        "--database",
        str(database),
    )
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout.lstrip("\ufeff"))))
    assert rows and all(start.isoformat() <= r["day"] <= end.isoformat() for r in rows)
    with open_database(database) as conn:  # exactly the events of that ingredient's registrations in the range
        from dmf_assets.analyst import queries as q

        everything = q.registration_history(conn, q.find_records(conn, ingredient=ingredient))
    expected = [e for e in everything.events if start <= e.day <= end]
    assert len(everything.events) > len(expected) or len(rows) == len(expected)
    assert [(r["day"], r["dmf_key"], r["event_type"]) for r in rows] == [
        (e.day.isoformat(), e.dmf_key, e.event_type) for e in expected
    ]
    # the key with spaces instead of hyphens finds the same registration
    key = next(e.permit_no for e in reports[NEWEST].headline_events if e.event_type == "CHANGED" and e.permit_no)
    hyphens = _dmf("history", key, "--format", "jsonl", "--database", str(database))
    spaced = _dmf("history", re.sub(r"[-()]", " ", key), "--format", "jsonl", "--database", str(database))
    assert hyphens.returncode == spaced.returncode == 0, spaced.stderr
    assert spaced.stdout == hyphens.stdout and f'"dmf_key": "{key}"' in spaced.stdout


def test_history_shows_a_withdrawal_and_the_reappearance_as_spans(real_items, tmp_path, capsys):
    from dmf_assets.cli import main

    gone = real_items[7]["DMF_PERMIT_NO"]
    days = [date(2026, 9, 1) + timedelta(days=i) for i in range(5)]
    without = [r for r in real_items if r["DMF_PERMIT_NO"] != gone]
    with open_database(tmp_path / "h.duckdb") as conn:
        for d, items in zip(days, (real_items, without, without, real_items, real_items), strict=True):
            commit_items(conn, d, items)
    code = main(["history", gone, "--database", str(tmp_path / "h.duckdb")])
    out = capsys.readouterr().out
    assert code == 0
    lines = [ln.strip() for ln in out.splitlines()]
    assert "버전 1: 2026-09-01 ~ 2026-09-01 (정상 반영일 1일 목록에 있음)" in lines
    assert "목록에서 삭제: 2026-09-02 ~ 2026-09-03 목록에 없음 (정상 반영일 2일)" in lines
    assert (
        "버전 1: 2026-09-04 ~ 2026-09-05 (정상 반영일 2일 목록에 있음) — 2026-09-02부터 목록에 없다가 2026-09-04에 "
        "다시 목록에 오름 (재등장)" in lines
    )
    # a range that holds only the withdrawal: its one event, nothing else
    code = main(
        [
            "history",
            gone,
            "--from",
            "2026-09-02",
            "--to",
            "2026-09-03",
            "--changes-only",
            "--format",
            "jsonl",
            "--database",
            str(tmp_path / "h.duckdb"),
        ]
    )
    events = [ln for ln in capsys.readouterr().out.splitlines() if ln]
    assert (
        code == 0
        and len(events) == 1
        and '"event_type": "WITHDRAWN"' in events[0]
        and '"day": "2026-09-02"' in events[0]
    )
