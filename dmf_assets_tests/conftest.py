"""Shared test fixtures: the real MFDS rows and temporary project folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REAL_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "real"


def _real_fixture_dir() -> Path:
    # ../shared sits beside the checkout; a fresh clone elsewhere finds it through DMF_SHARED
    import os

    env = os.environ.get("DMF_SHARED")
    candidates = [Path(env) / "fixtures" / "real"] if env else []
    # fallback: the copy packaged as the emulator's seed rows (identical; see test_seed_copy)
    candidates += [REAL_FIXTURES, Path(__file__).resolve().parents[1] / "dmf_assets" / "emulator" / "seeds"]
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError("real fixtures not found; set DMF_SHARED to the shared/ folder")


@pytest.fixture(scope="session")
def real_fixture_files() -> list[Path]:
    return sorted(_real_fixture_dir().glob("*.json"))


@pytest.fixture(scope="session")
def real_items(real_fixture_files) -> list[dict]:
    """Every real API row from ../shared/fixtures/real/, unchanged."""
    items: list[dict] = []
    for path in real_fixture_files:
        items.extend(json.loads(path.read_text(encoding="utf-8"))["items"])
    assert items, "no real rows found"
    return items
