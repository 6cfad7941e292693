"""Where the operation is: a configured base URL resolved to the `getMdcDmfList01` URL and its host.

A base URL is the MFDS service base URL (`https://apis.data.go.kr/1471000/MdcDmfInfoService01`), the
full operation URL, a bare host (the service path is added), or the in-process URL
(`settings.EMULATOR_URL`), which no socket serves: the client that handles it supplies the transport.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx

from dmf_assets.settings import API_OPERATION, EMULATOR_URL

#: the real API's service (the operation `getMdcDmfList01` lives under it)
SERVICE_BASE_PATH = "/1471000/MdcDmfInfoService01"
#: the scheme of the in-process base URL
IN_PROCESS_SCHEME = EMULATOR_URL.split("://", 1)[0]
HTTP_KIND = "http"

_LOOPBACK = re.compile(r"^(localhost|127(\.\d{1,3}){3}|::1)$", re.IGNORECASE)


@dataclass(frozen=True)
class Endpoint:
    url: str  # the operation URL, without query
    kind: str  # IN_PROCESS_SCHEME (answered in process) | "http"
    host: str  # for the request cap: the in-process scheme or host[:port]
    local: bool  # in process or loopback: no spacing, no request cap

    @property
    def in_process(self) -> bool:
        return self.kind == IN_PROCESS_SCHEME

    @property
    def dated(self) -> bool:
        """A local endpoint is a replay of the registry that can serve any date; the real API serves
        only today's registry."""
        return self.local


def resolve_endpoint(base_url: str) -> Endpoint:
    """Operation URL for a base URL: the in-process URL, a service base URL, or the full operation URL."""
    try:
        url = httpx.URL(base_url.strip())
    except httpx.InvalidURL as exc:
        raise ValueError(f"source.base_url {base_url!r} is not a URL: {exc}") from None
    if url.scheme not in ("http", "https", IN_PROCESS_SCHEME):
        raise ValueError(f"source.base_url {base_url!r}: scheme must be http, https or {IN_PROCESS_SCHEME}")
    path = url.path.rstrip("/") or SERVICE_BASE_PATH
    if not path.endswith("/" + API_OPERATION):
        path = f"{path}/{API_OPERATION}"
    op_url = str(url.copy_with(path=path, query=None, fragment=None))
    if url.scheme == IN_PROCESS_SCHEME:
        return Endpoint(op_url, IN_PROCESS_SCHEME, IN_PROCESS_SCHEME, local=True)
    host = url.host
    netloc = f"{host}:{url.port}" if url.port else host
    return Endpoint(op_url, HTTP_KIND, netloc, local=bool(_LOOPBACK.match(host)))
