"""The MFDS client's replay twin: `EmulatorMfdsClient` fetches from the emulator instead of data.go.kr.

Like dagster's `HNSnapshotClient` next to `HNAPIClient`: the same resource interface, chosen by the
definitions (`client_class(base_url)`). For `emulator://local` it plugs the emulator app in process
(no socket) with its seed and fault plan; for a loopback `dmf emulator serve` URL it talks HTTP to
that server. Either way it names the served day in the emulator's date header, so any day of the
emulated calendar can be fetched, and it needs no service key.
"""

from __future__ import annotations

from datetime import date
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import Field

from dmf_assets.emulator.app import DATE_HEADER, EmulatorApp
from dmf_assets.emulator.transport import EmulatorTransport
from dmf_assets.settings import Emulator, Settings, settings
from dmf_assets.source.client import MfdsClient, setting_default
from dmf_assets.source.endpoint import resolve_endpoint
from dmf_assets.source.identity import configured_source

if TYPE_CHECKING:
    from dmf_assets.emulator.registry import RegistrySimulator

EMULATOR_PLACEHOLDER_KEY = "emulator-accepts-any-key"


@lru_cache(maxsize=4)
def default_simulator(seed: int) -> RegistrySimulator:
    """One RegistrySimulator per seed and process (building its event log takes a few seconds)."""
    from dmf_assets.emulator.registry import RegistrySimulator

    return RegistrySimulator(seed)


class EmulatorMfdsClient(MfdsClient):
    """The MFDS client against the emulator (in process or a loopback server), with a raw archive."""

    emulator_seed: int = setting_default(Emulator, "seed")
    emulator_faults: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def settings_values(cls, s: Settings) -> dict[str, Any]:
        return {
            **super().settings_values(s),
            "emulator_seed": s.emulator.seed,
            "emulator_faults": dict(s.emulator.faults),
        }

    def anonymous_key(self) -> str | None:
        return EMULATOR_PLACEHOLDER_KEY  # the emulator accepts any non-empty key

    def http_client(self) -> httpx.Client:
        if not resolve_endpoint(self.base_url).in_process:
            return super().http_client()  # a loopback `dmf emulator serve`
        app = EmulatorApp(default_simulator(self.emulator_seed), faults=dict(self.emulator_faults))
        return httpx.Client(transport=EmulatorTransport(app))

    def request_headers(self, day: date) -> dict[str, str]:
        return {DATE_HEADER: day.isoformat()}

    def expected_source(self) -> str | None:
        return configured_source(resolve_endpoint(self.base_url), self.emulator_seed)

    def manifest_extra(self, day: date) -> dict[str, Any]:
        if not resolve_endpoint(self.base_url).in_process:
            return {}  # a loopback server's seed and faults are its own
        return {"emulator": {"seed": self.emulator_seed, "fault": (self.emulator_faults or {}).get(day.isoformat())}}


def client_class(base_url: str) -> type[MfdsClient]:
    """The client for a base URL: the emulator twin for `emulator://…` and loopback URLs (where
    `dmf emulator serve` answers, and wants the date header), the real client for anything else."""
    return EmulatorMfdsClient if resolve_endpoint(base_url).local else MfdsClient


def mfds_client(*, service_key: str | None = None, **fields: Any) -> MfdsClient:
    """The client `client_class` picks for `fields["base_url"]`, built from `fields` (the emulator's
    fields are dropped for the real API). `service_key`: a key given in code instead of the environment."""
    cls = client_class(fields.get("base_url", MfdsClient.model_fields["base_url"].default))
    if cls is not EmulatorMfdsClient:
        twin_only = set(EmulatorMfdsClient.model_fields) - set(MfdsClient.model_fields)
        fields = {k: v for k, v in fields.items() if k not in twin_only}
    client = cls(**fields)
    return client.with_service_key(service_key) if service_key is not None else client


def mfds_client_from_settings(
    s: Settings | None = None, *, service_key: str | None = None, **overrides: Any
) -> MfdsClient:
    """`mfds_client` configured from a settings file (default: the project's), with `overrides`."""
    s = s or settings()
    cls = client_class(overrides.get("base_url") or s.source.base_url)
    return mfds_client(service_key=service_key, **{**cls.settings_values(s), **overrides})
