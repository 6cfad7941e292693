"""The outbox: every message is stored before it is sent, and re-sent until it gets through or is given up.

One SQLite file beside the alerts (`data/alerts/outbox.sqlite3`, its statements in `storage/outbox.py`), shared safely by the daemon's sensor,
`dmf` commands and the watchdog timer (SQLite's own locking; a send is claimed before it is made, so two
processes never send the same one). A message has one *send* per channel (e-mail, each webhook); each send
is tried on its own schedule — at once, then 1, 5, 15 and 60 minutes after each failure, then hourly —
whatever the caller's tick rate, until it is accepted or `[alerts] give_up_hours` (24) have passed.

Message states: held (a workbook mail waiting for the same morning's retry) · pending · delivered ·
given_up (a channel never accepted it) · superseded (a newer workbook of the day replaced it before it
went out) · recorded (no channel is configured: kept here and in the alert file only).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from dmf_assets.clock import KST
from dmf_assets.notify.messages import REPORT
from dmf_assets.storage import outbox as db
from dmf_assets.storage.outbox import FILE
from dmf_assets.storage.outbox import OutboxError as OutboxError  # raised by every Outbox method (re-exported)

#: minutes to wait after the 1st, 2nd, 3rd … failed attempt of a send; the last value repeats
BACKOFF_MINUTES = (1, 5, 15, 60)
#: a claim older than this belongs to a process that died while sending: the send is due again
STALE_CLAIM = timedelta(minutes=15)

HELD, PENDING, DELIVERED, GIVEN_UP, SUPERSEDED, RECORDED = (
    "held",
    "pending",
    "delivered",
    "given_up",
    "superseded",
    "recorded",
)
STATE_KO = {
    HELD: "보류(재시도 결과 대기)",
    PENDING: "대기(재발송 예정)",
    DELIVERED: "발송됨",
    GIVEN_UP: "발송 포기",
    SUPERSEDED: "대체됨(새 리포트로)",
    RECORDED: "기록만(채널 없음)",
}
#: the states of a workbook mail that has not gone out yet (a newer workbook of the day supersedes it)
_UNSENT: dict[str, Any] = {"held": HELD, "pending": PENDING}
#: send states
SEND_PENDING, SENDING, SENT, SEND_GIVEN_UP, DROPPED = "pending", "sending", "sent", "given_up", "dropped"


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


class Outbox:
    """The outbox file in `folder`; a message is tried for `give_up_after` (`[alerts] give_up_hours`)."""

    def __init__(self, folder: Path, *, give_up_after: timedelta) -> None:
        self.path = Path(folder) / FILE
        self.give_up_after = give_up_after

    # --- storing ---------------------------------------------------------------------------------

    def add(
        self,
        message: dict,
        *,
        channels: list[tuple[str, str]],
        now: datetime,
        dedupe: str | None = None,
        digest: str | None = None,
        attachment: str | None = None,
        hold_until: datetime | None = None,
        run_id: str | None = None,
    ) -> int | None:
        """Store a message (`Message.to_dict()`: its kind, day and subject) and one send per channel (key,
        secret-free target); None when `dedupe` was stored before (an alert of that day and kind exists). A
        workbook mail replaces the day's workbook mails that have not gone out yet."""
        report = message["kind"] == REPORT
        stamp = _iso(now)
        with db.transaction(self.path) as conn:
            if dedupe is not None and db.run(conn, "find_dedupe", dedupe=dedupe).fetchone():
                return None
            if report:
                db.run(conn, "supersede_day_reports", day=message["day"], state=SUPERSEDED, stamp=stamp, **_UNSENT)
            message_id = db.insert_message(
                conn,
                type=REPORT if report else "alert",
                kind=message["kind"],
                day=message["day"],
                dedupe=dedupe,
                digest=digest,
                subject=message["subject"],
                message=json.dumps(message, ensure_ascii=False),
                attachment=attachment,
                state=HELD if hold_until is not None else PENDING if channels else RECORDED,
                hold_until=_iso(hold_until) if hold_until else None,
                run_id=run_id,
                created_at=stamp,
                give_up_at=_iso(now + self.give_up_after),
                updated_at=stamp,
            )
            db.insert_sends(conn, message_id, channels, state=SEND_PENDING, stamp=stamp)
        return message_id

    def supersede_day_reports(self, day: str, *, now: datetime) -> None:
        """The day's workbook mails that have not gone out yet are dropped (superseded): what people have is right."""
        with db.transaction(self.path) as conn:
            db.run(conn, "supersede_day_reports", day=day, state=SUPERSEDED, stamp=_iso(now), **_UNSENT)

    def day_reports(self, day: str) -> list[Stored]:
        """The workbook mails of `day`, oldest first."""
        return self._load("day_reports", (day,))

    def release(self, message_id: int, *, now: datetime, note: str | None = None) -> bool:
        """A held mail becomes due now (its day was decided); False when it was not held any more."""
        with db.transaction(self.path) as conn:
            stamp = _iso(now)
            released = db.run(
                conn, "release_message", message_id, state=PENDING, from_state=HELD, note=note, stamp=stamp
            )
            if released.rowcount:
                db.run(conn, "reschedule_sends", message_id, in_state=SEND_PENDING, next_attempt_at=stamp)
            return bool(released.rowcount)

    def requeue_given_up(self, *, now: datetime) -> int:
        """Given-up messages get another `give_up_after` of tries (`dmf notify flush --given-up`)."""
        with db.transaction(self.path) as conn:
            ids = [r[0] for r in db.run(conn, "message_ids_in_state", state=GIVEN_UP)]
            stamp, give_up_at = _iso(now), _iso(now + self.give_up_after)
            for message_id in ids:
                db.run(conn, "requeue_message", message_id, state=PENDING, give_up_at=give_up_at, stamp=stamp)
                db.run(
                    conn,
                    "requeue_sends",
                    message_id,
                    state=SEND_PENDING,
                    from_state=SEND_GIVEN_UP,
                    next_attempt_at=stamp,
                )
        return len(ids)

    # --- sending -----------------------------------------------------------------------------------

    def claim_due(
        self, *, now: datetime, force: bool = False, message_id: int | None = None
    ) -> list[tuple[Stored, Send]]:
        """Claim the sends that are due (all pending ones with `force`), oldest message first: each is
        marked as being sent, so no other process sends it meanwhile."""
        stamp, stale = _iso(now), _iso(now - STALE_CLAIM)
        with db.transaction(self.path) as conn:
            db.run(conn, "reclaim_stale", state=SEND_PENDING, from_state=SENDING, older_than=stale)
            due_by = None if force else stamp
            due = db.run(
                conn, "due_sends", message_id, state=PENDING, send_state=SEND_PENDING, due_by=due_by
            ).fetchall()
            for row in due:
                db.run(conn, "claim_send", row["message_id"], channel=row["channel"], state=SENDING, stamp=stamp)
        out = []
        for row in due:
            stored = self.get(row["message_id"])
            send = next(s for s in stored.sends if s.channel == row["channel"])
            out.append((stored, send))
        return out

    def record_attempt(
        self, message_id: int, channel: str, *, now: datetime, error: str | None, dropped: bool = False
    ) -> Stored:
        """The outcome of one claimed send; the message's state follows from all of its sends."""
        stamp = _iso(now)
        with db.transaction(self.path) as conn:
            attempts = db.run(conn, "send_attempts", message_id, channel=channel).fetchone()[0] + (0 if dropped else 1)
            give_up_at = db.run(conn, "message_give_up_at", message_id).fetchone()[0]
            if dropped:
                state, nxt = DROPPED, stamp
            elif error is None:
                state, nxt = SENT, stamp
            elif stamp >= give_up_at:
                state, nxt = SEND_GIVEN_UP, stamp
            else:  # the last try falls on the give-up moment itself, so a message is tried for the whole time
                state, nxt = SEND_PENDING, min(_iso(now + backoff(attempts)), give_up_at)
            outcome: dict[str, Any] = {"state": state, "attempts": attempts, "error": error, "next_attempt_at": nxt}
            db.run(conn, "record_send", message_id, channel=channel, stamp=stamp, **outcome)
            states = {r[0] for r in db.run(conn, "send_states", message_id)}
            if states & {SEND_PENDING, SENDING}:
                overall = PENDING
            else:  # delivered only when no channel gave up and one accepted it (not every send was dropped)
                overall = DELIVERED if SENT in states and SEND_GIVEN_UP not in states else GIVEN_UP
            db.run(conn, "set_message_state", message_id, state=overall, from_state=PENDING, stamp=stamp)
        return self.get(message_id)

    # --- reading -----------------------------------------------------------------------------------

    def get(self, message_id: int) -> Stored:
        return self._load("id", (message_id,))[0]

    def recent(self, since: datetime) -> list[Stored]:
        return self._load("recent", (_iso(since), HELD, PENDING, GIVEN_UP))

    def held(self) -> list[Stored]:
        return self._load("state", (HELD,))

    def _load(self, where: str, args: tuple) -> list[Stored]:
        return [
            _of_row(Stored, r, message=json.loads(r["message"]), sends=tuple(_of_row(Send, s) for s in sends))
            for r, sends in db.load(self.path, where, args)
        ]


_Stored = TypeVar("_Stored", Stored, Send)


def _of_row(cls: type[_Stored], row: Any, **values: Any) -> _Stored:
    """A `Stored` or `Send` of its row's columns, by name (`values`: those read otherwise)."""
    return cls(**{f.name: values[f.name] if f.name in values else row[f.name] for f in dataclasses.fields(cls)})
