"""Which registry a day came from: one source per history (docs/DOMAIN.md §4, issue 30).

The emulator's registry and the real one share no history: a demo's days followed by real days would report
the whole real registry as changed, or the emulator's registrations as withdrawn. So every archive (its
manifest's `source_id`), every staged day (`FetchedDay.fetch["source_id"]`) and every judged day (`runs.source_id`)
says which registry it is, and a day is never replayed from — nor committed beside — another one.

A source identity is a short text:
  emulator:<seed>  the emulator's registry of that seed: in process, or a `dmf emulator serve` on loopback, which
                   names its seed in every answer (header `X-Emulator-Seed`) — both are the same registry;
  <host>           any other server, by its host name: the real API is `apis.data.go.kr`, a server on this
                   machine that is not the emulator `127.0.0.1` (or `localhost`, `::1`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from pathlib import Path

import httpx

from dmf_assets.errors import UserError
from dmf_assets.source.archive import DayArchive, Manifest, published_days
from dmf_assets.source.endpoint import Endpoint
from dmf_assets.source.errors import SourceError

#: the header the emulator sets on every answer: the seed of the registry it serves
SEED_HEADER = "X-Emulator-Seed"
_EMULATOR = "emulator:"


def emulator_source(seed: int) -> str:
    return f"{_EMULATOR}{seed}"


def host_source(endpoint: Endpoint) -> str:
    """A server by its host name (no port: a server on another port of the same host is the same source)."""
    return httpx.URL(endpoint.url).host.lower()


def answered_by(endpoint: Endpoint, headers: Mapping[str, str]) -> str | None:
    """The source an answer came from: the emulator of the seed it names, or the server's host (None in process:
    the configuration says which registry answers there)."""
    seed = (headers.get(SEED_HEADER) or "").strip()
    if seed.isdigit():
        return emulator_source(int(seed))
    return None if endpoint.in_process else host_source(endpoint)


def configured_source(endpoint: Endpoint, seed: int | None) -> str | None:
    """The source a configuration names, when it is known before asking: the in-process emulator of `seed`, or a
    server that is not on this machine by its host. None for a server on loopback: it may be `dmf emulator serve`
    of any seed, or another server — its answers say which (`answered_by`)."""
    if endpoint.in_process:
        return emulator_source(seed) if seed is not None else None
    return None if endpoint.local else host_source(endpoint)


def ask_source(
    endpoint: Endpoint, *, key: str, headers: Mapping[str, str] | None = None, timeout_s: float = 10.0
) -> str | None:
    """The source a server answers as, asked with one small request (a page of one row) — for a server on this
    machine, which the configuration cannot name; None when it does not answer."""
    params: dict[str, str | int] = {"serviceKey": key, "pageNo": 1, "numOfRows": 1, "type": "json"}
    try:
        with httpx.Client(follow_redirects=False) as http:
            answer = http.get(endpoint.url, params=params, headers=dict(headers or {}), timeout=timeout_s)
    except httpx.HTTPError:
        return None
    return answered_by(endpoint, answer.headers)


def manifest_source(manifest: Manifest) -> str | None:
    """The source of an archived day: its manifest's `source_id` (None when no answer came); for an archive
    written before that was recorded, the in-process emulator's seed, else the host of the URL it was fetched
    from."""
    if manifest.source_recorded:
        return manifest.source_id
    emulator = manifest.extra.get("emulator")
    if isinstance(emulator, Mapping) and isinstance(emulator.get("seed"), int):
        return emulator_source(int(emulator["seed"]))
    url = manifest.request.get("url")
    try:
        return httpx.URL(str(url)).host.lower() or None if url else None
    except httpx.InvalidURL:
        return None


def label(source: str) -> str:
    """The source in words, for messages."""
    if source.startswith(_EMULATOR):
        return f"에뮬레이터(seed {source.removeprefix(_EMULATOR)})"
    if source == "apis.data.go.kr":
        return "식약처 Open API(apis.data.go.kr)"
    return f"서버 {source}"


class SourceMismatch(SourceError, UserError):
    """A day of one source where another one's days are: refused before anything is archived or committed."""

    def __init__(self, *, found: str, where: str, holds: str) -> None:
        self.found, self.holds = found, holds
        super().__init__(
            f"원천이 다릅니다: {where}에는 {label(holds)}의 기록이 있는데, 이번 수집의 원천은 {label(found)}입니다 — 한 이력에 "
            "두 원천을 섞지 않으므로 아무것도 기록하지 않았습니다. 새 원천으로 시작하려면 새 데이터 폴더를 쓰거나 README의 "
            "'원천 바꾸기'대로 지금 폴더를 옮겨 두세요 / the source differs from the one this history was built from "
            f"({holds} there, {found} now); nothing was written — start the new source on a fresh data folder (README: "
            "changing the source)"
        )


def require_same(found: str | None, holds: str | None, where: str) -> None:
    """Raise SourceMismatch when both are known and differ."""
    if found is not None and holds is not None and found != holds:
        raise SourceMismatch(found=found, where=where, holds=holds)


def folder_source(raw_dir: Path, first: date | None = None) -> tuple[str, date] | None:
    """The source of the archive folder — that of its newest complete archive, or of `first`'s (the day being
    fetched) when that one is complete — and that archive's day; None for a folder with no complete archive."""
    for day in (*([first] if first else []), *reversed(published_days(raw_dir))):
        manifest = DayArchive(raw_dir, day).published_manifest()
        if manifest and manifest.complete and (source := manifest_source(manifest)):
            return source, day
    return None
