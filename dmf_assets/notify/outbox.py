"""The outbox: every message is stored before it is sent, and re-sent until it gets through or is given up.

One SQLite file beside the alerts (`data/alerts/outbox.sqlite3`), shared safely by the daemon's sensor,
`dmf` commands and the watchdog timer (SQLite's own locking; a send is claimed before it is made, so two
processes never send the same one). A message has one *send* per channel (e-mail, each webhook); each send
is tried on its own schedule — at once, then 1, 5, 15 and 60 minutes after each failure, then hourly —
whatever the caller's tick rate, until it is accepted or `[alerts] give_up_hours` (24) have passed.

Message states: held (a workbook mail waiting for the same morning's retry) · pending · delivered ·
given_up (a channel never accepted it) · superseded (a newer workbook of the day replaced it before it
went out) · recorded (no channel is configured: kept here and in the alert file only).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from dmf_assets.clock import KST

FILE = "outbox.sqlite3"
#: minutes to wait after the 1st, 2nd, 3rd … failed attempt of a send; the last value repeats
BACKOFF_MINUTES = (1, 5, 15, 60)
#: a claim older than this belongs to a process that died while sending: the send is due again
STALE_CLAIM = timedelta(minutes=15)

HELD, PENDING, DELIVERED, GIVEN_UP, SUPERSEDED, RECORDED = "held", "pending", "delivered", "given_up", "superseded", "recorded"
STATE_KO = {HELD: "보류(재시도 결과 대기)", PENDING: "대기(재발송 예정)", DELIVERED: "발송됨", GIVEN_UP: "발송 포기",
            SUPERSEDED: "대체됨(새 리포트로)", RECORDED: "기록만(채널 없음)"}
#: send states
SEND_PENDING, SENDING, SENT, SEND_GIVEN_UP, DROPPED = "pending", "sending", "sent", "given_up", "dropped"

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


def _iso(t: datetime) -> str:
    return t.astimezone(KST).isoformat(timespec="seconds")


def backoff(failed_attempts: int) -> timedelta:
    return timedelta(minutes=BACKOFF_MINUTES[min(failed_attempts, len(BACKOFF_MINUTES)) - 1])


@dataclass(frozen=True)
class Send:
    channel: str
    target: str
    state: str
    attempts: int
    last_error: str | None
    last_attempt_at: str | None
    next_attempt_at: str
    sent_at: str | None


@dataclass(frozen=True)
class Stored:
    """One message as the outbox holds it."""

    id: int
    type: str
    kind: str
    day: str
    subject: str
    message: dict
    attachment: str | None
    state: str
    digest: str | None
    hold_until: str | None
    note: str | None
    created_at: str
    give_up_at: str
    updated_at: str
    sends: tuple[Send, ...] = ()

    @property
    def last_error(self) -> str:
        return next((s.last_error for s in self.sends if s.state != SENT and s.last_error), "")

    def line(self) -> str:
        """One line for `dmf notify status`, `dmf doctor` and the UI."""
        parts = [f"{self.day} {self.kind}: {STATE_KO.get(self.state, self.state)} — {self.subject}"]
        for s in self.sends:
            text = f"{s.target} {s.state} ×{s.attempts}"
            if s.state not in (SENT, DROPPED) and s.last_error:
                text += f" (마지막 오류: {s.last_error})"
            if s.state == SEND_PENDING and self.state == PENDING:
                text += f", 다음 시도 {s.next_attempt_at[11:16]}"
            parts.append(text)
        if self.state == HELD and self.hold_until:
            parts.append(f"보류 기한 {self.hold_until[:16].replace('T', ' ')}")
        return "; ".join(parts)


class OutboxError(Exception):
    """The outbox file cannot be written (a full disk, a read-only folder): the text says where."""


class Outbox:
    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / FILE

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise OutboxError(f"발송함을 열 수 없습니다 / cannot open the outbox {self.path}: {exc}") from None
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.executescript(_SCHEMA)
            yield conn
        except sqlite3.Error as exc:
            raise OutboxError(f"발송함에 쓸 수 없습니다 / cannot write the outbox {self.path}: {exc}") from None
        finally:
            conn.close()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._db() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # --- storing ---------------------------------------------------------------------------------

    def add(self, *, type: str, kind: str, day: str, subject: str, message: dict, channels: list[tuple[str, str]],
            now: datetime, give_up_after: timedelta, dedupe: str | None = None, digest: str | None = None,
            attachment: str | None = None, hold_until: datetime | None = None, run_id: str | None = None,
            supersede_day_reports: bool = False) -> int | None:
        """Store a message and one send per channel (key, secret-free target); None when `dedupe` was
        stored before (an alert of that day and kind exists). With `supersede_day_reports`, the day's
        workbook mails that have not gone out yet are replaced by this one."""
        state = HELD if hold_until is not None else PENDING if channels else RECORDED
        stamp = _iso(now)
        with self._tx() as conn:
            if dedupe is not None and conn.execute("SELECT 1 FROM messages WHERE dedupe = ?", (dedupe,)).fetchone():
                return None
            if supersede_day_reports:
                conn.execute("UPDATE messages SET state = ?, updated_at = ? WHERE type = 'report' AND day = ? "
                             "AND state IN (?, ?)", (SUPERSEDED, stamp, day, HELD, PENDING))
            cur = conn.execute(
                "INSERT INTO messages (type, kind, day, dedupe, digest, subject, message, attachment, state, hold_until, "
                "run_id, created_at, give_up_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (type, kind, day, dedupe, digest, subject, json.dumps(message, ensure_ascii=False), attachment, state,
                 _iso(hold_until) if hold_until else None, run_id, stamp, _iso(now + give_up_after), stamp))
            message_id = int(cur.lastrowid or 0)
            conn.executemany("INSERT INTO sends (message_id, channel, target, state, next_attempt_at) VALUES (?, ?, ?, ?, ?)",
                             [(message_id, key, target, SEND_PENDING, stamp) for key, target in channels])
        return message_id

    def day_reports(self, day: str) -> list[Stored]:
        """The workbook mails of `day`, oldest first."""
        return self._load("type = 'report' AND day = ?", (day,))

    def release(self, message_id: int, *, now: datetime, note: str | None = None) -> bool:
        """A held mail becomes due now (its day was decided); False when it was not held any more."""
        with self._tx() as conn:
            cur = conn.execute("UPDATE messages SET state = ?, note = COALESCE(?, note), hold_until = NULL, updated_at = ? "
                               "WHERE id = ? AND state = ?", (PENDING, note, _iso(now), message_id, HELD))
            if cur.rowcount:
                conn.execute("UPDATE sends SET next_attempt_at = ? WHERE message_id = ? AND state = ?",
                             (_iso(now), message_id, SEND_PENDING))
            return bool(cur.rowcount)

    def requeue_given_up(self, *, now: datetime, give_up_after: timedelta) -> int:
        """Given-up messages get another `give_up_after` of tries (`dmf notify flush --given-up`)."""
        with self._tx() as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM messages WHERE state = ?", (GIVEN_UP,))]
            for message_id in ids:
                conn.execute("UPDATE messages SET state = ?, give_up_at = ?, updated_at = ? WHERE id = ?",
                             (PENDING, _iso(now + give_up_after), _iso(now), message_id))
                conn.execute("UPDATE sends SET state = ?, next_attempt_at = ? WHERE message_id = ? AND state = ?",
                             (SEND_PENDING, _iso(now), message_id, SEND_GIVEN_UP))
        return len(ids)

    # --- sending -----------------------------------------------------------------------------------

    def claim_due(self, *, now: datetime, force: bool = False, message_id: int | None = None) -> list[tuple[Stored, Send]]:
        """Claim the sends that are due (all pending ones with `force`), oldest message first: each is
        marked as being sent, so no other process sends it meanwhile."""
        stamp, stale = _iso(now), _iso(now - STALE_CLAIM)
        with self._tx() as conn:
            conn.execute("UPDATE sends SET state = ? WHERE state = ? AND last_attempt_at < ?", (SEND_PENDING, SENDING, stale))
            sql = ("SELECT s.message_id, s.channel FROM sends s JOIN messages m ON m.id = s.message_id "
                   "WHERE m.state = ? AND s.state = ?")
            args: list = [PENDING, SEND_PENDING]
            if not force:
                sql += " AND s.next_attempt_at <= ?"
                args.append(stamp)
            if message_id is not None:
                sql += " AND m.id = ?"
                args.append(message_id)
            due = conn.execute(sql + " ORDER BY m.id, s.channel", args).fetchall()
            for row in due:
                conn.execute("UPDATE sends SET state = ?, last_attempt_at = ? WHERE message_id = ? AND channel = ?",
                             (SENDING, stamp, row["message_id"], row["channel"]))
        out = []
        for row in due:
            stored = self.get(row["message_id"])
            send = next(s for s in stored.sends if s.channel == row["channel"])
            out.append((stored, send))
        return out

    def record_attempt(self, message_id: int, channel: str, *, now: datetime, error: str | None,
                       dropped: bool = False) -> Stored:
        """The outcome of one claimed send; the message's state follows from all of its sends."""
        stamp = _iso(now)
        with self._tx() as conn:
            row = conn.execute("SELECT attempts FROM sends WHERE message_id = ? AND channel = ?", (message_id, channel)).fetchone()
            attempts = int(row["attempts"]) + (0 if dropped else 1)
            give_up_at = conn.execute("SELECT give_up_at FROM messages WHERE id = ?", (message_id,)).fetchone()[0]
            if dropped:
                state, nxt = DROPPED, stamp
            elif error is None:
                state, nxt = SENT, stamp
            elif stamp >= give_up_at:
                state, nxt = SEND_GIVEN_UP, stamp
            else:  # the last try falls on the give-up moment itself, so a message is tried for the whole time
                state, nxt = SEND_PENDING, min(_iso(now + backoff(attempts)), give_up_at)
            conn.execute("UPDATE sends SET state = ?, attempts = ?, last_error = ?, last_attempt_at = ?, next_attempt_at = ?, "
                         "sent_at = CASE WHEN ? = 'sent' THEN ? ELSE sent_at END WHERE message_id = ? AND channel = ?",
                         (state, attempts, error, stamp, nxt, state, stamp, message_id, channel))
            states = {r[0] for r in conn.execute("SELECT state FROM sends WHERE message_id = ?", (message_id,))}
            if states & {SEND_PENDING, SENDING}:
                overall = PENDING
            elif SEND_GIVEN_UP in states:
                overall = GIVEN_UP
            else:
                overall = DELIVERED if SENT in states else GIVEN_UP
            conn.execute("UPDATE messages SET state = ?, updated_at = ? WHERE id = ? AND state = ?",
                         (overall, stamp, message_id, PENDING))
        return self.get(message_id)

    # --- reading -----------------------------------------------------------------------------------

    def get(self, message_id: int) -> Stored:
        return self._load("id = ?", (message_id,))[0]

    def recent(self, since: datetime) -> list[Stored]:
        return self._load("updated_at >= ? OR state IN (?, ?, ?)", (_iso(since), HELD, PENDING, GIVEN_UP))

    def held(self) -> list[Stored]:
        return self._load("state = ?", (HELD,))

    def _load(self, where: str, args: tuple) -> list[Stored]:
        if not self.path.exists():
            return []
        with self._db() as conn:
            rows = conn.execute(f"SELECT * FROM messages WHERE {where} ORDER BY id", args).fetchall()  # noqa: S608 - fixed clauses
            out = []
            for r in rows:
                sends = tuple(Send(s["channel"], s["target"], s["state"], s["attempts"], s["last_error"], s["last_attempt_at"],
                                   s["next_attempt_at"], s["sent_at"])
                              for s in conn.execute("SELECT * FROM sends WHERE message_id = ? ORDER BY channel", (r["id"],)))
                out.append(Stored(r["id"], r["type"], r["kind"], r["day"], r["subject"], json.loads(r["message"]),
                                  r["attachment"], r["state"], r["digest"], r["hold_until"], r["note"], r["created_at"],
                                  r["give_up_at"], r["updated_at"], sends))
        return out
