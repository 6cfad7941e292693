"""What people are told: the daily delivery and every alert, in Korean with the English term.

Pure functions from facts to a `Message` — no Dagster, no network, no files. Every alert says
**what happened** (무슨 일), **why** (원인) and **what to do next** (조치). The channels render a
`Message` as an e-mail body, a Slack message or a Teams card.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from dmf_assets.clock import KST

# --- alert kinds --------------------------------------------------------------------------------

REJECTED = "rejected"  # a gate rejected the day
RETRY_SUCCEEDED = "retry_succeeded"  # an automatic retry of a rejected/failed day was accepted
RETRIES_EXHAUSTED = "retries_exhausted"  # the automatic retries are used up: giving up
RUN_FAILED = "run_failed"  # a run failed (not a gate: an error)
OVERDUE = "overdue"  # no workbook for the expected day at 09:00 KST
WATCHLIST_HIT = "watchlist_hit"  # an event matched the watchlist (always sent, quiet day or not)
REJECTED_STREAK = "rejected_streak"  # N rejected days in a row: escalation
REQUEST_CAP = "request_cap"  # the daily request cap stopped the fetch
SLOW_RUN = "slow_run"  # run >= factor x the median of the last 14
WITHDRAWAL_SHARE = "withdrawal_share"  # withdrawals > 2 % of the registry on an accepted day
RUN_TIMEOUT = "run_timeout"  # the whole-run time limit stopped a run
DAEMON_DOWN = "daemon_down"  # the outside watchdog: no Dagster daemon heartbeat

ALERT_KINDS = (
    REJECTED, RETRY_SUCCEEDED, RETRIES_EXHAUSTED, RUN_FAILED, OVERDUE, WATCHLIST_HIT, REJECTED_STREAK,
    REQUEST_CAP, SLOW_RUN, WITHDRAWAL_SHARE, RUN_TIMEOUT, DAEMON_DOWN,
)
KIND_LABEL = {
    REJECTED: ("수집 거부", "rejected day"),
    RETRY_SUCCEEDED: ("재시도 성공", "retry succeeded"),
    RETRIES_EXHAUSTED: ("재시도 포기", "retries exhausted"),
    RUN_FAILED: ("실행 실패", "failed run"),
    OVERDUE: ("리포트 지연", "report overdue"),
    WATCHLIST_HIT: ("관심목록 해당", "watchlist hit"),
    REJECTED_STREAK: ("연속 수집 거부", "rejected days in a row"),
    REQUEST_CAP: ("요청 한도 도달", "request cap reached"),
    SLOW_RUN: ("느린 실행", "slow run"),
    WITHDRAWAL_SHARE: ("대량 취하", "withdrawals above threshold"),
    RUN_TIMEOUT: ("실행 시간 초과", "run time limit exceeded"),
    DAEMON_DOWN: ("Dagster 데몬 정지", "daemon heartbeat missing"),
}
INFO, WARNING, CRITICAL = "info", "warning", "critical"
KIND_LEVEL = {
    REJECTED: WARNING, RETRY_SUCCEEDED: INFO, RETRIES_EXHAUSTED: CRITICAL, RUN_FAILED: CRITICAL,
    OVERDUE: CRITICAL, WATCHLIST_HIT: WARNING, REJECTED_STREAK: CRITICAL, REQUEST_CAP: CRITICAL,
    SLOW_RUN: WARNING, WITHDRAWAL_SHARE: CRITICAL, RUN_TIMEOUT: CRITICAL, DAEMON_DOWN: CRITICAL,
}

#: DESIGN.md §6: gate number -> (name, Korean label, config key in [gates] or None)
GATES = {
    1: ("transport", "전송", None),
    2: ("completeness", "완전성", None),
    3: ("drop", "감소율", "drop_max_ratio"),
    4: ("nulls", "결측", "null_max_ratio"),
    5: ("duplicates", "중복", "duplicate_max_ratio"),
    6: ("churn", "변동률", "churn_max_ratio"),
}
TRANSIENT_GATES = (1, 2)
_GATE_BY_NAME = {name: n for n, (name, _, _) in GATES.items()}

FIELD_LABEL_KO = {
    "permit_no": "등록번호", "ingredient": "성분명", "applicant": "신청인", "bizrno": "사업자등록번호",
    "manufacturer": "제조소명", "address": "제조소 소재지", "countries": "제조국", "issue_date": "발급일자",
    "target_class": "대상의약품", "sites": "제조소(사이트)",
}
STATUS_LABEL = {
    "accepted": "정상 수집 · 비교 완료 (accepted)",
    "unchanged": "정상 수집 · 변경 없음 (accepted, no change)",
    "baseline": "기준일 — 최초 수집, 비교 대상 없음 (baseline)",
    "rejected": "수집 실패 — 결과 미반영 (rejected)",
}
EVENT_LABEL = {"NEW": "신규", "CHANGED": "변경", "WITHDRAWN": "취하"}


def gate_number(gate: int | str | None) -> int | None:
    if gate is None or gate == "":
        return None
    if isinstance(gate, int):
        return gate
    text = str(gate).strip().lower()
    if text.isdigit():
        return int(text)
    return _GATE_BY_NAME.get(text)


def gate_label(gate: int | str | None) -> str:
    n = gate_number(gate)
    if n in GATES:
        name, ko, _ = GATES[n]
        return f"게이트 {n} {ko}({name})"
    return f"게이트 {gate}" if gate not in (None, "") else "게이트(미상)"


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, date):
        return value.isoformat()
    return "" if value is None else str(value)


def _hhmm(value: Any) -> str:
    """'HH:MM KST' of an ISO timestamp (or datetime); the text unchanged if it is not one."""
    if value in (None, ""):
        return ""
    try:
        dt = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    if dt.tzinfo is not None:
        dt = dt.astimezone(KST)
    return f"{dt:%Y-%m-%d %H:%M} KST"


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _pct(value: Any) -> str:
    try:
        return f"{float(value) * 100:.1f} %"
    except (TypeError, ValueError):
        return str(value)


# --- the message --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One notification, channel-neutral."""

    subject: str
    title: str  # one line: what happened
    level: str  # info | warning | critical
    sections: tuple[tuple[str, str], ...] = ()  # (heading, paragraph) in order
    facts: tuple[tuple[str, str], ...] = ()  # label -> value, shown as a table/card facts
    link: str = ""  # download / UI link
    kind: str = ""  # alert kind, or "report"
    day: str = ""

    def text(self) -> str:
        """The plain-text body (e-mail, generic webhook)."""
        lines = [] if self.sections and self.sections[0][1] == self.title else [self.title, ""]
        for heading, paragraph in self.sections:
            lines += [f"■ {heading}", paragraph, ""]
        if self.facts:
            lines.append("■ 세부 정보 / Details")
            lines += [f"  - {k}: {v}" for k, v in self.facts]
            lines.append("")
        if self.link:
            lines += [f"링크 / Link: {self.link}", ""]
        lines.append("— DMF Watch (MFDS 원료의약품 등록 현황 일일 감시). 이 메일은 자동 발송되었습니다.")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "subject": self.subject, "title": self.title, "level": self.level, "kind": self.kind, "day": self.day,
            "sections": [list(s) for s in self.sections], "facts": [list(f) for f in self.facts], "link": self.link,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        return cls(
            subject=data["subject"], title=data["title"], level=data.get("level", WARNING),
            sections=tuple(tuple(s) for s in data.get("sections", ())),
            facts=tuple(tuple(f) for f in data.get("facts", ())), link=data.get("link", ""),
            kind=data.get("kind", ""), day=data.get("day", ""),
        )


# --- alerts -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alert:
    """A situation worth telling people about, once per (day, kind).

    `facts` carries what the message needs (see the `alert_*` constructors below for each kind's
    keys); they are stored with the alert, so keep them JSON-serialisable. `day` is the partition
    (YYYY-MM-DD) the alert is about.
    """

    kind: str
    day: str
    facts: Mapping[str, Any] = field(default_factory=dict)
    run_id: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ALERT_KINDS:
            raise ValueError(f"unknown alert kind {self.kind!r}; one of {', '.join(ALERT_KINDS)}")
        object.__setattr__(self, "day", _iso(self.day))
        object.__setattr__(self, "facts", {k: _jsonable(v) for k, v in dict(self.facts).items()})

    @property
    def key(self) -> str:
        """The de-duplication identity: one alert per day and kind."""
        return f"{self.day}-{self.kind}"


def _jsonable(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return _iso(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    return value


def alert_rejected(day, *, gate, observed="", threshold="", comparison_base=None, detail="", retry_at=None,
                   attempt: int = 1, attempts_max: int = 3, run_id: str | None = None) -> Alert:
    """A gate rejected `day`. `retry_at` = when the automatic retry runs (None: no retry follows)."""
    return Alert(REJECTED, day, {"gate": gate_number(gate) or gate, "observed": observed, "threshold": threshold,
                                 "comparison_base": comparison_base, "detail": detail, "retry_at": retry_at,
                                 "attempt": attempt, "attempts_max": attempts_max}, run_id)


def alert_rejected_from_metadata(day, metadata: Mapping[str, Any], *, retry_at=None, attempt: int = 1,
                                 attempts_max: int = 3, run_id: str | None = None) -> Alert:
    """`alert_rejected` from an integrity_verdict / snapshot_diff materialization's metadata
    (keys rejected_gate, reason, comparison_base; observed/threshold when present)."""
    m = {k: getattr(v, "value", v) for k, v in dict(metadata).items()}
    return alert_rejected(day, gate=m.get("rejected_gate") or m.get("gate"), observed=m.get("observed", ""),
                          threshold=m.get("threshold", ""), comparison_base=m.get("comparison_base"),
                          detail=m.get("reason", "") if m.get("reason") not in (None, "-") else "",
                          retry_at=retry_at, attempt=attempt, attempts_max=attempts_max, run_id=run_id)


def alert_retry_succeeded(day, *, attempt: int, status: str = "accepted", first_failure: str = "", counts=None,
                          run_id: str | None = None) -> Alert:
    return Alert(RETRY_SUCCEEDED, day, {"attempt": attempt, "status": status, "first_failure": first_failure,
                                        "counts": dict(counts or {})}, run_id)


def alert_retries_exhausted(day, *, attempts: int, gate=None, observed="", threshold="", comparison_base=None,
                            last_error: str = "", run_id: str | None = None) -> Alert:
    return Alert(RETRIES_EXHAUSTED, day, {"attempts": attempts, "gate": gate_number(gate) or gate,
                                          "observed": observed, "threshold": threshold,
                                          "comparison_base": comparison_base, "last_error": last_error}, run_id)


def alert_run_failed(day, *, error: str, step: str = "", run_id: str | None = None, retry_at=None) -> Alert:
    return Alert(RUN_FAILED, day, {"error": _first_line(error), "step": step, "retry_at": retry_at}, run_id)


def alert_overdue(day, *, expected_at: str = "09:00", latest_report: str | None = None,
                  workbook: str = "", note: str = "") -> Alert:
    return Alert(OVERDUE, day, {"expected_at": expected_at, "latest_report": latest_report,
                                "workbook": workbook, "note": note})


def alert_watchlist_hit(day, *, hits: Sequence[Mapping[str, Any] | str], run_id: str | None = None) -> Alert:
    """`hits`: event dicts (EventLine fields) or ready sentences."""
    return Alert(WATCHLIST_HIT, day, {"hits": list(hits)}, run_id)


def alert_rejected_streak(day, *, days: Sequence[Any], comparison_base=None, gates: Mapping[str, Any] | None = None,
                          run_id: str | None = None) -> Alert:
    """`days`: the rejected days in a row (oldest first), `day` the latest of them."""
    return Alert(REJECTED_STREAK, day, {"days": [_iso(d) for d in days], "comparison_base": comparison_base,
                                        "gates": dict(gates or {})}, run_id)


def alert_request_cap(day, *, cap: int, used: int | None = None, run_id: str | None = None) -> Alert:
    return Alert(REQUEST_CAP, day, {"cap": cap, "used": used}, run_id)


def alert_slow_run(day, *, seconds: float, median_s: float, samples: int, factor: float = 3.0,
                   run_id: str | None = None) -> Alert:
    return Alert(SLOW_RUN, day, {"seconds": round(seconds, 1), "median_s": round(median_s, 1), "samples": samples,
                                 "factor": factor}, run_id)


def alert_withdrawal_share(day, *, withdrawn: int, registry_size: int, threshold: float = 0.02,
                           run_id: str | None = None) -> Alert:
    return Alert(WITHDRAWAL_SHARE, day, {"withdrawn": withdrawn, "registry_size": registry_size,
                                         "share": withdrawn / registry_size if registry_size else None,
                                         "threshold": threshold}, run_id)


def alert_run_timeout(day, *, limit_minutes: int, elapsed_minutes: float | None = None, step: str = "",
                      retry_at=None, run_id: str | None = None) -> Alert:
    return Alert(RUN_TIMEOUT, day, {"limit_minutes": limit_minutes, "elapsed_minutes": elapsed_minutes,
                                    "step": step, "retry_at": retry_at}, run_id)


def alert_daemon_down(day, *, last_heartbeat=None, age_minutes: float | None = None, limit_minutes: float = 10.0,
                      daemons: Sequence[str] = (), detail: str = "") -> Alert:
    return Alert(DAEMON_DOWN, day, {"last_heartbeat": last_heartbeat, "age_minutes": age_minutes,
                                    "limit_minutes": limit_minutes, "daemons": list(daemons), "detail": detail})


def _first_line(text: Any) -> str:
    """First non-empty line of an error: a traceback is never the message."""
    for line in str(text or "").splitlines():
        if line.strip():
            return line.strip()[:500]
    return ""


def _base(value: Any) -> str:
    return _iso(value) or "없음 (아직 반영된 날이 없음)"


def compose_alert(alert: Alert, *, link: str = "") -> Message:
    """The message for `alert`: what happened, why, what to do next."""
    f, day = alert.facts, alert.day
    ko, en = KIND_LABEL[alert.kind]
    level = KIND_LEVEL[alert.kind]
    facts: list[tuple[str, str]] = [("날짜 / day", day), ("종류 / kind", f"{ko} ({alert.kind})")]
    if alert.run_id:
        facts.append(("Dagster run", alert.run_id))
    rerun = f"`dmf run --date {day}`"
    prefix = "[DMF 경보]"

    if alert.kind == REJECTED:
        g = gate_number(f.get("gate"))
        base = _base(f.get("comparison_base"))
        what = (f"{day} 수집 결과가 {gate_label(f.get('gate'))}에서 거부되었습니다 (rejected). 이 날의 변경은 "
                f"반영되지 않았고, 비교 기준(comparison base)은 {base} 그대로입니다.")
        why = (f"관측값 observed {f.get('observed') or '-'} — 기준 threshold {f.get('threshold') or '-'}."
               if f.get("observed") or f.get("threshold") else "")
        if f.get("detail"):
            why = f"{why} {f['detail']}".strip()
        why = why or "리포트의 '게이트' 시트에 관측값과 기준이 있습니다."
        if g in TRANSIENT_GATES:
            if f.get("retry_at"):
                nxt = (f"일시적 오류(transient)로 보고 {_hhmm(f['retry_at'])}에 자동 재시도(automatic retry)합니다 "
                       f"(재시도 {f.get('attempt', 1)}/{f.get('attempts_max', 3)}). 지금 할 일은 없습니다 — 결과를 "
                       "다시 알려 드립니다. 원천(source)이 계속 불완전하면 재시도 후 포기 알림이 갑니다.")
            else:
                nxt = ("자동 재시도는 예정되어 있지 않습니다 (no automatic retry follows). 원천 API 상태(data.go.kr "
                       f"공지, 서비스키 호출 한도)를 확인한 뒤 {rerun} 로 다시 실행하세요. 그대로 두어도 다음 날 06:00 "
                       "수집이 그 사이의 변경을 모두 포함합니다.")
        else:
            key = GATES.get(g, (None, None, None))[2] if g else None
            nxt = ("이 게이트는 자동 재시도하지 않습니다 — 사람이 판단해야 합니다 (human decision, not retried). "
                   "원천(source)이 일부만 돌려준 것인지, 실제 대량 변경인지 리포트의 '게이트' 시트와 표본 행으로 "
                   "확인하세요. 실제 변경이면 config/dmf.toml"
                   + (f" [gates] {key}" if key else " [gates]") + f" 값을 올리고 {rerun} 로 다시 실행하세요.")
        facts.append(("게이트 / gate", gate_label(f.get("gate"))))
        if f.get("observed") or f.get("threshold"):
            facts += [("관측값 / observed", str(f.get("observed") or "-")), ("기준 / threshold", str(f.get("threshold") or "-"))]
        facts.append(("비교 기준 / comparison base", base))
        if f.get("retry_at"):
            facts.append(("자동 재시도 / retry at", _hhmm(f["retry_at"])))
        subject = f"{prefix} {day} 수집 거부 (rejected) — {gate_label(f.get('gate'))}"
    elif alert.kind == RETRY_SUCCEEDED:
        counts = f.get("counts") or {}
        what = (f"{day} 자동 재시도 {f.get('attempt', '?')}회째에 수집이 정상 반영되었습니다 (retry succeeded, "
                f"{f.get('status', 'accepted')}).")
        why = f"앞선 실패: {f['first_failure']}." if f.get("first_failure") else "앞선 시도는 일시적 오류로 실패했습니다."
        if counts:
            why += " 결과: " + " · ".join(f"{EVENT_LABEL.get(k.upper(), k)} {_n(v)}" for k, v in counts.items())
        nxt = "할 일은 없습니다. 이 날의 리포트가 평소처럼 발송됩니다 (앞서 받은 거부 알림은 해소되었습니다)."
        subject = f"[DMF] {day} 재시도 성공 (retry succeeded) — 정상 반영"
    elif alert.kind == RETRIES_EXHAUSTED:
        base = _base(f.get("comparison_base"))
        what = (f"{day} 자동 재시도 {f.get('attempts', '?')}회가 모두 실패하여 재시도를 포기합니다 (giving up). "
                f"이 날은 반영되지 않았고 비교 기준은 {base} 그대로입니다.")
        why = (f"마지막 시도: {gate_label(f['gate'])}, 관측값 {f.get('observed') or '-'} — 기준 {f.get('threshold') or '-'}."
               if f.get("gate") else f"마지막 오류: {f.get('last_error') or '-'}.")
        nxt = ("원천 API(data.go.kr) 상태와 서비스키 호출 한도를 확인하세요. 원천이 회복되면 "
               f"{rerun} 로 직접 다시 실행할 수 있고, 그대로 두면 다음 날 06:00 수집이 그 사이 변경을 모두 포함합니다.")
        facts += [("시도 횟수 / attempts", _n(f.get("attempts"))), ("비교 기준 / comparison base", base)]
        subject = f"{prefix} {day} 재시도 포기 (retries exhausted) — 수집 실패"
    elif alert.kind == RUN_FAILED:
        what = f"{day} 실행이 오류로 실패했습니다 (failed run)" + (f" — 단계 step `{f['step']}`." if f.get("step") else ".")
        why = f"오류 / error: {f.get('error') or '-'}"
        if f.get("retry_at"):
            nxt = f"{_hhmm(f['retry_at'])}에 자동 재시도합니다. 반복되면 Dagster UI의 run 로그를 확인하세요."
        else:
            nxt = f"Dagster UI에서 이 run의 로그를 확인하고, 원인을 해결한 뒤 {rerun} 로 다시 실행하세요. `dmf doctor`가 설치 상태를 점검합니다."
        subject = f"{prefix} {day} 실행 실패 (failed run)"
    elif alert.kind == OVERDUE:
        at = f.get("expected_at") or "09:00"
        latest = f.get("latest_report")
        what = f"{day} 일일 리포트가 {at} KST까지 만들어지지 않았습니다 (report overdue)."
        why = (f"{f.get('workbook') or f'reports/DMF_리포트_{day}.xlsx'} 파일이 없습니다. "
               + (f"가장 최근 리포트: {latest}." if latest else "만들어진 리포트가 아직 없습니다."))
        if f.get("note"):
            why += f" {f['note']}"
        nxt = ("06:00 수집이 실행되었는지 Dagster UI(Runs)에서 확인하세요. 데몬이 멈췄다면 "
               "`systemctl --user status dmf-dagster-daemon` / `journalctl --user -u dmf-dagster-daemon` 로 확인 후 "
               f"재시작하고, {rerun} 로 이 날을 직접 실행하세요. `dmf doctor` 로 설치 상태를 점검할 수 있습니다.")
        subject = f"{prefix} {day} 리포트 지연 (report overdue, {at} KST)"
    elif alert.kind == WATCHLIST_HIT:
        hits = list(f.get("hits") or [])
        what = f"{day} 관심목록(watchlist)에 해당하는 이벤트가 {len(hits)}건 있습니다."
        why = "config/dmf.toml [watchlist] 패턴(성분·신청인·제조소·제조국)과 일치하는 이벤트:\n" + "\n".join(
            f"  {i}. {h if isinstance(h, str) else event_sentence(h)}" for i, h in enumerate(hits[:20], 1))
        if len(hits) > 20:
            why += f"\n  … 외 {len(hits) - 20}건"
        nxt = "리포트의 '관심목록' 시트와 이벤트 시트에서 내용을 확인하고, 필요하면 담당 부서에 공유하세요."
        facts.append(("건수 / hits", _n(len(hits))))
        subject = f"{prefix} {day} 관심목록 해당 {len(hits)}건 (watchlist hit)"
    elif alert.kind == REJECTED_STREAK:
        days = list(f.get("days") or [])
        base = _base(f.get("comparison_base"))
        gates = f.get("gates") or {}
        what = (f"⚠ 긴급 / ESCALATION: {len(days)}일 연속 수집이 거부되었습니다 ({', '.join(days)}). "
                f"마지막 반영일 {base} 이후의 변경이 보고되지 않고 있습니다.")
        why = "거부 사유: " + ("; ".join(f"{d} {gate_label(g)}" for d, g in gates.items()) if gates else
                              "각 날의 거부 알림과 리포트 '게이트' 시트를 보세요.")
        nxt = ("자동 재시도로 해결되지 않는 상태입니다. 오늘 담당자가 직접 확인해야 합니다 (action required today): "
               "원천 API(data.go.kr) 공지·서비스키 상태, `dmf doctor`, 리포트의 게이트 표본 행을 확인하고, 실제 대량 변경이면 "
               "config/dmf.toml [gates] 기준을 조정한 뒤 거부된 날을 `dmf run --date …` 로 다시 실행하세요.")
        facts += [("연속 거부 / in a row", _n(len(days))), ("비교 기준 / comparison base", base)]
        subject = f"[DMF 긴급] {day} — {len(days)}일 연속 수집 거부 (escalation: rejected days in a row)"
    elif alert.kind == REQUEST_CAP:
        what = f"{day} 일일 요청 한도(request cap) {_n(f.get('cap'))}회에 도달하여 수집이 중단되었습니다."
        why = (f"오늘 이미 {_n(f['used'])}회 요청했습니다. " if f.get("used") is not None else "") + \
            "반복된 재시도나 페이지 크기(numOfRows) 설정 때문에 요청이 늘었을 수 있습니다."
        nxt = ("같은 날 다시 실행하면 또 한도에 걸립니다. 원인(재시도 반복, [source] num_of_rows)을 확인하고, 필요하면 "
               "config/dmf.toml [source] daily_request_cap 을 조정하세요 (data.go.kr 개발 키는 하루 10,000회). "
               "다음 날 06:00 수집은 평소대로 실행됩니다.")
        subject = f"{prefix} {day} 요청 한도 도달 (request cap reached)"
    elif alert.kind == SLOW_RUN:
        ratio = (f["seconds"] / f["median_s"]) if f.get("median_s") else None
        what = (f"{day} 실행이 {f.get('seconds')}초 걸렸습니다 — 최근 {f.get('samples')}회 중앙값 "
                f"{f.get('median_s')}초의 {ratio:.1f}배입니다 (slow run)." if ratio else f"{day} 실행이 느렸습니다 (slow run).")
        why = f"기준: 중앙값의 {f.get('factor', 3.0)}배 이상. 원천 API 응답 지연, 서버 부하, 디스크 문제가 흔한 원인입니다."
        nxt = ("결과는 정상 반영되었으면 당장 할 일은 없습니다. Dagster UI에서 단계별 시간(raw_pages = 원천 수집)을 "
               "확인하고, 며칠 계속되면 서버 부하와 디스크를 점검하세요.")
        subject = f"{prefix} {day} 느린 실행 (slow run)"
    elif alert.kind == WITHDRAWAL_SHARE:
        what = (f"{day} 반영된 결과에서 취하(withdrawn)가 {_n(f.get('withdrawn'))}건으로 등록 {_n(f.get('registry_size'))}건의 "
                f"{_pct(f.get('share'))}입니다 (기준 {_pct(f.get('threshold'))} 초과).")
        why = ("모든 게이트는 통과했지만 취하는 드물어야 합니다. 원천이 일부 목록만 돌려준 경우 대량의 허위 취하가 "
               "생길 수 있습니다.")
        nxt = ("리포트의 취하 시트에서 몇 건을 의약품안전나라(nedrug.mfds.go.kr)에서 직접 확인하세요. 허위 취하라면 "
               "config/dmf.toml [gates] drop_max_ratio/churn_max_ratio 를 낮추고 이 날을 다시 실행해 거부되게 하세요.")
        subject = f"{prefix} {day} 대량 취하 {_pct(f.get('share'))} (withdrawals above {_pct(f.get('threshold'))})"
    elif alert.kind == RUN_TIMEOUT:
        what = (f"{day} 실행이 시간 한도 {f.get('limit_minutes')}분을 넘어 중지되었습니다 (run time limit exceeded — stopped)"
                + (f", 단계 `{f['step']}`." if f.get("step") else "."))
        why = (f"경과 {f['elapsed_minutes']:.0f}분. " if isinstance(f.get("elapsed_minutes"), (int, float)) else "") + \
            "원천 API가 응답하지 않거나 DB 잠금을 기다리다 멈춘 경우가 흔합니다."
        nxt = (f"{_hhmm(f['retry_at'])}에 자동 재시도합니다." if f.get("retry_at") else
               f"Dagster UI에서 run 로그의 마지막 단계를 확인하고 {rerun} 로 다시 실행하세요.") + \
            " 한도는 config/dmf.toml [runs] max_minutes 입니다."
        subject = f"{prefix} {day} 실행 시간 초과로 중지 (run time limit exceeded)"
    elif alert.kind == DAEMON_DOWN:
        last = _hhmm(f.get("last_heartbeat")) or "기록 없음 (never)"
        what = "Dagster 데몬(daemon)이 동작하지 않는 것 같습니다 — 06:00 수집 일정(schedule)과 센서가 실행되지 않습니다."
        why = (f"마지막 하트비트(heartbeat): {last}"
               + (f", {f['age_minutes']:.0f}분 전" if isinstance(f.get("age_minutes"), (int, float)) else "")
               + f" (기준 {f.get('limit_minutes')}분)."
               + (f" 하트비트가 없는 데몬 / silent daemons: {', '.join(f['daemons'])}." if f.get("daemons") else "")
               + (f" {f['detail']}" if f.get("detail") else ""))
        nxt = ("`systemctl --user status dmf-dagster-daemon` 과 `journalctl --user -u dmf-dagster-daemon -n 100` 으로 "
               "확인하고 `systemctl --user restart dmf-dagster-daemon` 으로 재시작하세요 (시스템 설치면 --user 없이 sudo). "
               "오늘 리포트가 없으면 `dmf run --date " + day + "` 로 직접 실행하세요.")
        subject = f"{prefix} {day} Dagster 데몬 정지 (daemon heartbeat missing)"
    else:  # pragma: no cover - ALERT_KINDS is checked in Alert
        raise ValueError(alert.kind)
    return Message(
        subject=subject,
        title=what,
        level=level,
        sections=(("무슨 일 / What happened", what), ("원인 / Why", why), ("조치 / What to do next", nxt)),
        facts=tuple(facts),
        link=link,
        kind=alert.kind,
        day=day,
    )


# --- the daily delivery ------------------------------------------------------------------------


@dataclass(frozen=True)
class EventLine:
    """One event as the delivery tells it (a subset of report.model.EventRow)."""

    event_type: str  # NEW | CHANGED | WITHDRAWN
    severity: str = ""
    permit_no: str | None = None
    ingredient: str | None = None
    applicant: str | None = None
    manufacturer: str | None = None
    countries: str | None = None
    changed_fields: tuple[str, ...] = ()
    watchlist_hit: bool = False
    watch_reasons: tuple[str, ...] = ()
    is_reappearance: bool = False

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}


_SEVERITY_RANK = {"CRITICAL": 0, "HIGH": 1, "MEDIUM": 2, "INFO": 3, "COSMETIC": 4}


def event_sentence(event: EventLine | Mapping[str, Any]) -> str:
    """One Korean sentence for an event: what, who, where."""
    e = event if isinstance(event, Mapping) else event.to_dict()
    kind = str(e.get("event_type") or "").upper()
    ingredient = e.get("ingredient") or "(성분명 없음)"
    applicant = e.get("applicant") or "(신청인 없음)"
    where = ", ".join(x for x in (e.get("manufacturer"), e.get("countries")) if x)
    permit = f" 등록번호 {e['permit_no']}" if e.get("permit_no") else ""
    sev = f" [{e['severity']}]" if e.get("severity") else ""
    watch = ""
    if e.get("watchlist_hit"):
        reasons = ", ".join(e.get("watch_reasons") or ())
        watch = f" ★관심목록" + (f"({reasons})" if reasons else "")
    if kind == "NEW":
        again = "재등장" if e.get("is_reappearance") else "신규 등록"
        text = f"{again}: {applicant}이(가) {ingredient}을(를) 등록했습니다" + (f" — 제조소 {where}" if where else "")
    elif kind == "CHANGED":
        fields = ", ".join(FIELD_LABEL_KO.get(x, x) for x in (e.get("changed_fields") or ())) or "내용"
        text = f"변경: {applicant}의 {ingredient} — {fields} 변경" + (f" (현재 제조소 {where})" if where else "")
    elif kind == "WITHDRAWN":
        text = f"취하: {applicant}의 {ingredient} 등록이 목록에서 사라졌습니다" + (f" — 제조소 {where}" if where else "")
    else:
        text = f"{kind}: {applicant} · {ingredient}"
    return f"{text}.{permit}{sev}{watch}".replace("..", ".")


@dataclass(frozen=True)
class ReportDelivery:
    """One day's workbook and what its e-mail says."""

    day: str
    status: str  # accepted | unchanged | baseline | rejected
    workbook: Path | None
    comparison_base: str | None = None
    new: int = 0
    changed: int = 0  # substantive changes (headline)
    withdrawn: int = 0
    cosmetic: int = 0
    registry_size: int | None = None
    watchlist_hits: int = 0
    status_reason: str = ""
    events: tuple[EventLine, ...] = ()
    url: str = ""  # download link (the file server), optional
    run_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "day", _iso(self.day))
        object.__setattr__(self, "comparison_base", _iso(self.comparison_base) or None)
        if self.workbook is not None:
            object.__setattr__(self, "workbook", Path(self.workbook))

    @classmethod
    def from_day_report(cls, report: Any, workbook: Path | str | None, *, url: str = "", run_id: str | None = None,
                        top: int = 10) -> ReportDelivery:
        """Build from a `dmf_assets.report.model.DayReport` (what xlsx_report has in hand)."""
        k = report.kpis
        status = getattr(report.status, "value", report.status)
        headline = [e for e in report.events if not getattr(e, "is_cosmetic", False)]
        headline.sort(key=lambda e: (not e.watchlist_hit, _SEVERITY_RANK.get(e.severity, 9)))
        lines = tuple(
            EventLine(e.event_type, e.severity, e.permit_no, e.ingredient, e.applicant, e.manufacturer, e.countries,
                      tuple(e.changed_fields), bool(e.watchlist_hit), tuple(e.watch_reasons),
                      bool(getattr(e, "is_reappearance", False)))
            for e in headline[: max(top, sum(1 for e in headline if e.watchlist_hit))]
        )
        return cls(day=report.day, status=status, workbook=Path(workbook) if workbook else None,
                   comparison_base=report.comparison_base, new=k.new, changed=k.changed, withdrawn=k.withdrawn,
                   cosmetic=k.cosmetic, registry_size=k.registry_size, watchlist_hits=k.watchlist_hits,
                   status_reason=report.status_reason, events=lines, url=url, run_id=run_id)


def report_subject(d: ReportDelivery, *, revision: bool = False) -> str:
    again = " (갱신 / updated)" if revision else ""
    if d.status == "rejected":
        return f"[DMF] {d.day} — 수집 실패 (비교 기준 {d.comparison_base or '없음'}){again}"
    if d.status == "baseline":
        size = f" · 등록 {_n(d.registry_size)}" if d.registry_size is not None else ""
        return f"[DMF] {d.day} — 기준일 수집 (baseline){size}{again}"
    watch = f" · 관심목록 {d.watchlist_hits}" if d.watchlist_hits else ""
    return f"[DMF] {d.day} — 신규 {d.new} · 변경 {d.changed} · 취하 {d.withdrawn}{watch}{again}"


def compose_report(d: ReportDelivery, *, top: int = 10, revision: bool = False) -> Message:
    status = STATUS_LABEL.get(d.status, d.status)
    base = d.comparison_base or "없음"
    if d.status == "rejected":
        title = (f"{d.day} 수집이 거부되어 결과가 반영되지 않았습니다. 비교 기준은 여전히 {base}입니다 "
                 "(collection failed — comparison base unchanged).")
    elif d.status == "baseline":
        title = f"{d.day} 첫 수집으로 기준일(baseline)이 만들어졌습니다. 비교할 이전 날이 없어 이벤트는 없습니다."
    elif d.status == "unchanged" or not (d.new or d.changed or d.withdrawn):
        title = f"{d.day} 등록 현황은 {base} 대비 변경이 없습니다 (no change)."
    else:
        title = f"{d.day} 등록 현황: {base} 대비 신규 {d.new}건, 변경 {d.changed}건, 취하 {d.withdrawn}건."
    sections = [("상태 / Status", f"{status}" + (f" — {d.status_reason}" if d.status_reason else ""))]
    watched = [e for e in d.events if e.watchlist_hit]
    others = [e for e in d.events if not e.watchlist_hit]
    if watched:
        sections.append((f"관심목록 해당 / Watchlist hits ({len(watched)})",
                         "\n".join(f"  ★ {event_sentence(e)}" for e in watched)))
    if others:
        shown = others[:top]
        more = (d.new + d.changed + d.withdrawn) - len(watched) - len(shown)
        text = "\n".join(f"  {i}. {event_sentence(e)}" for i, e in enumerate(shown, 1))
        if more > 0:
            text += f"\n  … 외 {more}건은 첨부한 리포트에 있습니다."
        sections.append(("주요 이벤트 / Top events", text))
    attach = f"첨부: {d.workbook.name}" if d.workbook else "첨부 없음 (리포트 파일을 찾을 수 없음)"
    sections.append(("리포트 / Workbook", attach))
    facts = [("날짜 / day", d.day), ("비교 기준 / comparison base", base)]
    if d.registry_size is not None:
        facts.append(("등록 수 / registry size", _n(d.registry_size)))
    if d.status not in ("rejected", "baseline"):
        facts += [("신규 / new", _n(d.new)), ("변경 / changed", _n(d.changed)), ("취하 / withdrawn", _n(d.withdrawn))]
        if d.cosmetic:
            facts.append(("표기 변경(별도) / cosmetic", _n(d.cosmetic)))
    level = WARNING if d.status == "rejected" or watched else INFO
    return Message(subject=report_subject(d, revision=revision), title=title, level=level, sections=tuple(sections),
                   facts=tuple(facts), link=d.url, kind="report", day=d.day)


# --- rules the sensor can use to decide (pure) ------------------------------------------------


def rejected_streak(statuses: Mapping[str, str] | Sequence[tuple[Any, str]], n: int = 3) -> list[str]:
    """The trailing run of consecutive rejected days (by processing order = date order) if it is >= n long.

    `statuses`: day -> status (accepted | baseline | unchanged | rejected) for recent processed days.
    Returns the rejected days oldest first, or [] when the latest days are not n rejections in a row.
    """
    items = sorted((_iso(d), s) for d, s in (statuses.items() if isinstance(statuses, Mapping) else statuses))
    run: list[str] = []
    for day, status in reversed(items):
        if status != "rejected":
            break
        run.append(day)
    return sorted(run) if len(run) >= n else []


def slow_run(seconds: float, recent_seconds: Sequence[float], factor: float = 3.0, window: int = 14,
             min_samples: int = 5) -> float | None:
    """The median of the last `window` runs when `seconds` >= factor x that median, else None."""
    sample = sorted(float(s) for s in list(recent_seconds)[-window:] if s and s > 0)
    if len(sample) < min_samples:
        return None
    mid = len(sample) // 2
    median = sample[mid] if len(sample) % 2 else (sample[mid - 1] + sample[mid]) / 2
    return median if seconds >= factor * median else None


def withdrawal_share_exceeded(withdrawn: int, registry_size: int | None, threshold: float = 0.02) -> bool:
    return bool(registry_size) and withdrawn / registry_size > threshold


def alerts_for_day(delivery: ReportDelivery, *, withdrawal_share_max: float = 0.02) -> list[Alert]:
    """The alerts a finished day raises by itself: watchlist hits (always, even on a quiet day) and
    withdrawals above `withdrawal_share_max` of the registry on an accepted day."""
    out = []
    hits = [e.to_dict() for e in delivery.events if e.watchlist_hit]
    if delivery.status != "rejected" and (hits or delivery.watchlist_hits):
        out.append(alert_watchlist_hit(delivery.day, hits=hits or [f"관심목록 해당 {delivery.watchlist_hits}건 — 리포트 참조"],
                                       run_id=delivery.run_id))
    if delivery.status == "accepted" and withdrawal_share_exceeded(delivery.withdrawn, delivery.registry_size,
                                                                    withdrawal_share_max):
        out.append(alert_withdrawal_share(delivery.day, withdrawn=delivery.withdrawn,
                                          registry_size=delivery.registry_size or 0,
                                          threshold=withdrawal_share_max, run_id=delivery.run_id))
    return out
