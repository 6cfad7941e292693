"""The per-user cache of the emulator's built history: a cached history serves exactly what a fresh
build serves, and a damaged or foreign cache file is never trusted."""

from __future__ import annotations

import os
import pickle
import time

from dmf_assets.emulator import _timeline_cache, registry
from dmf_assets.emulator.registry import RegistrySimulator, _History, _Timeline

SEED = 20250101


class _Builds:
    """Counts the histories built from scratch (the rest came from the cache)."""

    def __init__(self, monkeypatch):
        self.count = 0
        original = registry._Timeline

        def counted(seed):
            self.count += 1
            return original(seed)

        monkeypatch.setattr(registry, "_Timeline", counted)


def _same_history(history: _History, built: _Timeline) -> None:
    assert len(history.entities) == len(built.entities)
    assert history.logs == built.logs
    for got, want in zip(history.entities, built.entities, strict=True):
        assert (got.eid, got.starts, got.rows) == (want.eid, want.starts, want.rows)
        # RegistrySimulator.truth skips an entity whose two rows are the same object: the sharing of
        # row objects between versions must survive the file
        shared = lambda e: [[a is b for b in e.rows] for a in e.rows]  # noqa: E731 - a one-line helper, read where it is used
        assert shared(got) == shared(want), got.eid


def test_the_cached_history_is_the_built_one(tmp_path, monkeypatch):
    builds = _Builds(monkeypatch)
    first = _History.of_seed(SEED, tmp_path)
    assert builds.count == 1 and len(list(tmp_path.glob(f"timeline-{SEED}-*.pickle"))) == 1
    second = _History.of_seed(SEED, tmp_path)
    assert builds.count == 1  # read from the file
    built = _Timeline(SEED)
    _same_history(first, built)
    _same_history(second, built)
    fresh, cached = RegistrySimulator(SEED), RegistrySimulator(SEED)
    fresh._timeline, cached._timeline = _History([*built.entities], built.logs), second
    for day in ("2025-01-01", "2026-10-07", "2026-10-08", "2027-12-31"):
        assert cached.items_json(day) == fresh.items_json(day)
    assert cached.truth("2026-10-01", "2026-10-20", seen=["2026-09-01"]) == fresh.truth(
        "2026-10-01", "2026-10-20", seen=["2026-09-01"]
    )


def test_a_damaged_file_is_rebuilt_and_replaced(tmp_path, monkeypatch):
    builds = _Builds(monkeypatch)
    _History.of_seed(SEED, tmp_path)
    (path,) = tmp_path.glob(f"timeline-{SEED}-*.pickle")
    path.write_bytes(path.read_bytes()[:1000])  # cut short, as by a full disk
    _History.of_seed(SEED, tmp_path)
    assert builds.count == 2
    with open(path, "rb") as fh:
        assert len(pickle.load(fh)[0]) > 8000  # whole again
    _History.of_seed(SEED, tmp_path)
    assert builds.count == 2


def test_a_folder_others_can_write_is_not_read(tmp_path, monkeypatch):
    builds = _Builds(monkeypatch)
    _History.of_seed(SEED, tmp_path)
    os.chmod(tmp_path, 0o777)
    _History.of_seed(SEED, tmp_path)
    assert builds.count == 2  # built again: another user could have planted that file


def test_an_unwritable_cache_folder_still_serves(tmp_path):
    (tmp_path / "home").write_text("a file where the cache folder would go")
    history = _History.of_seed(SEED, tmp_path / "home" / "cache")
    assert len(history.entities) > 8000 and history.logs


def test_a_code_change_reads_no_old_history(tmp_path, monkeypatch):
    builds = _Builds(monkeypatch)
    _History.of_seed(SEED, tmp_path)
    monkeypatch.setattr(_timeline_cache, "fingerprint", lambda: "other-code")
    _History.of_seed(SEED, tmp_path)
    assert builds.count == 2
    # the other code's history stays while in use (two checkouts must not rebuild each other's on every run)
    (old,) = [p for p in tmp_path.glob("timeline-*") if p.name != f"timeline-{SEED}-other-code.pickle"]
    monkeypatch.setattr(_timeline_cache, "fingerprint", lambda: "old-code-back")
    old.rename(tmp_path / f"timeline-{SEED}-old-code-back.pickle")
    _History.of_seed(SEED, tmp_path)
    assert builds.count == 2  # read, not rebuilt


def test_a_history_unused_for_a_week_is_removed(tmp_path, monkeypatch):
    builds = _Builds(monkeypatch)
    _History.of_seed(SEED, tmp_path)
    (old,) = tmp_path.glob("timeline-*")
    week_ago = time.time() - (_timeline_cache.KEEP_UNUSED_DAYS + 1) * 86400
    os.utime(old, (week_ago, week_ago))
    monkeypatch.setattr(_timeline_cache, "fingerprint", lambda: "other-code")
    _History.of_seed(SEED, tmp_path)
    assert builds.count == 2
    assert [p.name for p in tmp_path.glob("timeline-*")] == [f"timeline-{SEED}-other-code.pickle"]  # old one removed
