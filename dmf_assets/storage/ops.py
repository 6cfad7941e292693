"""What the operations tools (`ops/`: doctor, backup, retention) and `dmf rebuild` ask the database: the
named statements of sql/queries/ops.sql and the catalog reads, run here so that every SQL statement of the
project sits behind `storage/`. Values come back typed (ints, names, tuples in the statement's order).
"""

from __future__ import annotations

import duckdb

from dmf_assets.storage.db import fetch_one, one_row, query


def last_accepted_day_id(conn: duckdb.DuckDBPyConnection) -> int | None:
    """day_id (YYYYMMDD) of the last accepted day, or None."""
    return one_row(conn, query("ops.last_accepted_day"))[0]  # max(): one row, NULL when none


def latest_run(conn: duckdb.DuckDBPyConnection) -> tuple | None:
    """(day_id, status, failed gate, …) of the latest run (ops.latest_run), or None."""
    return fetch_one(conn, query("ops.latest_run"))


def problem_count(conn: duckdb.DuckDBPyConnection, name: str) -> tuple:
    """(count, sample) of one consistency statement `ops.<name>` (raises duckdb.Error when it cannot run)."""
    return one_row(conn, query(f"ops.{name}"))  # an aggregate: always one row


def unfinished_days(conn: duckdb.DuckDBPyConnection) -> list[tuple]:
    """(day_id, judged at) of days judged by gates 1–5 but never committed or rejected afterwards."""
    return conn.execute(query("ops.unfinished_days")).fetchall()


def table_names(conn: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in conn.execute(query("ops.tables")).fetchall()]


def quote_ident(name: str) -> str:
    """A catalog identifier (table name read from information_schema), quoted for SQL."""
    return '"' + name.replace('"', '""') + '"'


def table_count(conn: duckdb.DuckDBPyConnection, table: str) -> int:
    """Row count of a table named by the catalog (`table_names`), never by a user."""
    return one_row(conn, f"SELECT count(*) FROM {quote_ident(table)}")[0]


def read_table(conn: duckdb.DuckDBPyConnection, table: str) -> int:
    """Row count of a table read value by value: DuckDB verifies each block's checksum as it reads it (a bare
    count(*) could be answered from metadata; hashing every column touches every block). Raises duckdb.Error."""
    return one_row(conn, f"SELECT count(*), max(hash(COLUMNS(*))) FROM {quote_ident(table)}")[0]


def runs_count(conn: duckdb.DuckDBPyConnection) -> int:
    """Rows of the runs table (a day processed = one row)."""
    return one_row(conn, "SELECT count(*) FROM runs")[0]


def applied_versions(conn: duckdb.DuckDBPyConnection) -> list[int]:
    """The migration versions recorded in schema_migrations, ascending."""
    return sorted(v for (v,) in conn.execute("SELECT version FROM schema_migrations").fetchall())


def checkpoint(conn: duckdb.DuckDBPyConnection) -> None:
    """Fold the WAL into the main file: the file alone is then the whole database."""
    conn.execute("CHECKPOINT")
