"""The data.go.kr service key is a secret: decoded once for the query string, redacted everywhere else.

`Redactor` finds the key in any form a server may echo it back in — as sent (URL-encoded, any case of
the percent-encoding), decoded, encoded twice, as JSON `\\u` escapes or `\\/`, as HTML/XML character
references, or with `+` read as a space — in text and in raw bodies: the fetch scrubs every body with it
before the body is archived, parsed, logged or shown. `install_key_log_filter()` hides it in httpx's request
log lines; the client installs it before its first request (not on import).
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote

_PARAM = re.compile(r"(serviceKey=)[^&\s\"'<>]*", re.IGNORECASE)
_PARAM_BYTES = re.compile(rb"(serviceKey=)[^&\s\"'<>]*", re.IGNORECASE)
#: shorter "keys" are placeholders; scrubbing them would alter ordinary text (a real key is ≈100 characters)
MIN_SECRET_LEN = 8


def decode_service_key(key: str) -> str:
    """Portal keys are issued URL-encoded; decode once so httpx encodes exactly once."""
    key = key.strip()
    if re.search(r"%(2B|2F|3D)", key, re.IGNORECASE):
        return unquote(key)
    return key


def _char_forms(char: str) -> str:
    """Every way one character of the key can come back: itself, percent-encoded (once or twice, per UTF-8
    byte), a JSON escape, an HTML/XML character reference; `/` also as JSON's `\\/`, `+` also as a space."""
    utf8 = char.encode("utf-8")
    forms = [
        re.escape(char),
        "".join(f"%(?:25)?{b:02X}" for b in utf8),
        rf"\\u{ord(char):04X}" if ord(char) <= 0xFFFF else re.escape(char),
        f"&#0*{ord(char)};",
        f"&#x0*{ord(char):X};",
    ]
    forms += {"/": [r"\\/"], "+": [" ", "%(?:25)?20"]}.get(char, [])
    return "(?:" + "|".join(forms) + ")"


def _key_pattern(bases: set[str]) -> str | None:
    alternatives = ["".join(_char_forms(c) for c in base) for base in sorted(bases) if len(base) >= MIN_SECRET_LEN]
    return "|".join(alternatives) or None


class Redactor:
    """Replaces every form of the service key (see the module docstring) with ***, in text (`__call__`) and in
    bytes (`scrub_bytes`), and the value of any `serviceKey=` parameter."""

    def __init__(self, key: str) -> None:
        bases = {key.strip(), decode_service_key(key)}
        pattern = _key_pattern(bases)
        # case-insensitive: a server may lower- or upper-case what it echoes; a ≈100-character key cannot
        # match anything else by accident
        self._text = re.compile(pattern, re.IGNORECASE) if pattern else None
        self._bytes = re.compile(pattern.encode("utf-8"), re.IGNORECASE) if pattern else None

    def __call__(self, text: str) -> str:
        text = _PARAM.sub(r"\1***", text)
        return self._text.sub("***", text) if self._text else text

    def scrub_bytes(self, body: bytes) -> bytes:
        """`body` without the key — what is archived, parsed and shown of a response."""
        if b"servicekey=" in body.lower():  # a quick look first: most pages name no parameter at all
            body = _PARAM_BYTES.sub(rb"\1***", body)
        return self._bytes.sub(b"***", body) if self._bytes else body


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
