"""Retention of dated workbooks (365 days): never the 최신 copy, never the newest dated workbook,
never a file that does not match the dated pattern."""

from __future__ import annotations

import unicodedata
from datetime import date, timedelta

import pytest

from dmf_assets.report.retention import (
    LATEST_NAME,
    dated_workbook_name,
    dated_workbooks,
    parse_workbook_day,
    prune_reports,
)
from dmf_assets.report.workbook import workbook_day, write_workbook
from dmf_assets_tests.report_builders import baseline_report, unchanged_report

TODAY = date(2026, 10, 8)


def _touch(folder, name: str) -> None:
    (folder / name).write_bytes(b"x")


def test_prune_deletes_only_old_dated_workbooks(tmp_path):
    days = [TODAY - timedelta(days=n) for n in (400, 366, 365, 10, 0)]
    for d in days:
        _touch(tmp_path, dated_workbook_name(d))
    strangers = [
        LATEST_NAME,
        "DMF_리포트_2020-01-01.xlsx.bak",
        "DMF_리포트_2020-13-40.xlsx",  # not a real date
        "DMF_리포트_2020-01-01 (1).xlsx",
        "notes.txt",
        ".DMF_리포트_abc.xlsx.tmp",
    ]
    for name in strangers:
        _touch(tmp_path, name)
    deleted = prune_reports(tmp_path, keep_days=365, today=TODAY)
    assert sorted(p.name for p in deleted) == sorted(dated_workbook_name(d) for d in days[:2])
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([dated_workbook_name(d) for d in days[2:]] + strangers)
    assert prune_reports(tmp_path, keep_days=365, today=TODAY) == []  # idempotent


def test_prune_never_deletes_the_newest_dated_workbook_nor_latest(tmp_path):
    # a long outage: every workbook is older than the window — the last good one must survive
    old = [TODAY - timedelta(days=n) for n in (900, 800, 700)]
    for d in old:
        _touch(tmp_path, dated_workbook_name(d))
    _touch(tmp_path, LATEST_NAME)
    deleted = prune_reports(tmp_path, keep_days=365, today=TODAY)
    assert sorted(p.name for p in deleted) == sorted(dated_workbook_name(d) for d in old[:2])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([dated_workbook_name(old[2]), LATEST_NAME])
    # keep_days=0 keeps only today's and newer
    assert prune_reports(tmp_path, keep_days=0, today=TODAY) == []


def test_decomposed_hangul_file_names_are_recognised(tmp_path):
    nfd = unicodedata.normalize("NFD", dated_workbook_name(TODAY - timedelta(days=500)))
    assert nfd != dated_workbook_name(TODAY - timedelta(days=500))
    _touch(tmp_path, nfd)
    _touch(tmp_path, dated_workbook_name(TODAY))
    assert parse_workbook_day(nfd) == TODAY - timedelta(days=500)
    deleted = prune_reports(tmp_path, keep_days=365, today=TODAY)
    assert [p.name for p in deleted] == [nfd]


def test_bad_arguments_and_missing_folder(tmp_path):
    with pytest.raises(ValueError):
        prune_reports(tmp_path, keep_days=-1, today=TODAY)
    assert prune_reports(tmp_path / "nope", keep_days=365, today=TODAY) == []
    assert dated_workbooks(tmp_path / "nope") == []
    assert parse_workbook_day(LATEST_NAME) is None


def test_prune_after_real_writes_keeps_a_readable_latest(tmp_path):
    first = TODAY - timedelta(days=400)
    write_workbook(baseline_report(first), tmp_path)
    write_workbook(unchanged_report(TODAY - timedelta(days=1), first), tmp_path)
    write_workbook(unchanged_report(TODAY, TODAY - timedelta(days=1)), tmp_path)
    deleted = prune_reports(tmp_path, keep_days=365, today=TODAY)
    assert [p.name for p in deleted] == [dated_workbook_name(first)]
    assert workbook_day(tmp_path / LATEST_NAME) == TODAY
    assert [d for d, _ in dated_workbooks(tmp_path)] == [TODAY - timedelta(days=1), TODAY]
