"""The outbox's SQLite file (`notify/outbox.py` decides what is sent when): its schema, connections and every
statement, so that the project's SQL sits behind `storage/`. Values and states are the caller's; these functions
only read and write them. One file beside the alerts, shared by the daemon's sensor, `dmf` commands and the
watchdog timer through SQLite's own locking.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

FILE = "outbox.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    type        TEXT NOT NULL,            -- alert | report
    kind        TEXT NOT NULL,            -- the alert kind, or "report"
    day         TEXT NOT NULL,            -- the partition the message is about
    dedupe      TEXT UNIQUE,              -- alerts: "{day}-{kind}" (once per day and kind)
    digest      TEXT,                     -- reports: what the workbook says (an identical one is not re-sent)
    subject     TEXT NOT NULL,
    message     TEXT NOT NULL,            -- the rendered Message, JSON
    attachment  TEXT,
    state       TEXT NOT NULL,
    hold_until  TEXT,
    note        TEXT,
    run_id      TEXT,
    created_at  TEXT NOT NULL,
    give_up_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sends (
    message_id      INTEGER NOT NULL REFERENCES messages(id),
    channel         TEXT NOT NULL,        -- "email" | "webhook:<hash of the URL>"
    target          TEXT NOT NULL,        -- secret-free: host:port → recipients, or scheme://host/…
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,
    last_attempt_at TEXT,
    next_attempt_at TEXT NOT NULL,
    sent_at         TEXT,
    PRIMARY KEY (message_id, channel)
);
CREATE INDEX IF NOT EXISTS messages_day ON messages(type, day);
"""


class OutboxError(Exception):
    """The outbox file cannot be written (a full disk, a read-only folder): the text says where."""


@contextlib.contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection with the schema in place; any SQLite error becomes `OutboxError` naming the file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise OutboxError(f"발송함을 열 수 없습니다 / cannot open the outbox {path}: {exc}") from None
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.executescript(_SCHEMA)
        yield conn
    except sqlite3.Error as exc:
        raise OutboxError(f"발송함에 쓸 수 없습니다 / cannot write the outbox {path}: {exc}") from None
    finally:
        conn.close()


@contextlib.contextmanager
def transaction(path: Path) -> Iterator[sqlite3.Connection]:
    """`connect` inside one write transaction (taken at once: BEGIN IMMEDIATE), rolled back on any error."""
    with connect(path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


# --- messages ----------------------------------------------------------------------------------------


def dedupe_exists(conn: sqlite3.Connection, dedupe: str) -> bool:
    return conn.execute("SELECT 1 FROM messages WHERE dedupe = ?", (dedupe,)).fetchone() is not None


def supersede_day_reports(
    conn: sqlite3.Connection, day: str, *, state: str, stamp: str, of_states: tuple[str, str]
) -> None:
    """The day's workbook mails in `of_states` take `state`."""
    conn.execute(
        "UPDATE messages SET state = ?, updated_at = ? WHERE type = 'report' AND day = ? AND state IN (?, ?)",
        (state, stamp, day, *of_states),
    )


def insert_message(conn: sqlite3.Connection, **columns: str | None) -> int:
    """One messages row (every column but `id` and `note`, by name); returns its id."""
    cur = conn.execute(
        "INSERT INTO messages (type, kind, day, dedupe, digest, subject, message, attachment, state, hold_until, "
        "run_id, created_at, give_up_at, updated_at) VALUES (:type, :kind, :day, :dedupe, :digest, :subject, "
        ":message, :attachment, :state, :hold_until, :run_id, :created_at, :give_up_at, :updated_at)",
        columns,
    )
    return int(cur.lastrowid or 0)


def insert_sends(
    conn: sqlite3.Connection, message_id: int, channels: Sequence[tuple[str, str]], *, state: str, stamp: str
) -> None:
    conn.executemany(
        "INSERT INTO sends (message_id, channel, target, state, next_attempt_at) VALUES (?, ?, ?, ?, ?)",
        [(message_id, key, target, state, stamp) for key, target in channels],
    )


def release_message(
    conn: sqlite3.Connection, message_id: int, *, state: str, from_state: str, note: str | None, stamp: str
) -> bool:
    """A message in `from_state` takes `state` (hold lifted); False when it was not in `from_state`."""
    cur = conn.execute(
        "UPDATE messages SET state = ?, note = COALESCE(?, note), hold_until = NULL, updated_at = ? "
        "WHERE id = ? AND state = ?",
        (state, note, stamp, message_id, from_state),
    )
    return bool(cur.rowcount)


def message_ids_in_state(conn: sqlite3.Connection, state: str) -> list[int]:
    return [r[0] for r in conn.execute("SELECT id FROM messages WHERE state = ?", (state,))]


def requeue_message(conn: sqlite3.Connection, message_id: int, *, state: str, give_up_at: str, stamp: str) -> None:
    conn.execute(
        "UPDATE messages SET state = ?, give_up_at = ?, updated_at = ? WHERE id = ?",
        (state, give_up_at, stamp, message_id),
    )


def message_give_up_at(conn: sqlite3.Connection, message_id: int) -> str:
    return conn.execute("SELECT give_up_at FROM messages WHERE id = ?", (message_id,)).fetchone()[0]


def set_message_state(conn: sqlite3.Connection, message_id: int, *, state: str, from_state: str, stamp: str) -> None:
    conn.execute(
        "UPDATE messages SET state = ?, updated_at = ? WHERE id = ? AND state = ?",
        (state, stamp, message_id, from_state),
    )


# --- sends -------------------------------------------------------------------------------------------


def reschedule_sends(conn: sqlite3.Connection, message_id: int, *, in_state: str, next_attempt_at: str) -> None:
    """The message's sends in `in_state` become due at `next_attempt_at`."""
    conn.execute(
        "UPDATE sends SET next_attempt_at = ? WHERE message_id = ? AND state = ?",
        (next_attempt_at, message_id, in_state),
    )


def requeue_sends(
    conn: sqlite3.Connection, message_id: int, *, state: str, from_state: str, next_attempt_at: str
) -> None:
    conn.execute(
        "UPDATE sends SET state = ?, next_attempt_at = ? WHERE message_id = ? AND state = ?",
        (state, next_attempt_at, message_id, from_state),
    )


def reclaim_stale(conn: sqlite3.Connection, *, state: str, from_state: str, older_than: str) -> None:
    """Claims (`from_state`) last attempted before `older_than` return to `state`."""
    conn.execute("UPDATE sends SET state = ? WHERE state = ? AND last_attempt_at < ?", (state, from_state, older_than))


def due_sends(
    conn: sqlite3.Connection, states: tuple[str, str], *, due_by: str | None, message_id: int | None
) -> list[sqlite3.Row]:
    """(message_id, channel) rows of the sends in `states[1]` of messages in `states[0]`, due by `due_by` (None:
    whenever due), of one message if given; oldest message first."""
    return conn.execute(
        "SELECT s.message_id, s.channel FROM sends s JOIN messages m ON m.id = s.message_id "
        "WHERE m.state = ? AND s.state = ? AND (? IS NULL OR s.next_attempt_at <= ?) AND (? IS NULL OR m.id = ?) "
        "ORDER BY m.id, s.channel",
        (*states, due_by, due_by, message_id, message_id),
    ).fetchall()


def claim_send(conn: sqlite3.Connection, message_id: int, channel: str, *, state: str, stamp: str) -> None:
    conn.execute(
        "UPDATE sends SET state = ?, last_attempt_at = ? WHERE message_id = ? AND channel = ?",
        (state, stamp, message_id, channel),
    )


def send_attempts(conn: sqlite3.Connection, message_id: int, channel: str) -> int:
    row = conn.execute(
        "SELECT attempts FROM sends WHERE message_id = ? AND channel = ?", (message_id, channel)
    ).fetchone()
    return int(row["attempts"])


def record_send(
    conn: sqlite3.Connection,
    message_id: int,
    channel: str,
    *,
    state: str,
    attempts: int,
    error: str | None,
    stamp: str,
    next_attempt_at: str,
) -> None:
    """One attempt's outcome; `sent_at` is stamped when `state` is 'sent'."""
    conn.execute(
        "UPDATE sends SET state = ?, attempts = ?, last_error = ?, last_attempt_at = ?, next_attempt_at = ?, "
        "sent_at = CASE WHEN ? = 'sent' THEN ? ELSE sent_at END WHERE message_id = ? AND channel = ?",
        (state, attempts, error, stamp, next_attempt_at, state, stamp, message_id, channel),
    )


def send_states(conn: sqlite3.Connection, message_id: int) -> set[str]:
    return {r[0] for r in conn.execute("SELECT state FROM sends WHERE message_id = ?", (message_id,))}


# --- reading -----------------------------------------------------------------------------------------

#: the message filters `load` accepts (fixed clauses: values are always bound parameters)
WHERE = {
    "day_reports": "type = 'report' AND day = ?",
    "id": "id = ?",
    "recent": "updated_at >= ? OR state IN (?, ?, ?)",
    "state": "state = ?",
}


def load(path: Path, where: str, args: tuple) -> list[tuple[sqlite3.Row, list[sqlite3.Row]]]:
    """(message row, its send rows by channel) of the messages matching `WHERE[where]`, by id; [] without a file."""
    if not path.exists():
        return []
    with connect(path) as conn:
        rows = conn.execute(f"SELECT * FROM messages WHERE {WHERE[where]} ORDER BY id", args).fetchall()
        return [
            (r, conn.execute("SELECT * FROM sends WHERE message_id = ? ORDER BY channel", (r["id"],)).fetchall())
            for r in rows
        ]
