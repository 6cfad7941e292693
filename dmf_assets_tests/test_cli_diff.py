"""`dmf diff` on the three dump shapes, run as a real command, scored against the emulator's truth."""

from __future__ import annotations

import copy
import gzip
import json
import subprocess
import sys
from datetime import date

import pytest

from dmf_assets.domain.model import Event
from dmf_assets.emulator.registry import RegistrySimulator
from dmf_assets.emulator.scoring import score
from dmf_assets.source.client import FetchConfig, fetch_day
from dmf_assets.settings import load_settings

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
    assert "신규 0 · 변경 1 · 취하 1 · 표기 변경 1" in table.stdout
    assert f"[심각] 취하 {gone['DMF_PERMIT_NO']}" in table.stdout
    assert "제조소명: Glochem Industries Private Limited → Other Pharma Co., Ltd." in table.stdout
    assert "하이플생명과학 주식회사" not in table.stdout  # cosmetic rows only with --include-cosmetic

    lines = dmf("diff", str(old), str(path), "--format", "jsonl").stdout.splitlines()
    kinds = sorted((json.loads(x)["event_type"], json.loads(x)["is_cosmetic"]) for x in lines)
    assert kinds == [("CHANGED", False), ("CHANGED", True), ("WITHDRAWN", False)]


def test_api_pages_and_archived_days_scored_against_truth(tmp_path):
    raw = tmp_path / "raw"
    config = FetchConfig.from_settings(load_settings(), service_key="k", raw_dir=str(raw), num_of_rows=1000)
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


@pytest.mark.parametrize("bad", ["missing.json", "notjson.txt"])
def test_bad_input_is_one_clear_line(tmp_path, bad):
    if bad == "notjson.txt":
        (tmp_path / bad).write_text("hello", encoding="utf-8")
    result = dmf("diff", str(tmp_path / bad), str(tmp_path / bad))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stderr.startswith("dmf: ")
