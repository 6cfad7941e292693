"""Two history databases built with the real storage code (what `dmf backfill` would leave behind), as fixtures
for the analyst and workbook tests:
- `emulated`: the emulator's 2026-10-01..08 committed day by day, with 10-06 rejected (a page came back short);
- `edited`: the 151 real MFDS rows, edited day by day by hand so every expectation is exact (a registration
  changed twice, a site added, withdrawals).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import pytest

from dmf_assets.domain.diff import diff_snapshots
from dmf_assets.domain.gates import GateOutcome
from dmf_assets.domain.snapshot import build_snapshot
from dmf_assets.emulator.registry import RegistrySimulator
from dmf_assets.orchestration import commit as day_commit
from dmf_assets.storage import history
from dmf_assets.storage.db import open_database
from dmf_assets_tests.project_support import built_once

START, END = date(2026, 10, 1), date(2026, 10, 8)
REJECTED = date(2026, 10, 6)


# --- the histories -----------------------------------------------------------------------------------


def build_emulated_history(database: Path, days: list[date], rejected: tuple[date, ...] = ()) -> Path:
    """The emulator's served rows committed day by day with the storage layer's own functions (what the
    pipeline's last step does; no Dagster run, no HTTP: fast, and independent of the orchestration code)."""
    sim = RegistrySimulator()
    with open_database(database, purpose="test") as conn:
        for d in days:
            items = sim.items(d)
            if d in rejected:  # e.g. a page came back short: gate 2 rejects, nothing is written
                conn.execute(
                    "INSERT INTO runs (day_id, status, total_count, rows_received) VALUES (?, 'pending', ?, ?)",
                    [history.day_id(d), len(items), len(items) - 20],
                )
                gate = GateOutcome(
                    2,
                    False,
                    len(items) - 20.0,
                    float(len(items)),
                    f"{len(items) - 20:,} / {len(items):,}",
                    "수신 건수 = totalCount",
                    "20건 누락",
                )
                day_commit.reject_day(conn, d, gate)
            else:
                commit_items(conn, d, items)
    return database


@pytest.fixture(scope="module")
def emulated(tmp_path_factory) -> Path:
    """Built once per session (`built_once`), a copy for each module."""
    days = [START + timedelta(days=i) for i in range((END - START).days + 1)]
    root, _ = built_once(
        tmp_path_factory,
        ["emulated history", days, REJECTED],
        lambda folder: str(build_emulated_history(folder / "dmf.duckdb", days, (REJECTED,))),
    )
    return root / "dmf.duckdb"


def _ok_churn() -> GateOutcome:
    return GateOutcome(6, True, 0.0, 0.1, "ok", "≤ 10 %", "test")


def commit_items(conn, day: date, items: list[dict]):
    """Commit one day's rows exactly as the pipeline's last step does."""
    keyed = build_snapshot(items)
    base = history.comparison_base(conn, day)
    base_frame = history.load_snapshot(conn, base.day) if base.day else None
    seen = history.previously_seen(conn, base.day) if base.day else []
    diff = diff_snapshots(base_frame, keyed, previously_seen=seen)
    conn.execute(
        "INSERT INTO runs (day_id, status, total_count, rows_received) VALUES (?, 'pending', ?, ?) "
        "ON CONFLICT DO NOTHING",
        [history.day_id(day), len(items), len(items)],
    )
    return day_commit.commit_day(conn, day, keyed, diff, base=base, gates=[_ok_churn()])


@dataclass
class Edited:
    database: Path
    days: list[date]
    twice: str  # changed on day 2 and day 3
    site_added: str  # a third site (in China, already listed) on day 4
    site_name: str
    withdrawn: list[str]  # gone on day 5
    items: dict[date, list[dict]]


E_DAYS = [date(2026, 9, 1) + timedelta(days=i) for i in range(5)]


@pytest.fixture(scope="module")
def edited(tmp_path_factory, real_items) -> Edited:
    twice, site = "20050831-37-C-34-05(4)", "20210626-211-J-1002"
    d1 = copy.deepcopy(real_items)
    d2 = copy.deepcopy(d1)
    row = next(r for r in d2 if r["DMF_PERMIT_NO"] == twice)
    row["MNFCTR_PLACE"] = "Plot 1, Phase I, Hyderabad, India"
    d3 = copy.deepcopy(d2)
    row = next(r for r in d3 if r["DMF_PERMIT_NO"] == twice)
    row["MNFCTR_PLACE"] = "Plot 99, Phase III, Visakhapatnam, India"
    row["DMF_PERMIT_DATE"] = "2016-01-01"
    d4 = copy.deepcopy(d3)
    row = next(r for r in d4 if r["DMF_PERMIT_NO"] == site)
    name = "Zhejiang Huahai Pharmaceutical Co., Ltd."
    row["MNFCTR_NAME"] += "," + name
    row["MNFCTR_PLACE"] += ",Xunqiao, Linhai, Zhejiang, China"
    row["MANUF_COUNTRY_CODE_NM"] += ",중국"
    d5 = copy.deepcopy(d4)
    gone = [r["DMF_PERMIT_NO"] for r in d5[100:105]]  # 5 of 151 = 3.3 % withdrawn
    d5 = d5[:100] + d5[105:]
    items = dict(zip(E_DAYS, (d1, d2, d3, d4, d5), strict=True))
    database = tmp_path_factory.mktemp("edited") / "h.duckdb"
    with open_database(database) as conn:
        for d in E_DAYS:
            commit_items(conn, d, items[d])
    return Edited(database, E_DAYS, twice, site, name, gone, items)
