"""Hostile source values through the whole graph: stored verbatim-but-safe, counted, never a formula.

The emulator's `hostile_text` fault rewrites 8 registrations on 2026-10-07 with a 100 KB address,
every C0 control character and DEL, U+FFFD, formula-like text (= + - @ tab), SQL-like text with
quotes, a right-to-left override and an emoji. Day 1 is a clean baseline; day 2 must be accepted
(8 changed rows is no transport fault) with an event per hostile row, and:
- DuckDB holds exactly the display values normalization defines (control/format characters
  dropped, everything else verbatim); the raw archive and the staged items keep the bytes as served;
- the quality metrics count the oversize field and the U+FFFD text;
- the workbook has no formula anywhere (no cell of type "f", no `<f>` in any sheet XML) and shows the
  formula-like texts as literal text in the events and field-change sheets;
- the events asset's JSON Lines keep the values;
- the team page's CSV export writes formula-like text behind an apostrophe, as text.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import zipfile
from datetime import date
from pathlib import Path

import dagster as dg
import httpx
import polars as pl
import pytest
from openpyxl import load_workbook

from dmf_assets.domain.text import display_text
from dmf_assets.emulator import faults as F
from dmf_assets.emulator.client import default_simulator
from dmf_assets.report.cells import FORMULA_TRIGGERS, TRUNCATION_MARK, ooxml_unescape
from dmf_assets.report.workbook import SHEET_EVENTS, SHEET_FIELDS
from dmf_assets.runs import launch
from dmf_assets.storage import history
from dmf_assets_tests.graph_support import make_workspace
from dmf_assets_tests.web_support import serving

pytestmark = pytest.mark.slow

BASE_DAY, HOSTILE_DAY = date(2026, 10, 6), date(2026, 10, 7)
SEED = 20250101
#: API field -> the stored display column
COLUMN = {
    "ENTP_NAME": "applicant",
    "INGR_KOR_NAME": "ingredient",
    "MNFCTR_NAME": "manufacturer",
    "MNFCTR_PLACE": "address",
}
FIELD_NAME = {
    "ENTP_NAME": "applicant",
    "INGR_KOR_NAME": "ingredient",
    "MNFCTR_NAME": "manufacturer",
    "MNFCTR_PLACE": "address",
}
FORMULA_LIKE = ('=HYPERLINK("http://x","y")', "+SUM(A1)", "-2+3", "@cmd", "=1+1")  # "=1+1" is "\t=1+1" displayed
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u202e]")


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    ws = make_workspace(
        tmp_path_factory.mktemp("hostile"), {HOSTILE_DAY.isoformat(): "hostile_text"}, records_in_memory=True
    )
    reports = launch.run_days([BASE_DAY, HOSTILE_DAY], instance=ws.instance, resources=ws.resources)
    rows = default_simulator(SEED).items(HOSTILE_DAY)  # the registry the in-process emulator served
    hostile = {
        rows[i]["DMF_PERMIT_NO"]: payload for i, payload in F.hostile_rows(HOSTILE_DAY.isoformat(), rows).items()
    }
    return ws, reports, hostile


def _permit(raw: str) -> str:
    return display_text(raw, "permit")


def test_no_stage_crashed_and_the_day_is_accepted(hostile_run):
    ws, reports, hostile = hostile_run
    assert len(hostile) == len(F.HOSTILE_PAYLOADS) == 8
    assert [(r.success, r.failure) for r in reports] == [(True, None), (True, None)]
    runs = ws.instance.get_run_records()
    assert runs and all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    with ws.connect() as conn:
        run = history.run_row(conn, HOSTILE_DAY)
        assert run["status"] == "accepted" and run["rejected_gate"] is None
        gates = {g["gate_no"]: g for g in history.gate_rows(conn, HOSTILE_DAY)}
        assert gates[6]["passed"] and gates[6]["observed_value"] < 0.01  # 8 + the day's real changes
        # the SQL-like text was data, never SQL
        assert conn.execute("SELECT count(*) FROM records").fetchall()[0][0] > 9000
        events = conn.execute(
            "SELECT permit_no, event_type FROM events WHERE day_id = ? AND permit_no IN (SELECT unnest(?))",
            [history.day_id(HOSTILE_DAY), [_permit(n) for n in hostile]],
        ).fetchall()
    assert sorted(events) == sorted((_permit(n), "CHANGED") for n in hostile)


def test_duckdb_stores_the_display_values_normalization_defines(hostile_run):
    ws, _, hostile = hostile_run
    seen_fields = set()
    with ws.connect() as conn:
        for number, payload in hostile.items():
            stored = conn.execute(
                "SELECT v.applicant, v.ingredient, v.manufacturer, v.address, v.oversize_fields, v.has_replacement_char "
                "FROM snapshots s JOIN records r USING (record_id) JOIN record_versions v ON v.version_id = s.version_id "
                "WHERE s.day_id = ? AND r.permit_no = ?",
                [history.day_id(HOSTILE_DAY), _permit(number)],
            ).fetchall()
            assert len(stored) == 1, number
            applicant, ingredient, manufacturer, address, oversize, garbled = stored[0]
            values = {
                "applicant": applicant,
                "ingredient": ingredient,
                "manufacturer": manufacturer,
                "address": address,
            }
            for field, raw in payload.items():
                value = values[COLUMN[field]]
                seen_fields.add(field)
                assert value == display_text(raw), (field, raw[:80], value[:80])
                assert not _CONTROL.search(value)  # display drops control and bidi-format characters
                if not _CONTROL.search(raw):
                    assert value == raw.strip()  # nothing else is touched: quotes, =, +, -, @, U+FFFD, emoji
            if payload.get("MNFCTR_PLACE") == F.HOSTILE_LONG_ADDRESS:
                assert len(address) >= 99_990 and "MNFCTR_PLACE" in oversize
            if any("\ufffd" in v for v in payload.values()):
                assert garbled
    assert seen_fields == set(COLUMN)
    # the explicit cases, spelled out
    by_value = {v: k for p in hostile.values() for k, v in p.items()}
    assert display_text(F.HOSTILE_CONTROLS) == "Ctrl Pharma Ltd." and by_value[F.HOSTILE_CONTROLS] == "MNFCTR_NAME"
    assert display_text("\t=1+1") == "=1+1" and display_text("\u202eRTL 주소 gnp.exe") == "RTL 주소 gnp.exe"
    assert (
        display_text("💊 알약 성분") == "💊 알약 성분"
        and display_text("'; DROP TABLE records; --") == "'; DROP TABLE records; --"
    )


def test_raw_archive_and_staging_keep_the_values_as_served(hostile_run):
    ws, _, hostile = hostile_run
    served = {}
    for page in sorted((ws.root / "data" / "raw" / HOSTILE_DAY.isoformat()).glob("page-*.json.gz")):
        body = json.loads(gzip.decompress(page.read_bytes()))
        for item in body["response"]["body"]["items"]:
            if item.get("DMF_PERMIT_NO") in hostile:
                served[item["DMF_PERMIT_NO"]] = item
    assert set(served) == set(hostile)
    for number, payload in hostile.items():
        assert {k: served[number][k] for k in payload} == payload  # byte for byte: NUL, DEL, U+202E, 100 KB
    items = pl.read_parquet(
        ws.root / "data" / "staging" / HOSTILE_DAY.isoformat() / "raw_pages.parquet"
    )  # the day store
    staged = {r["DMF_PERMIT_NO"]: r for r in items.filter(pl.col("DMF_PERMIT_NO").is_in(list(hostile))).to_dicts()}
    for number, payload in hostile.items():
        assert {k: staged[number][k] for k in payload} == payload


def test_quality_metrics_count_the_hostile_values(hostile_run):
    ws, _, hostile = hostile_run
    with ws.connect() as conn:
        metrics = {
            (history.to_date(d), name): (value, ok, samples)
            for d, name, value, ok, samples in conn.execute(
                "SELECT day_id, name, value, ok, samples FROM quality_checks WHERE name IN ('oversize_fields', 'replacement_chars')"
            ).fetchall()
        }
    long_rows = sum(1 for p in hostile.values() if p.get("MNFCTR_PLACE") == F.HOSTILE_LONG_ADDRESS)
    garbled_rows = sum(1 for p in hostile.values() if any("\ufffd" in v for v in p.values()))
    assert long_rows == 1 and garbled_rows == 1
    for name, extra in (("oversize_fields", long_rows), ("replacement_chars", garbled_rows)):
        base_value, _, _ = metrics[(BASE_DAY, name)]
        value, ok, samples = metrics[(HOSTILE_DAY, name)]
        assert value == base_value + extra, name  # the clean day's count plus exactly the hostile rows
        assert not ok  # a warning (threshold 0), not a rejection
        assert json.loads(samples), name


def _sheet_xml(path: Path) -> dict[str, str]:
    with zipfile.ZipFile(path) as z:
        return {
            n: z.read(n).decode("utf-8") for n in z.namelist() if n.startswith("xl/worksheets/") and n.endswith(".xml")
        }


def test_workbook_has_no_formula_and_shows_formula_like_text_literally(hostile_run):
    ws, _, _hostile = hostile_run
    path = ws.root / "reports" / f"DMF_리포트_{HOSTILE_DAY.isoformat()}.xlsx"
    sheets = _sheet_xml(path)
    assert len(sheets) >= 9
    for name, xml in sheets.items():
        assert not re.search(r"<f[\s>/]", xml), f"formula element in {name}"
    wb = load_workbook(path)
    texts: dict[str, list] = {SHEET_EVENTS: [], SHEET_FIELDS: []}
    for sheet in wb.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (sheet.title, cell.coordinate, cell.value)
                if sheet.title in texts and isinstance(cell.value, str):
                    texts[sheet.title].append(cell)
    for title, cells in texts.items():
        values = {ooxml_unescape(c.value) for c in cells}
        for text in FORMULA_LIKE:
            hits = [c for c in cells if ooxml_unescape(c.value) == text]
            assert hits, (title, text)
            assert all(c.data_type == "s" and c.quotePrefix for c in hits), (title, text)
        # and the other hostile values, as normalization displays them
        for text in (
            "'; DROP TABLE records; --",
            "Ctrl Pharma Ltd.",
            "깨진\ufffd\ufffd성분명",
            "RTL 주소 gnp.exe",
            "💊 알약 성분",
        ):
            assert text in values, (title, text)
        # no source control/bidi character survives (the product's own multi-line summaries use "\n")
        assert not any(_CONTROL.search(v.replace("\n", " ")) for v in values)
    # the 100 KB address is cut at Excel's cell limit and says so (field-change sheet shows it in full otherwise)
    long_cells = [c for c in texts[SHEET_FIELDS] if c.value.startswith("Plot 7, Hostile Industrial Estate")]
    assert long_cells and all(c.value.endswith(TRUNCATION_MARK) and len(c.value) <= 32_767 for c in long_cells)
    # every text cell that starts like a formula is marked as text for Excel (quotePrefix)
    for sheet in wb.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                if isinstance(cell.value, str) and cell.value.startswith(FORMULA_TRIGGERS):
                    assert cell.data_type == "s" and cell.quotePrefix, (sheet.title, cell.coordinate)


def test_events_jsonl_keeps_the_values(hostile_run):
    ws, _, hostile = hostile_run
    lines = (ws.root / "data" / "events" / f"{HOSTILE_DAY.isoformat()}.jsonl").read_text(encoding="utf-8").splitlines()
    events = {e["permit_no"]: e for e in map(json.loads, lines)}
    for number, payload in hostile.items():
        event = events[_permit(number)]
        assert event["event_type"] == "CHANGED"
        after = {c["field"]: c["after"] for c in event["changes"]}
        for field, raw in payload.items():
            assert after[FIELD_NAME[field]] == display_text(raw), (field, raw[:60])


def test_the_pages_csv_export_opens_formula_like_text_as_text(hostile_run):
    """The page's CSV is for Excel (it carries a BOM for the Hangul): a registry value such as
    '=HYPERLINK(…)' went out as it is, and Excel would run it as a formula. The workbooks mark such text."""
    ws, _, _ = hostile_run
    with serving(ws.root / "reports", ws.database) as (base, _):
        answer = httpx.get(f"{base}/search.csv", timeout=60)
    assert answer.status_code == 200
    cells = [c for row in csv.reader(io.StringIO(answer.content.decode("utf-8-sig"))) for c in row]
    assert len(cells) > 9000
    assert not [c for c in cells if c.startswith(FORMULA_TRIGGERS) and not re.fullmatch(r"-?[0-9.]+", c)]
    # the values themselves, readable, behind the apostrophe (a manufacturer is shown with its country)
    assert "'+SUM(A1)" in cells and any(c.startswith(f"'{FORMULA_LIKE[0]}") for c in cells)
