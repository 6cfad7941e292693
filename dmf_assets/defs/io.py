"""The day store: how raw_pages → normalized_records → integrity_verdict hand their values on.

An I/O manager (the one visible way data moves between these assets): each day's value is stored
under `data/staging/YYYY-MM-DD/<asset>.parquet`, written atomically
(a killed run leaves the previous value or the new one, never half of one). Later assets read the
history database instead. Staging is a cache: the raw archive stays the source of truth and
`dmf prune` removes old days.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

import dagster as dg
import polars as pl

from dmf_assets.domain.gates import FetchFacts, GateOutcome, QualityMetric
from dmf_assets.fsutil import atomic_output
from dmf_assets.korean import josa
from dmf_assets.orchestration.pipeline import FetchedDay, JudgedDay, NormalizedDay

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

META_KEY = "dmf_day_value"
#: values that may be absent for a day: a rejected judgement hands nothing on (snapshot_diff then reads
#: the database's verdict of the day)
OPTIONAL_VALUES = ("integrity_verdict",)
#: the stored value types, by the name of the asset that produces them
VALUE_TYPES = {"raw_pages": FetchedDay, "normalized_records": NormalizedDay, "integrity_verdict": JudgedDay}


def _encode(value: Any) -> tuple[dict[str, Any], dict[str, pl.DataFrame]]:
    """A day value as (JSON-able fields, frames)."""
    fields: dict[str, Any] = {}
    frames: dict[str, pl.DataFrame] = {}
    for f in dataclasses.fields(value):
        v = getattr(value, f.name)
        if isinstance(v, pl.DataFrame):
            frames[f.name] = v
        elif isinstance(v, date):
            fields[f.name] = v.isoformat()
        elif isinstance(v, list):
            fields[f.name] = [_plain(x) if _is_record(x) else x for x in v]
        elif _is_record(v):
            fields[f.name] = _plain(v)
        else:
            fields[f.name] = v
    return fields, frames


def _plain(record: DataclassInstance) -> dict[str, Any]:
    """A record's own values; a gate outcome's registry entry (code) is left out: its number names the gate."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record) if f.compare}


def _is_record(x: object) -> TypeGuard[DataclassInstance]:
    """A dataclass value (not a dataclass itself)."""
    return dataclasses.is_dataclass(x) and not isinstance(x, type)


def _tuples(d: dict) -> dict:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}


def _decode(cls: type, fields: dict[str, Any], frames: dict[str, pl.DataFrame]) -> Any:
    kwargs = dict(fields, **frames)
    for name in ("day", "base_day"):
        if name in kwargs:
            kwargs[name] = date.fromisoformat(kwargs[name]) if kwargs[name] else None
    if "facts" in kwargs:
        kwargs["facts"] = FetchFacts(**_tuples(kwargs["facts"]))
    for name, record in (("quality", QualityMetric), ("gates", GateOutcome)):
        if name in kwargs:
            kwargs[name] = [record(**_tuples(x)) for x in kwargs[name]]
    return cls(**kwargs)


class DayStoreIOManager(dg.ConfigurableIOManager):
    """A day's value per asset and partition as ONE Parquet file: the frame, with the other fields as JSON in the
    file's metadata — one atomic replace. `staging_dir`: paths.staging_dir, resolved by `build_resources`."""

    staging_dir: str

    def _path(self, asset: str, partition_key: str) -> Path:
        return staged_path(Path(self.staging_dir), asset, partition_key)

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        fields, frames = _encode(obj)
        ((name, frame),) = frames.items()  # each day value carries exactly one frame
        meta = {META_KEY: json.dumps({"frame": name, "fields": fields}, ensure_ascii=False, default=str)}
        with atomic_output(self._path(context.asset_key.path[-1], context.partition_key)) as tmp:
            # polars' own writer: half the time of a pyarrow round trip for the 9k-row, 49-column day
            frame.write_parquet(tmp, compression="zstd", metadata=meta)

    def load_input(self, context: dg.InputContext) -> Any:
        asset = context.asset_key.path[-1]
        path = self._path(asset, context.partition_key)
        if not path.exists() and asset in OPTIONAL_VALUES:
            return None  # no value was handed on (a rejected verdict): the reader asks the database why
        if not path.exists():
            raise dg.Failure(
                description=(
                    f"{context.partition_key}의 '{asset}' 값이 없습니다 ({path}). 이 날짜의 {josa(asset, '을/를')} 먼저 실행하세요 "
                    f"(보존 기간이 지나 지워졌다면 raw_pages부터 다시 실행). Materialize '{asset}' for this partition first."
                )
            )
        try:
            # the fields are the file's key-value metadata (files written by pyarrow have them there too)
            stored = json.loads(pl.read_parquet_metadata(path)[META_KEY])
            frame = pl.read_parquet(path)
        except (OSError, ValueError, KeyError, pl.exceptions.PolarsError) as exc:
            raise dg.Failure(
                description=(
                    f"{context.partition_key}의 '{asset}' 값 파일을 읽을 수 없습니다 ({path}: {exc}). 이 날짜를 raw_pages부터 "
                    f"다시 실행하세요 (원본 보관본에서 다시 만듭니다). The staged value is damaged: re-run the day from raw_pages."
                )
            ) from None
        return _decode(VALUE_TYPES[asset], stored["fields"], {stored["frame"]: frame})


def staged_path(staging_dir: Path, asset: str, partition_key: str) -> Path:
    """Where the day store keeps `asset`'s value of a day."""
    return Path(staging_dir) / partition_key / f"{asset}.parquet"


def discard_value(staging_dir: Path, asset: str, partition_key: str) -> None:
    """Remove a day's stored value (a rejected judgement must not leave an older passing one behind)."""
    staged_path(staging_dir, asset, partition_key).unlink(missing_ok=True)
