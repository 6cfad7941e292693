"""The team's page's figures and sentences for a history whose first day was rejected: before any accepted day no
later comparison covers a day's changes, so the page must not promise one."""

from __future__ import annotations

from datetime import date

from dmf_assets.settings import load_settings
from dmf_assets.storage.db import open_database
from dmf_assets.web import data
from dmf_assets_tests.histories import build_emulated_history

FIRST, SECOND, THIRD = date(2026, 11, 30), date(2026, 12, 1), date(2026, 12, 2)


def test_a_first_day_rejected_is_not_said_to_be_covered_by_a_later_comparison(tmp_path):
    database = build_emulated_history(tmp_path / "dmf.duckdb", [FIRST], rejected=(FIRST,))
    with open_database(database, purpose="test") as conn:
        home = data.home(conn)
        # no accepted day yet: the reason is still given (it was dropped), and no comparison is promised
        assert home.latest is None and home.rejected_day == FIRST
        assert home.rejected_reason and home.rejected_gate and not home.rejected_covered
    build_emulated_history(database, [SECOND, THIRD])  # a baseline, then a compared day
    with open_database(database, purpose="test") as conn:
        assert data.home(conn).latest == THIRD and not data.home(conn).rejected_covered  # nothing came before it
        settings = load_settings()
        # a day not run before the first accepted day: its changes are in the baseline, not covered by a comparison
        assert not data.day_page(conn, date(2026, 11, 29), settings).covered
        assert data.day_page(conn, date(2026, 12, 5), settings).covered  # after it: the next comparison covers it
