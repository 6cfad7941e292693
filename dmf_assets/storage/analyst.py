"""What the analyst commands read (`analyst/queries.py`): the named statements of sql/queries/analyst.sql, run
here so that every SQL statement of the project sits behind `storage/`. Read-only; rows come back as
record-id sets, dicts keyed by column name, or tuples in the statement's column order.
"""

from __future__ import annotations

from typing import Any

import duckdb

from dmf_assets.storage.db import dict_rows, query


def records_by_key(conn: duckdb.DuckDBPyConnection, key: str) -> set[int]:
    """record_ids whose stored key (dmf_key or permit number) is `key`."""
    return {r[0] for r in conn.execute(query("analyst.records_by_key"), [key, key]).fetchall()}


def records_by_compact_key(conn: duckdb.DuckDBPyConnection, compact: str) -> set[int]:
    """record_ids whose number, with everything but letters and digits removed, is `compact`."""
    return {r[0] for r in conn.execute(query("analyst.records_by_compact_key"), [compact]).fetchall()}


def records_by_pattern(conn: duckdb.DuckDBPyConnection, column: str, needle: str) -> set[int]:
    """record_ids whose `column` matching key contains `needle` in any version."""
    return {r[0] for r in conn.execute(query("analyst.records_by_pattern"), [column, needle] * 3).fetchall()}


def record_versions(conn: duckdb.DuckDBPyConnection, record_ids: list[int]) -> list[dict[str, Any]]:
    return dict_rows(conn.execute(query("analyst.record_versions"), [record_ids]))


def record_events(
    conn: duckdb.DuckDBPyConnection, record_ids: list[int], start_id: int, end_id: int
) -> list[dict[str, Any]]:
    return dict_rows(conn.execute(query("analyst.record_events"), [record_ids, record_ids, start_id, end_id]))


def event_changes(conn: duckdb.DuckDBPyConnection, event_ids: list[int]) -> list[dict[str, Any]]:
    return dict_rows(conn.execute(query("analyst.event_changes_of"), [event_ids]))


def number_links(conn: duckdb.DuckDBPyConnection, record_ids: list[int]) -> list[tuple]:
    """(key, the key it continued as, day_id, re-numbered?) of the registrations that received their number
    or were listed under another number, oldest first."""
    return conn.execute(query("analyst.number_links"), [record_ids, record_ids]).fetchall()


def accepted_days(conn: duckdb.DuckDBPyConnection) -> list[int]:
    """day_ids of every accepted day, oldest first."""
    return [r[0] for r in conn.execute(query("analyst.accepted_days")).fetchall()]


def record_presence(conn: duckdb.DuckDBPyConnection, record_ids: list[int]) -> list[tuple]:
    """(dmf_key, day_id, version_id) of every accepted day the registrations were listed on."""
    return conn.execute(query("analyst.record_presence"), [record_ids]).fetchall()
