"""The fault-injection acceptance matrix, shared by its test and by the command that writes its doc.

For each kind in `FAULT_KINDS`: good day (2026-10-06) → faulty day (2026-10-07) → good day (2026-10-08),
run day by day with `launch.run_days` (follow-up runs included, as under the sensor). `run_matrix` runs
every kind and returns plain data; `problems_of` says what is wrong with one kind's result (the
expected outcomes are in `EXPECTED`); `render_doc` renders `docs/fault_matrix.md` in memory.

Used by `dmf_assets_tests/pipeline/test_fault_matrix.py` (asserts every kind's outcome; never writes the doc)
and `python -m dmf_assets_tests.fault_matrix_doc` (runs the same matrix and writes the doc atomically).

Speed: each worker process runs the baseline day once and copies that workspace (DuckDB, raw archive,
staging, Dagster instance) for every kind; the doc command shares the kinds between two spawned workers,
the test runs them in its own pytest worker (the suite's other workers keep the cores busy). The faulty days run
on the fetch's fake clock (`source.politeness.fake_clock`): the delays (slow_responses 0.3 s, timeouts 1.5 s
against a 1.0 s read timeout), the backoffs (base 0.2 s), Retry-After and the adaptive pauses are exact and take
no time.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

from dmf_assets.domain.gates import GATES
from dmf_assets.emulator import faults as F
from dmf_assets.settings import PROJECT_ROOT

DAYS = (date(2026, 10, 6), date(2026, 10, 7), date(2026, 10, 8))
FAULT_DAY = DAYS[1]
SEED = 20250101
READ_TIMEOUT_S = 1.0
BACKOFF_BASE_S = 0.2
#: fast but still real parameters: a 0.3 s delay on every page; 1.5 s first attempts against a 1.0 s read timeout
FAULT_SPECS = {"slow_responses": "slow_responses:delay_s=0.3", "timeouts": "timeouts:delay_s=1.5"}
WORKERS = 2
DOC = PROJECT_ROOT / "docs" / "fault_matrix.md"
#: the command that writes DOC (dmf_assets_tests/fault_matrix_doc.py)
COMMAND = "python -m dmf_assets_tests.fault_matrix_doc"


@dataclass(frozen=True)
class Expected:
    accepted: bool
    gate: int | None = None  # the gate that must reject the day
    evidence: str = ""  # for accepted kinds: what proves the fault really happened


def _accepted(evidence: str) -> Expected:
    return Expected(True, None, evidence)


def _rejected(gate: int) -> Expected:
    return Expected(False, gate)


#: The outcome each kind must reach (from the emulator's documented behaviour, faults.FAULT_KINDS): the kinds a
#: gate must refuse are listed on that gate's registry entry (`domain.gates.Gate.faults`); the rest recover.
EXPECTED: dict[str, Expected] = {
    "http_5xx_burst": _accepted("retries"),
    "rate_limit_429": _accepted("retry_after"),
    "slow_responses": _accepted("slow"),
    "timeouts": _accepted("timeouts"),
    "row_repeated": _accepted("dedup"),
    "hostile_text": _accepted("hostile"),  # not a transport fault: stored verbatim-but-safe
    "dates_restyled": _accepted("restyled"),  # the same dates in another style: no issue date changed
    **{kind: _rejected(g.number) for g in GATES for kind in g.faults},
}
#: slowest first, so the two workers finish together
COST_ORDER = ("http_5xx_burst", "timeouts", "rate_limit_429", "slow_responses")

GATE_NAMES = {g.number: f"{g.label_ko} {g.label_en}" for g in GATES}


# --- the worker side (runs in spawned processes) ---------------------------------------------------

_TEMPLATE: Path | None = None


def _workspace(root: Path, faults: dict[str, str], *, fresh: bool):
    from dmf_assets_tests.graph_support import make_workspace

    # a short read timeout and backoff keep the transient faults fast; the Dagster records stay in memory
    # (nothing outside this process reads them: see graph_support.make_workspace)
    fast = {"read_timeout_s": READ_TIMEOUT_S, "backoff_base_s": BACKOFF_BASE_S}
    return make_workspace(root, faults, reuse=not fresh, records_in_memory=True, **fast)


def _baseline(base_dir: Path) -> Path:
    """This process's copy-source: a workspace where the first day ran (once per worker)."""
    global _TEMPLATE
    if _TEMPLATE is None:
        from dmf_assets.runs import launch

        root = base_dir / f"baseline-{os.getpid()}"
        ws = _workspace(root, {}, fresh=True)
        reports = launch.run_days([DAYS[0]], instance=ws.instance, resources=ws.resources)
        assert all(r.success for r in reports), reports
        ws.instance.dispose()
        _TEMPLATE = root
    return _TEMPLATE


def _warm() -> None:
    from dmf_assets.emulator.client import default_simulator

    default_simulator(SEED).items(FAULT_DAY)  # build the registry's event log once per worker


def _served_date_styles(raw_dir: Path, manifest) -> dict[str, int]:
    """How the faulty day's archived pages wrote the issue dates: ISO (2011-06-15), the official style
    (「2011. 6. 15.」) or otherwise (none, or another shape)."""
    from dmf_assets.source.archive import read_page

    styles = {"iso": 0, "official": 0, "other": 0}
    for entry in manifest.pages if manifest else ():
        if not entry.ok or entry.nodata:
            continue
        for value in re.findall(
            rb'"DMF_PERMIT_DATE":\s*("[^"]*"|null)', read_page(raw_dir / FAULT_DAY.isoformat(), entry)
        ):
            text = value.decode().strip('"')
            if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
                styles["iso"] += 1
            elif re.fullmatch(r"\d{4}\. [1-9]\d?\. [1-9]\d?\.", text):
                styles["official"] += 1
            else:
                styles["other"] += 1
    return styles


def _score_day(conn, sim, day: date, base: date, seen: list[date], exclude: set[str]) -> dict:
    from dmf_assets_tests.scoring import score, stored_events

    truth = sim.truth(base, day, seen=seen)
    events = [e for e in stored_events(conn, day) if e.permit_no not in exclude]
    truth = replace(truth, changes=tuple(c for c in truth.changes if c.permit_no not in exclude))
    s = score(events, truth)
    return {
        "tp": dict(s.true_positive),
        "fp": dict(s.false_positive),
        "fn": dict(s.false_negative),
        "missed": [list(map(str, m)) for m in s.missed[:5]],
        "spurious": [list(map(str, m)) for m in s.spurious[:5]],
        "events": len(events),
        "truth": len(truth.changes),
    }


def run_kind(kind: str, base_dir: str) -> dict:
    """Good day, faulty day, good day for one kind; everything the checks need, as plain data."""
    try:
        return _run_kind(kind, Path(base_dir))
    except Exception:  # noqa: BLE001 - reported as this kind's failure, the other kinds still run
        return {"kind": kind, "error": traceback.format_exc()}


def _run_kind(kind: str, base_dir: Path) -> dict:
    from dmf_assets.domain.text import display_text
    from dmf_assets.emulator.client import default_simulator
    from dmf_assets.runs import launch
    from dmf_assets.source.archive import DayArchive
    from dmf_assets.source.politeness import fake_clock
    from dmf_assets.storage import history
    from dmf_assets_tests.graph_support import runs_by_day
    from dmf_assets_tests.scoring import stored_events

    started = time.monotonic()
    spec = FAULT_SPECS.get(kind, kind)
    root = base_dir / kind
    shutil.copytree(_baseline(base_dir), root)
    ws = _workspace(root, {FAULT_DAY.isoformat(): spec}, fresh=False)
    with fake_clock():
        reports = launch.run_days(DAYS[1:], instance=ws.instance, resources=ws.resources)
    sim = default_simulator(SEED)

    hostile: set[str] = set()
    if kind == "hostile_text":
        rows = sim.items(FAULT_DAY)
        hostile = {
            display_text(rows[i]["DMF_PERMIT_NO"], "permit") for i in F.hostile_rows(FAULT_DAY.isoformat(), rows)
        }

    runs = runs_by_day(ws)
    accepted = sorted(d for d, r in runs.items() if r["status"] in history.ACCEPTED_STATUSES)
    out: dict = {"kind": kind, "spec": spec, "runs": {}, "scores": {}, "hostile_events": {}}
    with ws.connect() as conn:
        for day, r in runs.items():
            out["runs"][day.isoformat()] = {
                "status": r["status"],
                "rejected_gate": r["rejected_gate"],
                "reason": r["reason"],
                "base_day": str(history.to_date(r["base_day_id"])) if r["base_day_id"] else None,
                "new": r["new_count"],
                "changed": r["changed_count"],
                "withdrawn": r["withdrawn_count"],
            }
            d = history.day_id(day)
            out["runs"][day.isoformat()]["snapshot_rows"] = conn.execute(
                "SELECT count(*) FROM snapshots WHERE day_id = ?", [d]
            ).fetchall()[0][0]
            out["runs"][day.isoformat()]["event_rows"] = conn.execute(
                "SELECT count(*) FROM events WHERE day_id = ?", [d]
            ).fetchall()[0][0]
            if r["status"] == "accepted":
                base = history.to_date(r["base_day_id"])
                out["scores"][day.isoformat()] = _score_day(
                    conn, sim, day, base, [x for x in accepted if x < base], hostile
                )
                if hostile:
                    out["hostile_events"][day.isoformat()] = sorted(
                        [e.permit_no, e.event_type.value] for e in stored_events(conn, day) if e.permit_no in hostile
                    )
        out["gates"] = [
            {
                k: g[k]
                for k in ("gate_no", "passed", "observed_value", "threshold_value", "observed", "threshold", "detail")
            }
            for g in history.gate_rows(conn, FAULT_DAY)
        ]
    manifest = DayArchive(ws.resources["mfds"].raw_path(), FAULT_DAY).published_manifest()
    out["fetch"] = dict(manifest.totals or {}) if manifest else {}
    out["attempts"] = [
        [{k: a.get(k) for k in ("status", "error", "wait_s", "elapsed_ms", "retry_after_s")} for a in p.attempts]
        for p in (manifest.pages if manifest else ())
    ]
    out["hostile_numbers"] = sorted(hostile)
    out["served_dates"] = _served_date_styles(ws.resources["mfds"].raw_path(), manifest)
    out["reports"] = [{"day": r.day, "success": r.success, "failure": r.failure} for r in reports]
    out["workbooks"] = {d.isoformat(): (root / "reports" / f"DMF_리포트_{d.isoformat()}.xlsx").exists() for d in DAYS}
    out["seconds"] = round(time.monotonic() - started, 1)
    ws.instance.dispose()
    return out


# --- the checks (pure: a result in, a list of problems out) -----------------------------------------


def _evidence_problems(kind: str, res: dict) -> list[str]:
    """For kinds that must be recovered transparently: proof that the fault really hit the day."""
    fetch, attempts = res["fetch"], res["attempts"]
    pages = len(attempts)
    how = EXPECTED[kind].evidence
    fault = F.parse_fault(res["spec"])
    if how in ("retries", "retry_after", "timeouts"):
        hit = F.affected_pages(fault, FAULT_DAY.isoformat(), pages)
        per_page = 2 if how == "retries" else 1
        if fetch.get("retries") != per_page * len(hit):
            return [f"retries {fetch.get('retries')} != {per_page} x {len(hit)} affected pages"]
        for page_no in hit:
            tries = attempts[page_no - 1]
            if len(tries) != per_page + 1 or tries[-1]["status"] != 200:
                return [f"page {page_no}: attempts {tries}"]
            if how == "retry_after" and not (tries[0]["status"] == 429 and tries[1]["wait_s"] >= 1.0):
                return [f"page {page_no}: Retry-After not honoured: {tries}"]
            if how == "timeouts" and tries[0]["error"] != "timeout: ReadTimeout":
                return [f"page {page_no}: first attempt did not time out: {tries[0]}"]
        return []
    if how == "slow":
        slow = [a["elapsed_ms"] for p in attempts for a in p]
        return [] if pages and all(ms == 300 for ms in slow) else [f"answers not delayed 0.3 s each: {slow}"]
    if how == "dedup":
        ok = fetch.get("duplicate_rows_dropped") == 1 and fetch.get("rows_received") == fetch.get("total_count", 0) + 1
        return [] if ok else [f"repeated row not seen/dropped: {fetch}"]
    if how == "hostile":
        numbers = res["hostile_numbers"]
        problems = [] if len(numbers) == len(F.HOSTILE_PAYLOADS) else [f"hostile rows {numbers}"]
        for day in (DAYS[1], DAYS[2]):  # changed on the hostile day, changed back on the next
            got = res["hostile_events"].get(day.isoformat())
            if got != sorted([n, "CHANGED"] for n in numbers):
                problems.append(f"{day}: hostile rows' events {got}")
        return problems
    if how == "restyled":  # every dated row was served in the official style; the scores show no date changed
        styles = res["served_dates"]
        ok = styles["iso"] == 0 and styles["official"] > 9_000
        return [] if ok else [f"issue dates served as {styles}, not all in the official style"]
    return [f"no evidence rule for {kind}"]


def problems_of(kind: str, res: dict) -> list[str]:
    if "error" in res:
        return [res["error"]]
    exp = EXPECTED[kind]
    runs = res["runs"]
    d1, d2, d3 = (d.isoformat() for d in DAYS)
    problems: list[str] = []
    if set(runs) != {d1, d2, d3}:
        return [f"days processed: {sorted(runs)}"]
    if [r for r in res["reports"] if r["failure"]]:
        problems.append(f"a step failed (not a gate): {res['reports']}")
    if runs[d1]["status"] != "baseline" or runs[d3]["status"] != "accepted":
        problems.append(f"good days: {runs[d1]['status']}, {runs[d3]['status']}")
    if not all(res["workbooks"].values()):
        problems.append(f"workbooks: {res['workbooks']}")
    gates = {g["gate_no"]: g for g in res["gates"]}
    fault_run = runs[d2]
    if exp.accepted:
        if fault_run["status"] != "accepted":
            problems.append(
                f"faulty day {fault_run['status']} (gate {fault_run['rejected_gate']}: {fault_run['reason']})"
            )
        if runs[d3]["base_day"] != d2:
            problems.append(f"recovery day base {runs[d3]['base_day']} != {d2}")
        problems += _evidence_problems(kind, res)
    else:
        if fault_run["status"] != "rejected" or fault_run["rejected_gate"] != exp.gate:
            problems.append(
                f"faulty day {fault_run['status']} at gate {fault_run['rejected_gate']}, expected gate {exp.gate}"
            )
        gate = gates.get(exp.gate)
        if (
            gate is None
            or gate["passed"] is not False
            or not gate["observed"]
            or not gate["threshold"]
            or (gate["observed_value"] is None or gate["threshold_value"] is None)
        ):
            problems.append(f"gate {exp.gate} numbers not recorded: {gate}")
        if fault_run["snapshot_rows"] or fault_run["event_rows"]:
            problems.append(
                f"rejected day wrote history: {fault_run['snapshot_rows']} snapshot rows, {fault_run['event_rows']} events"
            )
        if runs[d3]["base_day"] != d1:
            problems.append(f"baseline moved: recovery day compared with {runs[d3]['base_day']}, not {d1}")
        if d2 in res["scores"]:
            problems.append("a rejected day was scored as accepted")
    for day in ([d2] if exp.accepted else []) + [d3]:
        s = res["scores"].get(day)
        if s is None:
            problems.append(f"{day}: no stored events to score")
            continue
        if s["fp"] or s["fn"]:
            problems.append(f"{day}: events != ground truth — missed {s['missed']}, spurious {s['spurious']}")
    d3_score = res["scores"].get(d3)
    if d3_score is not None and sum(d3_score["tp"].values()) == 0:
        problems.append("recovery day has no true events: the comparison proves nothing")
    return problems


# --- the doc ---------------------------------------------------------------------------------------


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _observed(kind: str, res: dict) -> str:
    if "error" in res:
        return "오류 error"
    exp = EXPECTED[kind]
    if not exp.accepted:
        gate = next((g for g in res["gates"] if g["gate_no"] == exp.gate), None)
        return f"{gate['observed']} (기준 threshold: {gate['threshold']})" if gate else "-"
    fetch = res["fetch"]
    run = res["runs"][FAULT_DAY.isoformat()]
    parts = [f"요청 requests {fetch.get('requests')}", f"재시도 retries {fetch.get('retries')}"]
    if fetch.get("duplicate_rows_dropped"):
        parts.append(f"반복 행 제거 repeated rows dropped {fetch['duplicate_rows_dropped']}")
    if kind == "slow_responses":
        parts.append("모든 응답 ≥ 0.3 s / every answer ≥ 0.3 s")
    if kind == "hostile_text":
        parts.append(
            f"악성 값 {len(res['hostile_numbers'])}행 변경 반영 후 다음 날 원복 / "
            f"{len(res['hostile_numbers'])} hostile rows CHANGED, changed back the next day"
        )
    if kind == "dates_restyled":
        n = res["served_dates"]["official"]
        parts.append(
            f"발급일자 {n:,}건 모두 「2011. 6. 15.」 방식, 바뀐 날짜 없음 / {n:,} issue dates restyled, none changed"
        )
    parts.append(f"신규 NEW {run['new']} · 변경 CHANGED {run['changed']} · 삭제 WITHDRAWN {run['withdrawn']}")
    return ", ".join(parts)


def _outcome(kind: str, res: dict) -> str:
    run = res.get("runs", {}).get(FAULT_DAY.isoformat())
    if run is None:
        return "-"
    if run["status"] == "accepted":
        return "반영 accepted — 이벤트 = 정답 / events = ground truth"
    return f"거부 rejected — 기준일 유지 / base stays {DAYS[0]}"


def render_doc(results: dict[str, dict]) -> str:
    total_withdrawn_fp = sum(
        s["fp"].get("WITHDRAWN", 0) for r in results.values() for s in r.get("scores", {}).values()
    )
    lines = [
        "# 고장 주입 수용 매트릭스 / Fault-injection acceptance matrix",
        "",
        f"> 자동 생성 파일 — `{COMMAND}` 명령이 씁니다(테스트는 이 파일을 쓰지 않습니다). 손으로 고치지 마세요.",
        f"> Generated by `{COMMAND}` (runs the matrix `dmf_assets_tests/pipeline/test_fault_matrix.py` asserts); do not edit by hand.",
        "",
        f"에뮬레이터의 모든 고장 종류마다 실제 Dagster 실행으로 정상일({DAYS[0]}) → 고장일({DAYS[1]}) → 정상일({DAYS[2]})을 "
        "처리합니다. 고장일은 재시도 등으로 투명하게 복구되어 정답대로 반영되거나, 해당 게이트에서 수치와 함께 거부되어야 "
        "합니다. 거부된 날은 기준일을 움직이지 않고, 복구일의 이벤트는 전체 기간에 대해 에뮬레이터 정답과 같아야 합니다.",
        "",
        f"For every fault kind the emulator offers, a real Dagster run of good day ({DAYS[0]}) → faulty day "
        f"({DAYS[1]}) → good day ({DAYS[2]}). The faulty day is either recovered transparently (retried / "
        "de-duplicated, accepted with the true events) or rejected by the listed gate with its numbers; a "
        "rejected day does not move the comparison base, and the recovery day's events equal the emulator's "
        "ground truth for the whole span.",
        "",
        "| 고장 fault | 설명 description | 결과 outcome | 게이트 gate | 관측값 observed | 판정 result |",
        "|---|---|---|---|---|---|",
    ]
    for kind in F.FAULT_KINDS:
        res = results.get(kind, {"kind": kind, "error": "not run"})
        fk = F.FAULT_KINDS[kind]
        exp = EXPECTED.get(kind)
        problems = problems_of(kind, res) if exp else ["no expected outcome"]
        spec = res.get("spec", kind)
        gate = "—" if exp is None or exp.gate is None else f"{exp.gate} {GATE_NAMES[exp.gate]}"
        verdict = "✅" if not problems else "❌ " + "; ".join(p.splitlines()[-1][:200] for p in problems)
        lines.append(
            "| "
            + " | ".join(
                _cell(v)
                for v in (
                    f"`{spec}`",
                    f"{fk.ko}<br>{fk.en}",
                    _outcome(kind, res),
                    gate,
                    _observed(kind, res),
                    verdict,
                )
            )
            + " |"
        )
    lines += [
        "",
        f"잘못된 목록에서 삭제(WITHDRAWN) 합계 / false WITHDRAWN across the matrix: **{total_withdrawn_fp}**",
        "",
        f"조건 / settings: 읽기 제한 시간 read timeout {READ_TIMEOUT_S:g} s, 재시도 간격 기준 backoff base "
        f"{BACKOFF_BASE_S:g} s, 쪽당 500행 / 500 rows per page, 에뮬레이터 seed {SEED}.",
        "",
    ]
    return "\n".join(lines)


def write_doc_atomically(path: Path, text: str) -> bool:
    """Replace the doc only when its content changed (deterministic numbers: no git churn)."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return True


# --- the whole matrix ------------------------------------------------------------------------------


def run_matrix(base_dir: Path, *, workers: int = WORKERS) -> dict[str, dict]:
    """Every fault kind, on `workers` spawned processes (1: in this process), in `base_dir` (a scratch
    folder): kind → result."""
    kinds = sorted(F.FAULT_KINDS, key=lambda k: COST_ORDER.index(k) if k in COST_ORDER else len(COST_ORDER))
    if workers <= 1:
        _warm()
        return {kind: run_kind(kind, str(base_dir)) for kind in kinds}
    ctx = multiprocessing.get_context("spawn")  # polars/DuckDB thread pools do not survive fork
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_warm) as pool:
        futures = {kind: pool.submit(run_kind, kind, str(base_dir)) for kind in kinds}
        return {kind: f.result() for kind, f in futures.items()}


def timing_line(results: dict[str, dict], seconds: float) -> str:
    return (
        f"[fault matrix: {len(results)} kinds in {seconds:.1f} s; per kind: "
        + ", ".join(f"{k} {r.get('seconds', '?')}s" for k, r in results.items())
        + "]"
    )
