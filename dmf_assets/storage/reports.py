"""The workbook's reads (`report/day_data.py`): the named statements of sql/queries/report.sql, run here so
that every SQL statement of the project sits behind `storage/`. Rows come back as polars frames (events and
their changes), dicts by column name (the aggregates) or tuples in the statement's column order; the report model
is built by the caller.
"""

from __future__ import annotations

from typing import Any

import duckdb
import polars as pl

from dmf_assets.storage.db import dict_rows, fetch_one, one_row, query


def day_events(conn: duckdb.DuckDBPyConnection, day_id: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(events with display values, their field changes) of one day: the published events, without the record
    ids the 이력 sheet links reappearances by."""
    events, changes = recent_events(conn, day_id, day_id)
    return events.drop("record_id", "base_record_id"), changes


def recent_events(conn: duckdb.DuckDBPyConnection, start_id: int, end_id: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(events, their field changes) of every accepted day in [start_id, end_id]."""
    params = [start_id, end_id]
    return (
        conn.sql(query("report.recent_events"), params=params).pl(),
        conn.sql(query("report.recent_changes"), params=params).pl(),
    )


def aggregate_rows(conn: duckdb.DuckDBPyConnection, name: str, day_id: int) -> list[dict[str, Any]]:
    """The rows of the aggregate statement `report.<name>`, by column name (label, registrations and its counts)."""
    return dict_rows(conn.execute(query(f"report.{name}"), [day_id]))


def rate_runs(conn: duckdb.DuckDBPyConnection, day_id: int) -> list[tuple]:
    """The accepted runs up to `day_id` the change rate is estimated from (report.rate_runs)."""
    return conn.execute(query("report.rate_runs"), [day_id]).fetchall()


def population_on_or_before(conn: duckdb.DuckDBPyConnection, day_id: int) -> int | None:
    """Registry size of the latest accepted day on or before `day_id`."""
    row = fetch_one(conn, query("report.population_on_or_before"), [day_id])
    return row[0] if row else None


def day_quality(conn: duckdb.DuckDBPyConnection, day_id: int) -> list[tuple]:
    """(name, label, value, expected, ok, detail) quality metrics of one day."""
    return conn.execute(query("report.day_quality"), [day_id]).fetchall()


def day_fetch_pages(conn: duckdb.DuckDBPyConnection, day_id: int) -> tuple:
    """The fetch's page facts of one day (report.day_fetch_pages: an aggregate, always one row)."""
    return one_row(conn, query("report.day_fetch_pages"), [day_id])


def history_points(conn: duckdb.DuckDBPyConnection, start_id: int, end_id: int) -> list[tuple]:
    """Every processed day in [start_id, end_id] with its status and headline counts (the runs table)."""
    return conn.execute(query("report.history_points"), [start_id, end_id]).fetchall()


def period_runs(conn: duckdb.DuckDBPyConnection, start_id: int, end_id: int) -> list[tuple]:
    """The runs of [start_id, end_id] a period report lists (report.period_runs)."""
    return conn.execute(query("report.period_runs"), [start_id, end_id]).fetchall()


def first_run_day(conn: duckdb.DuckDBPyConnection) -> int | None:
    """The first day the history holds a run of: monitoring began then (report.first_run_day)."""
    return one_row(conn, query("report.first_run_day"))[0]
