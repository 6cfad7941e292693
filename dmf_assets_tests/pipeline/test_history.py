"""The history database: one transaction per day, idempotent re-runs, any commit order, migrations, lock."""

from __future__ import annotations

import multiprocessing
import shutil
from datetime import date, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from dmf_assets.domain.diff import diff_snapshots
from dmf_assets.domain.gates import BaseFacts, GateOutcome
from dmf_assets.domain.model import DayStatus
from dmf_assets.domain.snapshot import build_snapshot
from dmf_assets.emulator.registry import RegistrySimulator
from dmf_assets.orchestration import commit as day_commit
from dmf_assets.storage import db as dbmod
from dmf_assets.storage import history
from dmf_assets.storage.db import DatabaseBusy, MigrationError, open_database

DAYS = [date(2026, 10, 5) + timedelta(days=i) for i in range(5)]  # Mon..Fri: changes every day


@pytest.fixture(scope="module")
def snapshots() -> dict[date, object]:
    sim = RegistrySimulator()
    return {d: build_snapshot(sim.items(d)) for d in DAYS}


def _churn_ok() -> GateOutcome:
    return GateOutcome(6, True, 0.0, 0.1, "ok", "≤ 10 %", "test")


def commit(conn, day, snapshots):
    base = history.comparison_base(conn, day)
    base_frame = history.load_snapshot(conn, base.day) if base.day else None
    seen = history.previously_seen(conn, base.day) if base.day else []
    diff = diff_snapshots(base_frame, snapshots[day], previously_seen=seen)
    conn.execute(
        "INSERT INTO runs (day_id, status) VALUES (?, 'pending') ON CONFLICT DO NOTHING", [history.day_id(day)]
    )
    return day_commit.commit_day(conn, day, snapshots[day], diff, base=base, gates=[_churn_ok()])


def event_table(conn) -> list[tuple]:
    return conn.execute(
        "SELECT day_id, base_day_id, event_id, event_type, severity, dmf_key, base_dmf_key, is_cosmetic, "
        "number_assigned, number_changed, changed_fields, renumber_candidates FROM events ORDER BY event_id"
    ).fetchall()


def change_table(conn) -> list[tuple]:
    return conn.execute("SELECT event_id, field, before, after, is_cosmetic FROM event_changes ORDER BY ALL").fetchall()


def snapshot_contents(conn) -> list[tuple]:
    return conn.execute(
        "SELECT s.day_id, r.dmf_key, v.content_hash FROM snapshots s JOIN records r USING (record_id) "
        "JOIN record_versions v ON v.version_id = s.version_id ORDER BY ALL"
    ).fetchall()


def test_days_in_order_then_rerun_is_idempotent(tmp_path, snapshots):
    with open_database(tmp_path / "h.duckdb") as conn:
        first = [commit(conn, d, snapshots) for d in DAYS]
        assert [o.status for o in first] == ["baseline"] + ["accepted"] * 4
        assert first[0].counts["population"] == snapshots[DAYS[0]].height
        events, changes, snaps = event_table(conn), change_table(conn), snapshot_contents(conn)
        assert events, "five business days of the emulator always bring events"
        versions = conn.execute("SELECT count(*) FROM record_versions").fetchone()[0]
        # content and membership are separate: later days add only what changed
        assert versions < snapshots[DAYS[0]].height + 200
        for d in (DAYS[2], DAYS[4]):
            commit(conn, d, snapshots)
        assert event_table(conn) == events and change_table(conn) == changes and snapshot_contents(conn) == snaps
        assert conn.execute("SELECT count(*) FROM record_versions").fetchone()[0] == versions


def test_any_commit_order_ends_like_date_order(tmp_path, snapshots):
    with open_database(tmp_path / "ordered.duckdb") as conn:
        for d in DAYS:
            commit(conn, d, snapshots)
        expected = (event_table(conn), change_table(conn), snapshot_contents(conn))
    with open_database(tmp_path / "shuffled.duckdb") as conn:
        outcomes = [commit(conn, d, snapshots) for d in (DAYS[4], DAYS[0], DAYS[2], DAYS[1], DAYS[3])]
        # committing an earlier day re-derives the next accepted one
        assert outcomes[1].rederived_day == DAYS[4] and outcomes[3].rederived_day == DAYS[2]
        assert (event_table(conn), change_table(conn), snapshot_contents(conn)) == expected
        statuses = conn.execute("SELECT status FROM runs ORDER BY day_id").fetchall()
        assert [s for (s,) in statuses] == ["baseline"] + ["accepted"] * 4


@pytest.fixture(scope="module")
def renumbered_days(real_items, renumbered_rows) -> dict[date, object]:
    """Five days of the real rows and the registration re-numbered in issue 30: listed under its grant-style
    number, re-numbered, re-typed, gone, back under its new number."""
    before, after = renumbered_rows
    retyped = {**after, "ENTP_NAME": "한국화이자제약 주식회사"}
    rows = [before, after, retyped, None, retyped]
    return {d: build_snapshot([*real_items, *([r] if r else [])]) for d, r in zip(DAYS, rows, strict=True)}


def registrations(conn) -> list[tuple]:
    """Per key of the re-numbered registration: every key of its registration (record_registrations), the key
    it continued as and its status — by key, never by record id (ids follow the commit order)."""
    return conn.execute(
        "SELECT r.dmf_key, list(o.dmf_key ORDER BY o.dmf_key), any_value(c.dmf_key), any_value(r.status) "
        "FROM records r JOIN record_registrations rg ON rg.record_id = r.record_id "
        "JOIN record_registrations og ON og.registration_id = rg.registration_id "
        "JOIN records o ON o.record_id = og.record_id LEFT JOIN records c ON c.record_id = r.numbered_as "
        "WHERE r.dmf_key IN ('20130329-190-I-83-01(1)', '20260922-190-I-769-04') GROUP BY r.dmf_key ORDER BY 1"
    ).fetchall()


@pytest.mark.parametrize("order", [(4, 0, 2, 1, 3), (1, 3, 0, 4, 2), (3, 2, 1, 0, 4)])
def test_a_renumbering_committed_in_any_order_ends_like_date_order(tmp_path, renumbered_days, order):
    """Backfill and schedule in any order: the re-numbering is one CHANGED event, the later disappearance one
    WITHDRAWN of the new number, the return a reappearance — and one registration under both numbers."""
    with open_database(tmp_path / "ordered.duckdb") as conn:
        for d in DAYS:
            commit(conn, d, renumbered_days)
        expected = (event_table(conn), change_table(conn), snapshot_contents(conn), registrations(conn))
    old, new = "20130329-190-I-83-01(1)", "20260922-190-I-769-04"
    events = [(e[0], e[3], e[5], e[6], e[9]) for e in expected[0]]
    assert events == [
        (history.day_id(DAYS[1]), "CHANGED", new, old, True),
        (history.day_id(DAYS[2]), "CHANGED", new, new, False),  # the re-typing: cosmetic
        (history.day_id(DAYS[3]), "WITHDRAWN", new, new, False),
        (history.day_id(DAYS[4]), "NEW", new, None, False),
    ]
    assert expected[3] == [(old, [old, new], new, "numbered"), (new, [old, new], None, "active")]
    with open_database(tmp_path / "shuffled.duckdb") as conn:
        for i in order:
            commit(conn, DAYS[i], renumbered_days)
        assert (event_table(conn), change_table(conn), snapshot_contents(conn), registrations(conn)) == expected
        (reappeared,) = conn.execute("SELECT is_reappearance, severity FROM events WHERE event_type = 'NEW'").fetchall()
        assert reappeared == (True, "HIGH")


def test_a_renumbering_with_its_sites_in_another_order_against_the_stored_base_is_one_event(tmp_path, real_items):
    """The base read back from the history (no split sites stored for the comparison): a registration re-numbered
    and listing its two sites in the other order is still one — a number change, nothing withdrawn."""
    permit, renumbered = "20210626-211-J-1002", "20261201-211-J-1077"
    (site_row,) = build_snapshot([i for i in real_items if i["DMF_PERMIT_NO"].strip() == permit]).iter_rows(named=True)
    assert site_row["sites_split_ok"] and site_row["site_count"] == 2
    sites = list(reversed(site_row["sites"]))
    moved = [
        dict(
            i,
            DMF_PERMIT_NO=renumbered,
            MNFCTR_NAME=",".join(s["name"] for s in sites),
            MNFCTR_PLACE=",".join(s["address"] for s in sites),
            MANUF_COUNTRY_CODE_NM=",".join(s["country"] for s in sites),
        )
        if i["DMF_PERMIT_NO"].strip() == permit
        else i
        for i in real_items
    ]
    days = {DAYS[0]: build_snapshot(real_items), DAYS[1]: build_snapshot(moved)}
    with open_database(tmp_path / "h.duckdb") as conn:
        for d in DAYS[:2]:
            commit(conn, d, days)
        events = [(e[3], e[5], e[6], e[7], e[9], e[10]) for e in event_table(conn)]
    assert events == [("CHANGED", renumbered, permit, False, True, ["permit_no"])]


def test_rejecting_an_accepted_day_removes_it_and_rederives_the_next(tmp_path, snapshots):
    with open_database(tmp_path / "h.duckdb") as conn:
        for d in DAYS[:4]:
            commit(conn, d, snapshots)
        gate = GateOutcome(2, False, 9000.0, 9200.0, "9,000 / 9,200", "= totalCount", "200건 누락")
        out = day_commit.reject_day(conn, DAYS[2], gate)
        assert out.status == "rejected" and out.base_day == DAYS[1] and out.rederived_day == DAYS[3]
        d2 = history.day_id(DAYS[2])
        assert conn.execute("SELECT count(*) FROM snapshots WHERE day_id = ?", [d2]).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM events WHERE day_id = ?", [d2]).fetchone()[0] == 0
        run = history.run_row(conn, DAYS[3])
        assert run["base_day_id"] == history.day_id(DAYS[1]) and run["rederived_by"] == d2
        assert history.comparison_base(conn, DAYS[4]).day == DAYS[3]
        # the re-derived day now covers the gap: same as diffing day 1 against day 3 directly
        direct = diff_snapshots(snapshots[DAYS[1]], snapshots[DAYS[3]])
        got = conn.execute(
            "SELECT event_type, count(*) FROM events WHERE day_id = ? AND NOT is_cosmetic GROUP BY ALL ORDER BY 1",
            [history.day_id(DAYS[3])],
        ).fetchall()
        want = sorted(
            (t, n) for t, n in direct.events.filter(~direct.events["is_cosmetic"]).group_by("event_type").len().rows()
        )
        assert got == want


def test_failed_commit_leaves_nothing(tmp_path, snapshots):
    with open_database(tmp_path / "h.duckdb") as conn:
        commit(conn, DAYS[0], snapshots)
        before = (event_table(conn), snapshot_contents(conn), conn.execute("SELECT * FROM runs").fetchall())
        broken = snapshots[DAYS[1]].drop("content_hash")  # fails inside the transaction
        with pytest.raises(pl.exceptions.ColumnNotFoundError):
            day_commit.commit_day(
                conn,
                DAYS[1],
                broken,
                diff_snapshots(snapshots[DAYS[0]], snapshots[DAYS[1]]),
                base=BaseFacts(day=DAYS[0]),
                gates=[_churn_ok()],
            )
        assert (event_table(conn), snapshot_contents(conn), conn.execute("SELECT * FROM runs").fetchall()) == before


def test_migration_0004_keeps_earlier_events_as_they_were(tmp_path, monkeypatch):
    """A history written before re-numberings were recognised: its events read back as not re-numbered, with
    no candidates, and every record is a registration of its own."""
    earlier = tmp_path / "migrations"
    earlier.mkdir()
    for m in dbmod.MIGRATIONS_DIR.glob("000[123]_*.sql"):
        shutil.copy(m, earlier / m.name)
    monkeypatch.setattr(dbmod, "MIGRATIONS_DIR", earlier)
    path = tmp_path / "h.duckdb"
    with open_database(path) as conn:
        conn.execute("INSERT INTO records (record_id, dmf_key, is_synthetic) VALUES (1, 'A', false), (2, 'B', false)")
        conn.execute(
            "INSERT INTO events (event_id, day_id, base_day_id, event_type, severity, base_record_id, dmf_key, "
            "base_dmf_key, is_cosmetic, is_reappearance, number_assigned, is_transfer, is_rename, watchlist_hit) "
            "VALUES (1, 20261008, 20261007, 'WITHDRAWN', 'CRITICAL', 1, 'A', 'A', false, false, false, false, "
            "false, false)"
        )
    monkeypatch.undo()
    with open_database(path) as conn:
        assert conn.execute("SELECT number_changed, renumber_candidates FROM events").fetchall() == [(False, [])]
        assert conn.execute("SELECT * FROM record_registrations ORDER BY 1").fetchall() == [(1, 1), (2, 2)]
        assert conn.execute("SELECT renumbered_count FROM runs").fetchall() == []


def test_migrations_are_recorded_checksummed_and_backed_up(tmp_path, monkeypatch):
    path = tmp_path / "h.duckdb"
    with open_database(path) as conn:
        applied = conn.execute("SELECT version, checksum FROM schema_migrations").fetchall()
    assert applied == [(m.version, m.checksum) for m in dbmod.migrations()]

    migrations = tmp_path / "migrations"
    shutil.copytree(dbmod.MIGRATIONS_DIR, migrations)
    monkeypatch.setattr(dbmod, "MIGRATIONS_DIR", migrations)
    (migrations / "0099_test_column.sql").write_text("ALTER TABLE runs ADD COLUMN note VARCHAR;", encoding="utf-8")
    backups = tmp_path / "backups"
    with open_database(path, backups_dir=backups) as conn:
        assert "note" in [c[0] for c in conn.execute("DESCRIBE runs").fetchall()]
    copies = list(backups.glob("h-before-migration-0099-*.duckdb"))
    assert len(copies) == 1
    with duckdb.connect(str(copies[0]), read_only=True) as old:
        assert "note" not in [c[0] for c in old.execute("DESCRIBE runs").fetchall()]

    (migrations / "0001_history.sql").write_text("-- edited after the fact\n", encoding="utf-8")
    with (
        pytest.raises(MigrationError, match="edited after it was applied"),
        open_database(path, backups_dir=backups),
    ):
        pass


def test_a_database_migrated_before_the_citation_was_renamed_still_opens(tmp_path):
    """0001/0002 were applied with a first comment line citing a file outside the repository; only that comment
    changed, so the checksum they were recorded with is accepted — and any other text still is not."""
    path = tmp_path / "h.duckdb"
    with open_database(path) as conn:
        for version, sums in dbmod.EARLIER_CHECKSUMS.items():
            conn.execute("UPDATE schema_migrations SET checksum = ? WHERE version = ?", [next(iter(sums)), version])
    with open_database(path) as conn:  # no MigrationError
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone() == (len(dbmod.migrations()),)
    with open_database(path) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE version = 2")
    with pytest.raises(MigrationError, match="edited after it was applied"), open_database(path):
        pass


def _hold_lock(path: str, release, ready) -> None:
    with open_database(path, purpose="holder test"):
        ready.set()
        release.wait(60)


def test_second_process_waits_then_reports_who_holds_the_database(tmp_path):
    path = str(tmp_path / "h.duckdb")
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(path, release, ready))
    holder.start()
    try:
        assert ready.wait(60)
        assert dbmod.lock_holder(Path(path))["purpose"] == "holder test"
        # held until released below: the 0.5 s wait ends with the holder named, not with the database
        with pytest.raises(DatabaseBusy, match="holder test"), open_database(path, lock_timeout_s=0.5):
            pass
        # a patient caller simply gets the database once the holder is done
        release.set()
        with open_database(path, lock_timeout_s=30) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        holder.join(30)
    assert dbmod.lock_holder(Path(path)) is None


def test_a_snapshot_fingerprint_is_the_one_earlier_runs_stored(snapshots):
    """A judgement's fingerprint is compared with the one stored when the day was judged, perhaps by an older
    version: it is the SHA-256 of one `key␟content` line per row in key order (a null written None), whatever
    order the rows come in."""
    import hashlib

    keyed = snapshots[DAYS[0]]
    ordered = sorted(zip(keyed["dmf_key"].to_list(), keyed["content_hash"].to_list(), strict=True))
    stored = hashlib.sha256("".join(f"{k}\x1f{c}\n" for k, c in ordered).encode()).hexdigest()[:32]
    assert history.frame_fingerprint(keyed) == stored
    assert history.frame_fingerprint(keyed.reverse()) == stored
    with_null = pl.DataFrame(
        {"dmf_key": ["B", None], "content_hash": [None, "x"]},
        schema=dict.fromkeys(("dmf_key", "content_hash"), pl.String),
    )
    assert history.frame_fingerprint(with_null) == hashlib.sha256(b"None\x1fx\nB\x1fNone\n").hexdigest()[:32]


def test_a_stored_day_status_is_read_back_as_its_member_and_an_unknown_one_is_named():
    assert DayStatus.of_value(None) is DayStatus.NOT_RUN
    assert all(DayStatus.of_value(status.value) is status for status in DayStatus)
    with pytest.raises(ValueError, match="'bogus' is not a valid DayStatus"):  # was a bare StopIteration
        DayStatus.of_value("bogus")


def test_a_day_committed_before_two_later_ones_turns_the_later_return_into_a_reappearance(tmp_path):
    """20230804-160-I-537-09(A) is listed on 09-01, gone on 09-02 and back on 09-16. Committed 09-05, 09-16, then
    09-01: 09-05 was re-derived (its WITHDRAWN), but 09-16 kept 'NEW, INFO, not a reappearance' — its base did not
    move, though what was listed before its base did. The history must end as the date order leaves it."""
    sim = RegistrySimulator()
    days = [date(2026, 9, 1), date(2026, 9, 5), date(2026, 9, 16)]
    snaps = {d: build_snapshot(sim.items(d)) for d in days}
    contents = []
    for order in (days, [days[1], days[2], days[0]]):
        with open_database(tmp_path / f"{order[0]}.duckdb", purpose="test") as conn:
            for day in order:
                commit(conn, day, snaps)
            contents.append(history.history_content(conn))
            back = conn.execute(
                "SELECT severity, is_reappearance FROM events WHERE day_id = ? AND permit_no = ?",
                [history.day_id(days[2]), "20230804-160-I-537-09(A)"],
            ).fetchall()
            assert back == [("HIGH", True)], (order, back)
    assert contents[0] == contents[1]
    # and back again: 09-01 refused on a re-run, 09-16's return is a plain NEW once more, as in date order
    with open_database(tmp_path / f"{days[1]}.duckdb", purpose="test") as conn:
        gate = GateOutcome(2, False, 1.0, 2.0, "1 / 2", "수신 건수 = totalCount", "누락")
        day_commit.reject_day(conn, days[0], gate)
        back = conn.execute(
            "SELECT severity, is_reappearance FROM events WHERE day_id = ? AND permit_no = ?",
            [history.day_id(days[2]), "20230804-160-I-537-09(A)"],
        ).fetchall()
    assert back == [("INFO", False)]
