"""The registry as of a day: every registration as the latest accepted day on or before it had it.

Read-only, shared by the analyst's `dmf asof` and the daily workbook's ledger. SQL lives in
sql/queries/analyst.sql.
"""

from __future__ import annotations

from datetime import date

import duckdb
import polars as pl

from dmf_assets.storage import history
from dmf_assets.storage.db import fetch_one, one_row, query


class NoHistory(LookupError):
    """Nothing accepted yet (or nothing on/before the asked day)."""


def accepted_day_on_or_before(conn: duckdb.DuckDBPyConnection, day: date) -> date | None:
    row = fetch_one(conn, query("analyst.accepted_day_on_or_before"), [history.day_id(day)])
    return history.to_date(row[0]) if row else None


def first_accepted_day(conn: duckdb.DuckDBPyConnection) -> date | None:
    return history.to_date(one_row(conn, query("analyst.first_accepted_day"))[0])  # min(): one row, NULL when none


def registry_asof(conn: duckdb.DuckDBPyConnection, day: date) -> tuple[date, pl.DataFrame]:
    """(accepted day used, one row per registration as accepted that day) — raises NoHistory."""
    accepted = accepted_day_on_or_before(conn, day)
    if accepted is None:
        first = first_accepted_day(conn)
        raise NoHistory(
            f"{day} 이전에 정상 수집(반영)된 날이 없습니다"
            + (f" — 첫 반영일은 {first}입니다" if first else " — 이력 DB가 비어 있습니다 (dmf backfill 먼저)")
        )
    d = history.day_id(accepted)
    frame = conn.sql(query("analyst.registry_asof"), params=[d, d, d]).pl()
    as_date = lambda c: pl.col(c).cast(pl.Utf8).str.to_date("%Y%m%d")  # noqa: E731 — yyyymmdd -> Date
    return accepted, frame.with_columns(first_seen=as_date("first_day"), last_changed=as_date("last_changed_day"))
