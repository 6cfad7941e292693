"""What people are told: the daily workbook mail and every alert — the one template module.

Each alert kind is a frozen dataclass whose fields are the facts its text needs, typed and required:
an alert cannot be built without its observed value or threshold, so a message never shows a
placeholder. `compose_alert` / `compose_report` render them once into a channel-neutral `Message`
(what happened, why, what to do next), which the channels turn into an e-mail, a Slack message or a
Teams card. Pure functions: no Dagster, no network, no files. Particles follow the word they attach to
(`dmf_assets.korean`), sheets are named from the workbook's own list, advice depends on the source.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar, dataclass_transform

from dmf_assets.clock import KST
from dmf_assets.domain.gates import CHURN, DROP, GATE_BY_NUMBER, GATES, Rejection
from dmf_assets.domain.model import COUNT_LABEL_KO, EVENT_LABEL_KO, DayStatus, EventType, field_labels
from dmf_assets.korean import josa, particle
from dmf_assets.links import workbook_link
from dmf_assets.report.model import (
    SHEET_EVENTS,
    SHEET_NEW_WITHDRAWN,
    SHEET_QUALITY,
    SHEET_SUMMARY,
    ReadsItsSummary,
    sheet_ref,
)
from dmf_assets.report.sentences import Sentence, summary_sentences
from dmf_assets.report.summary import HEADLINE_KINDS, OPTIONAL_KINDS, DaySummary

INFO, WARNING, CRITICAL = "info", "warning", "critical"
#: the kinds of the messages that are not alerts: the workbook mail and `dmf notify test`'s
REPORT, TEST = "report", "test"
FOOTER = "— DMF Watch (MFDS 원료의약품 등록 현황 일일 감시). 이 메일은 자동 발송되었습니다."


class Audience(str, Enum):  # noqa: UP042 - a StrEnum would change str() and format() of a stored value
    """Who a message is for (docs/DOMAIN.md §9): the team reads the workbook mail in analyst words; the on-call
    engineer reads the alerts (gate, observed value, run, the command to run). `dmf notify test` goes to both."""

    TEAM = "team"
    ONCALL = "oncall"
    EVERYONE = "everyone"


# --- small formatters (values are always present: optional facts are left out, never shown as '-') --


def _n(value: int) -> str:
    return f"{value:,}"


def _pct(value: float) -> str:
    return f"{value * 100:.1f} %"


def _kst(value: datetime | time) -> str:
    """'06:30 KST': a moment, or a time of day, as Korea's clock shows it."""
    return f"{value.astimezone(KST) if isinstance(value, datetime) else value:%H:%M} KST"


def _when(value: datetime) -> str:
    return f"{value.astimezone(KST):%Y-%m-%d %H:%M} KST"


def _rerun(day: date) -> str:
    return f"`dmf run --date {day.isoformat()}`"


def _rerun_by(day: date) -> str:
    """「`dmf run --date …`로/으로」: the particle follows the date as it is read (…-30 으로, …-29 로)."""
    return _rerun(day) + particle(day.isoformat(), "으로/로")


# --- the message ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One notification, channel-neutral. A channel adds what only it has: the e-mail the attached workbook,
    a webhook nothing (it carries the `link`, or no word about a file when there is none)."""

    subject: str
    title: str  # one line: what happened
    level: str  # info | warning | critical
    kind: str = ""  # alert kind, REPORT or TEST
    day: str = ""
    sections: tuple[tuple[str, str], ...] = ()  # (heading, paragraph) in order
    facts: tuple[tuple[str, str], ...] = ()  # label -> value, shown as a table / card facts
    link: str = ""  # the workbook's public download link ([web] public_base_url, `links`), or none
    audience: Audience = Audience.ONCALL
    workbook: str = ""  # the workbook's file name, when the message is about one (an e-mail attaches it)
    status: str = ""  # a workbook mail: the day's `DayStatus` value (what a correction compares)

    @property
    def for_team(self) -> bool:
        return self.audience is Audience.TEAM

    def text(self, *, attached: bool | None = None) -> str:
        """The plain-text body. `attached`: None on a channel that carries no file (a webhook: the workbook
        is only the link), True / False for an e-mail with / without its workbook attached."""
        lines = [] if self.sections and self.sections[0][1] == self.title else [self.title, ""]
        for heading, paragraph in self.sections:
            lines += [f"■ {heading}", paragraph, ""]
        if self.facts:
            lines.append("■ 세부 정보" if self.for_team else "■ 세부 정보 / Details")
            lines += [f"  - {k}: {v}" for k, v in self.facts]
            lines.append("")
        if workbook := self.workbook_line(attached):
            lines += ["■ 리포트" if self.for_team else "■ 리포트 / Workbook", workbook, ""]
        if self.link:
            lines += [f"{self.link_label}: {self.link}", ""]
        lines.append(FOOTER)
        return "\n".join(lines)

    @property
    def link_label(self) -> str:
        return "리포트 내려받기" if self.for_team else "링크 / Link"

    def workbook_line(self, attached: bool | None) -> str:
        """What the message says about its workbook file: only an e-mail says it is (or is not) attached."""
        if not self.workbook or attached is None:
            return ""
        return f"첨부: {self.workbook}" if attached else "첨부 없음 — 리포트 파일을 찾을 수 없습니다."

    def to_dict(self) -> dict:
        """The message as JSON values, its fields in order (what the outbox stores)."""
        return {**dataclasses.asdict(self), "audience": self.audience.value}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        stored = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        return cls(
            **{
                **stored,
                "sections": tuple((str(h), str(t)) for h, t in data.get("sections", ())),
                "facts": tuple((str(k), str(v)) for k, v in data.get("facts", ())),
                # a message stored before the two audiences: a workbook mail was the team's, anything else an alert
                "audience": Audience(
                    data.get("audience") or (Audience.TEAM if data.get("kind") == REPORT else "oncall")
                ),
            }
        )


@dataclass(frozen=True)
class MessageContext:
    """What the texts depend on beyond the facts: the source (advice differs), the file a user edits,
    the same-morning retry window and the public address of the workbooks."""

    emulator: bool  # the built-in emulator, answering in process
    config_file: str = "config/dmf.local.toml"
    retry_until: time = time(12, 0)
    public_base_url: str = ""
    loopback_host: str = ""  # a server on this machine (host:port) — a `dmf emulator serve` or any other

    @classmethod
    def of(cls, settings: Any, config_file: str | None = None) -> MessageContext:
        from dmf_assets.source.endpoint import resolve_endpoint

        endpoint = resolve_endpoint(settings.source.base_url)
        return cls(
            emulator=endpoint.in_process,
            config_file=config_file or "config/dmf.local.toml",
            retry_until=settings.retry.until,
            public_base_url=public_base_url(settings),
            loopback_host=endpoint.host if endpoint.local and not endpoint.in_process else "",
        )

    def source_advice(self) -> str:
        if self.emulator:
            return (
                "원천은 내장 MFDS 에뮬레이터입니다(키·네트워크 불필요): 고장 주입(`--fault`, [emulator] faults)으로 "
                "거부된 날이면 고장 없이 다시 실행하면 반영됩니다."
            )
        if self.loopback_host:
            return (
                f"원천은 이 컴퓨터의 서버 {self.loopback_host}입니다([source] base_url): 그 서버가 보낸 응답을 "
                "확인하세요(`dmf emulator serve`라면 그 서버에 준 고장 설정)."
            )
        return "data.go.kr의 서비스 공지와 서비스키(MFDS_SERVICE_KEY)의 일일 호출 한도를 확인하세요."


def public_base_url(settings: Any) -> str:
    """Where people outside this machine open the team's page and download the workbooks (the links in mail and
    webhook): `[web] public_base_url`; empty when none is configured — 127.0.0.1 would be each reader's own
    computer, so a message then carries no link."""
    return str(settings.web.public_base_url).rstrip("/")


# --- what a message may say about an automatic retry ------------------------------------------------


class NoRetry(str, Enum):  # noqa: UP042 - a StrEnum would change str() and format() of a stored value
    """Why no automatic retry follows (docs/DOMAIN.md §9: a retry is promised only when it will run)."""

    OFF = "off"  # [retry] transient_attempts = 0
    NOT_TRANSIENT = "not_transient"  # drop / nulls / duplicates / churn, or a failure a retry cannot mend
    OLD_DAY = "old_day"  # not today's partition, or not rejected today
    USED = "used"  # every attempt of the morning is spent
    WINDOW = "window"  # the next attempt would fall after [retry] until
    NO_DAEMON = "no_daemon"  # no Dagster daemon is beating to launch it


@dataclass(frozen=True)
class RetryOutlook:
    """The next automatic retry of a day — when it runs (`at`) or why there is none (`why_not`)."""

    attempt: int  # the number the next retry would have (retries so far + 1)
    of: int  # attempts allowed per morning
    at: datetime | None = None
    why_not: NoRetry | None = None

    def __post_init__(self) -> None:
        if (self.at is None) == (self.why_not is None):
            raise ValueError("a retry outlook is either a time or a reason, not both")

    @property
    def planned(self) -> bool:
        return self.at is not None

    def sentence(self, ctx: MessageContext) -> str:
        """The promise, or the reason there is none — never a retry that will not come."""
        if self.at is not None:
            return f"{_kst(self.at)}에 자동으로 다시 수집합니다(재시도 {self.attempt}/{self.of}, Dagster 데몬 실행 중)."
        until = _kst(ctx.retry_until)
        why_not = self.why_not
        assert why_not is not None  # __post_init__: a time or a reason
        return {
            NoRetry.OFF: "자동 재시도는 꺼져 있습니다([retry] transient_attempts = 0).",
            NoRetry.NOT_TRANSIENT: "이 실패는 다시 수집해도 풀리지 않으므로 자동 재시도하지 않습니다.",
            NoRetry.OLD_DAY: (
                "지난 날짜이거나 오늘 아침에 거부된 것이 아니어서 자동으로 다시 수집하지 않습니다(자동 재시도는 "
                "오늘 아침에 거부된 오늘 날짜만 합니다)."
            ),
            NoRetry.USED: f"오늘 아침의 자동 재시도 {self.of}회를 모두 썼습니다.",
            NoRetry.WINDOW: f"자동 재시도 시간({until}까지)이 지나 더 이상 다시 수집하지 않습니다.",
            NoRetry.NO_DAEMON: (
                f"Dagster 데몬이 실행 중이 아니어서 자동 재시도가 예정되어 있지 않습니다. {until} 전에 "
                "`dmf ui`나 설치한 서비스(`dmf service install`)를 시작하면 데몬이 다시 수집합니다."
            ),
        }[why_not]


# --- alerts ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Parts:
    subject: str
    what: str
    why: str
    todo: str
    facts: tuple[tuple[str, str], ...] = ()

    @property
    def sections(self) -> tuple[tuple[str, str], ...]:
        """What happened, why, what to do next — an on-call message's sections, under their headings."""
        return (("무슨 일 / What happened", self.what), ("원인 / Why", self.why), ("조치 / What to do next", self.todo))


ALERT_KINDS: dict[str, type[Alert]] = {}


@dataclass_transform(kw_only_default=True, frozen_default=True)
@dataclass(frozen=True, kw_only=True)
class Alert:
    """A situation worth telling people about, once per (day, kind). Subclasses are the kinds, each named in its
    class statement: `class SlowRun(Alert, kind="slow_run", label="느린 실행")` (level: WARNING)."""

    kind: ClassVar[str] = ""
    label_ko: ClassVar[str] = ""
    level: ClassVar[str] = WARNING

    day: date
    run_id: str | None = None

    def __init_subclass__(cls, *, kind: str, label: str, level: str = WARNING, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.kind, cls.label_ko, cls.level = kind, label, level
        dataclass(frozen=True, kw_only=True)(cls)  # its fields: the facts its text needs, typed and required
        ALERT_KINDS[kind] = cls

    @property
    def key(self) -> str:
        """The de-duplication identity: one alert per day and kind."""
        return f"{self.day.isoformat()}-{self.kind}"

    def facts(self) -> dict[str, Any]:
        """The alert's fields as JSON values (the record kept beside the message)."""
        return {k: v for k, v in _jsonable(self).items() if k not in ("day", "run_id")}

    def parts(self, ctx: MessageContext) -> Parts:  # pragma: no cover - every kind overrides it
        raise NotImplementedError


def _jsonable(value: Any) -> Any:
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # the compared fields only: a rejection's gate entry (rules, functions) is how it was judged, not a fact
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.compare}
    return value


def _base_sentence(base: date | None) -> str:
    if base is None:
        return "아직 반영된 날이 없어 비교 기준일도 없습니다."
    return f"비교 기준일(comparison base)은 {base.isoformat()} 그대로입니다."


_COVERED_LATER = "그대로 두어도 다음 정상 수집일의 비교가 그 사이의 변경을 모두 포함합니다."


def _left_alone(base: date | None) -> str:
    """What happens to the day's changes if nobody re-runs it: the next accepted day compares with the base —
    unless there is none yet, and the next accepted day is the baseline, with no events."""
    return (
        _COVERED_LATER
        if base is not None
        else "그대로 두면 다음 정상 수집일이 비교 없이 기준일이 됩니다(아직 반영된 날이 없음)."
    )


def _gate_where(gate: int) -> str:
    g = GATE_BY_NUMBER[gate]
    return (
        f"리포트의 {sheet_ref(SHEET_SUMMARY)}와 {sheet_ref(SHEET_QUALITY)}에 게이트 표가 있고, 표본 행은 Dagster UI의 "
        f"{g.asset} 자산 → Checks → {g.check_name} → 이 날짜 파티션에 있습니다."
    )


class Rejected(Alert, kind=DayStatus.REJECTED.value, label="수집 거부"):
    rejection: Rejection
    retry: RetryOutlook

    def parts(self, ctx: MessageContext) -> Parts:
        r, day = self.rejection, self.day
        title = GATES[r.gate].title
        what = (
            f"{day} 수집 결과가 {title}에서 거부되었습니다(rejected). 이 날의 변경은 반영되지 않았고, "
            + _base_sentence(r.base_day)
        )
        why = r.evidence
        if r.spec.transient:
            if self.retry.planned:
                todo = (
                    f"일시적 오류(transient)로 보고 {self.retry.sentence(ctx)} 지금 할 일은 없습니다 — 결과는 이 날의 "
                    "리포트 메일 한 통으로 알려 드립니다."
                )
            else:
                todo = (
                    f"{self.retry.sentence(ctx)} 원천이 회복되면 {_rerun_by(day)} 다시 실행하세요. "
                    f"{_left_alone(r.base_day)} {ctx.source_advice()}"
                )
        else:
            key = r.spec.setting
            todo = (
                f"이 게이트는 자동 재시도하지 않습니다 — 사람이 판단합니다(not retried: a human decides). "
                f"{r.spec.check_ko} 확인하세요: {_gate_where(r.gate)} 실제 변경이라면 {ctx.config_file}의 [gates] "
                f"{josa(str(key), '을/를')} 관측값보다 크게 적고 {_rerun_by(day)} 다시 실행하세요."
            )
        facts = [
            ("게이트 / gate", title),
            ("관측값 / observed", r.observed),
            ("기준 / threshold", r.threshold),
            ("비교 기준 / comparison base", r.base_day.isoformat() if r.base_day else "없음 (첫 반영 전)"),
        ]
        if r.spec.setting is not None:
            facts.append(("설정 / setting", f"{ctx.config_file} [gates] {r.spec.setting}"))
        if self.retry.at is not None and r.spec.transient:
            facts.append(("자동 재시도 / retry at", _when(self.retry.at)))
        else:
            facts.append(("다시 실행 / re-run", _rerun(day)))
        return Parts(f"{day} 수집 거부 (rejected) — {title}", what, why, todo, tuple(facts))


class RetriesExhausted(Alert, kind="retries_exhausted", label="재시도 종료", level=CRITICAL):
    attempts: int  # automatic retries that ran this morning
    why_stopped: NoRetry  # USED or WINDOW
    rejection: Rejection | None = None  # the last attempt's verdict …
    error: str | None = None  # … or the last attempt's error (a failed fetch)

    def __post_init__(self) -> None:
        if (self.rejection is None) == (self.error is None):
            raise ValueError("retries end on a rejection or an error, exactly one")
        if self.attempts < 1:
            raise ValueError("retries_exhausted needs at least one retry that ran")

    def parts(self, ctx: MessageContext) -> Parts:
        day = self.day
        stop = (
            f"자동 재시도 {self.attempts}회가 모두 실패하여"
            if self.why_stopped is NoRetry.USED
            else f"자동 재시도 {self.attempts}회가 실패했고 재시도 시간({_kst(ctx.retry_until)}까지)이 지나"
        )
        what = f"{day} {stop} 오늘은 더 이상 다시 수집하지 않습니다(retries exhausted). 이 날은 반영되지 않았습니다."
        if self.rejection is not None:
            what += " " + _base_sentence(self.rejection.base_day)
            why = f"마지막 시도: {self.rejection.sentence}"
        else:
            why = f"마지막 시도의 오류: {self.error}"
        # a failed fetch does not say its base: the sentence of the days that have one
        left_alone = _left_alone(self.rejection.base_day) if self.rejection is not None else _COVERED_LATER
        todo = f"원천이 회복되면 {_rerun_by(day)} 직접 다시 실행하세요. {left_alone} {ctx.source_advice()}"
        return Parts(
            f"{day} 자동 재시도 종료 (retries exhausted) — 수집 실패",
            what,
            why,
            todo,
            (("재시도 횟수 / attempts", _n(self.attempts)),),
        )


class RunFailed(Alert, kind="run_failed", label="실행 실패", level=CRITICAL):
    step: str
    error: str
    retry: RetryOutlook

    def parts(self, ctx: MessageContext) -> Parts:
        day = self.day
        what = f"{day} 실행이 단계 `{self.step}`에서 오류로 실패했습니다(failed run)."
        if self.retry.planned:
            todo = f"{self.retry.sentence(ctx)} 되풀이되면 Dagster UI에서 이 run의 로그를 확인하세요."
        else:
            retry = "" if self.retry.why_not is NoRetry.NOT_TRANSIENT else self.retry.sentence(ctx) + " "
            todo = (
                f"{retry}Dagster UI에서 이 run의 로그를 확인하고 원인을 고친 뒤 {_rerun_by(day)} 다시 실행하세요. "
                "`dmf doctor`가 설치 상태를 점검합니다."
            )
        facts = (("단계 / step", self.step),)
        return Parts(f"{day} 실행 실패 (failed run) — {self.step}", what, f"오류 / error: {self.error}", todo, facts)


class Overdue(Alert, kind="overdue", label="리포트 지연", level=CRITICAL):
    expected_at: time
    workbook: str  # the missing file, relative to the project
    latest_report: date | None
    daemon_down: bool = False

    def parts(self, ctx: MessageContext) -> Parts:
        day, at = self.day, _kst(self.expected_at)
        what = f"{day} 일일 리포트가 {at}까지 만들어지지 않았습니다(report overdue)."
        why = f"{self.workbook} 파일이 없습니다. " + (
            f"가장 최근 리포트는 {self.latest_report}의 것입니다."
            if self.latest_report
            else "만들어진 리포트가 아직 없습니다."
        )
        if self.daemon_down:
            why += " Dagster 데몬도 멈춰 있습니다(같은 날 'Dagster 데몬 정지' 알림 참조)."
        todo = (
            "06:00 수집이 실행되었는지 Dagster UI의 Runs에서 확인하세요. 데몬이 멈췄다면 "
            "`systemctl --user status dmf-dagster-daemon`으로 확인해 다시 시작하고, "
            f"{_rerun_by(day)} 이 날을 직접 실행하세요. `dmf doctor`가 설치 상태를 점검합니다."
        )
        return Parts(f"{day} 리포트 지연 (report overdue, {at})", what, why, todo, (("기한 / deadline", at),))


class WatchlistHit(Alert, kind="watchlist_hit", label="관심목록 해당"):
    hits: tuple[str, ...]  # the events as marked sentences (alike events of one applicant share one)
    events: int  # how many events they are: the figure the day's mail and workbook give

    def __post_init__(self) -> None:
        if not self.hits:
            raise ValueError("a watchlist alert needs its hits")

    def parts(self, ctx: MessageContext) -> Parts:
        n = self.events
        what = f"{self.day} 관심목록(watchlist)에 해당하는 이벤트가 {n:,}건 있습니다."
        shown = "\n".join(f"  {i}. {h}" for i, h in enumerate(self.hits[:20], 1))
        more = f"\n  … 외 {len(self.hits) - 20:,}줄은 리포트에 있습니다." if len(self.hits) > 20 else ""
        fields = field_labels("ingredient", "applicant", "manufacturer", "countries")
        why = f"[watchlist] 패턴({fields})과 일치하는 이벤트:\n{shown}{more}"
        todo = (
            f"리포트의 {sheet_ref(SHEET_EVENTS)}에서 '표시' 열을 '관심목록'으로 거르면 전체 내용(전 → 후)이 보입니다. "
            "필요하면 담당 부서에 공유하세요."
        )
        return Parts(f"{self.day} 관심목록 해당 {n:,}건 (watchlist hit)", what, why, todo, (("건수 / hits", _n(n)),))


class RejectedStreak(Alert, kind="rejected_streak", label="연속 수집 거부", level=CRITICAL):
    days: tuple[date, ...]  # oldest first; `day` is the latest
    gates: tuple[int, ...]  # the gate that rejected each of `days`
    base: date | None

    def __post_init__(self) -> None:
        if len(self.days) < 2 or len(self.days) != len(self.gates):
            raise ValueError("a streak names at least two days and the gate of each")

    def parts(self, ctx: MessageContext) -> Parts:
        n = len(self.days)
        since = (
            f"마지막 반영일 {self.base} 이후의 변경이 보고되지 않고 있습니다."
            if self.base
            else "아직 한 번도 반영되지 않았습니다."
        )
        what = (
            f"긴급 / ESCALATION: {n}일 연속 수집이 거부되었습니다({', '.join(d.isoformat() for d in self.days)}). "
            + since
        )
        why = "거부 사유: " + "; ".join(f"{d} {GATES[g].title}" for d, g in zip(self.days, self.gates, strict=True))
        todo = (
            "오늘 담당자가 직접 확인해야 합니다(action required today). "
            f"{ctx.source_advice()} `dmf doctor`로 설치 상태를 점검하세요. {_gate_where(self.gates[-1])} "
            f"실제 대량 변경이면 {ctx.config_file}의 [gates] 기준을 조정한 뒤 거부된 날들을 "
            f"`dmf backfill --start {self.days[0]} --end {self.days[-1]}`{particle(str(self.days[-1]), '으로/로')} 다시 실행하세요."
        )
        return Parts(
            f"{self.day} — {n}일 연속 수집 거부 (escalation)", what, why, todo, (("연속 거부 / in a row", _n(n)),)
        )


class RequestCap(Alert, kind="request_cap", label="요청 한도 도달", level=CRITICAL):
    cap: int

    def parts(self, ctx: MessageContext) -> Parts:
        what = f"{self.day} 일일 요청 한도(request cap) {self.cap:,}회에 도달하여 수집이 중단되었습니다."
        why = "같은 날 재시도가 반복되었거나 쪽 크기([source] num_of_rows)가 작아 요청이 늘었을 수 있습니다."
        todo = (
            f"같은 날 다시 실행하면 또 한도에 걸립니다. 원인을 확인하고, 필요하면 {ctx.config_file}의 [source] "
            "daily_request_cap을 조정하세요(data.go.kr 개발 키는 하루 10,000회). 다음 날 06:00 수집은 평소대로 실행됩니다."
        )
        return Parts(
            f"{self.day} 요청 한도 도달 (request cap reached)", what, why, todo, (("한도 / cap", _n(self.cap)),)
        )


class SlowRun(Alert, kind="slow_run", label="느린 실행"):
    seconds: float
    median_s: float
    samples: int
    factor: float

    def parts(self, ctx: MessageContext) -> Parts:
        what = (
            f"{self.day} 실행이 {self.seconds:,.0f}초 걸렸습니다 — 최근 {self.samples}회 중앙값 {self.median_s:,.0f}초의 "
            f"{self.seconds / self.median_s:.1f}배입니다(slow run)."
        )
        why = f"기준은 중앙값의 {self.factor:g}배입니다. 원천 API 응답 지연, 서버 부하, 디스크 문제가 흔한 원인입니다."
        todo = "결과가 정상 반영되었다면 당장 할 일은 없습니다. Dagster UI에서 단계별 시간(raw_pages = 원천 수집)을 확인하고, 며칠 계속되면 서버 부하와 디스크를 점검하세요."
        return Parts(f"{self.day} 느린 실행 (slow run)", what, why, todo)


class WithdrawalShare(Alert, kind="withdrawal_share", label="대량 목록 삭제", level=CRITICAL):
    withdrawn: int
    registry_size: int  # the registry they left: the comparison base's (`DaySummary.withdrawal_share`)
    threshold: float

    def parts(self, ctx: MessageContext) -> Parts:
        share = self.withdrawn / self.registry_size
        # as many decimals as it takes for "above" to read true (2.04 % against 2 %: 「2.04 %」, not 「2.0 %」)
        digits = next((n for n in (1, 2, 3) if f"{share * 100:.{n}f}" != f"{self.threshold * 100:.{n}f}"), 3)
        shown = f"{share * 100:.{digits}f} %"
        what = (
            f"{self.day}에 반영된 결과에서 목록에서 삭제된 등록(withdrawn)이 {self.withdrawn:,}건으로 등록 {self.registry_size:,}건의 "
            f"{shown}입니다(기준 {_pct(self.threshold)} 초과)."
        )
        why = (
            "모든 게이트는 통과했지만 목록에서 삭제(취하 등)는 드물어야 합니다. 원천이 목록 일부만 돌려주면 "
            "대량의 허위 삭제가 생길 수 있습니다."
        )
        todo = (
            f"리포트의 {sheet_ref(SHEET_NEW_WITHDRAWN)}에서 몇 건을 의약품안전나라(nedrug.mfds.go.kr)에서 직접 확인하세요. "
            f"허위 삭제라면 {ctx.config_file}의 [gates] {DROP.setting}나 {CHURN.setting}를 낮추고 이 날을 "
            f"{_rerun_by(self.day)} 다시 실행해 거부되게 하세요."
        )
        return Parts(f"{self.day} 대량 목록 삭제 {shown} (withdrawals above {_pct(self.threshold)})", what, why, todo)


class RunTimeout(Alert, kind="run_timeout", label="실행 시간 초과", level=CRITICAL):
    limit_minutes: int
    retry: RetryOutlook

    def parts(self, ctx: MessageContext) -> Parts:
        what = f"{self.day} 실행이 시간 한도 {self.limit_minutes}분을 넘어 중지되었습니다(run time limit exceeded)."
        why = "원천 API가 응답하지 않거나 DB 잠금을 기다리다 멈춘 경우가 흔합니다."
        todo = (
            self.retry.sentence(ctx)
            if self.retry.planned
            else f"Dagster UI에서 run 로그의 마지막 단계를 확인하고 {_rerun_by(self.day)} 다시 실행하세요."
        )
        todo += f" 한도는 {ctx.config_file}의 [runs] max_minutes입니다."
        return Parts(f"{self.day} 실행 시간 초과로 중지 (run time limit exceeded)", what, why, todo)


class DaemonDown(Alert, kind="daemon_down", label="Dagster 데몬 정지", level=CRITICAL):
    last_heartbeat: datetime | None
    limit_minutes: float
    daemons: tuple[str, ...]

    def parts(self, ctx: MessageContext) -> Parts:
        what = "Dagster 데몬(daemon)이 동작하지 않습니다 — 06:00 수집 일정(schedule)과 후속 실행 센서가 돌지 않습니다."
        silent = ", ".join(self.daemons)
        why = (
            f"마지막 하트비트(heartbeat)는 {_when(self.last_heartbeat)}입니다"
            if self.last_heartbeat
            else "기록된 하트비트(heartbeat)가 없습니다"
        ) + f" — {self.limit_minutes:g}분 넘게 조용한 데몬: {silent}."
        todo = (
            "`systemctl --user status dmf-dagster-daemon`과 `journalctl --user -u dmf-dagster-daemon -n 100`으로 확인하고 "
            "`systemctl --user restart dmf-dagster-daemon`으로 다시 시작하세요(시스템 설치면 --user 없이 sudo로). "
            f"오늘 리포트가 없으면 {_rerun_by(self.day)} 직접 실행하세요."
        )
        return Parts(f"{self.day} Dagster 데몬 정지 (daemon heartbeat missing)", what, why, todo)


class WatchdogError(Alert, kind="watchdog_error", label="감시 점검 실패", level=CRITICAL):
    dagster_home: str
    error: str

    def parts(self, ctx: MessageContext) -> Parts:
        what = (
            "감시(watchdog, `dmf doctor --alert`)가 Dagster 인스턴스를 읽지 못해 데몬 상태를 확인할 수 없습니다. "
            "데몬이 멈췄다는 뜻은 아닙니다."
        )
        why = f"DAGSTER_HOME={self.dagster_home}: {self.error}"
        todo = (
            "감시 타이머가 `dagster dev`·`dmf`와 같은 환경을 쓰는지 확인하세요: 프로젝트 폴더의 .env(예: PostgreSQL 접속 "
            "정보), DAGSTER_HOME의 dagster.yaml. 고친 뒤 `dmf doctor --alert`를 직접 실행해 보세요."
        )
        return Parts(f"{self.day} 감시 점검 실패 (watchdog cannot read the Dagster instance)", what, why, todo)


class DeliveryGivenUp(Alert, kind="delivery_given_up", label="발송 포기", level=CRITICAL):
    subject: str
    channels: tuple[str, ...]  # the targets that never accepted it (secret-free)
    attempts: int
    last_error: str
    since: datetime
    hours: int  # how long it was tried, from `since` to giving up (`[alerts] give_up_hours`, more after a re-send)

    def parts(self, ctx: MessageContext) -> Parts:
        what = (
            f"「{self.subject}」 메시지를 {_when(self.since)}부터 {self.hours}시간 동안 {self.attempts}번 보냈지만 "
            f"{', '.join(self.channels)}에 끝내 전달하지 못해 발송을 포기했습니다(delivery given up)."
        )
        from dmf_assets.notify.channels import channel_settings_ko  # the channels import this module

        why = f"마지막 오류: {self.last_error}"
        todo = (
            f"이 채널의 설정({channel_settings_ko(', ')})과 서버 상태를 확인한 뒤 `dmf notify flush --given-up`으로 "
            "다시 보내세요. `dmf notify status`가 발송 기록을 보여 줍니다."
        )
        return Parts(
            f"{self.day} 알림 발송 포기 (delivery given up)",
            what,
            why,
            todo,
            (("채널 / channels", ", ".join(self.channels)),),
        )


def compose_alert(alert: Alert, ctx: MessageContext) -> Message:
    """The message for `alert`: what happened, why, what to do next."""
    p = alert.parts(ctx)
    prefix = "[DMF 긴급]" if alert.kind == RejectedStreak.kind else "[DMF 경보]"
    facts = (("날짜 / day", alert.day.isoformat()), ("종류 / kind", f"{alert.label_ko} ({alert.kind})"), *p.facts)
    if alert.run_id:
        facts += (("Dagster run", alert.run_id),)
    return Message(
        subject=f"{prefix} {p.subject}",
        title=p.what,
        level=alert.level,
        sections=p.sections,
        facts=facts,
        kind=alert.kind,
        day=alert.day.isoformat(),
    )


# --- the daily workbook mail ----------------------------------------------------------------------


def report_digest(report: Any) -> str:
    """What a re-made workbook would tell anew: the day's verdict, counts, events, gates and warnings —
    not the run id or the time it was written. Two reports with one digest read the same."""
    content = (
        report.day,
        report.status,
        report.status_reason,
        report.comparison_base,
        report.summary,
        report.events,
        report.gates,
        report.quality,
        report.warnings,
        report.withdrawal_share,
    )
    return hashlib.sha256(repr(content).encode("utf-8")).hexdigest()[:32]


class Redone(Enum):
    """Why a day's result was worked out again since a mail about it went out — what a correction says happened."""

    RERUN = "rerun"  #: the day was run again (from its archive, or fetched anew where none is complete)
    REFETCHED = "refetched"  #: its list was asked of MFDS again (a same-morning retry)
    RECOMPARED = "recompared"  #: another day was committed or refused since: this one compared again with its base


@dataclass(frozen=True)
class ReportDelivery(ReadsItsSummary):
    """One day's workbook and what its mail says — every figure the mail and the webhook show comes from here,
    read from the `DayReport` xlsx_report has in hand (`from_day_report`, the one place)."""

    summary: DaySummary  # the day, its status and base, every figure, as 요약 says them
    workbook: Path | None
    status_reason: str
    sentences: tuple[Sentence, ...]  # the top events, as on 요약
    headline_total: int  # headline events in all
    watch_hits: tuple[str, ...]  # every watchlist-hit event as a marked sentence (the watchlist alert)
    digest: str
    retry_attempt: int = 0  # accepted on this same-morning retry (0: not a retry run)
    retries_failed: int = 0  # still rejected after this many same-morning retries (no more follow)
    run_id: str | None = None
    redone: Redone = Redone.RERUN  # what a correction of this day's earlier mail says happened since

    @property
    def base(self) -> str | None:
        """The comparison base, as the texts write it."""
        return self.summary.comparison_base.isoformat() if self.summary.comparison_base else None

    @classmethod
    def from_day_report(
        cls,
        report: Any,
        workbook: Path | str | None,
        *,
        retry_attempt: int = 0,
        retries_failed: int = 0,
        run_id: str | None = None,
        redone: Redone = Redone.RERUN,
        top: int = 10,
    ) -> ReportDelivery:
        sentences, total = summary_sentences(report.events, limit=top)
        watched, _ = summary_sentences([e for e in report.events if e.watchlist_hit], limit=10_000)
        return cls(
            report.summary,
            Path(workbook) if workbook else None,
            report.status_reason,
            tuple(sentences),
            total,
            tuple(s.marked for s in watched),
            report_digest(report),
            retry_attempt,
            retries_failed,
            run_id,
            redone,
        )


@dataclass(frozen=True)
class Replaced:
    """The day's mail that went out before and that a correction (정정) replaces."""

    subject: str
    sent_at: datetime
    status: DayStatus | None  # None: a mail stored before the outbox kept the day's status


#: the subject's prefix of a correction (docs/DOMAIN.md §9)
CORRECTION = "정정"


def report_subject(d: ReportDelivery, *, correction: bool = False) -> str:
    prefix, k = f"[DMF {CORRECTION}]" if correction else "[DMF]", d.summary
    if d.status is DayStatus.REJECTED:
        return f"{prefix} {d.day} — 수집 실패 ({f'비교 기준 {d.base}' if d.base else '비교 기준 없음'})"
    if d.status is DayStatus.BASELINE:
        size = f" · 등록 {k.registry_size:,}" if k.registry_size is not None else ""
        return f"{prefix} {d.day} — 첫 수집(기준일){size}"
    watch = f" · 관심목록 {k.watchlist_hits}" if k.watchlist_hits else ""
    retry = f" · 재시도 {d.retry_attempt}회째 반영" if d.retry_attempt else ""
    return f"{prefix} {d.day} — {k.counts_text}{watch}{retry}"


def report_link(d: ReportDelivery, ctx: MessageContext) -> str:
    """The workbook's address for people outside this machine — only with a public base URL."""
    return workbook_link(ctx.public_base_url, d.workbook.name) if d.workbook is not None and ctx.public_base_url else ""


#: the heading under which a team mail says the morning's automatic retries did not help
RETRIES_FAILED_HEADING = "다시 받아 본 결과"


def retries_failed_note(n: int) -> str:
    """Said to the team on a day still rejected after the morning's automatic retries."""
    return f"오늘 아침 자동으로 {n}번 더 받아 보았지만 모두 반영하지 못했습니다."


def _correction_text(d: ReportDelivery, replaced: Replaced) -> str:
    """What the correction says first: which mail it replaces, and what happened since (`d.redone`: the list asked
    for again, the day run again, or compared again because another day was processed), in the reader's words."""
    before = replaced.status is DayStatus.REJECTED
    now = d.status is DayStatus.REJECTED
    against = f"{d.base} 기준으로 " if d.base else ""
    done, done_but = {  # what happened, said before a result, and before a result that is not what was hoped
        Redone.REFETCHED: ("이 날의 목록을 다시 받아", "이 날을 다시 수집했지만"),
        Redone.RERUN: ("이 날을 다시 처리해", "이 날을 다시 처리했지만"),
        Redone.RECOMPARED: (
            f"다른 날이 처리되어 이 날을 {against}다시 비교해",
            f"다른 날이 처리되어 이 날을 {against}다시 비교했지만",
        ),
    }[d.redone]
    if replaced.status is None:
        why = "그 뒤 이 날의 결과가 바뀌었습니다. 아래가 바로잡은 내용입니다."
    elif before and not now:
        why = f"그 뒤 {done} 정상으로 반영했습니다. 아래가 이 날의 내용입니다."
    elif now and not before:
        back = f"등록 현황은 {d.base} 기준으로 돌아갔습니다." if d.base else "반영된 날이 없는 상태로 돌아갔습니다."
        why = f"그 뒤 {done_but} 반영하지 못해, 앞서 알린 이 날의 변경은 취소되었습니다. {back}"
    elif now:
        why = f"그 뒤 {done_but} 이번에도 반영하지 못했습니다. 아래가 새 내용입니다."
    elif d.redone is Redone.RECOMPARED:
        why = f"그 뒤 {done} 내용이 바뀌었습니다. 아래가 바로잡은 내용입니다."
    else:
        why = "그 뒤 이 날의 비교를 다시 계산해 내용이 바뀌었습니다. 아래가 바로잡은 내용입니다."
    return f"이 메일은 {_when(replaced.sent_at)}에 보낸 「{replaced.subject}」 메일을 바로잡습니다. {why}"


def _rejected_sections(d: ReportDelivery) -> list[tuple[str, str]]:
    """A rejected day, for the team: what happened, what it means, and that nothing is needed from them."""
    k = d.summary
    gate = GATE_BY_NUMBER[k.rejected_gate] if k.rejected_gate is not None else None
    happened = f"{d.day}에 식약처에서 받은 목록을 쓰지 않았습니다" + (f": {gate.reader_ko}." if gate else ".")
    if k.received is not None:
        announced = f", 식약처가 알린 전체는 {k.total_count:,}건" if k.total_count is not None else ""
        happened += f" 받은 등록은 {k.received:,}건{announced}입니다."
    withdrawn = EventType.WITHDRAWN.label_ko
    means = (
        f"불완전하거나 이상한 목록으로 비교하면 그대로인 등록도 {withdrawn}된 것처럼 보일 수 있어, 이 날의 신규·변경·"
        f"{josa(withdrawn, '은/는')} 반영하지 않았습니다. "
        + (
            f"첨부한 리포트의 등록 현황은 {d.base} 기준 그대로이고, 다음에 정상으로 받은 날의 비교가 그 사이의 변경을 "
            "모두 담습니다."
            if d.base
            else "아직 반영된 날이 없어 비교할 현황도 없습니다."
        )
    )
    todo = "따로 하실 일은 없습니다. 나중에 이 날이 반영되면 정정 메일을 보내 드립니다."
    sections = [("무슨 일이 있었나", happened), ("무엇을 뜻하나", means), ("하실 일", todo)]
    if d.retries_failed:
        sections.append((RETRIES_FAILED_HEADING, retries_failed_note(d.retries_failed)))
    return sections


def _event_sections(d: ReportDelivery) -> list[tuple[str, str]]:
    """The day's top events (the watched ones first) and, on an accepted day with events, what to look at."""
    watched = [s for s in d.sentences if s.watch]
    others = [s for s in d.sentences if not s.watch]
    sections = []
    if watched:
        sections.append(
            (f"관심목록 해당 ({d.summary.watchlist_hits:,}건)", "\n".join(f"  {s.marked}" for s in watched))
        )
    if others:
        text = "\n".join(f"  {i}. {s.marked}" for i, s in enumerate(others, 1))
        shown = sum(s.count for s in d.sentences)
        if d.headline_total > shown:
            text += f"\n  … 외 {d.headline_total - shown:,}건은 리포트의 {sheet_ref(SHEET_EVENTS)}에 있습니다."
        sections.append(("주요 변경", text))
    if d.status is not DayStatus.REJECTED and (d.sentences or d.summary.cosmetic):
        first = f"관심목록에 해당하는 변경 {d.summary.watchlist_hits:,}건을 먼저 확인하세요. " if watched else ""
        sections.append(("하실 일", f"{first}변경마다의 전후 내용은 리포트의 {sheet_ref(SHEET_EVENTS)}에 있습니다."))
    return sections


def _report_title(d: ReportDelivery) -> str:
    if d.status is DayStatus.REJECTED:
        base = f"비교 기준은 여전히 {d.base}입니다." if d.base else "아직 반영된 날이 없습니다."
        return f"{d.day} 수집 결과를 반영하지 못했습니다. {base}"
    if d.status is DayStatus.BASELINE:
        return f"{d.day} 첫 수집으로 기준일이 만들어졌습니다. 비교할 이전 날이 없어 변경 내용은 없습니다."
    if d.status is DayStatus.UNCHANGED or not d.summary.headline_events:
        return f"{d.day} 등록 현황은 {d.base} 대비 변경이 없습니다."
    return f"{d.day} 등록 현황: {d.base} 대비 {d.summary.counts_text}."


def _report_facts(d: ReportDelivery) -> list[tuple[str, str]]:
    """The figures table: a rejected day's sizes (received, announced, the base's) or the day's registry and
    headline counts (the number events and the cosmetic ones only when there are some)."""
    k = d.summary
    facts = [("날짜", d.day.isoformat()), ("비교 기준일", d.base or "없음 (첫 반영 전)")]
    if d.status is DayStatus.REJECTED:
        sizes = [
            ("이번에 받은 등록 수", k.received),
            ("식약처가 알린 전체 등록 수", k.total_count),
            (f"기준일({d.base}) 등록 수", k.base_registry_size if d.base else None),
        ]
        return facts + [(label, f"{n:,}건") for label, n in sizes if n is not None]
    if k.registry_size is not None:
        facts.append(("등록 수", f"{k.registry_size:,}건"))
    if d.status is DayStatus.BASELINE:
        return facts
    counts = [
        (EVENT_LABEL_KO.get(kind) or COUNT_LABEL_KO[kind], k.by_kind.get(kind, 0), kind in OPTIONAL_KINDS)
        for kind in HEADLINE_KINDS
    ]
    counts.append(("표기만 바뀐 등록(별도)", k.cosmetic, True))
    return facts + [(label, _n(n)) for label, n, optional in counts if n or not optional]


def compose_report(d: ReportDelivery, ctx: MessageContext, *, replaces: Replaced | None = None) -> Message:
    """The workbook mail, for the team: what happened, what it means for the reader, whether anything is needed
    from them — in analyst words (no command, run, setting or API field). `replaces`: the mail of the same day
    that went out before and now reads differently — this one is then a correction (정정) naming it."""
    sections = [(CORRECTION, _correction_text(d, replaces))] if replaces is not None else []
    if d.status is DayStatus.REJECTED:
        sections += _rejected_sections(d)
    else:
        sections.append(("상태", d.status.label_ko + (f" — {d.status_reason}" if d.status_reason else "")))
    if d.retry_attempt:
        again = f"처음 받은 목록은 반영하지 못해, 오늘 아침 {d.retry_attempt}번째로 다시 받아 정상으로 반영했습니다."
        sections.append(("다시 받아 반영", again))
    sections += _event_sections(d)
    warn = d.status is DayStatus.REJECTED or any(s.watch for s in d.sentences) or replaces is not None
    return Message(
        subject=report_subject(d, correction=replaces is not None),
        title=_report_title(d),
        level=WARNING if warn else INFO,
        sections=tuple(sections),
        facts=tuple(_report_facts(d)),
        link=report_link(d, ctx),
        kind=REPORT,
        day=d.day.isoformat(),
        audience=Audience.TEAM,
        workbook=d.workbook.name if d.workbook is not None else "",
        status=d.status.value,
    )


def test_message(now: datetime) -> Message:
    """`dmf notify test`: one message to every channel."""
    local = now.astimezone(KST)
    p = Parts(
        f"[DMF] 알림 시험 / test — {local:%Y-%m-%d %H:%M} KST",
        "DMF Watch 알림 채널 시험 발송입니다(test message).",
        "`dmf notify test`를 실행했습니다.",
        "이 메시지를 받았다면 이 채널의 설정이 맞습니다. 할 일은 없습니다.",
    )
    return Message(p.subject, p.what, INFO, TEST, local.date().isoformat(), p.sections, audience=Audience.EVERYONE)


# --- rules the sensor uses to decide (pure) ---------------------------------------------------------


def rejected_streak(statuses: Mapping[date, DayStatus], n: int = 3) -> list[date]:
    """The trailing run of consecutive rejected days (in date order) when it is at least `n` long."""
    run: list[date] = []
    for day in sorted(statuses, reverse=True):
        if statuses[day] != DayStatus.REJECTED:
            break
        run.append(day)
    return sorted(run) if len(run) >= n else []


def slow_run(
    seconds: float, recent_seconds: Sequence[float], factor: float = 3.0, window: int = 14, min_samples: int = 5
) -> float | None:
    """The median of the last `window` runs when `seconds` >= factor x that median, else None."""
    sample = sorted(float(s) for s in list(recent_seconds)[-window:] if s and s > 0)
    if len(sample) < min_samples:
        return None
    mid = len(sample) // 2
    median = sample[mid] if len(sample) % 2 else (sample[mid - 1] + sample[mid]) / 2
    return median if seconds >= factor * median else None


def alerts_for_day(d: ReportDelivery, *, withdrawal_share_max: float) -> list[Alert]:
    """The alerts a finished day raises by itself: watchlist hits (always, quiet day or not) and
    withdrawals above `withdrawal_share_max` of the registry on an accepted day."""
    out: list[Alert] = []
    k = d.summary
    if d.status is not DayStatus.REJECTED and d.watch_hits:
        out.append(
            WatchlistHit(day=d.day, hits=d.watch_hits, events=k.watchlist_hits or len(d.watch_hits), run_id=d.run_id)
        )
    share = k.withdrawal_share
    if d.status is DayStatus.ACCEPTED and share is not None and share > withdrawal_share_max:
        out.append(
            WithdrawalShare(
                day=d.day,
                withdrawn=k.withdrawn,
                registry_size=k.withdrawal_registry_size or 0,  # never 0 here: the share needs a size
                threshold=withdrawal_share_max,
                run_id=d.run_id,
            )
        )
    return out
