"""Project settings: `config/dmf.toml` (documented defaults) + `config/dmf.local.toml` (git-ignored).

Only configuration lives here. The service key is a secret and is never read from these files.
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = PROJECT_ROOT / "config" / "dmf.toml"
LOCAL_CONFIG = PROJECT_ROOT / "config" / "dmf.local.toml"
EMULATOR_URL = "emulator://local"
REAL_API_URL = "https://apis.data.go.kr/1471000/MdcDmfInfoService01"
API_OPERATION = "getMdcDmfList01"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Paths(_Section):
    database: str = "data/dmf.duckdb"
    raw_dir: str = "data/raw"
    staging_dir: str = "data/staging"
    alerts_dir: str = "data/alerts"
    backups_dir: str = "data/backups"
    reports_dir: str = "reports"
    events_dir: str = "data/events"
    logs_dir: str = "data/logs"

    def resolve(self, name: str) -> Path:
        p = Path(getattr(self, name))
        return p if p.is_absolute() else PROJECT_ROOT / p


class Source(_Section):
    base_url: str = EMULATOR_URL
    num_of_rows: int = Field(500, ge=1, le=1000)
    max_attempts: int = Field(3, ge=1, le=10)
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0
    min_interval_s: float = 2.0
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    daily_request_cap: int = 300


class Emulator(_Section):
    seed: int = 20250101
    faults: dict[str, str] = Field(default_factory=dict)


class Gates(_Section):
    drop_max_ratio: float = 0.05
    null_max_ratio: float = 0.01
    duplicate_max_ratio: float = 0.02
    churn_max_ratio: float = 0.10


class Quality(_Section):
    row_count_min: int = 8000
    row_count_max: int = 12000
    permit_parse_min_ratio: float = 0.98
    new_substance_max_ratio: float = 0.25
    synthetic_key_max: int = 50
    unresolved_country_max: int = 0
    oversize_max: int = 0
    replacement_char_max: int = 0
    stale_source_days: int = 7


class Watchlist(_Section):
    ingredients: list[str] = Field(default_factory=list)
    applicants: list[str] = Field(default_factory=list)
    manufacturers: list[str] = Field(default_factory=list)
    countries: list[str] = Field(default_factory=list)


class Report(_Section):
    file_server_host: str = "127.0.0.1"
    file_server_port: int = 8765
    public_base_url: str = ""
    history_days: int = 90

    @property
    def base_url(self) -> str:
        return self.public_base_url.rstrip("/") or f"http://{self.file_server_host}:{self.file_server_port}"


class Retention(_Section):
    raw_days: int = 180
    reports_days: int = 365
    backups_days: int = 30
    logs_days: int = 90
    staging_days: int = 14


class Backfill(_Section):
    single_run: bool = False


class Demo(_Section):
    days: int = 30
    fault_days_ago: int = 12
    fault_kind: str = "page_missing_rows"


class Settings(_Section):
    paths: Paths = Field(default_factory=Paths)
    source: Source = Field(default_factory=Source)
    emulator: Emulator = Field(default_factory=Emulator)
    gates: Gates = Field(default_factory=Gates)
    quality: Quality = Field(default_factory=Quality)
    watchlist: Watchlist = Field(default_factory=Watchlist)
    report: Report = Field(default_factory=Report)
    retention: Retention = Field(default_factory=Retention)
    backfill: Backfill = Field(default_factory=Backfill)
    demo: Demo = Field(default_factory=Demo)


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_settings(path: str | Path | None = None) -> Settings:
    """Read the defaults, then the local override (or the file named by DMF_CONFIG)."""
    data: dict[str, Any] = {}
    if DEFAULT_CONFIG.exists():
        data = tomllib.loads(DEFAULT_CONFIG.read_text(encoding="utf-8"))
    override = Path(path) if path else Path(os.environ["DMF_CONFIG"]) if os.environ.get("DMF_CONFIG") else LOCAL_CONFIG
    if override.exists():
        data = _deep_merge(data, tomllib.loads(override.read_text(encoding="utf-8")))
    return Settings.model_validate(data)


@lru_cache(maxsize=1)
def settings() -> Settings:
    return load_settings()
