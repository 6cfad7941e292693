"""`dmf diff` on the three dump shapes, run as a real command, scored against the emulator's truth."""

from __future__ import annotations

import copy
import gzip
import json
import subprocess
import sys
from datetime import date

import polars as pl
import pytest

from dmf_assets.domain.model import Event
from dmf_assets.emulator.client import mfds_client_from_settings
from dmf_assets.emulator.registry import RegistrySimulator
from dmf_assets.settings import load_settings
from dmf_assets.source.fetch import fetch_day
from dmf_assets_tests.scoring import score

D1, D2 = date(2026, 10, 5), date(2026, 10, 9)


def dmf(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dmf_assets", *args], capture_output=True, text=True, timeout=300)


def parse_events(jsonl: str) -> list[Event]:
    return [Event.from_row(e, e["changes"]) for e in map(json.loads, jsonl.splitlines())]


def test_items_json_files(tmp_path, real_fixture_files):
    old = real_fixture_files[0]
    doc = json.loads(old.read_text(encoding="utf-8"))
    new = copy.deepcopy(doc)
    new["items"][1]["MNFCTR_NAME"] = "Other Pharma Co., Ltd."
    new["items"][0]["ENTP_NAME"] = "하이플생명과학 주식회사"
    gone = new["items"].pop(5)
    new["totalCount"] = len(new["items"])  # a consistent dump (the completeness gate reads it)
    path = tmp_path / "new.json"
    path.write_text(json.dumps(new, ensure_ascii=False), encoding="utf-8")

    table = dmf("diff", str(old), str(path))
    assert table.returncode == 0, table.stderr
    assert "신규 0 · 변경 1 · 삭제 1 · 번호 부여 0 · 번호 변경 0 · 재등장 0 · 표기 변경 1 (별도)" in table.stdout
    assert f"[심각] 목록에서 삭제 {gone['DMF_PERMIT_NO']}" in table.stdout
    assert "제조소명: Glochem Industries Private Limited → Other Pharma Co., Ltd." in table.stdout
    assert "하이플생명과학 주식회사" not in table.stdout  # cosmetic rows only with --include-cosmetic

    lines = dmf("diff", str(old), str(path), "--format", "jsonl").stdout.splitlines()
    kinds = sorted((json.loads(x)["event_type"], json.loads(x)["is_cosmetic"]) for x in lines)
    assert kinds == [("CHANGED", False), ("CHANGED", True), ("WITHDRAWN", False)]


def test_the_real_renumbering_is_one_changed_event_in_dmf_diff(tmp_path, real_items, renumbered_pair):
    """Issue 30's case through the command (the comparison-only snapshots `dmf diff` builds): one MEDIUM
    CHANGED from the old number to the new one, no CRITICAL 목록에서 삭제, no 신규."""
    before, after = renumbered_pair
    paths = {}
    for name, rows in (("old", [*real_items, before]), ("new", [*real_items, after])):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps({"totalCount": len(rows), "items": rows}, ensure_ascii=False), "utf-8")
    result = dmf("diff", str(paths["old"]), str(paths["new"]), "--format", "jsonl", "--no-watchlist")
    assert result.returncode == 0, result.stderr
    (e,) = parse_events(result.stdout)
    assert (e.event_type.value, e.severity.value, e.number_changed) == ("CHANGED", "MEDIUM", True)
    assert (e.base_dmf_key, e.permit_no) == (before["DMF_PERMIT_NO"], after["DMF_PERMIT_NO"])
    table = dmf("diff", str(paths["old"]), str(paths["new"]), "--no-watchlist").stdout
    assert "신규 0 · 변경 0 · 삭제 0 · 번호 부여 0 · 번호 변경 1 · 재등장 0" in table
    assert f"[보통] 등록번호 변경 {before['DMF_PERMIT_NO']} → {after['DMF_PERMIT_NO']}" in table
    assert "목록에서 삭제" not in table and "[정보] 신규" not in table
    # a second row alike in everything but its number: no unique pairing, said as a possibility
    twin = {**after, "DMF_PERMIT_NO": "20260922-190-I-769-05"}
    rows = [*real_items, after, twin]
    paths["new"].write_text(json.dumps({"totalCount": len(rows), "items": rows}, ensure_ascii=False), "utf-8")
    table = dmf("diff", str(paths["old"]), str(paths["new"]), "--no-watchlist").stdout
    assert f"[심각] 목록에서 삭제 {before['DMF_PERMIT_NO']}" in table and table.count("[정보] 신규") == 2
    assert f"등록번호 변경 가능성: {before['DMF_PERMIT_NO']} ↔ 20260922-190-I-769-04, 20260922-190-I-769-05" in table


def test_a_number_assignment_is_named_as_such_in_dmf_diff(tmp_path, real_items):
    """A registration listed without a number that receives one: one CHANGED event, named 「등록번호 부여」 as the
    workbook names it and counted under 번호 부여 — not a 「변경」, never 삭제 + 신규."""
    numbered = real_items[0]
    unnumbered = {**numbered, "DMF_PERMIT_NO": None}
    paths = {}
    for name, row in (("old", unnumbered), ("new", numbered)):
        rows = [*real_items[1:], row]
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps({"totalCount": len(rows), "items": rows}, ensure_ascii=False), "utf-8")
    table = dmf("diff", str(paths["old"]), str(paths["new"]), "--no-watchlist")
    assert table.returncode == 0, table.stderr
    assert "신규 0 · 변경 0 · 삭제 0 · 번호 부여 1 · 번호 변경 0" in table.stdout
    (line,) = [x for x in table.stdout.splitlines() if x.startswith("[")]
    assert line.startswith("[정보] 등록번호 부여 SYN-") and f" → {numbered['DMF_PERMIT_NO']}" in line, line


def test_api_pages_and_archived_days_scored_against_truth(tmp_path):
    raw = tmp_path / "raw"
    config = mfds_client_from_settings(load_settings(), service_key="k", raw_dir=str(raw), num_of_rows=1000)
    for d in (D1, D2):
        assert fetch_day(config, d).status == "complete"
    result = dmf("diff", str(raw / D1.isoformat()), str(raw / D2.isoformat()), "--format", "jsonl", "--no-watchlist")
    assert result.returncode == 0, result.stderr
    s = score(parse_events(result.stdout), RegistrySimulator().truth(D1, D2))
    assert s.perfect and sum(s.true_positive.values()) > 5, (s.missed, s.spurious)

    # one saved API response page (gzip'd JSON envelope) compares too
    page = sorted((raw / D1.isoformat()).glob("page-*.json.gz"))[0]
    # … but one page of a multi-page registry is not the registry: the completeness gate refuses it
    same = dmf("diff", str(page), str(page))
    assert same.returncode == 3 and "완전성(completeness)" in same.stderr and not same.stdout
    forced = dmf("diff", str(page), str(page), "--force")
    assert forced.returncode == 0 and "(--force)" in forced.stdout and "변경 없음" in forced.stdout
    assert gzip.decompress(page.read_bytes())  # really the archived bytes


def test_an_added_site_is_worded_as_history_and_the_workbook_word_it(tmp_path):
    """An added site reads 「제조소 추가: Name (중국)」 — the line `dmf history` and the workbook's 변경 내용 print
    (issue 31: `dmf diff` said 「제조소(사이트): (없음) → X」), never Python's "None" (the emulator adds one
    between these days)."""
    import re

    raw = tmp_path / "raw"
    config = mfds_client_from_settings(load_settings(), service_key="k", raw_dir=str(raw), num_of_rows=1000)
    days = (date(2026, 11, 18), date(2026, 11, 20))
    for d in days:
        assert fetch_day(config, d).status == "complete"
    result = dmf("diff", *(str(raw / d.isoformat()) for d in days), "--no-watchlist")
    assert result.returncode == 0, result.stderr
    site_lines = [line.strip() for line in result.stdout.splitlines() if "제조소 추가" in line]
    assert site_lines and all(re.fullmatch(r"제조소 추가: .+ \(.+\)", line) for line in site_lines), site_lines
    assert "(사이트)" not in result.stdout and "None" not in result.stdout


@pytest.mark.parametrize("bad", ["missing.json", "notjson.txt"])
def test_bad_input_is_one_clear_line(tmp_path, bad):
    if bad == "notjson.txt":
        (tmp_path / bad).write_text("hello", encoding="utf-8")
    result = dmf("diff", str(tmp_path / bad), str(tmp_path / bad))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stderr.startswith("dmf: ")


# --- the columnar dump reader gives exactly what the item-by-item reader gives ------------------------


def _careful(items: list) -> pl.DataFrame:
    from dmf_assets.domain.normalize import items_to_frame

    return items_to_frame(items)


def _variants(items: list[dict]) -> dict[str, bytes]:
    doc = {"observed_on": "2026-09-24", "totalCount": len(items), "items": items}
    return {
        "compact": json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode(),
        "default": json.dumps(doc, ensure_ascii=False).encode(),
        "indented": json.dumps(doc, ensure_ascii=False, indent=1).encode(),
        "ascii escapes": json.dumps(doc, ensure_ascii=True).encode(),
        "bare list": json.dumps(items, ensure_ascii=False).encode(),
        "items first": json.dumps({"items": items, "totalCount": len(items)}, ensure_ascii=False).encode(),
        "bom + gzip": gzip.compress(b"\xef\xbb\xbf" + json.dumps(doc, ensure_ascii=False).encode()),
    }


@pytest.mark.parametrize("block_bytes", [64, 4096, 1 << 22])
def test_streamed_dump_equals_the_item_by_item_reader(tmp_path, real_items, block_bytes):
    from polars.testing import assert_frame_equal

    from dmf_assets.source.dumps import load_dump

    items = [dict(r) for r in real_items]
    # values that look like structure: separators and brackets inside strings, escapes, empty and null
    items[0]["MNFCTR_NAME"] = 'A}, {"B": "c"}, {D'
    items[1]["MNFCTR_PLACE"] = 'line one\r\nline two\t[x] \\ "quoted"'
    items[2]["INGR_KOR_NAME"] = ""
    items[3]["BIZRNO"] = None
    items[4] = {k: v for k, v in items[4].items() if k != "NOTICE_CODE"}  # a missing key is null
    expected = _careful(items)
    for name, body in _variants(items).items():
        path = tmp_path / f"{name}.json"
        path.write_bytes(body)
        dump = load_dump(path, block_bytes=block_bytes)
        assert_frame_equal(dump.frame, expected, check_dtypes=True), name
        assert dump.total_count == (None if name == "bare list" else len(items)), name


@pytest.mark.parametrize("odd", ["number", "float", "bool", "nested", "lone surrogate", "surrogate pair"])
def test_values_the_fast_reader_cannot_vouch_for_take_the_careful_path(tmp_path, real_items, odd):
    from polars.testing import assert_frame_equal

    from dmf_assets.source.dumps import load_dump

    items = [dict(r) for r in real_items[:50]]
    value = {
        "number": 1338124994,
        "float": 12.0,
        "bool": True,
        "nested": {"a": [1, "b"]},
        "lone surrogate": "\ud800x",
        "surrogate pair": "\U0001f600",
    }[odd]
    items[7]["BIZRNO"] = value
    body = json.dumps({"items": items}, ensure_ascii=True).encode("utf-8", "surrogatepass")
    path = tmp_path / "odd.json"
    path.write_bytes(body)
    expected = _careful(json.loads(body.decode("utf-8", "surrogatepass"))["items"])
    assert_frame_equal(load_dump(path, block_bytes=256).frame, expected)
