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
from typing import Any

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


# --- messages and sends ---------------------------------------------------------------------------

#: every statement that changes the outbox or reads one value of it, by name (`run`); values are bound by name
STATEMENTS = {
    "find_dedupe": "SELECT 1 FROM messages WHERE dedupe = :dedupe",
    # the day's workbook mails still held or pending take `state`
    "supersede_day_reports": "UPDATE messages SET state = :state, updated_at = :stamp "
    "WHERE type = 'report' AND day = :day AND state IN (:held, :pending)",
    # a message in `from_state` takes `state`, its hold lifted (rowcount 0: it was not in `from_state`)
    "release_message": "UPDATE messages SET state = :state, note = COALESCE(:note, note), hold_until = NULL, "
    "updated_at = :stamp WHERE id = :message_id AND state = :from_state",
    "message_ids_in_state": "SELECT id FROM messages WHERE state = :state",
    "requeue_message": "UPDATE messages SET state = :state, give_up_at = :give_up_at, updated_at = :stamp "
    "WHERE id = :message_id",
    "message_give_up_at": "SELECT give_up_at FROM messages WHERE id = :message_id",
    "set_message_state": "UPDATE messages SET state = :state, updated_at = :stamp "
    "WHERE id = :message_id AND state = :from_state",
    # the message's sends in `in_state` become due at `next_attempt_at`
    "reschedule_sends": "UPDATE sends SET next_attempt_at = :next_attempt_at "
    "WHERE message_id = :message_id AND state = :in_state",
    "requeue_sends": "UPDATE sends SET state = :state, next_attempt_at = :next_attempt_at "
    "WHERE message_id = :message_id AND state = :from_state",
    # claims (`from_state`) last attempted before `older_than` return to `state`
    "reclaim_stale": "UPDATE sends SET state = :state WHERE state = :from_state AND last_attempt_at < :older_than",
    # (message_id, channel) of the sends in `send_state` of messages in `state`, due by `due_by` (None: whenever
    # due), of one message if given; oldest message first
    "due_sends": "SELECT s.message_id, s.channel FROM sends s JOIN messages m ON m.id = s.message_id "
    "WHERE m.state = :state AND s.state = :send_state AND (:due_by IS NULL OR s.next_attempt_at <= :due_by) "
    "AND (:message_id IS NULL OR m.id = :message_id) ORDER BY m.id, s.channel",
    "claim_send": "UPDATE sends SET state = :state, last_attempt_at = :stamp "
    "WHERE message_id = :message_id AND channel = :channel",
    "send_attempts": "SELECT attempts FROM sends WHERE message_id = :message_id AND channel = :channel",
    # one attempt's outcome; `sent_at` is stamped when `state` is 'sent'
    "record_send": "UPDATE sends SET state = :state, attempts = :attempts, last_error = :error, "
    "last_attempt_at = :stamp, next_attempt_at = :next_attempt_at, "
    "sent_at = CASE WHEN :state = 'sent' THEN :stamp ELSE sent_at END "
    "WHERE message_id = :message_id AND channel = :channel",
    "send_states": "SELECT state FROM sends WHERE message_id = :message_id",
}


def run(conn: sqlite3.Connection, name: str, message_id: int | None = None, **values: Any) -> sqlite3.Cursor:
    """The statement `STATEMENTS[name]`, its values bound by name (`message_id`: the message it is about)."""
    return conn.execute(STATEMENTS[name], {"message_id": message_id, **values})


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
