"""The data.go.kr service key is a secret: decoded once for the query string, redacted everywhere else.

`install_key_log_filter()` hides it in httpx's request log lines; the client installs it before its
first request (not on import).
"""

from __future__ import annotations

import logging
import re
from urllib.parse import quote, quote_plus, unquote

_PARAM = re.compile(r"(serviceKey=)[^&\s\"'<>]*", re.IGNORECASE)


def decode_service_key(key: str) -> str:
    """Portal keys are issued URL-encoded; decode once so httpx encodes exactly once."""
    key = key.strip()
    if re.search(r"%(2B|2F|3D)", key, re.IGNORECASE):
        return unquote(key)
    return key


class Redactor:
    """Replaces every form of the service key (raw, decoded, encoded once/twice) with ***."""

    def __init__(self, key: str) -> None:
        variants: set[str] = set()
        for base in {key.strip(), decode_service_key(key)}:
            if len(base) < 4:  # nothing secret in an empty/placeholder key; avoid mangling text
                continue
            once = quote(base, safe="")
            variants |= {base, once, quote(once, safe=""), quote_plus(base), once.lower()}
        self._variants = sorted(variants, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        text = _PARAM.sub(r"\1***", text)
        for v in self._variants:
            text = text.replace(v, "***")
        return text


class ServiceKeyLogFilter(logging.Filter):
    """httpx logs every request URL at INFO ("HTTP Request: GET …?serviceKey=…"): redact it there."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is not ours to fix
            return True
        if "serviceKey" in message or "servicekey" in message.lower():
            record.msg, record.args = _PARAM.sub(r"\1***", message), ()
        return True


def install_key_log_filter() -> None:
    """Put a ServiceKeyLogFilter on the httpx/httpcore loggers (once; calling again is harmless)."""
    for name in ("httpx", "httpcore"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, ServiceKeyLogFilter) for f in logger.filters):
            logger.addFilter(ServiceKeyLogFilter())
