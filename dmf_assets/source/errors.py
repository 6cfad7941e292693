"""Typed errors of the MFDS source client.

Messages never contain the service key: everything that may carry a URL passes through
`redact` before it reaches an exception, a log line or a file.
"""

from __future__ import annotations

#: data.go.kr resultCode values that describe a passing server problem (worth one more try).
TRANSIENT_RESULT_CODES: frozenset[str] = frozenset({"01", "02", "04", "05"})

#: data.go.kr result / gateway reason codes and their meaning (for messages only).
RESULT_CODE_NAMES: dict[str, str] = {
    "00": "NORMAL_SERVICE",
    "01": "APPLICATION_ERROR",
    "02": "DB_ERROR",
    "03": "NODATA_ERROR",
    "04": "HTTP_ERROR",
    "05": "SERVICETIMEOUT_ERROR",
    "10": "INVALID_REQUEST_PARAMETER_ERROR",
    "11": "NO_MANDATORY_REQUEST_PARAMETERS_ERROR",
    "12": "NO_OPENAPI_SERVICE_ERROR",
    "20": "SERVICE_ACCESS_DENIED_ERROR",
    "22": "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR",
    "30": "SERVICE_KEY_IS_NOT_REGISTERED_ERROR",
    "31": "DEADLINE_HAS_EXPIRED_ERROR",
    "32": "UNREGISTERED_IP_ERROR",
    "33": "UNSIGNED_CALL_ERROR",
    "99": "UNKNOWN_ERROR",
}


class SourceError(Exception):
    """Base class of every error raised by the source package."""


class MalformedPage(SourceError):
    """The body could not be parsed (truncated JSON, not JSON/XML, missing envelope parts). Retryable."""


class GatewayError(SourceError):
    """The data.go.kr gateway answered with an `OpenAPI_ServiceResponse` XML error.

    Key and quota problems do not fix themselves within seconds, so these are never retried.
    """

    def __init__(self, *, err_msg: str, return_auth_msg: str, return_reason_code: str) -> None:
        self.err_msg = err_msg
        self.return_auth_msg = return_auth_msg
        self.return_reason_code = return_reason_code
        super().__init__(
            f"공공데이터포털 게이트웨이 오류 / gateway error: {return_auth_msg or err_msg} "
            f"(returnReasonCode {return_reason_code})"
        )

    @property
    def is_key_error(self) -> bool:
        return self.return_auth_msg in {"SERVICE_KEY_IS_NOT_REGISTERED_ERROR", "UNREGISTERED_IP_ERROR"} or (
            self.return_reason_code in {"30", "32"}
        )

    @property
    def is_quota_error(self) -> bool:
        return (
            self.return_auth_msg == "LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR"
            or self.return_reason_code == "22"
        )


class ApiResultError(SourceError):
    """The normal envelope came back with a resultCode other than "00"."""

    def __init__(self, result_code: str, result_msg: str) -> None:
        self.result_code = result_code
        self.result_msg = result_msg
        super().__init__(f"API resultCode {result_code} ({result_msg or RESULT_CODE_NAMES.get(result_code, '?')})")

    @property
    def transient(self) -> bool:
        return self.result_code in TRANSIENT_RESULT_CODES


class PastDateUnavailable(SourceError):
    """A past date was asked from the real API, which only serves the current registry."""

    def __init__(self, day: str, today: str) -> None:
        super().__init__(
            f"{day}: 식약처 API는 현재(오늘) 등록 현황만 제공합니다. 오늘({today})이 아닌 날짜는 보관된 원본"
            f"(data/raw/{day}/)으로만 다시 처리할 수 있는데, 이 날짜의 보관본이 없습니다. / "
            f"The MFDS API serves only the current registry: {day} is not today ({today}), so it can "
            f"only be re-processed from an archive, and there is no archive for it."
        )
        self.day = day


class RequestCapExceeded(SourceError):
    """The daily request cap for a host is reached (protects the developer key's quota)."""

    def __init__(self, host: str, cap: int, count: int) -> None:
        super().__init__(
            f"일일 요청 한도 초과 / daily request cap reached for {host}: {count} of {cap} requests used today "
            f"(source.daily_request_cap)"
        )
        self.host = host
        self.cap = cap
        self.count = count


class FetchInProgress(SourceError):
    """Another fetch holds the lock of the same day directory."""


class ArchiveCorrupt(SourceError):
    """An archived page does not match the checksum recorded in the manifest."""


class MissingServiceKey(SourceError):
    """The real API was chosen as the source but no service key is set in the environment."""
