"""The daily workbook built from real history databases: 전체현황, 이력, sentences, N일치, λ̂, warnings,
gate rows that agree with the banner, site changes, cosmetic counts, and streamed long tables that read back exactly as written cell by cell."""

from __future__ import annotations

import math
import shutil
from dataclasses import replace
from datetime import date, timedelta

import duckdb
import polars as pl
import pytest
from openpyxl import load_workbook

from dmf_assets.korean import josa
from dmf_assets.report.day_data import BURST_FACTOR, build_day_report, change_rate
from dmf_assets.report.model import EventRow, FieldChangeRow
from dmf_assets.report.rows import LEDGER_COLUMNS
from dmf_assets.report.sentences import summary_sentences
from dmf_assets.report.summary import headline_text
from dmf_assets.report.workbook import (
    KPI_LABELS,
    SHEET_EVENTS,
    SHEET_FIELDS,
    SHEET_LEDGER,
    SHEET_RECENT,
    SHEET_SUMMARY,
    write_workbook,
)
from dmf_assets.settings import load_settings
from dmf_assets.storage import history
from dmf_assets.storage.db import open_database
from dmf_assets_tests.histories import E_DAYS, REJECTED
from dmf_assets_tests.workbook_reader import rows_of


def kpi(ws, key: str):
    return next(r[1].value for r in ws.iter_rows(max_col=2) if r[0].value == KPI_LABELS[key])


def report_for(database, day, settings=None):
    with open_database(database) as conn:
        return build_day_report(conn, day, settings or load_settings())


@pytest.fixture(scope="module")
def book_1008(emulated, tmp_path_factory):
    report = report_for(emulated, date(2026, 10, 8))
    result = write_workbook(report, tmp_path_factory.mktemp("wb"))
    return report, result, load_workbook(result.path)


def test_ledger_has_the_whole_registry_with_grant_links_and_event_links(book_1008, emulated):
    _report, result, wb = book_1008
    name = next(n for n in wb.sheetnames if "전체" in n)
    assert name == SHEET_LEDGER
    with open_database(emulated) as conn:
        population = history.run_row(conn, date(2026, 10, 8))["population"]
        keys = {
            k
            for (k,) in conn.execute(
                "SELECT r.dmf_key FROM snapshots s JOIN records r USING (record_id) WHERE s.day_id = 20261008"
            ).fetchall()
        }
    ws = wb[name]
    ledger = rows_of(ws)
    assert len(ledger) == population == len(keys) == result.sheet_rows[SHEET_LEDGER] >= 9_000
    assert {r["관리 키"] for r in ledger} == keys
    assert ws.auto_filter.ref == f"A4:{ws.cell(row=4, column=ws.max_column).column_letter}{4 + population}"
    grants = [r for r in ledger if r["허여"]]
    assert grants and all(r["등록번호"] == f"{r['원 등록번호 (허여 원본)']}({r['허여']})" for r in grants)
    assert all(r["성분번호-그룹"] == f"{int(r['성분 번호'])}-{r['그룹']}" for r in ledger if r["그룹"])
    multi = [r for r in ledger if (r["제조소 수"] or 0) > 1]
    assert multi and all(r["제조소 (사이트별: 이름·국가)"].count("\n") == r["제조소 수"] - 1 for r in multi)
    # the event link of a registration jumps to its first row on the 이력 sheet
    recent = wb[SHEET_RECENT]
    col = [c.value for c in ws[4]].index("이벤트 (이력 시트)") + 1
    linked = [ws.cell(row=i, column=col) for i in range(5, ws.max_row + 1) if ws.cell(row=i, column=col).hyperlink]
    assert linked
    key_col = [c.value for c in ws[4]].index("관리 키") + 1
    recent_key_col = [c.value for c in recent[4]].index("관리 키") + 1
    for cell in linked:
        sheet, ref = cell.hyperlink.location.split("!")
        assert sheet == f"'{SHEET_RECENT}'"
        target_row = int(ref[1:])
        assert recent.cell(row=target_row, column=recent_key_col).value == ws.cell(row=cell.row, column=key_col).value


def test_recent_sheet_lists_every_event_of_the_last_90_days_newest_first(book_1008, emulated):
    _, _, wb = book_1008
    with open_database(emulated) as conn:
        n = conn.execute("SELECT count(*) FROM events WHERE day_id BETWEEN 20260711 AND 20261008").fetchone()[0]
    rows = rows_of(wb[SHEET_RECENT])
    assert len(rows) == n > 0
    days = [r["관측일"] for r in rows]
    assert days == sorted(days, reverse=True)
    assert {r["비교 기준일"].date() for r in rows if r["관측일"].date() == date(2026, 10, 7)} == {date(2026, 10, 5)}


def test_day_after_a_rejected_day_says_it_covers_two_days(emulated, tmp_path):
    report = report_for(emulated, date(2026, 10, 7))
    assert report.comparison_base == date(2026, 10, 5) and report.gap_days == 2
    wb = load_workbook(write_workbook(report, tmp_path).path, read_only=True)
    for name in wb.sheetnames:
        assert "(2일치 변경)" in wb[name]["A1"].value, name
    summary = wb[SHEET_SUMMARY]
    scope = next(r[1].value for r in summary.iter_rows(max_col=2) if r[0].value == "비교 범위")
    assert scope.startswith("2일치 변경 — 2026-10-05 이후 1일은 반영되지 않아")
    # a day right after its base says nothing of the kind
    assert "일치 변경" not in report_for(emulated, date(2026, 10, 8)).status_reason


def test_rejected_day_ledger_is_the_last_accepted_registry(emulated, tmp_path):
    report = report_for(emulated, REJECTED)
    wb = load_workbook(write_workbook(report, tmp_path).path, read_only=True)
    ws = wb[SHEET_LEDGER]
    assert "마지막 정상 수집일 2026-10-05 기준" in ws["A3"].value
    with open_database(emulated) as conn:
        assert len(rows_of(ws)) == history.run_row(conn, date(2026, 10, 5))["population"]
    assert wb[SHEET_LEDGER]["A1"].value.startswith("수집 실패 — 비교 기준은 여전히 2026-10-05입니다")


def test_gate_rows_follow_the_runs_row_even_when_stored_gates_are_stale(emulated, tmp_path):
    """Issue 9: a re-derived day's title said 「비교 기준 2026-11-01」, its gate rows 「비교 기준 없음」."""
    copy = tmp_path / "stale.duckdb"
    shutil.copy(emulated, copy)
    con = duckdb.connect(str(copy))
    # what a row judged against no base stores: its text and an observed value of 0 (gates.gate_churn_without_base)
    con.execute(
        "UPDATE gate_results SET observed = '비교 기준 없음', observed_value = 0, detail = '첫 수집일' "
        "WHERE day_id = 20261008 AND gate_no IN (3, 6)"
    )
    con.execute(
        "INSERT INTO gate_results VALUES (20261008, 3, 'drop', true, 0, 0.05, '비교 기준 없음', '≤ 5.00 %', '첫 수집일', "
        "'[]', now()) ON CONFLICT DO NOTHING"
    )
    con.close()
    report = report_for(copy, date(2026, 10, 8))
    wb = load_workbook(write_workbook(report, tmp_path / "out").path, read_only=True)
    summary = wb[SHEET_SUMMARY]
    said = {
        r[0].value: r[2].value
        for r in summary.iter_rows(max_col=3)
        if isinstance(r[0].value, str) and r[0].value[:2] in ("3.", "6.")
    }
    assert "비교 기준 없음" not in str(said)
    assert "기준일 2026-10-07" in said["3. 감소율"]
    # the observed values (restated against the base) are on 품질, beside the thresholds
    gate_rows = {r[2]: (r[4], r[6]) for r in wb["품질"].iter_rows(min_row=5, values_only=True) if r[0] == "수용 게이트"}
    assert "비교 기준 없음" not in str(gate_rows)
    assert "기준일 2026-10-07" in gate_rows["감소율 (drop)"][1]
    with open_database(copy) as conn:
        run = history.run_row(conn, date(2026, 10, 8))
        base = history.run_row(conn, date(2026, 10, 7))
    counts = headline_text(
        new=run["new_count"],
        changed=run["changed_count"] - run["assigned_count"] - run["renumbered_count"],
        withdrawn=run["withdrawn_count"],
        number_assigned=run["assigned_count"],
        number_changed=run["renumbered_count"],
    )
    assert counts == report.summary.counts_text
    assert gate_rows["변동률 (churn)"][0].startswith(f"{counts} / {base['population']:,}건")
    assert "비교 기준 2026-10-07" in summary["A1"].value
    meta = {r[1]: r[2] for r in wb["메타"].iter_rows(min_row=5, values_only=True)}
    assert "저장값이 현재 비교 기준과 다름" in meta["게이트 저장값"]


def test_quality_sheet_uses_percent_for_ratios(book_1008):
    report, _, wb = book_1008
    for q in report.quality:
        if "%" in q.expected:
            assert q.value.endswith(" %"), (q.name, q.value)
    # no bare ratio like 0.1324 next to a percentage threshold anywhere on 품질
    for r in wb["품질"].iter_rows(min_row=5, values_only=True):
        if r[5] and "%" in str(r[5]) and r[4] is not None:
            assert "%" in str(r[4]) or not str(r[4]).replace(".", "").isdigit(), r


def _cells(ws) -> dict:
    """Everything a reader sees of a sheet: values, types, resolved styles, links, heights, filter."""
    looks: dict[tuple, tuple] = {}  # a style's resolved look, computed once per distinct style

    def look(c) -> tuple:
        key = tuple(c._style)
        if key not in looks:
            looks[key] = (c.number_format, repr(c.font), repr(c.fill), repr(c.border), repr(c.alignment), c.quotePrefix)
        return looks[key]

    cells = {
        c.coordinate: (c.value, c.data_type, look(c), c.hyperlink.location if c.hyperlink else None)
        for row in ws.iter_rows()
        for c in row
        if c.value is not None or c.has_style
    }
    heights = {r: d.height for r, d in ws.row_dimensions.items() if d.height}
    return {
        "cells": cells,
        "heights": heights,
        "filter": ws.auto_filter.ref,
        "dims": ws.dimensions,
        "freeze": ws.freeze_panes,
        "print_area": ws.print_area,
    }


def test_streamed_table_bodies_read_back_exactly_as_cell_by_cell(emulated, tmp_path, monkeypatch):
    """The long tables (전체현황 and the aggregates) are written as XML straight away (`xlsx_body`);
    the file must read back cell for cell as the openpyxl path writes it — hostile text included."""
    from dmf_assets.report import cells

    report = report_for(emulated, date(2026, 10, 8))
    hostile = report.ledger.row(0, named=True)
    hostile.update(
        ingredient='=HYPERLINK("http://evil")',
        applicant="  앞뒤 공백  ",
        address="a\x01b_x0041_<&>",
        sites=[{"name": "A\n제조소", "country": None, "role": "원료"}, {"name": None, "country": "독일"}],
        site_count=2,
        issue_date="2026-02-30",
        permit_accept_date="1899-12-31",
    )
    report = replace(report, ledger=pl.concat([report.ledger, pl.DataFrame([hostile], schema=report.ledger.schema)]))
    assert len(report.ledger) > cells.STREAM_MIN_ROWS
    streamed = load_workbook(write_workbook(report, tmp_path / "streamed").path)
    monkeypatch.setattr(cells, "STREAM_MIN_ROWS", 10**9)  # every table cell by cell
    plain = load_workbook(write_workbook(report, tmp_path / "plain").path)
    for name in plain.sheetnames:
        if name in ("요약", "메타"):  # they carry the time the workbook was written
            continue
        assert _cells(streamed[name]) == _cells(plain[name]), name
    ledger = streamed[SHEET_LEDGER]
    last = ledger.max_row
    column = next(i for i, c in enumerate(LEDGER_COLUMNS, 1) if c.key == "ingredient")
    assert ledger.cell(row=last, column=column).value == '=HYPERLINK("http://evil")'
    assert ledger.cell(row=last, column=column).quotePrefix and ledger.cell(row=last, column=column).data_type == "s"
    assert ledger.row_dimensions[last].height > 15  # two sites on two lines


def test_ledger_columns_say_what_each_site_and_country_is(emulated):
    """전체현황's derived texts, column by column (`rows.ledger_frame`), on the odd cases of a registry."""
    from dmf_assets.report.rows import ledger_frame
    from dmf_assets.storage.registry import registry_asof

    with open_database(emulated) as conn:
        _, registry = registry_asof(conn, date(2026, 10, 8))
    site = lambda name, country, role=None: {"name": name, "address": None, "country": country, "role": role}  # noqa: E731 - a one-line helper, read where it is used
    cases = [  # (sites, manufacturer, country_list, countries, permit_fmt) -> (제조소, 제조국, 번호 형식)
        (
            [site("A", "독일"), site(None, None, "원료")],
            "M",
            ["독일", "독일"],
            "x",
            "standard",
            "1. A (독일)\n2. [원료] (제조소명 없음) (국가 미상)",
            "독일",
            "표준",
        ),
        ([site("", "", "")], "제조사", [], "미상국", "new_substance", "제조사 (국가 미상)", "미상국", "신물질"),
        (
            [site(None, "인도", "중간체")],
            None,
            ["인도", "중국", "인도"],
            None,
            None,
            "[중간체]  (인도)",
            "인도, 중국",
            None,
        ),
        ([], "단독", None, "한국", "weird", "단독", "한국", "weird"),
        (None, None, [""], None, "missing", None, None, "번호 없음"),
    ]
    base = registry.row(0, named=True)
    rows = [
        {**base, "sites": sites, "manufacturer": man, "country_list": cl, "countries": cs, "permit_fmt": fmt}
        for sites, man, cl, cs, fmt, *_ in cases
    ]
    got = ledger_frame(pl.DataFrame(rows, schema=registry.schema)).select("sites", "country_set", "permit_fmt").rows()
    assert got == [tuple(case[5:]) for case in cases]
    # the real registry: a numbered line per site, every row with a country text
    real = ledger_frame(registry)
    multi = real.filter(pl.col("site_count") > 1)
    assert multi.height and (multi["sites"].str.count_matches("\n") == multi["site_count"] - 1).all()
    assert multi["sites"].str.starts_with("1. ").all()


# --- hand-edited real rows -----------------------------------------------------------------------


def test_added_site_is_critical_and_cosmetic_counts_agree(edited, tmp_path):
    day = E_DAYS[3]
    report = report_for(edited.database, day)
    wb = load_workbook(write_workbook(report, tmp_path).path)
    events = rows_of(wb[SHEET_EVENTS])
    (ev,) = [e for e in events if e["관리 키"] == edited.site_added]
    assert ev["심각도"] == "심각"
    assert ev["변경 내용 (전 → 후)"].startswith(f"제조소 추가: {edited.site_name} (중국)")
    assert "표기 변경" not in ev["변경 내용 (전 → 후)"] and len(ev["변경 내용 (전 → 후)"]) < 200
    fields = rows_of(wb[SHEET_FIELDS])
    mine = [f for f in fields if f["관리 키"] == edited.site_added]
    assert {f["항목"] for f in mine} == {"제조소 추가", "제조소명", "제조소 소재지", "제조국"}
    assert all(f["구분"] == "실질 변경" for f in mine)
    summary = wb[SHEET_SUMMARY]
    cosmetic_events = kpi(summary, "cosmetic")
    assert cosmetic_events == report.summary.cosmetic == sum(e.is_cosmetic for e in report.events)
    assert f"표기만 바뀐 이벤트 {cosmetic_events:,}건" in wb[SHEET_FIELDS]["A3"].value
    sentence = next(r[1].value for r in summary.iter_rows(max_col=2) if r[0].value == "심각")
    # a site added reads as one: no 「제조소(추가 …)와 제조국(인도,중국 → 인도,중국,중국)이 바뀌었습니다」 (issue 31)
    assert sentence.endswith(f"에 중국 제조소 {josa(edited.site_name, '이/가')} 추가되었습니다."), sentence
    assert "제조국" not in sentence and "((" not in sentence


def test_withdrawal_share_above_two_percent_is_a_banner_warning(edited, tmp_path):
    report = report_for(edited.database, E_DAYS[4])
    assert report.summary.withdrawn == 5 and report.withdrawal_share == pytest.approx(5 / 151)
    wb = load_workbook(write_workbook(report, tmp_path).path)
    assert "목록에서 삭제 비율 3.3 % (> 2 %)" in wb[SHEET_SUMMARY]["A1"].value
    quiet = report_for(edited.database, E_DAYS[3])
    assert not any("삭제 비율" in w for w in quiet.warnings)
    # the banner warns at the share the alert uses: [alerts] withdrawal_share_max, not a number of its own
    settings = load_settings()

    def share_max(value: float):
        return settings.model_copy(
            update={"alerts": settings.alerts.model_copy(update={"withdrawal_share_max": value})}
        )

    assert not any("삭제 비율" in w for w in report_for(edited.database, E_DAYS[4], share_max(0.05)).warnings)
    assert any(
        "목록에서 삭제 비율 3.3 % (> 3 %)" in w
        for w in report_for(edited.database, E_DAYS[4], share_max(0.03)).warnings
    )


def test_change_rate_estimator_and_burst_flag(tmp_path):
    """λ̂ = −ln(1 − X/n)/I pooled over accepted comparisons; burst when the 14-day rate ≥ 3× the long run."""
    day0 = date(2026, 1, 1)

    def make(changed: list[int]) -> duckdb.DuckDBPyConnection:
        path = tmp_path / f"r{len(list(tmp_path.iterdir()))}.duckdb"
        with open_database(path):
            pass
        con = duckdb.connect(str(path))
        con.execute(
            "INSERT INTO runs (day_id, status, population) VALUES (?, 'baseline', 9000)", [history.day_id(day0)]
        )
        for i, x in enumerate(changed, 1):
            con.execute(
                "INSERT INTO runs (day_id, status, base_day_id, population, changed_count) VALUES (?, 'accepted', ?, 9000, ?)",
                [history.day_id(day0 + timedelta(days=i)), history.day_id(day0 + timedelta(days=i - 1)), x],
            )
        return con

    steady = make([1] * 100)
    last = day0 + timedelta(days=100)
    rate = change_rate(steady, last)
    expected = -math.log(1 - 100 / (100 * 9000)) / 1.0
    assert rate.rate_all == pytest.approx(expected) and rate.rate_14d == pytest.approx(-math.log(1 - 14 / (14 * 9000)))
    assert (
        not rate.burst
        and rate.text_ko == "최근 14일 하루 평균 1.0건 변경 — 평소(전체 기간)의 1.0배 (전체 기간 하루 평균 1.0건)"
    )
    burst = make([1] * 86 + [5] * 14)
    r = change_rate(burst, last)
    assert r.rate_14d / r.rate_all >= BURST_FACTOR and r.burst and "급증" in r.text_ko
    assert r.changed_14d == 70 and r.changed_all == 86 + 70
    # a gap of two days counts as an interval of two
    gap = make([2])
    g = change_rate(gap, day0 + timedelta(days=1))
    assert g.rate_all == pytest.approx(-math.log(1 - 2 / 9000))


def _ev(key: str, **kw) -> EventRow:
    base = {
        "event_type": "CHANGED",
        "severity": "HIGH",
        "dmf_key": key,
        "permit_no": key,
        "base_dmf_key": key,
        "ingredient": "성분",
        "ingredient_base": None,
        "applicant": "(주)옛이름",
        "bizrno": None,
        "manufacturer": "M",
        "address": None,
        "countries": "인도",
        "issue_date": None,
        "target_class": None,
    }
    base.update(kw)
    return EventRow(**base)


def test_sentences_group_mass_changes_and_put_products_first():
    def rename(k: str) -> EventRow:
        return _ev(
            k,
            changes=(
                FieldChangeRow(k, k, "성분", "(주)새이름", "applicant", "(주)옛이름", "(주)새이름", False, "HIGH"),
            ),
            changed_fields=("applicant",),
            applicant="(주)새이름",
        )

    mass = [rename(f"2020010{i}-1-A-1-01") for i in range(6)]
    single = _ev(
        "20200201-2-B-2-02",
        severity="CRITICAL",
        changed_fields=("address",),
        changes=(FieldChangeRow("x", "x", "성분", "a", "address", "old", "new", False, "CRITICAL"),),
    )
    ours = replace(
        _ev(
            "20200301-3-C-3-03",
            severity="MEDIUM",
            changed_fields=("issue_date",),
            changes=(FieldChangeRow("y", "y", "성분", "a", "issue_date", "2020-01-01", "2020-02-02", False, "MEDIUM"),),
        ),
        product_hits=("우리정 (20200301-3-C-3-03)",),
    )
    sentences, total = summary_sentences([*mass, single, ours])
    assert total == 8 and len(sentences) == 3
    assert sentences[0].products and "의 발급일자가 2020-01-01에서 2020-02-02로 바뀌었습니다." in sentences[0].text
    assert sentences[1].severity == "CRITICAL" and "의 제조소 소재지가 old에서 new로 바뀌었습니다." in sentences[1].text
    assert sentences[2].count == 6
    assert sentences[2].text.startswith("등록 6건(20200100-1-A-1-01, ")
    assert sentences[2].text.endswith(" 등)에서 모두 신청인이 (주)옛이름에서 (주)새이름으로 바뀌었습니다.")
