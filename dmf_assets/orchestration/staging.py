"""Files that carry one day between assets: data/staging/YYYY-MM-DD/.

- fetch.json       what the fetch proved (FetchFacts), per-page stats, source, timings
- items.parquet    the de-duplicated API rows as received (strings), input of normalization
- normalized.parquet  normalized + keyed rows (the day's candidate snapshot)
- quality.json     the quality metrics of that snapshot

Every write is atomic (temporary file + rename): a killed run leaves the previous file or the new
one, never half of one. Staging is a cache — the raw archive stays the source of truth.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from datetime import date, timedelta
from pathlib import Path

import polars as pl

from dmf_assets.domain.gates import FetchFacts, QualityMetric
from dmf_assets.domain.model import API_FIELDS


class StagingMissing(RuntimeError):
    """An upstream asset of this day has not been materialized (or its files were pruned)."""


def day_dir(staging_dir: Path, day: date) -> Path:
    return Path(staging_dir) / day.isoformat()


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _atomic_write_parquet(path: Path, frame: pl.DataFrame) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    frame.write_parquet(tmp, compression="zstd")
    os.replace(tmp, path)


def _require(path: Path, upstream: str) -> Path:
    if not path.exists():
        raise StagingMissing(
            f"{path.parent.name}의 '{upstream}' 결과가 없습니다 ({path}). 이 날짜의 {upstream}을(를) 먼저 실행하세요. "
            f"Materialize '{upstream}' for this partition first."
        )
    return path


# --- fetch ---------------------------------------------------------------------------------------


def write_fetch(staging_dir: Path, day: date, facts: FetchFacts, *, items: list[dict], extra: dict) -> None:
    folder = day_dir(staging_dir, day)
    columns = list(API_FIELDS) + sorted({k for it in items for k in it} - set(API_FIELDS))
    frame = pl.DataFrame(
        {c: [None if it.get(c) is None else str(it.get(c)) for it in items] for c in columns},
        schema={c: pl.Utf8 for c in columns},
    )
    _atomic_write_parquet(folder / "items.parquet", frame)
    payload = {"facts": dataclasses.asdict(facts), **extra}
    _atomic_write_bytes(folder / "fetch.json", json.dumps(payload, ensure_ascii=False, indent=1, default=str).encode())


def read_fetch(staging_dir: Path, day: date) -> tuple[FetchFacts, dict]:
    payload = json.loads(_require(day_dir(staging_dir, day) / "fetch.json", "raw_pages").read_text(encoding="utf-8"))
    raw = payload.pop("facts")
    facts = FetchFacts(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})
    return facts, payload


def read_items(staging_dir: Path, day: date) -> pl.DataFrame:
    return pl.read_parquet(_require(day_dir(staging_dir, day) / "items.parquet", "raw_pages"))


# --- normalized ----------------------------------------------------------------------------------


def write_normalized(staging_dir: Path, day: date, keyed: pl.DataFrame, quality: list[QualityMetric]) -> None:
    folder = day_dir(staging_dir, day)
    _atomic_write_parquet(folder / "normalized.parquet", keyed)
    _atomic_write_bytes(
        folder / "quality.json",
        json.dumps([dataclasses.asdict(q) for q in quality], ensure_ascii=False, default=str).encode(),
    )


def read_normalized(staging_dir: Path, day: date) -> pl.DataFrame:
    return pl.read_parquet(_require(day_dir(staging_dir, day) / "normalized.parquet", "normalized_records"))


def read_quality(staging_dir: Path, day: date) -> list[QualityMetric]:
    raw = json.loads(_require(day_dir(staging_dir, day) / "quality.json", "normalized_records").read_text(encoding="utf-8"))
    return [QualityMetric(**{**q, "samples": tuple(q.get("samples") or ())}) for q in raw]


def prune_staging(staging_dir: Path, keep_days: int, today: date, *, dry_run: bool = False) -> list[Path]:
    """Delete staging folders older than keep_days (the raw archive can rebuild them).

    `dry_run`: return what would be deleted, delete nothing.
    """
    removed = []
    cutoff = today - timedelta(days=keep_days)
    for folder in sorted(Path(staging_dir).glob("????-??-??")):
        try:
            d = date.fromisoformat(folder.name)
        except ValueError:
            continue
        if d < cutoff:
            if not dry_run:
                shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
