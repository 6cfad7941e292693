"""The daily asset graph: raw_pages → normalized_records → integrity_verdict → snapshot_diff → events → xlsx_report.

Each asset is a short recipe over `orchestration.pipeline`. The gates live in the data as well as in
the checks: `integrity_verdict` stores the verdict and rejects the day in the database itself, and
`snapshot_diff` commits history only for a day that passed all six gates — whatever ran before,
in whatever kind of run.
"""


import json
import os
import time
import warnings
from datetime import date, timedelta
from urllib.parse import quote

import dagster as dg
import polars as pl

from dmf_assets.defs.partitions import daily_partitions, partition_days
from dmf_assets.defs.resources import DmfWorkspace, HistoryDatabase
from dmf_assets.domain.gates import GATE_LABELS, GateOutcome
from dmf_assets.domain.model import EVENT_LABEL_KO, NORMALIZED_COLUMNS, SEVERITY_LABEL_KO
from dmf_assets.orchestration import pipeline, staging
from dmf_assets.report.workbook import write_workbook
from dmf_assets.settings import load_settings
from dmf_assets.source.client import MfdsClient
from dmf_assets.source.errors import PastDateUnavailable, RequestCapExceeded
from dmf_assets.storage import history
from dmf_assets.storage.report_data import DayNotReady, build_day_report, day_events_frame

# We rely on backfill_policy deliberately (run-per-day or single-run backfills, config [backfill]);
# Dagster flags the parameter as beta at every load — once per asset — which is noise for users.
warnings.filterwarnings("ignore", message=r"Parameter `backfill_policy` of function `asset` is currently in beta")

BACKFILL_POLICY = (
    dg.BackfillPolicy.single_run() if load_settings().backfill.single_run else dg.BackfillPolicy.multi_run(1)
)
QUALITY_CHECKS = (
    ("row_count", "수집 건수 범위"),
    ("permit_parse_rate", "등록번호 해석률"),
    ("new_substance_ratio", "신물질 비율"),
    ("unknown_groups", "미확인 그룹 문자"),
    ("synthetic_keys", "등록번호 미부여(합성 키)"),
    ("invalid_dates", "발급일자 형식 오류"),
    ("future_dates", "미래 발급일자"),
    ("ancient_dates", "1990년 이전 발급일자"),
    ("issue_before_acceptance", "접수일 이전 발급일자"),
    ("unresolved_countries", "미확인 국가명"),
    ("oversize_fields", "규격 초과 길이"),
    ("replacement_chars", "깨진 문자(U+FFFD)"),
    ("site_split_failures", "제조소 분리 실패"),
    ("schema_drift", "응답 필드 변화"),
    ("page_repeats", "페이지 간 반복 행"),
)
GATE_CHECK_NAMES = {n: f"gate_{n}_{name}" for n, (name, _) in GATE_LABELS.items()}


def _gate_description(n: int) -> str:
    return {
        1: "전송: 모든 쪽이 HTTP 200, resultCode 00, 올바른 응답 본문",
        2: "완전성: 수신 건수(페이지 간 반복 제거 후) = totalCount",
        3: "감소율: 마지막 정상 수집일 대비 totalCount 감소 ≤ 5 %",
        4: "결측: 등록번호·성분명·신청인 결측 비율 각 ≤ 1 %",
        5: "중복: 중복 등록번호 비율 ≤ 2 %",
        6: "변동률: (신규+변경+취하)/전체 ≤ 10 % (비교 후 평가)",
    }[n]


def _md_table(header: list[str], rows: list[list]) -> str:
    def cell(v) -> str:
        return str("" if v is None else v).replace("|", "\\|").replace("\n", " ")[:120]

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def _gate_md(gates: list[GateOutcome]) -> str:
    mark = {True: "✅ 통과", False: "❌ 실패", None: "— 미평가"}
    return _md_table(
        ["#", "게이트", "결과", "관측값", "기준", "설명"],
        [[g.number, g.label_ko, mark[g.passed], g.observed, g.threshold, g.detail] for g in gates],
    )


def _gate_check(g: GateOutcome, asset: str, days_note: str = "") -> dg.AssetCheckResult:
    passed = g.passed is not False
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=GATE_CHECK_NAMES[g.number],
        passed=passed,
        # a gate that was not evaluated (the day was already rejected) must not block the rejected-day report
        severity=dg.AssetCheckSeverity.ERROR if g.passed is not None else dg.AssetCheckSeverity.WARN,
        description=f"{g.label_ko}: {g.observed} (기준 {g.threshold}) — {g.detail}{days_note}",
        metadata={
            "observed": dg.MetadataValue.text(g.observed),
            "observed_value": dg.MetadataValue.float(g.observed_value) if g.observed_value is not None else None,
            "threshold": dg.MetadataValue.text(g.threshold),
            "threshold_value": dg.MetadataValue.float(g.threshold_value) if g.threshold_value is not None else None,
            "detail": dg.MetadataValue.text(g.detail),
            "samples": dg.MetadataValue.json(list(g.samples)),
        },
    )


def _worst_gate(per_day: dict[date, GateOutcome]) -> tuple[GateOutcome, str]:
    """In a multi-day run one check result covers all days: report the first failing day."""
    failing = [(d, g) for d, g in sorted(per_day.items()) if g.passed is False]
    if failing:
        d, g = failing[0]
        note = f" [{d}" + (f" 외 {len(failing) - 1}일" if len(failing) > 1 else "") + " 실패]" if len(per_day) > 1 else ""
        return g, note
    d, g = sorted(per_day.items())[-1]
    return g, (f" [{len(per_day)}일 모두 통과]" if len(per_day) > 1 else "")


# --- raw_pages -----------------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    backfill_policy=BACKFILL_POLICY,
    group_name="collect",
    kinds={"python"},
    description=(
        "MFDS 원료의약품 등록(DMF) 현황 Open API에서 그날의 전체 목록을 모든 쪽 받아 원본 그대로 보관합니다 "
        "(data/raw/YYYY-MM-DD/, gzip). Fetches every page of the registry for the day and archives it before parsing."
    ),
)
def raw_pages(context: dg.AssetExecutionContext, mfds: MfdsClient, workspace: DmfWorkspace) -> dg.MaterializeResult:
    staging_dir = workspace.path("staging_dir")
    rows = []
    for day in partition_days(context):
        try:
            facts, extra = pipeline.collect(mfds, day, staging_dir, context.log)
        except (PastDateUnavailable, RequestCapExceeded) as exc:
            raise dg.Failure(description=str(exc)) from None
        context.log.info(
            f"{day}: {facts.rows_after_dedup:,}건 수신 (totalCount {facts.total_count}), 쪽 {facts.pages_ok}/"
            f"{facts.pages_ok + facts.pages_failed}, 요청 {extra['requests']}회, 재시도 {extra['retries']}회, "
            f"{extra['elapsed_s']:.1f}초, 출처 {extra['source']}"
        )
        rows.append((day, facts, extra))
    day, facts, extra = rows[-1]
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": dg.MetadataValue.int(facts.rows_after_dedup),
            "total_count": facts.total_count,
            "transport_ok": facts.transport_ok,
            "pages": facts.pages_ok + facts.pages_failed,
            "requests": extra["requests"],
            "retries": extra["retries"],
            "fetch_seconds": dg.MetadataValue.float(float(extra["elapsed_s"])),
            "source": extra["source"],
            "archive": dg.MetadataValue.path(extra["archive_dir"]),
            "days": dg.MetadataValue.md(
                _md_table(
                    ["날짜", "수신", "totalCount", "전송", "요청", "재시도", "초"],
                    [[d, f.rows_after_dedup, f.total_count, "정상" if f.transport_ok else "실패", e["requests"],
                      e["retries"], e["elapsed_s"]] for d, f, e in rows],
                )
            ),
        }
    )


# --- normalized_records --------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    backfill_policy=BACKFILL_POLICY,
    deps=[raw_pages],
    group_name="collect",
    kinds={"polars", "parquet"},
    check_specs=[
        dg.AssetCheckSpec(name, asset="normalized_records", description=f"품질 경고: {label}") for name, label in QUALITY_CHECKS
    ],
    description=(
        "원본 행을 표시값(사람이 읽는 값)과 비교 키(띄어쓰기·문장부호·법인 표기 무시)로 정규화하고 등록번호를 해석해 "
        "dmf_key를 부여합니다. Normalized, keyed rows of the day (staging parquet)."
    ),
)
def normalized_records(context: dg.AssetExecutionContext, workspace: DmfWorkspace):
    settings = workspace.settings()
    staging_dir = workspace.path("staging_dir")
    per_day = {}
    for day in partition_days(context):
        started = time.monotonic()
        keyed, quality = pipeline.normalize(staging_dir, day, settings)
        context.log.info(f"{day}: {keyed.height:,}행 정규화 ({time.monotonic() - started:.2f}초)")
        per_day[day] = (keyed, {q.name: q for q in quality})
    day, (keyed, quality) = sorted(per_day.items())[-1]
    preview = keyed.select("dmf_key", "permit_fmt", "ingredient", "applicant", "countries", "issue_date").head(10)
    yield dg.MaterializeResult(
        metadata={
            "dagster/row_count": dg.MetadataValue.int(keyed.height),
            "dagster/column_schema": dg.TableSchema(
                columns=[dg.TableColumn(name, description=desc) for name, desc in NORMALIZED_COLUMNS.items()]
            ),
            "synthetic_keys": int(keyed["is_synthetic"].sum()),
            "duplicate_numbers": int((keyed["dup_count"] > 1).sum()),
            "preview": dg.MetadataValue.md(_md_table(preview.columns, preview.rows())),
        }
    )
    for name, label in QUALITY_CHECKS:
        metrics = {d: q[name] for d, (_, q) in per_day.items() if name in q}
        failing = [d for d, m in sorted(metrics.items()) if not m.ok]
        m = metrics[failing[0]] if failing else metrics[day]
        yield dg.AssetCheckResult(
            check_name=name,
            passed=not failing,
            severity=dg.AssetCheckSeverity.WARN,
            description=f"{label}: {m.detail} (기대 {m.expected})" + (f" [{len(failing)}일 경고]" if len(metrics) > 1 and failing else ""),
            metadata={"value": dg.MetadataValue.float(float(m.value)), "expected": m.expected, "samples": dg.MetadataValue.json(list(m.samples))},
        )


# --- integrity_verdict ---------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    backfill_policy=BACKFILL_POLICY,
    deps=[normalized_records],
    group_name="verify",
    kinds={"duckdb"},
    pool="duckdb",
    check_specs=[
        *[
            dg.AssetCheckSpec(GATE_CHECK_NAMES[n], asset="integrity_verdict", blocking=True, description=_gate_description(n))
            for n in range(1, 6)
        ],
        dg.AssetCheckSpec("source_staleness", asset="integrity_verdict", description="품질 경고: 원천 데이터가 오래 바뀌지 않음"),
    ],
    description=(
        "수집본을 게이트 1–5(전송·완전성·감소율·결측·중복)로 판정해 DB에 기록합니다. 실패하면 그날은 거부되고 "
        "기준일은 움직이지 않습니다. Gates 1–5; a failure rejects the day in the database itself."
    ),
)
def integrity_verdict(context: dg.AssetExecutionContext, workspace: DmfWorkspace, duckdb: HistoryDatabase):
    settings = workspace.settings()
    staging_dir = workspace.path("staging_dir")
    judgements = {}
    for day in partition_days(context):
        with duckdb.get_connection() as conn:  # per day: other runs may interleave between days
            j = pipeline.judge(conn, staging_dir, day, settings, run_id=context.run_id)
            reason = None if j.passed else history.run_row(conn, day)["reason"]
        judgements[day] = j
        if j.passed:
            context.log.info(f"{day}: 게이트 1–5 통과 (기준일 {j.base.day or '없음 — 첫 수집일'})")
        else:
            context.log.warning(f"{day}: 거부 — {reason}")
    day, j = sorted(judgements.items())[-1]
    statuses = {d.isoformat(): ("통과" if x.passed else "거부") for d, x in judgements.items()}
    yield dg.MaterializeResult(
        metadata={
            "verdict": "pass" if j.passed else "rejected",
            "comparison_base": str(j.base.day) if j.base.day else "없음(첫 수집일)",
            "rows": j.rows,
            "gates": dg.MetadataValue.md(_gate_md(j.gates)),
            "day_statuses": dg.MetadataValue.json(statuses),
        }
    )
    for n in range(1, 6):
        g, note = _worst_gate({d: x.gates[n - 1] for d, x in judgements.items()})
        yield _gate_check(g, "integrity_verdict", note)
    stale = next((q for q in j.quality if q.name == "days_since_source_change"), None)
    yield dg.AssetCheckResult(
        check_name="source_staleness",
        passed=stale is None or stale.ok,
        severity=dg.AssetCheckSeverity.WARN,
        description=stale.detail if stale else "비교 기준이 없어 평가하지 않음",
    )


# --- snapshot_diff -------------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    backfill_policy=BACKFILL_POLICY,
    deps=[
        integrity_verdict,
        # ordering only: days run in date order in backfills; the base is chosen in SQL
        dg.AssetDep("snapshot_diff", partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1)),
    ],
    group_name="history",
    kinds={"duckdb"},
    pool="duckdb",
    check_specs=[dg.AssetCheckSpec(GATE_CHECK_NAMES[6], asset="snapshot_diff", blocking=True, description=_gate_description(6))],
    description=(
        "마지막 정상 수집일(비교 기준일)과 비교해 신규·변경·취하를 찾고, 게이트 6(변동률)을 통과하면 그날의 스냅샷과 "
        "이벤트를 한 트랜잭션으로 기록합니다. 거부된 날은 기준일을 그대로 둡니다. Diff against the latest accepted day; "
        "commit the day atomically only if all six gates pass."
    ),
)
def snapshot_diff(context: dg.AssetExecutionContext, workspace: DmfWorkspace, duckdb: HistoryDatabase):
    settings = workspace.settings()
    staging_dir = workspace.path("staging_dir")
    outcomes = {}
    for day in partition_days(context):
        try:
            with duckdb.get_connection() as conn:  # one transaction per day, lock per day
                out = pipeline.diff_and_commit(conn, staging_dir, day, settings, run_id=context.run_id)
        except (staging.StagingMissing, pipeline.JudgementMismatch) as exc:
            raise dg.Failure(description=str(exc)) from None
        outcomes[day] = out
        if out.status == "rejected":
            context.log.warning(f"{day}: 거부 — 기준일 {out.base_day}을(를) 유지합니다. {out.reason or ''}")
        else:
            c = out.counts
            context.log.info(
                f"{day}: {out.status} (기준일 {out.base_day or '없음'}) 신규 {c.get('NEW', 0)} · 변경 {c.get('CHANGED', 0)}"
                f" · 취하 {c.get('WITHDRAWN', 0)} · 표기 {c.get('COSMETIC', 0)} ({out.seconds:.2f}초)"
            )
        if out.rederived_day:
            context.log.info(f"{day}: 다음 정상 수집일 {out.rederived_day}의 이벤트를 새 기준으로 다시 계산했습니다.")
    day, out = sorted(outcomes.items())[-1]
    c = out.counts
    status_ko = {"accepted": "반영", "baseline": "기준일(첫 반영)", "rejected": "거부 — 기준일 유지"}
    yield dg.MaterializeResult(
        metadata={
            "status": out.status,
            "status_ko": status_ko[out.status],
            "comparison_base": str(out.base_day) if out.base_day else "없음",
            "new": c.get("NEW", 0),
            "changed": c.get("CHANGED", 0),
            "withdrawn": c.get("WITHDRAWN", 0),
            "cosmetic": c.get("COSMETIC", 0),
            "rederived_days": dg.MetadataValue.json([str(o.rederived_day) for o in outcomes.values() if o.rederived_day]),
            "day_statuses": dg.MetadataValue.json({d.isoformat(): o.status for d, o in outcomes.items()}),
            "diff_seconds": dg.MetadataValue.float(round(sum(o.seconds for o in outcomes.values()), 3)),
        }
    )
    per_day = {
        d: o.churn
        if o.churn is not None
        else GateOutcome(6, None, None, None, "평가하지 않음", "-", f"{o.rejected_gate}번 게이트에서 이미 거부된 날입니다.")
        for d, o in outcomes.items()
    }
    g, note = _worst_gate(per_day)
    yield _gate_check(g, "snapshot_diff", note)


# --- events --------------------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    backfill_policy=BACKFILL_POLICY,
    deps=[snapshot_diff],
    group_name="history",
    kinds={"duckdb"},
    pool="duckdb",
    description=(
        "그날 반영된 변경 이벤트(신규·변경·취하, 필드별 전후 값, 심각도)를 공개합니다: data/events/YYYY-MM-DD.jsonl. "
        "The day's published events (JSON Lines for other systems)."
    ),
)
def events(context: dg.AssetExecutionContext, workspace: DmfWorkspace, duckdb: HistoryDatabase) -> dg.MaterializeResult:
    events_dir = workspace.path("events_dir")
    per_day = {}
    for day in partition_days(context):
        with duckdb.get_connection() as conn:
            run = history.run_row(conn, day)
            if run is None or run["status"] == "pending":
                raise dg.Failure(description=f"{day}: snapshot_diff가 아직 이 날짜를 처리하지 않았습니다. Run snapshot_diff first.")
            frame = day_events_frame(conn, day) if run["status"] != "rejected" else pl.DataFrame()
        per_day[day] = (run, frame)
        _write_jsonl(events_dir / f"{day.isoformat()}.jsonl", frame, run)
    day, (run, frame) = sorted(per_day.items())[-1]
    if run["status"] == "rejected":
        summary = f"거부된 날 — 반영된 이벤트 없음. 비교 기준일은 {history.to_date(run['base_day_id']) or '없음'}으로 유지됩니다."
        preview = ""
    else:
        counts = frame.group_by("event_type", "severity").len().sort("event_type", "severity") if frame.height else pl.DataFrame()
        summary = _md_table(
            ["유형", "심각도", "건수"],
            [[EVENT_LABEL_KO[t], SEVERITY_LABEL_KO[s], n] for t, s, n in counts.rows()] if counts.height else [],
        )
        top = frame.filter(~pl.col("is_cosmetic")).head(15) if frame.height else frame
        preview = _md_table(
            ["유형", "심각도", "등록번호", "성분", "신청인", "변경 필드"],
            [[EVENT_LABEL_KO[r["event_type"]], SEVERITY_LABEL_KO[r["severity"]], r["dmf_key"], r["ingredient"], r["applicant"],
              ", ".join(r["changed_fields"] or [])] for r in top.iter_rows(named=True)],
        ) if top.height else "변경 없음"
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": dg.MetadataValue.int(frame.height),
            "status": run["status"],
            "headline_events": int((~frame["is_cosmetic"]).sum()) if frame.height else 0,
            "cosmetic_events": int(frame["is_cosmetic"].sum()) if frame.height else 0,
            "summary": dg.MetadataValue.md(summary),
            "preview": dg.MetadataValue.md(preview or "-"),
            "jsonl": dg.MetadataValue.path(str(events_dir / f"{day.isoformat()}.jsonl")),
        }
    )


def _write_jsonl(path, frame: pl.DataFrame, run: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for row in frame.iter_rows(named=True):
            row["day"] = str(history.to_date(run["day_id"]))
            row["comparison_base"] = str(history.to_date(run["base_day_id"]))
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)


# --- xlsx_report ---------------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    backfill_policy=BACKFILL_POLICY,
    deps=[events],
    group_name="publish",
    kinds={"excel"},
    pool="duckdb",
    freshness_policy=dg.FreshnessPolicy.cron(
        deadline_cron="0 9 * * *", lower_bound_delta=timedelta(hours=9), timezone="Asia/Seoul"
    ),
    description=(
        "일일 엑셀 리포트 reports/DMF_리포트_YYYY-MM-DD.xlsx (및 DMF_리포트_최신.xlsx). 매일 09:00(KST)까지 만들어져야 "
        "합니다. 거부된 날에도 '수집 실패 — 비교 기준은 여전히 YYYY-MM-DD' 리포트를 만듭니다. The daily workbook."
    ),
)
def xlsx_report(context: dg.AssetExecutionContext, workspace: DmfWorkspace, duckdb: HistoryDatabase) -> dg.MaterializeResult:
    settings = workspace.settings()
    reports_dir = workspace.path("reports_dir")
    written = []
    for day in partition_days(context):
        try:
            with duckdb.get_connection() as conn:
                report = build_day_report(conn, day, settings, run_info={"리포트 생성 run": context.run_id})
        except DayNotReady as exc:
            raise dg.Failure(description=str(exc)) from None
        result = write_workbook(report, reports_dir)  # no database lock needed for the file
        context.log.info(f"{day}: 리포트 {result.path.name} ({result.bytes:,} bytes, {result.seconds:.2f}초)")
        written.append((report, result))
    report, result = written[-1]
    url = f"{settings.report.base_url}/{quote(result.path.name)}"
    k = report.kpis
    summary = (
        f"**{report.day} — {report.status.label_ko}**\n\n{report.status_reason}\n\n"
        + _md_table(
            ["등록 수", "신규", "변경", "취하", "재등장", "번호 부여", "표기 변경(별도)", "관심목록"],
            [[k.registry_size, k.new, k.changed, k.withdrawn, k.reappeared, k.number_assigned, k.cosmetic, k.watchlist_hits]],
        )
    )
    return dg.MaterializeResult(
        metadata={
            "download": dg.MetadataValue.url(url),
            "path": dg.MetadataValue.path(str(result.path)),
            "file_size_bytes": dg.MetadataValue.int(result.bytes),
            "status": report.status.value,
            "comparison_base": str(report.comparison_base or "-"),
            "summary": dg.MetadataValue.md(summary),
            "latest_updated": bool(result.latest_updated),
            "write_seconds": dg.MetadataValue.float(round(result.seconds, 3)),
        }
    )
