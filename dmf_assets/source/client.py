"""The MFDS `getMdcDmfList01` client: a Dagster resource whose fields are the fetch's settings.

`MfdsClient` talks to the real Open API (data.go.kr). A replay twin — the emulator's
`EmulatorMfdsClient` — subclasses it and overrides the hooks below (HTTP client, request headers,
the key to use when none is configured, manifest notes); the definitions choose one
(`defs/resources.py`), as dagster's hacker-news example chooses `HNAPIClient` or `HNSnapshotClient`.
The fetch itself is `dmf_assets.source.fetch`.

The fields are declared here once; their defaults and the config-file validation are the
`[source]` section's (`settings.Source`), and `settings_values()` maps a settings file onto them by name.
"""

from __future__ import annotations

import os
import random
from datetime import date
from pathlib import Path
from typing import Any

import dagster as dg
import httpx
from pydantic import BaseModel, Field, PrivateAttr

from dmf_assets.domain.recheck import Query
from dmf_assets.settings import PROJECT_ROOT, Paths, Settings, Source
from dmf_assets.source.endpoint import resolve_endpoint
from dmf_assets.source.fetch import FetchLog, FetchResult, fetch_day
from dmf_assets.source.identity import ask_source, configured_source
from dmf_assets.source.recheck import RecheckAnswers, recheck
from dmf_assets.source.service_key import decode_service_key

USER_AGENT = "dmf-watch/0.1 (+MFDS DMF registry daily watch)"


def setting_default(section: type[BaseModel], name: str) -> Any:
    """A field's default, taken from the settings model that documents it."""
    return section.model_fields[name].default


class MfdsClient(dg.ConfigurableResource):
    """MFDS 원료의약품 등록(DMF) 현황 Open API client, with a raw archive."""

    base_url: str = Field(
        default=setting_default(Source, "base_url"), description="emulator://local or the MFDS service base URL"
    )
    service_key_env: str = Field(
        default="MFDS_SERVICE_KEY",
        description="the environment variable that holds the data.go.kr service key, read at run time; the key "
        "itself is never configuration (Dagster would store it in the run history)",
    )
    num_of_rows: int = setting_default(Source, "num_of_rows")
    max_attempts: int = setting_default(Source, "max_attempts")
    connect_timeout_s: float = setting_default(Source, "connect_timeout_s")
    read_timeout_s: float = setting_default(Source, "read_timeout_s")
    min_interval_s: float = setting_default(Source, "min_interval_s")
    backoff_base_s: float = setting_default(Source, "backoff_base_s")
    backoff_max_s: float = setting_default(Source, "backoff_max_s")
    daily_request_cap: int = setting_default(Source, "daily_request_cap")
    raw_dir: str = setting_default(Paths, "raw_dir")

    # a key given in code (tests, benchmarks, `dmf fetch`); never configuration, never in repr
    _service_key: str | None = PrivateAttr(default=None)

    @classmethod
    def settings_values(cls, s: Settings) -> dict[str, Any]:
        """This client's field values from a settings file: the `[source]` keys by name, `paths.raw_dir`."""
        values = {name: getattr(s.source, name) for name in cls.model_fields if name in Source.model_fields}
        values["raw_dir"] = s.paths.raw_dir
        return values

    def with_service_key(self, key: str | None) -> MfdsClient:
        """A copy of this client that uses `key` instead of the environment variable."""
        copy = self.model_copy()
        copy._service_key = key
        return copy

    # -- what the fetch asks the client (a replay twin overrides these) ---------------------------

    def service_key(self) -> str:
        """The service key: given in code, else read from `service_key_env` now, at run time."""
        if self._service_key is not None:
            return self._service_key
        return os.environ.get(self.service_key_env, "").strip()

    def anonymous_key(self) -> str | None:
        """The key to send when none is configured; None: the fetch stops with MissingServiceKey."""
        return None

    def query_key(self) -> str:
        """The key the query string carries: the service key decoded once, else `anonymous_key`; "" for none."""
        return decode_service_key(self.service_key()) or self.anonymous_key() or ""

    def http_client(self) -> httpx.Client:
        """A fresh HTTP client for one fetch (the fetch closes it)."""
        if resolve_endpoint(self.base_url).in_process:
            raise ValueError(
                f"source.base_url {self.base_url!r} has no HTTP server: it is answered in process "
                "by the client that replays it, not by this one"
            )
        return httpx.Client(headers={"User-Agent": USER_AGENT}, follow_redirects=False)

    def request_headers(self, day: date) -> dict[str, str]:
        """Extra headers of every request for `day` (recorded in the manifest)."""
        return {}

    def manifest_extra(self, day: date) -> dict[str, Any]:
        """Extra top-level manifest entries for a fetch of `day`."""
        return {}

    def expected_source(self) -> str | None:
        """The registry this client fetches, when known before asking (`source.identity.configured_source`)."""
        return configured_source(resolve_endpoint(self.base_url), seed=None)

    def answering_source(self, day: date) -> str | None:
        """The registry this client fetches: known from the configuration, or — a server on this machine — asked
        with one small request (`source.identity.ask_source`); None when it does not answer."""
        endpoint = resolve_endpoint(self.base_url)
        if (known := self.expected_source()) is not None or endpoint.in_process:
            return known
        key = self.query_key()
        return ask_source(endpoint, key=key, headers=self.request_headers(day), timeout_s=self.connect_timeout_s)

    # -- use --------------------------------------------------------------------------------------

    def raw_path(self) -> Path:
        p = Path(self.raw_dir)
        return p if p.is_absolute() else PROJECT_ROOT / p

    def fetch_day(
        self,
        day: date | str,
        *,
        log: FetchLog | None = None,
        resume: bool = True,
        http_client: httpx.Client | None = None,
        rng: random.Random | None = None,
    ) -> FetchResult:
        return fetch_day(self, day, log=log, resume=resume, http_client=http_client, rng=rng)

    def recheck(self, day: date | str, queries: list[Query], *, log: FetchLog | None = None) -> RecheckAnswers:
        """The source's answers to `queries` about `day`'s would-be withdrawals: archived ones replayed, the
        others asked now while the source can still serve the day (`source.recheck`)."""
        return recheck(self, day, queries, log=log)
