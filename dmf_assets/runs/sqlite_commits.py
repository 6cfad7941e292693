"""Dagster's SQLite run and event storage without a disk flush per event.

A run stores ≈90 events, each in its own connection and transaction; Dagster opens its SQLite files in WAL
mode, where SQLite's default (`synchronous=FULL`) flushes the write-ahead log to disk at every commit —
3–4 ms each on this project's machines, ≈1 s of every `dmf run` and half a minute of a 30-day backfill spent
waiting for the disk. With `synchronous=NORMAL` (SQLite's recommendation for WAL) a commit is flushed at the
next checkpoint instead. A killed process loses nothing (the log is in the OS); only an OS crash or power
loss can take back the last events, and the database stays consistent either way — the run then shows as
unfinished and run monitoring marks it failed. The history itself (DuckDB, the raw archive, the workbooks)
keeps its own flushes; Dagster's event log is the record of runs, never of data.

Dagster has no setting for it, so every SQLite connection SQLAlchemy opens in this process gets the pragma
(SQLAlchemy's `connect` event; PostgreSQL instances are untouched). Installed by the processes that run the
project's code: the code location (`dmf_assets.definitions`: the code server, every run worker) and the
`dmf` commands' instance. The webserver and the daemon keep Dagster's default.
"""

from __future__ import annotations

import sqlite3
from typing import Any

_installed = False


def _relax(dbapi_connection: Any, _record: Any) -> None:
    if isinstance(dbapi_connection, sqlite3.Connection):
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")


def flush_at_checkpoints() -> None:
    """From now on, SQLite connections opened through SQLAlchemy in this process flush at checkpoints."""
    global _installed
    if _installed:
        return
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    event.listen(Engine, "connect", _relax)
    _installed = True
