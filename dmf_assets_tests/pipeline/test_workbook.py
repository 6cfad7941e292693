"""The daily workbook: sheets, banners, KPI cells, ordering, colours, links, text safety, round trip.

Reports are built in memory (the writer never touches the database); every assertion reads the real
.xlsx back with openpyxl.
"""

from __future__ import annotations

import zipfile
from dataclasses import replace
from datetime import datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from openpyxl import load_workbook

from dmf_assets.domain.model import SEVERITY_LABEL_KO, SEVERITY_RANK, DayStatus
from dmf_assets.errors import UserError
from dmf_assets.report import styles as st
from dmf_assets.report.cells import EXCEL_MAX_CHARS, TRUNCATION_MARK, store_text
from dmf_assets.report.model import SHEET_BY_APPLICANT, SHEET_BY_COUNTRY, SHEET_BY_INGREDIENT, DayReport, EventRow
from dmf_assets.report.nedrug import NEDRUG_DMF_SEARCH_PATH
from dmf_assets.report.output import WorkbookError
from dmf_assets.report.retention import LATEST_NAME, dated_workbook_name
from dmf_assets.report.rows import EVENT_COLUMNS
from dmf_assets.report.sentences import change_line, countries_text
from dmf_assets.report.summary import summarize
from dmf_assets.report.tables import ATTRIBUTION
from dmf_assets.report.workbook import (
    KPI_LABELS,
    NOT_REFLECTED,
    SHEET_EVENTS,
    SHEET_FIELDS,
    SHEET_NAMES,
    SHEET_NEW_WITHDRAWN,
    SHEET_SUMMARY,
    build_workbook,
    workbook_day,
    write_workbook,
)
from dmf_assets_tests.report_builders import (
    BIG_TEXT,
    DAY,
    HOSTILE,
    REJECT_REASON,
    accepted_report,
    baseline_report,
    gates,
    make_events,
    rejected_report,
    summary_for,
    unchanged_report,
)
from dmf_assets_tests.workbook_reader import RejectedDayError, cell_text, column_tails, read_events_sheet

# --- helpers -------------------------------------------------------------------------------------


def kpi_value(ws, key: str):
    label = KPI_LABELS[key]
    for row in ws.iter_rows(min_row=1, max_row=80, max_col=2):
        if row[0].value == label:
            return row[1].value
    raise AssertionError(f"KPI row {label!r} not found")


def _written(report: DayReport, out) -> tuple:
    """(the report, the writer's result, the workbook read back)"""
    result = write_workbook(report, out)
    return report, result, load_workbook(result.path)


@pytest.fixture(scope="module")
def accepted_book(tmp_path_factory):
    return _written(accepted_report(), tmp_path_factory.mktemp("accepted"))


@pytest.fixture(scope="module")
def rejected_book(tmp_path_factory):
    return _written(rejected_report(), tmp_path_factory.mktemp("rejected"))


# --- tests ---------------------------------------------------------------------------------------


def test_sheet_names_order_and_file_names(accepted_book):
    report, result, wb = accepted_book
    assert wb.sheetnames == list(SHEET_NAMES)
    assert result.path.name == "DMF_리포트_2026-10-08.xlsx"
    assert result.latest_path.name == LATEST_NAME and result.latest_updated
    assert result.latest_path.read_bytes() == result.path.read_bytes()
    assert workbook_day(result.latest_path) == DAY
    assert result.bytes == result.path.stat().st_size > 50_000
    headline = [e for e in report.events if not e.is_cosmetic]
    assert result.sheet_rows[SHEET_EVENTS] == len(headline) == 90
    assert result.sheet_rows[SHEET_FIELDS] == sum(len(e.changes) for e in report.events)
    assert (
        result.sheet_rows[SHEET_NEW_WITHDRAWN] == sum(e.event_type in ("NEW", "WITHDRAWN") for e in report.events) == 30
    )
    assert (
        result.sheet_rows["성분별"] == 3000 and result.sheet_rows["업체별"] == 450 and result.sheet_rows["제조국"] == 50
    )
    # nothing but the two workbooks (and the lock file) is left in the folder: no temp files
    assert sorted(p.name for p in result.path.parent.iterdir() if not p.name.startswith(".DMF_리포트.lock")) == sorted(
        [result.path.name, LATEST_NAME]
    )


def test_accepted_banner_and_kpi_cells(accepted_book):
    report, _, wb = accepted_book
    k = report.summary
    for name in SHEET_NAMES:
        banner = wb[name]["A1"].value
        assert banner.startswith("정상 수집 · 비교 기준 2026-10-07 — 신규 20 · 변경 50 · 삭제 10 · 번호 부여 10"), (
            name,
            banner,
        )
    ws = wb[SHEET_SUMMARY]
    # every headline event by severity, withdrawals included (issue 31: 요약 left them out of its breakdown):
    # 심각 = 20 site/address changes + 10 withdrawals; 높음 = 20 applicant changes + 5 reappearances;
    # 보통 = 10 issue-date changes; 정보 = 15 new + 10 number assignments
    expected = {
        "registry_size": 9_203,
        "new": 20,
        "changed": 50,
        "withdrawn": 10,
        "reappeared": 5,
        "number_assigned": 10,
        "headline_events": 90,
        "severity_CRITICAL": 30,
        "severity_HIGH": 25,
        "severity_MEDIUM": 10,
        "severity_INFO": 25,
        "watchlist_hits": 10,
        "cosmetic": 10,
    }
    # the builder's own counts agree with the hand-computed numbers above
    assert (k.new, k.changed, k.withdrawn, k.number_assigned, k.cosmetic) == (20, 50, 10, 10, 10)
    for key, value in expected.items():
        cell_value = kpi_value(ws, key)
        assert cell_value == value, key
    assert "심각 30 · 높음 25 · 보통 10 · 정보 25" in wb[SHEET_EVENTS]["A3"].value  # the same breakdown
    # severity-coloured KPI value cells
    for sev in ("CRITICAL", "HIGH", "MEDIUM", "INFO"):
        row = next(r for r in ws.iter_rows(max_col=2) if r[0].value == KPI_LABELS[f"severity_{sev}"])
        assert row[1].fill.fgColor.rgb.endswith(st.SEVERITY_COLOURS[sev][0])
        assert row[1].number_format == st.FMT_INT
    # gates table on the summary: six rows, all passed
    verdicts = [
        r[1].value
        for r in ws.iter_rows(max_col=2)
        if isinstance(r[0].value, str) and r[0].value[:2] in {f"{i}." for i in range(1, 7)}
    ]
    assert verdicts == ["통과"] * 6


def test_events_sorted_by_severity_then_key_with_colours(accepted_book):
    _report, result, wb = accepted_book
    ws = wb[SHEET_EVENTS]
    assert [c.value for c in ws[4]][: len(EVENT_COLUMNS)] == [c.header for c in EVENT_COLUMNS]
    rows = read_events_sheet(result.path)
    keys = [(SEVERITY_RANK[r["severity"]], r["dmf_key"]) for r in rows]
    assert keys == sorted(keys, key=lambda t: (-t[0], t[1]))
    assert {r["severity"] for r in rows} == {"CRITICAL", "HIGH", "MEDIUM", "INFO"}  # cosmetic excluded
    assert rows[0]["severity"] == "CRITICAL" and rows[-1]["severity"] == "INFO"
    for i, r in enumerate(rows, 5):
        cell = ws.cell(row=i, column=1)
        assert cell.value == SEVERITY_LABEL_KO[r["severity"]]
        assert cell.fill.fill_type == "solid"
        assert cell.fill.fgColor.rgb.endswith(st.SEVERITY_COLOURS[r["severity"]][0])


def _expected_event_rows(report: DayReport) -> list[dict]:
    ordered = sorted(report.headline_events, key=lambda e: (-SEVERITY_RANK[e.severity], e.dmf_key))
    return ordered


def test_round_trip_of_events_table_including_hostile_text(accepted_book):
    report, result, _ = accepted_book
    rows = read_events_sheet(result.path)
    expected = _expected_event_rows(report)
    assert len(rows) == len(expected) == 90
    text_fields = (
        "permit_no",
        "ingredient",
        "applicant",
        "manufacturer",
        "countries",
        "target_class",
        "bizrno",
        "address",
        "dmf_key",
        "base_dmf_key",
    )
    seen_hostile = set()
    for got, ev in zip(rows, expected, strict=True):
        assert got["event_type"] == ev.event_type and got["severity"] == ev.severity
        for f in text_fields:
            want = getattr(ev, f)
            assert got[f] == cell_text(want), (f, want[:40] if want else want)
            if want in HOSTILE:
                seen_hostile.add(want)
                if want is not BIG_TEXT and "\x00" not in want:
                    assert got[f] == want  # exactly the source text, not "sanitised"
        assert got["issue_date"] == ev.issue_date
        assert got["changed_fields"] == ev.changed_fields
        assert got["watch_reasons"] == ev.watch_reasons
        for flag in ("is_reappearance", "number_assigned", "is_transfer", "is_rename", "watchlist_hit"):
            assert got[flag] == getattr(ev, flag), flag
        if ev.event_type == "CHANGED":
            for ch in ev.changes:
                if ch.field == "countries" and countries_text(ch.before) == countries_text(ch.after):
                    continue  # a country repeated for another site is no change: no line
                if not ch.is_cosmetic:  # the line every table and command prints (report.sentences.change_line)
                    line = change_line(ch.field, ch.before, ch.after)
                    assert line in (got["change_summary"] or "") or len(ch.after or "") > 1000
    # every hostile value that landed in a headline event was checked
    headline_values = {
        getattr(e, f) for e in report.headline_events for f in ("ingredient", "applicant", "manufacturer", "address")
    }
    assert seen_hostile == set(HOSTILE) & headline_values
    assert len(seen_hostile) >= 12
    # the control characters became U+FFFD, the 100 k text was cut and marked
    ctrl = next(r for r in rows if any((r[f] or "").startswith("ctrl") for f in text_fields))
    assert any(r == "ctrl\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd end" for r in ctrl.values())
    big = next(r[f] for r in rows for f in text_fields if (r[f] or "").startswith("가나다라마바사"))
    assert big.endswith(TRUNCATION_MARK) and len(big.encode("utf-16-le")) // 2 <= EXCEL_MAX_CHARS
    assert big.startswith(BIG_TEXT[:30000])


def test_no_formula_anywhere_and_hostile_cells_are_literal_text(accepted_book):
    _, result, wb = accepted_book
    formula_like = 0
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (ws.title, cell.coordinate, cell.value)
                if isinstance(cell.value, str) and cell.value[:1] in ("=", "+", "-", "@", "\t"):
                    formula_like += 1
                    assert cell.data_type == "s" and cell.quotePrefix, (ws.title, cell.coordinate)
                if cell.value == "#N/A":
                    assert cell.data_type == "s"
    assert formula_like >= 5
    # and at the XML level: no <f> element in any sheet
    with zipfile.ZipFile(result.path) as zf:
        for name in zf.namelist():
            if name.startswith("xl/worksheets/sheet"):
                assert b"<f>" not in zf.read(name) and b"<f " not in zf.read(name)


def test_store_text_rules():
    assert store_text(None) is None and store_text("") is None
    assert store_text("a\x00b\x1fc\ud800d\uffff") == "a\ufffdb\ufffdc\ufffdd\ufffd"
    assert cell_text("\r=x") == "\r=x" and store_text("\r=x") == "_x000D_=x"
    assert cell_text("_x000D_") == "_x000D_" and store_text("_x000D_") == "_x005F_x000D_"
    emoji_wall = "💊" * 20_000  # 40,000 UTF-16 units: Excel counts the emoji twice
    cut = cell_text(emoji_wall)
    assert cut.endswith(TRUNCATION_MARK) and len(cut.encode("utf-16-le")) // 2 <= EXCEL_MAX_CHARS
    assert cut.startswith("💊" * 16_000)
    crs = "\r" * 10_000  # escapes grow 7x: the stored form must still fit
    stored = store_text(crs)
    assert len(stored) <= EXCEL_MAX_CHARS and cell_text(crs).endswith(TRUNCATION_MARK)
    assert store_text(12345) == "12345"


def test_dates_numbers_and_percent_formats(accepted_book):
    report, _, wb = accepted_book
    ws = wb[SHEET_EVENTS]
    col = [c.header for c in EVENT_COLUMNS].index("발급일자") + 1
    cell = ws.cell(row=5, column=col)
    assert isinstance(cell.value, datetime) and cell.number_format == st.FMT_DATE
    ws = wb["성분별"]
    assert ws["C5"].number_format == st.FMT_INT and isinstance(ws["C5"].value, int)
    assert ws["D5"].number_format == st.FMT_PCT and 0 < ws["D5"].value < 1
    assert ws["A5"].value == 1 and ws["A6"].value == 2
    top = max(report.by_ingredient, key=lambda a: a.registrations)
    assert ws["B5"].value == top.label and ws["C5"].value == top.registrations
    summary = wb[SHEET_SUMMARY]
    assert isinstance(summary["B6"].value, datetime) and summary["B6"].number_format == st.FMT_DATE
    # generated_at is shown in Korean time (21:12 UTC -> 06:12 KST next day)
    gen = next(r[1].value for r in summary.iter_rows(max_col=2) if r[0].value == "생성 시각 (KST)")
    assert gen == datetime(2026, 10, 8, 6, 12, 5)


def test_hyperlinks_search_the_registration_on_nedrug(accepted_book):
    _report, result, wb = accepted_book
    rows = read_events_sheet(result.path)
    assert all(r["link"] for r in rows)
    for r in rows:
        parts = urlsplit(r["link"])
        assert (parts.scheme, parts.netloc, parts.path) == ("https", "nedrug.mfds.go.kr", NEDRUG_DMF_SEARCH_PATH)
        query = parse_qs(parts.query)
        if r["ingredient"] and len(r["ingredient"]) < 100 and "\ufffd" not in r["ingredient"]:
            assert query["searchIngrKorName"] == [r["ingredient"]]
        assert len(r["link"]) <= 2000
    # the 100 k ingredient falls back to its base name, still a valid short link
    ws = wb[SHEET_NEW_WITHDRAWN]
    links = [c.hyperlink.target for c in ws["O"][4:] if c.hyperlink]  # 자사 영향 sits before the link
    assert len(links) == 30


def test_frozen_panes_filters_print_setup_and_charts(accepted_book):
    _, result, wb = accepted_book
    for ws in wb.worksheets:
        assert ws.freeze_panes is not None, ws.title
        assert ws.auto_filter.ref, ws.title
        assert ws.page_setup.orientation == "landscape" and int(ws.page_setup.paperSize) == 9, ws.title
        assert ws.page_setup.fitToWidth == 1 and ws.sheet_properties.pageSetUpPr.fitToPage, ws.title
        assert ws.print_title_rows, ws.title
        assert ws["A1"].font.name == st.FONT_NAME
        assert ws.column_dimensions["A"].width >= 6
    assert wb[SHEET_EVENTS].freeze_panes == "A5"
    assert wb[SHEET_EVENTS].auto_filter.ref == f"A4:S{4 + 90}"  # 19 columns incl. 자사 영향
    with zipfile.ZipFile(result.path) as zf:
        charts = [n for n in zf.namelist() if n.startswith("xl/charts/chart")]
    assert len(charts) == 4  # 30-90-day history + three top-20 aggregates
    assert wb["메타"]["C5"].value == ATTRIBUTION


def test_rejected_day_says_so_on_every_sheet(rejected_book):
    _report, result, wb = rejected_book
    expected_banner = (
        "수집 실패 — 비교 기준은 여전히 2026-10-07입니다. 완전성 검사에서 거부되어 이 날 받은 목록을 반영하지 "
        "않았습니다 (받은 목록 8,940건 · 원천이 밝힌 전체 9,203건 · 비교 기준일 2026-10-07 등록 9,167건)."
    )
    for ws in wb.worksheets:
        assert ws["A1"].value == expected_banner, ws.title
        assert ws["A1"].fill.fgColor.rgb.endswith(DayStatus.REJECTED.colour), ws.title
    for name in (SHEET_EVENTS, SHEET_FIELDS, SHEET_NEW_WITHDRAWN):
        ws = wb[name]
        assert NOT_REFLECTED in ws["A3"].value, name
        values = [c.value for row in ws.iter_rows(min_row=4) for c in row if c.value is not None]
        assert values == [], (name, values[:5])  # no table that could read as "no changes"
    with pytest.raises(RejectedDayError):
        read_events_sheet(result.path)
    summary = wb[SHEET_SUMMARY]
    assert kpi_value(summary, "registry_size") == 9_167  # the last accepted state
    assert kpi_value(summary, "received") == 8_940  # what came that day, apart from it (issue 31)
    for key in ("new", "changed", "withdrawn", "cosmetic"):
        assert kpi_value(summary, key) == "미반영"  # never a zero that reads as "nothing changed"
    verdicts = {
        r[0].value: r[1].value
        for r in summary.iter_rows(max_col=2)
        if isinstance(r[0].value, str) and r[0].value[:1].isdigit()
    }
    assert verdicts["2. 완전성"] == "실패"
    assert verdicts["1. 전송"] == "통과"
    assert verdicts["6. 변동률"] == "미평가"
    # 요약 says the failed gate in the reader's words; the observed value (API words) is on 품질
    said = [r[2].value for r in summary.iter_rows(max_col=3) if r[0].value == "2. 완전성"]
    assert said == [
        "이 검사에서 거부되었습니다 (받은 목록 8,940건 · 원천이 밝힌 전체 9,203건 · 비교 기준일 2026-10-07 등록 9,167건). 값과 기준은 '품질' 시트."
    ]
    quality = [r[4].value for r in wb["품질"].iter_rows(min_row=5, max_col=5) if r[2].value == "완전성 (completeness)"]
    assert quality == ["8,940 / 9,203 (97.1 %)"]
    assert "마지막 정상 수집일 2026-10-07 기준" in wb["성분별"]["A3"].value
    assert result.sheet_rows[SHEET_EVENTS] == 0


def test_rejected_day_shows_the_failed_gates_sample_rows_under_korean_headers(tmp_path):
    """요약 of a rejected day and the UI's check page show the same sample rows: Korean headers, Korean
    values, and no 관리 키 column that only repeats 등록번호."""
    from dmf_assets.defs.checks import samples_md
    from dmf_assets.domain.gates import page_samples

    pages = [
        {"page_no": n, "rows": 480 if n == 10 else 203 if n == 19 else 500, "status": "ok", "total_count": 9_203}
        for n in range(1, 20)
    ]
    short = page_samples(pages, 500, 9_203)
    assert short == (
        {"page_no": 10, "rows": 480, "expected_rows": 500, "status": "ok", "page_total_count": 9_203, "error": None},
    )
    report = replace(
        rejected_report(), gates=tuple(replace(g, samples=short) if g.passed is False else g for g in gates(failed=2))
    )
    ws = load_workbook(write_workbook(report, tmp_path).path)[SHEET_SUMMARY]
    rows = [[c.value for c in r] for r in ws.iter_rows()]
    at = next(i for i, r in enumerate(rows) if str(r[0]).startswith("거부 근거 — 2. 완전성 게이트의 표본 1행"))
    assert rows[at + 1][:6] == ["쪽 번호", "받은 행", "받아야 할 행", "상태", "그 쪽이 밝힌 전체 건수", "오류"]
    assert rows[at + 2][:5] == [10, 480, 500, "정상", 9_203]
    # gate 3's samples name a registration by its number: the key that repeats it is left out
    missing = (
        {
            "dmf_key": "20110531-71-B-317-05",
            "permit_no": "20110531-71-B-317-05",
            "ingredient": "메트포르민염산염",
            "applicant": "(주)하이플",
        },
    )
    md = samples_md(missing)
    assert md.splitlines()[0] == "| 등록번호 | 성분명 | 신청인 |" and "dmf_key" not in md
    assert (
        samples_md(({"event_type": "WITHDRAWN", "severity": "CRITICAL", "dmf_key": "SYN-1"},)).splitlines()[2]
        == "| 목록에서 삭제 | 심각 | SYN-1 |"
    )


def test_rejected_day_without_any_accepted_day(tmp_path):
    report = DayReport.of(summarize(DAY, DayStatus.REJECTED, (), rejected_gate=2), REJECT_REASON)
    wb, _ = build_workbook(report)
    assert wb[SHEET_EVENTS]["A1"].value.startswith("수집 실패 — 아직 정상 수집된 비교 기준일이 없습니다 (사유: ")


def test_baseline_and_unchanged_days_say_why_there_are_no_events(tmp_path):
    base_res = write_workbook(baseline_report(), tmp_path / "b")
    wb = load_workbook(base_res.path)
    for ws in wb.worksheets:
        assert ws["A1"].value.startswith("기준일 — 2026-10-08은 최초 정상 수집일입니다"), ws.title
    assert "설계상" in wb[SHEET_EVENTS]["A3"].value
    assert read_events_sheet(base_res.path) == []
    assert kpi_value(wb[SHEET_SUMMARY], "new") == "해당 없음"
    assert kpi_value(wb[SHEET_SUMMARY], "registry_size") == 9_167

    unch = write_workbook(unchanged_report(), tmp_path / "u")
    wb = load_workbook(unch.path)
    for ws in wb.worksheets:
        assert ws["A1"].value.startswith("변경 없음 — 2026-10-08 수집분이 비교 기준 2026-10-07"), ws.title
    assert wb[SHEET_EVENTS]["A3"].value.startswith("변경 없음 — 비교 기준 2026-10-07")
    assert read_events_sheet(unch.path) == []
    summary = wb[SHEET_SUMMARY]
    for key in ("new", "changed", "withdrawn", "severity_CRITICAL"):
        assert kpi_value(summary, key) == 0  # a real, explained zero


def test_cosmetic_rows_marked_on_field_sheet(accepted_book):
    report, _, wb = accepted_book
    ws = wb[SHEET_FIELDS]
    rows = list(ws.iter_rows(min_row=5, values_only=False))
    kinds = [r[1].value for r in rows if r[1].value]
    n_cosmetic = sum(c.is_cosmetic for e in report.events for c in e.changes)
    assert kinds.count("표기 변경") == n_cosmetic == 20
    assert kinds == sorted(kinds, key=lambda k: k == "표기 변경")  # substantive first
    for r in rows:
        if r[1].value == "표기 변경":
            assert r[1].fill.fgColor.rgb.endswith(st.SEVERITY_COLOURS["COSMETIC"][0])
            assert r[0].value == SEVERITY_LABEL_KO["COSMETIC"]


def test_unwritable_reports_dir_is_a_clear_error(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(WorkbookError) as err:
        write_workbook(baseline_report(), blocker / "reports")
    assert isinstance(err.value, UserError)
    assert "리포트 폴더" in str(err.value) and str(blocker) in str(err.value)


def test_latest_copy_is_only_replaced_by_a_newer_or_same_day(tmp_path):
    d8 = write_workbook(baseline_report(DAY), tmp_path)
    assert d8.latest_updated and workbook_day(tmp_path / LATEST_NAME) == DAY
    backfill = write_workbook(unchanged_report(DAY - timedelta(days=3), DAY - timedelta(days=4)), tmp_path)
    assert not backfill.latest_updated
    assert workbook_day(tmp_path / LATEST_NAME) == DAY  # the older day did not replace it
    assert (tmp_path / dated_workbook_name(DAY - timedelta(days=3))).exists()
    newer = write_workbook(rejected_report(DAY + timedelta(days=1), DAY), tmp_path)
    assert newer.latest_updated and workbook_day(tmp_path / LATEST_NAME) == DAY + timedelta(days=1)
    rerun = write_workbook(unchanged_report(DAY + timedelta(days=1), DAY), tmp_path)
    assert rerun.latest_updated  # re-running the latest day refreshes it
    assert (tmp_path / LATEST_NAME).read_bytes() == rerun.path.read_bytes()
    # 최신 deleted by hand: a backfill restores it from the newest dated workbook, not from itself
    (tmp_path / LATEST_NAME).unlink()
    again = write_workbook(baseline_report(DAY - timedelta(days=10)), tmp_path)
    assert not again.latest_updated
    assert workbook_day(tmp_path / LATEST_NAME) == DAY + timedelta(days=1)


def test_full_size_day_tables_every_aggregate_and_reads_back(tmp_path):
    """9.2 k registry (3,000 ingredients, 450 applicants, 50 countries) and 100 events: the long
    aggregate tables are streamed (`xlsx_body`); each row reads back with its count."""
    report = accepted_report(100, registry=9_203, hostile=False)
    result = write_workbook(report, tmp_path)
    wb = load_workbook(result.path)
    for name, rows in (
        (SHEET_BY_INGREDIENT, report.by_ingredient),
        (SHEET_BY_APPLICANT, report.by_applicant),
        (SHEET_BY_COUNTRY, report.by_country),
    ):
        assert result.sheet_rows[name] == len(rows), name
        ws = wb[name]
        header = next(
            r for r in range(1, ws.max_row) if ws.cell(row=r, column=1).value == "순위"
        )  # below 업체별's event lists
        body = [r for r in ws.iter_rows(min_row=header + 1, values_only=True) if any(v is not None for v in r)]
        assert len(body) == len(rows), name
        assert ws.auto_filter.ref.endswith(str(header + len(rows))), name
        numbers = [v for r in body for v in r if isinstance(v, int)]
        assert sum(numbers) >= sum(a.registrations for a in rows), name  # counts are numbers, not text


def test_history_table_is_newest_first_and_rejected_days_have_no_counts(accepted_book):
    report, _, wb = accepted_book
    ws = wb[SHEET_SUMMARY]
    header = next(r[0].row for r in ws.iter_rows(max_col=2) if (r[0].value, r[1].value) == ("날짜", "상태"))
    assert ws.auto_filter.ref == f"A{header}:I{header + len(report.history)}"  # 날짜 … 번호 부여, 번호 변경, 표기 변경
    table = [
        [c.value for c in row]
        for row in ws.iter_rows(min_row=header + 1, max_row=header + len(report.history), max_col=9)
    ]
    days = [row[0].date() for row in table]
    assert days == sorted((h.day for h in report.history), reverse=True)
    assert days[0] == DAY - timedelta(days=1)
    by_day = {h.day: h for h in report.history}
    rejected = [row for row in table if by_day[row[0].date()].status == "rejected"]
    assert len(rejected) == 1
    assert rejected[0][1] == "거부" and rejected[0][2:] == [None] * 7  # a word, and blank counts: not zero
    assert all(isinstance(row[1], str) for row in table)  # the status column holds words only
    ok = next(row for row in table if by_day[row[0].date()].status == "accepted")
    h = by_day[ok[0].date()]
    assert ok[2:] == [h.registry_size, h.new, h.changed, h.withdrawn, h.number_assigned, h.number_changed, h.cosmetic]


def test_rejected_churn_day_does_not_show_its_unapplied_diff():
    """Gate 6 runs after the diff: the rejected day may carry events — they must not be tabled."""
    report = replace(rejected_report(), events=make_events(30, hostile=False), gates=gates(failed=6))
    wb, rows = build_workbook(report)
    for name in (SHEET_EVENTS, SHEET_FIELDS, SHEET_NEW_WITHDRAWN):
        note = wb[name]["A3"].value
        assert NOT_REFLECTED in note and "거부된 비교 결과 30건은 반영되지 않음" in note
        assert wb[name].max_row == 3 and rows[name] == 0
    summary = wb[SHEET_SUMMARY]
    assert not any(
        r[0].value and str(r[0].value).startswith("관심목록 해당 이벤트") for r in summary.iter_rows(max_col=1)
    )


def test_missing_values_and_unnumbered_registrations(tmp_path):
    ev = EventRow(
        event_type="NEW",
        severity="INFO",
        dmf_key="SYN-0badc0de",
        permit_no=None,
        base_dmf_key=None,
        ingredient=None,
        ingredient_base=None,
        applicant="",
        bizrno=None,
        manufacturer=None,
        address=None,
        countries=None,
        issue_date="2026-02-30",  # invalid date stays text, never a crash
        target_class=None,
    )
    report = replace(accepted_report(0), events=(ev,), summary=summary_for((ev,), 9_000))
    result = write_workbook(report, tmp_path)
    (row,) = read_events_sheet(result.path)
    assert row["dmf_key"] == "SYN-0badc0de" and row["permit_no"] is None and row["applicant"] is None
    assert row["issue_date"] == "2026-02-30"
    assert row["link"] == "https://nedrug.mfds.go.kr" + NEDRUG_DMF_SEARCH_PATH  # nothing to search: the list page
    assert row["changed_fields"] == () and row["watch_reasons"] == () and not row["watchlist_hit"]


def test_real_registry_rows_round_trip(real_items, tmp_path):
    """The 151 real API rows (raw, un-normalized: \\r\\n, full-width punctuation, 'Co., Ltd.' commas)."""
    events = tuple(
        EventRow(
            event_type="NEW",
            severity="INFO",
            dmf_key=(item.get("DMF_PERMIT_NO") or f"SYN-{i:04d}"),
            permit_no=item.get("DMF_PERMIT_NO"),
            base_dmf_key=None,
            ingredient=item.get("INGR_KOR_NAME"),
            ingredient_base=None,
            applicant=item.get("ENTP_NAME"),
            bizrno=item.get("BIZRNO"),
            manufacturer=item.get("MNFCTR_NAME"),
            address=item.get("MNFCTR_PLACE"),
            countries=item.get("MANUF_COUNTRY_CODE_NM"),
            issue_date=item.get("DMF_PERMIT_DATE"),
            target_class=item.get("NOTICE_CODE"),
        )
        for i, item in enumerate(real_items)
    )
    report = replace(accepted_report(0), events=events, summary=summary_for(events, 9_167))
    result = write_workbook(report, tmp_path)
    rows = read_events_sheet(result.path)
    assert len(rows) == len(real_items) == 151
    by_key = {r["dmf_key"]: r for r in rows}
    for ev in events:
        got = by_key[ev.dmf_key]
        for f in (
            "permit_no",
            "ingredient",
            "applicant",
            "manufacturer",
            "address",
            "countries",
            "bizrno",
            "target_class",
        ):
            assert got[f] == (getattr(ev, f) or None), f
        assert got["issue_date"] == (ev.issue_date or None)


def test_column_wise_cells_are_the_cells_of_the_one_rule():
    """A long table given as columns (the 전체현황 frame) renders each cell as `_stream_cell` does, value by
    value: every character Python or XML treats specially, at either end or inside, OOXML look-alikes,
    formula triggers, the truncation edge, and dates that are and are not Excel dates."""
    import polars as pl
    from openpyxl import Workbook

    from dmf_assets.report import cells, xlsx_body

    odd = [chr(c) for c in range(0x3001) if chr(c).isspace() or chr(c) in "\x00\x01\x0b\x1f&<>\"'_"] + [
        "\ufffe",
        "\uffff",
    ]
    texts = [
        None,
        "",
        "plain",
        "한글 제조소",
        "=SUM(A1)",
        "+1",
        "-",
        "@x",
        "\tx",
        "a_x0041_b",
        "_x005F_",
        "a\rb",
        "x" * (cells.EXCEL_MAX_CHARS // 2),
        "x" * (cells.EXCEL_MAX_CHARS // 2 + 1),
        "한" * 20_000,
    ]
    texts += [f"{c}edge" for c in odd] + [f"edge{c}" for c in odd] + [f"in{c}side" for c in odd]
    dates = [
        None,
        "",
        "2026-10-08",
        "1900-03-01",
        "1900-02-28",
        "1899-12-31",
        "2026-02-30",
        "2026-W41-4",
        "20261008",
        "2026-10-8",
        " 2026-10-08",
        "=2026-10-08",
    ]
    wb = Workbook()
    st.register_styles(wb)
    writer = xlsx_body.BodyWriter(wb.active, 2, 2, cells._style_array)
    for kind, values in (("text", texts), ("wrap", texts), ("date", dates)):
        got = column_tails(writer, 1, kind, pl.Series(values, dtype=pl.Utf8)).to_list()
        for value, tail in zip(values, got, strict=True):
            xml = cells._stream_cell(writer, 1, 1, kind, value)
            assert tail == xml[xml.index('"', 6) + 1 :], (kind, value[:40] if value else value)
