"""Project settings: `config/dmf.toml` (documented defaults) + `config/dmf.local.toml` (git-ignored).

Only configuration lives here. The service key and the SMTP password are secrets and are never read
from these files (MFDS_SERVICE_KEY, DMF_SMTP_PASSWORD in the environment).

The settings are a contract (docs/DOMAIN.md §9): every key is typed (strict — "5" is not a number, 1 is
not true) and range-checked — every number has an upper bound the code can represent (no inf or nan,
day counts ≤ MAX_DAYS, so date arithmetic and timeouts never overflow) — unknown keys and sections are refused, a `DMF_CONFIG` that does not
exist is an error. Every problem becomes one `ConfigError` whose text names the file, the TOML line,
the key and what is allowed — in Korean and English, never a pydantic dump.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import os
import re
import sys
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import time
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import annotated_types
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from dmf_assets.korean import josa

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = PROJECT_ROOT / "config" / "dmf.toml"
LOCAL_CONFIG = PROJECT_ROOT / "config" / "dmf.local.toml"
EMULATOR_URL = "emulator://local"
REAL_API_URL = "https://apis.data.go.kr/1471000/MdcDmfInfoService01"
API_OPERATION = "getMdcDmfList01"
SMTP_PASSWORD_ENV = "DMF_SMTP_PASSWORD"
#: the web page's access token from the environment (wins over `[web] token`)
WEB_TOKEN_ENV = "DMF_WEB_TOKEN"


def resolve_path(root: str | Path, value: str | Path) -> Path:
    """A configured path: absolute as written, relative ones against `root` (the project root)."""
    p = Path(value)
    return p if p.is_absolute() else Path(root) / p


def first_inside(folder: Path, paths: Iterable[Path]) -> Path | None:
    """The first of `paths` that `folder` is or holds — what a sweep of `folder` would reach (the logs' prune)."""
    folder = folder.resolve()
    return next((p for p in paths if p.resolve() == folder or folder in p.resolve().parents), None)


# --- value rules (each raises ValueError("한국어 / English")) --------------------------------------


def _not_empty_path(value: str) -> str:
    if not value.strip():
        raise ValueError(
            "빈 경로는 쓸 수 없습니다 (프로젝트 폴더 전체를 가리킴) / an empty path would mean the whole "
            'project folder; write a folder such as "reports"'
        )
    return value


def _without_path(value: str) -> str:
    """A URL without its path: a webhook URL carries its secret token there, and messages get logged."""
    return re.sub(r"^([a-z]*:?//[^/]*)/.+$", r"\1/…", value)


#: a host name: dot-separated labels of letters (any script: IDN), digits, hyphens and underscores
_HOST_NAME = re.compile(r"^(?!-)[\w-]{1,63}(?<!-)(\.(?!-)[\w-]{1,63}(?<!-))*\.?$")


def _url_problem(value: str) -> str | None:
    """Why `value` is not an http(s) URL a client can connect to (scheme, host, port), or None."""
    if not re.match(r"^https?://[^\s/]+", value):
        return "http:// 또는 https:// 로 시작하는 주소여야 합니다 / must be an http:// or https:// URL"
    if re.search(r"\s", value):
        return "주소에 공백이 있습니다 / the URL contains a space"
    try:
        parts = urlsplit(value)
        port = parts.port  # ValueError: not a number, or out of 0–65535
    except ValueError as exc:
        return f"주소를 해석할 수 없습니다 / not a valid URL ({exc})"
    host = parts.hostname or ""
    if port == 0:
        return "포트는 1–65535입니다 / the port must be 1–65535"
    if parts.netloc.startswith("["):
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return f"IPv6 주소가 아닙니다 / not an IPv6 address: [{host}]"
    elif not _HOST_NAME.match(host):
        return f"호스트 이름이 올바르지 않습니다 / not a valid host name: {host!r}"
    return None


def _http_url(value: str) -> str:
    if problem := _url_problem(value):
        raise ValueError(f"{problem}, got {_without_path(value)!r}")
    return value


#: what a webhook URL may start with to force its payload format (Slack, Teams, generic JSON) whatever its host
WEBHOOK_PREFIXES = ("slack+", "teams+", "json+")


def _webhook_url(value: str) -> str:
    """An http(s) URL, optionally prefixed (`WEBHOOK_PREFIXES`) to force the payload format."""
    for prefix in WEBHOOK_PREFIXES:
        if value.lower().startswith(prefix):
            return prefix + _http_url(value[len(prefix) :])
    return _http_url(value)


def _or_empty(rule: Callable[[str], str]) -> Callable[[str], str]:
    """`rule`, or nothing at all (an empty value: the feature is off)."""
    return lambda value: value and rule(value)


def _base_url(value: str) -> str:
    return value if value == EMULATOR_URL else _http_url(value)


_EMAIL = re.compile(r"^[^@\s,;<>]+@[^@\s,;<>]+\.[^@\s,;<>]+$")


def _email(value: str) -> str:
    if not _EMAIL.match(value):
        raise ValueError(f"e-메일 주소 형식이 아닙니다 / not an e-mail address: {value!r} (name@example.com)")
    return value


def _hh_mm(value: Any) -> time:
    """A time of day in Korea: "09:00" (or a TOML time, 09:00:00)."""
    if isinstance(value, time):
        return value
    m = re.match(r"^(\d{2}):(\d{2})$", value) if isinstance(value, str) else None
    if not m or int(m[1]) > 23 or int(m[2]) > 59:
        raise ValueError(
            f'HH:MM 형식의 시각(KST)이어야 합니다 / must be a time HH:MM (KST), e.g. "09:00"; got {value!r}'
        )
    return time(int(m[1]), int(m[2]))


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("비어 있으면 안 됩니다 / must not be empty")
    return value


def _fault_plan(value: dict[str, str]) -> dict[str, str]:
    from dmf_assets.emulator.faults import FaultPlan

    FaultPlan.parse(value)  # ValueError names the bad date or kind and lists the known kinds
    return value


def _fault_kind(value: str) -> str:
    from dmf_assets.emulator.faults import parse_fault

    parse_fault(value)
    return value


#: a hundred years: any count of days the product adds to or subtracts from a date stays a date
MAX_DAYS = 36_500
#: a count of registry rows or problems: far above the registry (≈9,200 rows) and the 1 M rows benchmarked
MAX_COUNT = 100_000_000
#: the emulator's seed is part of its history cache's file name: 64 bits are plenty
MAX_SEED = 2**63 - 1

Ratio = Annotated[float, Field(ge=0, le=1)]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Days = Annotated[int, Field(ge=0, le=MAX_DAYS)]
Port = Annotated[int, Field(ge=1, le=65535)]
Seconds = Annotated[float, Field(gt=0, le=3600)]  # a timeout: an hour is already far beyond any useful wait
PathText = Annotated[str, AfterValidator(_not_empty_path)]


class _Section(BaseModel):
    # allow_inf_nan: TOML can write inf and nan, and a timeout or sleep of inf ends in OverflowError
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class Paths(_Section):
    database: PathText = "data/dmf.duckdb"
    raw_dir: PathText = "data/raw"
    staging_dir: PathText = "data/staging"
    alerts_dir: PathText = "data/alerts"
    backups_dir: PathText = "data/backups"
    reports_dir: PathText = "reports"
    events_dir: PathText = "data/events"
    logs_dir: PathText = "data/logs"

    def resolve(self, name: str, root: str | Path = PROJECT_ROOT) -> Path:
        """The configured path `name`, relative ones against `root` (a project root: this one unless given)."""
        return resolve_path(root, getattr(self, name))


class Source(_Section):
    base_url: Annotated[str, AfterValidator(_base_url)] = EMULATOR_URL
    num_of_rows: int = Field(500, ge=1, le=1000)
    max_attempts: int = Field(3, ge=1, le=10)
    connect_timeout_s: Seconds = 10.0
    read_timeout_s: Seconds = 30.0
    min_interval_s: float = Field(2.0, ge=0, le=600)
    backoff_base_s: float = Field(1.0, ge=0, le=3600)
    backoff_max_s: float = Field(30.0, ge=0, le=3600)
    daily_request_cap: int = Field(300, ge=1, le=1_000_000)


class Emulator(_Section):
    seed: int = Field(20250101, ge=0, le=MAX_SEED)
    faults: Annotated[dict[str, str], AfterValidator(_fault_plan)] = Field(default_factory=dict)


class Gates(_Section):
    drop_max_ratio: Ratio = 0.05
    null_max_ratio: Ratio = 0.01
    duplicate_max_ratio: Ratio = 0.02
    churn_max_ratio: Ratio = 0.10


class Quality(_Section):
    row_count_min: Count = 8000
    row_count_max: Count = 12000
    permit_parse_min_ratio: Ratio = 0.98
    new_substance_max_ratio: Ratio = 0.25
    synthetic_key_max: Count = 50
    unresolved_country_max: Count = 0
    oversize_max: Count = 0
    replacement_char_max: Count = 0
    stale_source_days: int = Field(7, ge=1, le=MAX_DAYS)


class Watchlist(_Section):
    ingredients: list[str] = Field(default_factory=list)
    applicants: list[str] = Field(default_factory=list)
    manufacturers: list[str] = Field(default_factory=list)
    countries: list[str] = Field(default_factory=list)


class Report(_Section):
    history_days: int = Field(90, ge=1, le=MAX_DAYS)


def _web_token(value: str) -> str:
    """Empty (no token) or at least 16 URL-safe characters: it travels in a cookie and a `?token=` address."""
    if value and not re.fullmatch(r"[A-Za-z0-9._~\-]{16,256}", value):
        raise ValueError(
            "토큰은 비우거나 16–256자의 영문·숫자·'-._~'여야 합니다 / a token is empty or 16–256 characters of "
            "letters, digits and -._~ (e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(24))')"
        )
    return value


class Web(_Section):
    """The team's page 「DMF 조회」 (`dmf web`, beside Dagster in `dmf ui`) and every link the product writes."""

    host: Annotated[str, AfterValidator(_not_blank)] = "127.0.0.1"
    port: Port = 8765
    #: where people reach the page (a reverse proxy, the server's name); empty = http://127.0.0.1:<port>
    public_base_url: Annotated[str, AfterValidator(_or_empty(_http_url))] = ""
    #: required on any address but loopback; env DMF_WEB_TOKEN wins
    token: Annotated[str, AfterValidator(_web_token)] = ""

    def access_token(self) -> str:
        """The token every request must carry: DMF_WEB_TOKEN, else `[web] token`; empty = none."""
        from_env = os.environ.get(WEB_TOKEN_ENV, "").strip()
        try:
            return _web_token(from_env) or self.token
        except ValueError as exc:
            raise ConfigError.of(None, f"환경 변수 / environment variable: {exc}", key=WEB_TOKEN_ENV) from None


class Retention(_Section):
    raw_days: Days = 180
    reports_days: Days = 365
    backups_days: Days = 30
    logs_days: Days = 90
    staging_days: Days = 14


class Demo(_Section):
    days: int = Field(30, ge=1, le=3650)
    fault_days_ago: Days = 12
    fault_kind: Annotated[str, AfterValidator(_fault_kind)] = "page_missing_rows"


class AlertEmail(_Section):
    """SMTP delivery of the daily workbook and the alerts, to two audiences (docs/DOMAIN.md §9): the team
    (`recipients`: the workbook mail, in analyst words) and the on-call engineer(s) (`oncall_recipients`: the
    alerts, with the gate, the run and the command to run). Without `oncall_recipients` the alerts go to
    `recipients`. The password: env DMF_SMTP_PASSWORD only."""

    smtp_host: str = ""  # empty = no e-mail
    smtp_port: Port = 25
    starttls: bool = False
    username: str = ""
    sender: Annotated[str, AfterValidator(_or_empty(_email))] = ""
    recipients: list[Annotated[str, AfterValidator(_email)]] = Field(default_factory=list)
    oncall_recipients: list[Annotated[str, AfterValidator(_email)]] = Field(default_factory=list)
    timeout_s: Seconds = 30.0


class Alerts(_Section):
    webhook_urls: list[Annotated[str, AfterValidator(_webhook_url)]] = Field(default_factory=list)
    slow_run_factor: float = Field(3.0, ge=1, le=1000)
    withdrawal_share_max: Ratio = 0.02
    rejected_streak: int = Field(3, ge=2, le=366)
    overdue_at: Annotated[time, BeforeValidator(_hh_mm)] = time(9, 0)
    #: a message that no channel accepted is re-sent (1, 5, 15, 60 minutes, then hourly) for this long
    give_up_hours: int = Field(24, ge=1, le=168)
    email: AlertEmail = Field(default_factory=AlertEmail)


class Retry(_Section):
    transient_attempts: int = Field(3, ge=0, le=10)
    interval_minutes: int = Field(30, ge=1, le=720)
    #: same-morning retries of today's partition run only until this time (KST)
    until: Annotated[time, BeforeValidator(_hh_mm)] = time(12, 0)


class Runs(_Section):
    max_minutes: int = Field(30, ge=1, le=1440)
    # how often the daemon evaluates dmf_watch_sensor (completes days, retries, the report deadline)
    sensor_interval_s: int = Field(30, ge=5, le=600)


class Products(_Section):
    file: str = ""  # empty = no product list; relative to the project root

    def resolve(self) -> Path | None:
        return resolve_path(PROJECT_ROOT, self.file) if self.file else None


class Diff(_Section):
    """`dmf diff` when NEW carries no totalCount (a bare list, {"items": …}): nothing proves it is the whole
    registry, so more withdrawals than max(ratio × OLD rows, rows) are refused unless --force."""

    unproven_max_withdrawn_ratio: Ratio = 0.005
    unproven_max_withdrawn_rows: int = Field(20, ge=0, le=1_000_000)


class Settings(_Section):
    paths: Paths = Field(default_factory=Paths)
    source: Source = Field(default_factory=Source)
    emulator: Emulator = Field(default_factory=Emulator)
    gates: Gates = Field(default_factory=Gates)
    quality: Quality = Field(default_factory=Quality)
    watchlist: Watchlist = Field(default_factory=Watchlist)
    report: Report = Field(default_factory=Report)
    web: Web = Field(default_factory=Web)
    retention: Retention = Field(default_factory=Retention)
    demo: Demo = Field(default_factory=Demo)
    alerts: Alerts = Field(default_factory=Alerts)
    retry: Retry = Field(default_factory=Retry)
    runs: Runs = Field(default_factory=Runs)
    products: Products = Field(default_factory=Products)
    diff: Diff = Field(default_factory=Diff)


# --- errors --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    file: Path | None
    key: str  # dotted: gates.drop_max_ratio ("" for the whole file)
    line: int | None
    message: str  # "한국어 / English"


class ConfigError(Exception):
    """The configuration cannot be used; `str()` is the whole message for the user (no traceback)."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__(self._text())

    @classmethod
    def of(cls, file: Path | None, message: str, *, key: str = "", line: int | None = None) -> ConfigError:
        """The error of one problem (a whole file's when no `key`)."""
        return cls([Problem(file, key, line, message)])

    def _text(self) -> str:
        head = "설정 오류 / configuration error" + (f" ({len(self.problems)}건)" if len(self.problems) > 1 else "")
        lines = [head + ":"]
        for p in self.problems:
            where = _shown(p.file) if p.file else "설정 / settings"
            if p.line:
                where += f" {p.line}행 / line {p.line}"
            lines.append(f"  {where}: {p.key + ' — ' if p.key else ''}{p.message}")
        lines.append(
            f"설정 파일을 고친 뒤 다시 실행하세요 (키와 기본값: {_shown(DEFAULT_CONFIG)}) / "
            f"fix the file and run again (keys and defaults: {_shown(DEFAULT_CONFIG)})"
        )
        return "\n".join(lines)


def _shown(path: Path) -> str:
    """config/dmf.local.toml inside the project, the absolute path elsewhere."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def _toml_value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, str | bool | list | dict) else repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"'. ]+?)\s*=")


def _find_line(text: str, loc: tuple[str, ...]) -> int | None:
    """The line where `loc` (section…, key) is first written, else where its nearest parent is (inline tables)."""
    written: dict[tuple[str, ...], int] = {}
    header: tuple[str, ...] = ()
    for n, line in enumerate(text.splitlines(), 1):
        if m := _HEADER.match(line):
            header = _dotted(m[1])
            written.setdefault(header, n)
        elif m := _KEY.match(line):
            written.setdefault(header + _dotted(m[1]), n)
    while loc and loc not in written:
        loc = loc[:-1]
    return written.get(loc)


def _dotted(name: str) -> tuple[str, ...]:
    """A TOML header's or key's dotted parts, unquoted."""
    return tuple(part.strip().strip("\"'") for part in name.split("."))


def _has(data: dict[str, Any], loc: tuple[str, ...]) -> bool:
    for part in loc:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _field(loc: tuple[str, ...]) -> tuple[Any, FieldInfo | None]:
    """(model class holding loc[-1], its FieldInfo or None) walking Settings by the key path."""
    model: Any = Settings
    for i, part in enumerate(loc):
        info = model.model_fields.get(part) if isinstance(model, type) and issubclass(model, BaseModel) else None
        if info is None or i == len(loc) - 1:
            return model, info
        model = info.annotation
    return model, None


def _allowed(info: FieldInfo) -> str:
    """'0 ≤ x ≤ 1' from a field's constraints."""

    def shown(bound: object) -> str:  # 36500 and 9223372036854775807, not 36500.0 or 9.22337e+18
        return str(bound) if isinstance(bound, int) else f"{bound:g}"

    lower = upper = ""
    for m in info.metadata:
        if isinstance(m, annotated_types.Ge):
            lower = f"{shown(m.ge)} ≤ "
        elif isinstance(m, annotated_types.Gt):
            lower = f"{shown(m.gt)} < "
        elif isinstance(m, annotated_types.Le):
            upper = f" ≤ {shown(m.le)}"
        elif isinstance(m, annotated_types.Lt):
            upper = f" < {shown(m.lt)}"
    return f"{lower}x{upper}" if lower or upper else ""


_TYPES = {  # pydantic error type -> (Korean, English) of what the key must be
    "int_type": ("따옴표 없는 정수여야 합니다", "must be a whole number without quotes, e.g. 30"),
    "float_type": ("따옴표 없는 숫자여야 합니다", "must be a number without quotes, e.g. 30 or 0.05"),
    "bool_type": ("true 또는 false여야 합니다", "must be true or false (no quotes)"),
    "string_type": ("따옴표 안의 문자열이어야 합니다", "must be a string in quotes"),
    "list_type": ("목록이어야 합니다", 'must be a list, e.g. ["a", "b"]'),
    "dict_type": ("[섹션] 표여야 합니다", "must be a table ([section])"),
    "model_type": ("[섹션] 표여야 합니다", "must be a table ([section])"),
    "finite_number": ("inf·nan이 아닌 유한한 숫자여야 합니다", "must be a finite number, not inf or nan"),
}
_SECRET_HINTS = {
    "password": f"비밀번호는 설정 파일에 쓰지 않습니다 — 환경 변수 {SMTP_PASSWORD_ENV}에 넣으세요 / the SMTP password "
    f"never goes in a config file: set the environment variable {SMTP_PASSWORD_ENV}",
    "key": "서비스 키는 설정 파일에 쓰지 않습니다 — 환경 변수 MFDS_SERVICE_KEY에 넣으세요 / the service key never goes "
    "in a config file: set the environment variable MFDS_SERVICE_KEY",
}


#: keys that moved to another section: refused with one line naming the new key (the old ones would be
#: a second way to say the same thing)
MOVED_KEYS: dict[tuple[str, ...], str] = {
    ("report", "file_server_host"): "web.host",
    ("report", "file_server_port"): "web.port",
    ("report", "public_base_url"): "web.public_base_url",
}


def _secret_hint(name: str) -> str | None:
    lowered = name.lower().replace("-", "_")
    if "password" in lowered or "passwd" in lowered:
        return _SECRET_HINTS["password"]
    if "service_key" in lowered or "servicekey" in lowered or lowered == "api_key":
        return _SECRET_HINTS["key"]
    return None


def _explain(err: ErrorDetails) -> tuple[tuple[str, ...], str]:
    """(key path, 'ko / en' message) for one pydantic error."""
    loc = tuple(str(p) for p in err["loc"] if not isinstance(p, int))
    # a list item: show its position (recipients[1]) but look the key itself up
    name = (
        "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"][len(loc) - 1 :]).lstrip(".")
        if loc
        else ""
    )
    value, kind = err.get("input"), err["type"]
    model, info = _field(loc)
    if kind == "extra_forbidden":
        if hint := _secret_hint(name):
            return loc, hint
        if moved := MOVED_KEYS.get(loc):
            section, key = moved.split(".")
            return loc, (
                f"이 키는 [{section}] {key}로 옮겨졌습니다 / this key moved to [{section}] {key} — "
                f"[{section}] 섹션에 {key} = …로 쓰세요 / write {key} = … under [{section}]"
            )
        known = list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []
        close = difflib.get_close_matches(name, known, n=1)
        guess = f" — {josa(repr(close[0]), '을/를')} 뜻했나요? / did you mean '{close[0]}'?" if close else ""
        what = (
            f"알 수 없는 섹션 / unknown section [{name}]"
            if isinstance(value, dict)
            else f"알 수 없는 키 / unknown key {name}"
        )
        return loc, f"{what}{guess}; 허용 / allowed: {', '.join(known)}"
    shown = f"{name} = {_toml_value(_without_path(value) if isinstance(value, str) else value)}"
    allowed = _allowed(info) if info is not None else ""
    if (
        kind in ("less_than_equal", "less_than")
        and err.get("ctx", {}).get("le") == 1
        and isinstance(value, int | float)
    ):
        # a ratio typed as a percentage: the mistake that once switched the drop gate off
        ko = f"비율은 0과 1 사이로 씁니다: {josa(shown, '은/는')} {value * 100:g} %입니다"
        en = f"a ratio is written between 0 and 1: {shown} means {value * 100:g} %"
        if value <= 100:
            ko, en = ko + f"; {value:g} %라면 {value / 100:g}로 쓰세요", en + f"; write {value / 100:g}"
        return loc, f"{ko} / {en}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        return loc, f"범위를 벗어났습니다 / out of range: {shown}; 허용 / allowed: {allowed}"
    if kind in _TYPES:
        ko, en = _TYPES[kind]
        return loc, f"{shown} — {ko} / {en}" + (f"; 허용 / allowed: {allowed}" if allowed else "")
    if kind == "value_error":
        reason = str(err["ctx"]["error"])
        if not re.search(r"[가-힣]", reason):  # a message from another module (emulator fault plans): English only
            reason = f"허용되지 않는 값 / invalid value: {reason}"
        return loc, f"{shown} — {reason}"
    return loc, f"{shown} — {err['msg']}"  # pragma: no cover - a pydantic error kind we did not foresee


# --- loading -------------------------------------------------------------------------------------


def _read_toml(path: Path, *, why: str) -> tuple[dict[str, Any], str]:
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM (Windows Notepad writes one) is not part of the TOML
    except FileNotFoundError:
        raise ConfigError.of(
            path, f"설정 파일이 없습니다 / no configuration file at {path} ({why}) — 경로를 고치세요 / fix the path"
        ) from None
    except UnicodeDecodeError:
        raise ConfigError.of(path, "UTF-8 텍스트가 아닙니다 / the file is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError.of(path, f"읽을 수 없습니다 / cannot read the file: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line = int(m[1]) if m else None
        reason = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(exc))
        quoted = ""
        if line and line <= len(text.splitlines()):
            quoted = f" — `{text.splitlines()[line - 1].strip()[:80]}`"
        col = f", column {m[2]}" if m else ""
        raise ConfigError.of(path, f"TOML 문법 오류 / TOML syntax error{col}: {reason}{quoted}", line=line) from None


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _cross_checks(s: Settings) -> dict[tuple[str, ...], str]:
    """Rules between keys and against the disk, once the types are right: (section, key) -> what is wrong."""
    out: dict[tuple[str, ...], str] = {}
    for name, low, high in (
        ("quality", "row_count_min", "row_count_max"),
        ("source", "backoff_base_s", "backoff_max_s"),
    ):
        a, b = getattr(getattr(s, name), low), getattr(getattr(s, name), high)
        if a > b:
            out[name, low] = (
                f"{josa(f'{low} = {a:g}', '이/가')} {high} = {b:g}보다 큽니다 / {low} ({a:g}) must be ≤ {high} ({b:g})"
            )
    if s.demo.fault_days_ago >= s.demo.days:
        out["demo", "fault_days_ago"] = (
            f"{josa(f'fault_days_ago = {s.demo.fault_days_ago}', '은/는')} days = {s.demo.days}보다 "
            f"작아야 합니다 / must be < demo.days ({s.demo.days})"
        )
    for name in Paths.model_fields:
        p = s.paths.resolve(name)
        written = josa(f'{name} = "{getattr(s.paths, name)}"', "은/는")
        if name == "database" and p.is_dir():
            out["paths", name] = (
                f"{written} 폴더입니다 — DB 파일 경로를 쓰세요 / "
                f'is a folder ({p}); write a file path such as "data/dmf.duckdb"'
            )
        elif name != "database" and p.exists() and not p.is_dir():
            out["paths", name] = f"{written} 폴더가 아닙니다 / must be a folder, but {p} is a file"
    others = [PROJECT_ROOT] + [s.paths.resolve(name) for name in Paths.model_fields if name != "logs_dir"]
    if inside := first_inside(s.paths.resolve("logs_dir"), others):
        out["paths", "logs_dir"] = (
            f"logs_dir가 {josa(str(inside), '을/를')} 담고 있습니다 — 오래된 로그를 지울 때 함께 지워지므로 로그만 두는 "
            f"폴더를 쓰세요 / logs_dir must hold logs only: old files in it are deleted, and it holds {inside}"
        )
    products = s.products.resolve()
    if products is not None and not products.is_file():
        out["products", "file"] = (
            f'file = "{s.products.file}" — 제품 목록 파일이 없습니다 / '
            f"no product list file at {products} (empty = no product list)"
        )
    return out


def _in_file_order(problems: Iterable[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: (str(p.file), p.line or 0, p.key))


def load_settings(path: str | Path | None = None) -> Settings:
    """Read the defaults, then the local override (or the file named by `path` or DMF_CONFIG); anything wrong is
    one `ConfigError`."""
    files: list[tuple[Path, dict[str, Any], str]] = []
    if DEFAULT_CONFIG.exists():
        files.append((DEFAULT_CONFIG, *_read_toml(DEFAULT_CONFIG, why="defaults")))
    if path:
        override: Path | None = Path(path)
        why = "--config"
    elif os.environ.get("DMF_CONFIG"):
        override, why = Path(os.environ["DMF_CONFIG"]), "named by the environment variable DMF_CONFIG"
    else:
        override, why = (LOCAL_CONFIG if LOCAL_CONFIG.exists() else None), "local override"
    if override is not None:
        files.append((override, *_read_toml(override, why=why)))
    data: dict[str, Any] = {}
    for _, part, _ in files:
        data = _deep_merge(data, part)

    def problem(loc: tuple[str, ...], message: str) -> Problem:
        # the file that set the key last is the one to fix
        for file, part, text in reversed(files):
            if _has(part, loc):
                return Problem(file, ".".join(loc), _find_line(text, loc), message)
        return Problem(files[-1][0] if files else None, ".".join(loc), None, message)

    try:
        result = Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_in_file_order(problem(*_explain(e)) for e in exc.errors(include_url=False))) from None
    if crossed := _cross_checks(result):
        raise ConfigError(_in_file_order(problem(loc, msg) for loc, msg in crossed.items()))
    return result


@lru_cache(maxsize=1)
def settings() -> Settings:
    return load_settings()


def main() -> int:
    """`python -m dmf_assets.settings`: read the configuration as every command does — 0, or 2 with its one message
    (the watchdog unit's ExecStartPre: a configuration it cannot read fails the unit instead of passing as an exit
    status the unit counts as "problems found and alerted")."""
    try:
        load_settings()
    except ConfigError as exc:
        print(f"dmf: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
