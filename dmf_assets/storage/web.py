"""What the team's page (`web/`) reads beyond the workbook's and the analyst commands' reads: the named
statements of sql/queries/web.sql. Read-only; the page opens the database with `db.read_only_database`.
"""

from __future__ import annotations

from datetime import date

import duckdb
import polars as pl

from dmf_assets.storage import history
from dmf_assets.storage.db import fetch_one, one_row, query


def last_day_with_status(conn: duckdb.DuckDBPyConnection, statuses: tuple[str, ...]) -> date | None:
    """The latest day the `runs` table records with one of `statuses`."""
    row = fetch_one(conn, query("web.last_day_with_status"), [list(statuses)])
    return history.to_date(row[0]) if row else None


def processed_span(conn: duckdb.DuckDBPyConnection) -> tuple[date, date] | None:
    """(first, last) day any run recorded; None when nothing ran yet."""
    first, last = one_row(conn, query("web.processed_span"))
    return None if first is None else (history.to_date(first), history.to_date(last))


def day_sites(conn: duckdb.DuckDBPyConnection, day: date) -> pl.DataFrame:
    """(record_id, sites, manufacturer) of every registration listed on an accepted `day`."""
    return conn.sql(query("web.day_sites"), params=[history.day_id(day)]).pl()
