"""A day refused by a gate that reads its comparison base (3, 6) is judged again when that base moves.

A backfill commits an earlier day after a later one was refused against an older base: in date order the
later day would have been compared with the backfilled one, and accepted. Its snapshot was never kept, so the
commit names it (`rejudge_days`) and the sensor runs it again from its archive — the history then ends as the
date order writes it, which is also what `dmf rebuild` writes from the archives.

[gates] churn_max_ratio 1.5 %: three emulator days weeks apart, the last 2.05 % away from the first and
1.2 % from the middle one.
"""

from __future__ import annotations

import contextlib
import queue
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from dmf_assets.defs.resources import build_resources
from dmf_assets.runs import launch
from dmf_assets.settings import load_settings
from dmf_assets.storage import history
from dmf_assets_tests.graph_support import Workspace, make_workspace, runs_by_day
from dmf_assets_tests.message_rules import assert_team_words
from dmf_assets_tests.notify_servers import email_config, smtp_server

pytestmark = pytest.mark.slow

FIRST, BACKFILLED, REFUSED = date(2026, 7, 20), date(2026, 9, 1), date(2026, 11, 2)


def _workspace(root: Path, extra: str = "") -> Workspace:
    ws = make_workspace(root, records_in_memory=True)
    config = root / "strict.toml"  # what each run reads (defaults, then this file, then `extra`)
    config.write_text("[gates]\nchurn_max_ratio = 0.015\n\n" + extra, encoding="utf-8")
    assert load_settings(config).gates.churn_max_ratio == 0.015
    return replace(ws, resources=build_resources(root=root, config_file=str(config), emulator_faults={}))


def _run(ws: Workspace, day: date) -> launch.DayRun:
    done = launch.run_day(day, instance=ws.instance, resources=ws.resources)
    assert done.failure is None, done
    return done


def _content(ws: Workspace) -> history.HistoryContent:
    with ws.connect() as conn:
        return history.history_content(conn)


def _team_mails(smtp) -> dict[str, str]:
    """Subject -> plain body of every mail the team got so far."""
    mails = {}
    with contextlib.suppress(queue.Empty):
        while True:
            _, mail = smtp.next_message(timeout=0.5)
            mails[mail["Subject"]] = mail.get_body(("plain",)).get_content()
    return mails


def test_a_day_refused_against_an_older_base_is_judged_again_when_a_backfill_gives_it_a_nearer_one(tmp_path):
    with smtp_server() as smtp:
        ws = _workspace(tmp_path / "backfilled", email_config(smtp.port))
        for day in (FIRST, REFUSED):
            _run(ws, day)
        refused = runs_by_day(ws)[REFUSED]
        assert (refused["status"], refused["rejected_gate"], refused["base_day_id"]) == (
            "rejected",
            6,
            history.day_id(FIRST),
        )
        told = f"[DMF] {REFUSED} — 수집 실패 (비교 기준 {FIRST})"
        assert told in _team_mails(smtp)

        backfill = _run(ws, BACKFILLED)
        assert backfill.followups >= 1  # the refused day's run, from its archive
        mails = _team_mails(smtp)
    runs = runs_by_day(ws)
    assert runs[REFUSED]["status"] == "accepted" and runs[REFUSED]["base_day_id"] == history.day_id(BACKFILLED)
    # the team, told the day failed, is told what happened: compared again, not fetched again
    [(subject, body)] = [(s, b) for s, b in mails.items() if s.startswith(f"[DMF 정정] {REFUSED} — ")]
    assert (
        f"「{told}」 메일을 바로잡습니다. 그 뒤 다른 날이 처리되어 이 날을 {BACKFILLED} 기준으로 다시 비교해 정상으로 "
        in body
    )
    assert "다시 받아" not in body and "다시 수집" not in body
    assert_team_words(subject)
    assert_team_words(body)

    in_order = _workspace(tmp_path / "in_order")
    for day in (FIRST, BACKFILLED, REFUSED):
        _run(in_order, day)
    assert _content(ws) == _content(in_order)
    # the day's workbook now reads as an accepted day compared with the backfilled one
    assert (ws.root / "reports" / f"DMF_리포트_{REFUSED.isoformat()}.xlsx").exists()
    events = ws.root / "data" / "events" / f"{REFUSED.isoformat()}.jsonl"
    assert events.exists() and str(BACKFILLED) in events.read_text(encoding="utf-8")
