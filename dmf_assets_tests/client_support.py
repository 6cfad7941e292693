"""Shared helpers for the emulator-API and client tests (no tests of its own).

The registry served in these tests is H1's `RegistrySimulator` when it imports; otherwise a
stand-in built from the 151 real fixture rows, replicated with altered permit numbers to ~9,200
rows. `USING_SIMULATOR` says which one is in use.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from datetime import date
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

from dmf_assets.emulator.app import ItemSource, StaticItemSource, SubsetSource

SEEDS = Path(__file__).resolve().parents[1] / "dmf_assets" / "emulator" / "seeds"
FAULT_DAY = date(2026, 11, 18)

# A realistic portal key: base64 with + / = (the "Decoding" key); the portal hands out the
# URL-encoded form too (the "Encoding" key). KEY_CORE is in every encoding of it.
FAKE_KEY = "dMfW4tchF4k3+K3y/Secr3t9Qx7Lm2Pq0vZ8nR5sT1uV6wX4yA9bC3dE5fG7hJ2kL8mN0pQ4rS6tU8vW0xY2zA4bC6dE8fG0hJ2k=="
FAKE_KEY_ENCODED = quote(FAKE_KEY, safe="")
KEY_CORE = "dMfW4tchF4k3"


def fixture_rows() -> list[dict]:
    rows: list[dict] = []
    for path in sorted(SEEDS.glob("*.json")):
        rows.extend(json.loads(path.read_text(encoding="utf-8"))["items"])
    return rows


def replicated_rows(n_rows: int = 9_200) -> list[dict]:
    """The real rows, copied with altered permit numbers / BIZRNO until there are n_rows."""
    base = fixture_rows()
    out: list[dict] = []
    copy = 0
    while len(out) < n_rows:
        for row in base:
            r = dict(row)
            if copy:
                if r.get("DMF_PERMIT_NO"):
                    r["DMF_PERMIT_NO"] = f"{r['DMF_PERMIT_NO']}-R{copy}"
                if r.get("BIZRNO"):
                    r["BIZRNO"] = f"{(int(r['BIZRNO']) + copy) % 10**10:010d}"
            out.append(r)
            if len(out) == n_rows:
                break
        copy += 1
    return out


@lru_cache(maxsize=1)
def _simulator():
    try:
        import dmf_assets.emulator.registry  # noqa: F401 - only whether it imports
    except ImportError:
        return None
    from dmf_assets.emulator.client import default_simulator

    sim = default_simulator(20250101)  # shared with the client's in-process emulator
    sim.items(FAULT_DAY)  # build the event log now, not inside a request with a 0.5 s read timeout
    return sim


USING_SIMULATOR = _simulator() is not None


def registry_source() -> ItemSource:
    sim = _simulator()
    return sim if sim is not None else StaticItemSource(replicated_rows())


def small_source(n_rows: int) -> ItemSource:
    """The first n_rows of the registry (same data, fewer pages)."""
    return SubsetSource(registry_source(), n_rows)


def read_gz(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())


def assert_archive_consistent(archive_dir: str | Path) -> dict:
    """One gz per page that got a body, sha256 of the decompressed bytes = manifest, no strays."""
    d = Path(archive_dir)
    manifest = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
    listed = set()
    for page in manifest["pages"]:
        if page["file"] is None:
            assert all(a["status"] is None for a in page["attempts"]), page
            continue
        listed.add(page["file"])
        assert page["file"].startswith(f"page-{page['page_no']:04d}.")
        data = read_gz(d / page["file"])
        assert hashlib.sha256(data).hexdigest() == page["sha256"]
        assert len(data) == page["bytes"]
        # the archived body is the one of the last attempt that returned a body
        last_with_body = [a for a in page["attempts"] if a["status"] is not None][-1]
        assert last_with_body["sha256"] == page["sha256"]
    on_disk = {p.name for p in d.glob("page-*.gz")}
    assert on_disk == listed
    assert {p.name for p in d.iterdir()} == on_disk | {"manifest.json"}
    return manifest


def assert_key_absent(root: str | Path | None = None, *texts: str) -> None:
    """The fake key (any encoding) appears in no file under `root` (gz decompressed) nor in `texts`."""
    needles = (KEY_CORE, KEY_CORE.lower())
    for text in texts:
        assert not any(n in text for n in needles), f"service key leaked into: {text[:200]!r}"
    if root is None:
        return
    for path in Path(root).rglob("*"):
        if path.is_file():
            data = read_gz(path) if path.suffix == ".gz" else path.read_bytes()
            text = data.decode("utf-8", errors="replace")
            assert not any(n in text for n in needles), f"service key leaked into {path}"
