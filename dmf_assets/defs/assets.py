"""The daily asset graph: raw_pages → normalized_records → integrity_verdict → snapshot_diff → events → xlsx_report.

One partition (a Korean day) per run. Each asset is a short recipe over `orchestration.pipeline`:
the first three hand their values on through the day store (`defs/io.py`), the last three read the
history database that `snapshot_diff` writes.

The gates live in the data as well as in the checks: `integrity_verdict` records the verdict and
rejects the day in the database itself, and `snapshot_diff` commits history only for a day that
passed all six gates. The blocking checks stop the rest of that day's run; the sensor
`dmf_watch_sensor` then completes the day (its "collection failed" workbook) in a follow-up run.

No backfill policy: a backfill launches one run per day tagged with its partition, so every check is
recorded against its day (a ranged run would record them without a partition). Days carry no
dependency on each other: the comparison base is chosen in SQL as the latest accepted
day, so a rejected day never holds up the days after it in a backfill. Runs that touch the history
wait for each other in the run queue (pool "duckdb", one run at a time, in the order they were
queued), and a day committed out of order re-derives the next accepted day in the same transaction.
"""


import json
import os
import time
from datetime import date
from urllib.parse import quote

import dagster as dg
import polars as pl

from dmf_assets import notify
from dmf_assets.clock import now_kst
from dmf_assets.defs.checks import (
    QUALITY_CHECKS,
    gate_result,
    gate_spec,
    gates_md,
    md_table,
    quality_result,
    warn_spec,
)
from dmf_assets.defs.io import discard_value
from dmf_assets.defs.partitions import daily_partitions
from dmf_assets.defs.resources import DmfWorkspace, HistoryDatabase
from dmf_assets.domain.gates import not_evaluated
from dmf_assets.domain.model import EVENT_LABEL_KO, NORMALIZED_COLUMNS, SEVERITY_LABEL_KO
from dmf_assets.fsutil import atomic_write_text
from dmf_assets.orchestration import pipeline
from dmf_assets.orchestration.followups import REFETCH_TAG, REJECTED_MARK
from dmf_assets.orchestration.pipeline import FetchedDay, JudgedDay, NormalizedDay
from dmf_assets.report.workbook import write_workbook
from dmf_assets.source.client import MfdsClient
from dmf_assets.source.errors import SourceError
from dmf_assets.storage import history
from dmf_assets.report.day_data import (
    BURST_FACTOR,
    RATE_WINDOW_DAYS,
    DayNotReady,
    build_day_report,
    change_rate,
    day_events_frame,
)

STATUS_KO = {"accepted": "반영", "baseline": "기준일(첫 반영)", "rejected": "거부 — 기준일 유지"}


def _day(context: dg.AssetExecutionContext) -> date:
    return date.fromisoformat(context.partition_key)


def _reject(context: dg.AssetExecutionContext, asset: str, metadata: dict, reason: str | None, base_day):
    """A rejected day is a failed partition of this asset — red in its partitions view, with the reason.

    The verdict goes on record as an observation (what the sensor and the alerts read), then the step
    fails: the rest of the day's run stops, and the sensor's follow-up writes the day's workbook.
    """
    yield dg.AssetObservation(asset_key=asset, partition=context.partition_key, metadata=metadata)
    raise dg.Failure(
        description=f"{context.partition_key} 거부 — {reason} 비교 기준일 {base_day or '없음'}을(를) 유지합니다; "
        "이 날의 '수집 실패' 리포트는 dmf_watch_sensor의 후속 실행이 만듭니다. "
        f"Rejected by a gate; the comparison base stays {base_day or 'unset'}.",
        metadata={REJECTED_MARK: True},
        allow_retries=False,
    )


# --- raw_pages -----------------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    group_name="collect",
    kinds={"python"},
    description=(
        "MFDS 원료의약품 등록(DMF) 현황 Open API에서 그날의 전체 목록을 모든 쪽 받아 원본 그대로 보관합니다 "
        "(data/raw/YYYY-MM-DD/, gzip). Fetches every page of the day's registry and archives it before parsing."
    ),
)
def raw_pages(context: dg.AssetExecutionContext, mfds: MfdsClient) -> dg.Output[FetchedDay]:
    day = _day(context)
    resume = context.run.tags.get(REFETCH_TAG) != "true"
    try:
        fetched = pipeline.collect(mfds, day, context.log, resume=resume)
    except SourceError as exc:  # past date on the real API, request cap, missing key, fetch in progress
        raise dg.Failure(description=str(exc)) from None
    f, x = fetched.facts, fetched.fetch
    context.log.info(
        f"{day}: {f.rows_after_dedup:,}건 수신 (totalCount {f.total_count}), 쪽 {f.pages_ok}/{f.pages_ok + f.pages_failed}, "
        f"요청 {x['requests']}회, 재시도 {x['retries']}회, {x['elapsed_s']:.1f}초, 출처 {x['source']}"
    )
    pages = [p for p in x["pages"]]
    return dg.Output(
        fetched,
        metadata={
            "dagster/row_count": dg.MetadataValue.int(f.rows_after_dedup),
            "total_count": f.total_count,
            "transport_ok": f.transport_ok,
            "pages": len(pages),
            "requests": x["requests"],
            "retries": x["retries"],
            "fetch_seconds": dg.MetadataValue.float(float(x["elapsed_s"])),
            "source": x["source"],
            "refetched": not resume,
            "archive": dg.MetadataValue.path(x["archive_dir"]),
            "page_table": dg.MetadataValue.md(
                md_table(["쪽", "상태", "행", "totalCount", "시도", "재사용"],
                         [[p.get("page_no"), p.get("status"), p.get("rows"), p.get("total_count"), p.get("attempts"),
                           "예" if p.get("reused") else ""] for p in pages])
            ),
        },
    )


# --- normalized_records --------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    group_name="collect",
    kinds={"polars", "parquet"},
    check_specs=[warn_spec(name, "normalized_records", f"품질 경고 (차단하지 않음): {label}") for name, label in QUALITY_CHECKS],
    description=(
        "원본 행을 표시값(사람이 읽는 값)과 비교 키(띄어쓰기·문장부호·법인 표기 무시)로 정규화하고 등록번호를 해석해 "
        "dmf_key를 부여합니다. Normalized, keyed rows of the day, with non-blocking quality warnings."
    ),
)
def normalized_records(context: dg.AssetExecutionContext, workspace: DmfWorkspace, raw_pages: FetchedDay):
    started = time.monotonic()
    normalized = pipeline.normalize(raw_pages, workspace.settings())
    keyed = normalized.keyed
    context.log.info(f"{normalized.day}: {keyed.height:,}행 정규화 ({time.monotonic() - started:.2f}초)")
    preview = keyed.select("dmf_key", "permit_fmt", "ingredient", "applicant", "countries", "issue_date").head(10)
    yield dg.Output(
        normalized,
        metadata={
            "dagster/row_count": dg.MetadataValue.int(keyed.height),
            "dagster/column_schema": dg.TableSchema(
                columns=[dg.TableColumn(name, description=desc) for name, desc in NORMALIZED_COLUMNS.items()]
            ),
            "synthetic_keys": int(keyed["is_synthetic"].sum()),
            "duplicate_numbers": int((keyed["dup_count"] > 1).sum()),
            "preview": dg.MetadataValue.md(md_table(preview.columns, preview.rows())),
        },
    )
    by_name = {q.name: q for q in normalized.quality}
    for name, label in QUALITY_CHECKS:
        yield quality_result(name, label, by_name.get(name))


# --- integrity_verdict ---------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    group_name="verify",
    kinds={"duckdb"},
    pool="duckdb",
    check_specs=[
        *[gate_spec(n, "integrity_verdict") for n in range(1, 6)],
        warn_spec("source_staleness", "integrity_verdict", "품질 경고: 원천 데이터가 [quality] stale_source_days일 넘게 바뀌지 않음"),
    ],
    description=(
        "수집본을 게이트 1–5(전송·완전성·감소율·결측·중복)로 판정해 DB에 기록합니다. 하나라도 실패하면 그날은 거부되고 "
        "비교 기준일은 움직이지 않습니다. 거부된 날은 이 자산의 파티션이 실패(빨간색)로 표시되고(사유는 run 로그), 실패한 "
        "게이트는 Checks 탭 → 해당 게이트 → Partitions에서 관측값·기준·샘플 행과 함께 빨간색으로 보입니다. "
        "Gates 1–5; a failure rejects the day in the database itself."
    ),
)
def integrity_verdict(
    context: dg.AssetExecutionContext, workspace: DmfWorkspace, duckdb: HistoryDatabase, normalized_records: NormalizedDay
):
    with duckdb.get_connection() as conn:
        judged = pipeline.judge(conn, normalized_records, workspace.settings(), run_id=context.run_id)
    metadata = {
        "verdict": "pass" if judged.passed else "rejected",
        "rejected_gate": judged.rejected_gate or 0,
        "reason": judged.reason or "-",
        "comparison_base": str(judged.base_day) if judged.base_day else "없음(첫 수집일)",
        "rows": judged.keyed.height,
        "gates": dg.MetadataValue.md(gates_md(judged.gates)),
    }
    if judged.passed:
        context.log.info(f"{judged.day}: 게이트 1–5 통과 (기준일 {judged.base_day or '없음 — 첫 수집일'})")
        yield dg.Output(judged, metadata=metadata)
    for g in judged.gates:
        yield gate_result(g, "integrity_verdict")
    stale = next((q for q in judged.quality if q.name == "days_since_source_change"), None)
    yield dg.AssetCheckResult(
        check_name="source_staleness",
        passed=stale is None or stale.ok,
        severity=dg.AssetCheckSeverity.WARN,
        description=stale.detail if stale else "비교 기준이 없어 평가하지 않음",
    )
    if not judged.passed:
        discard_value(workspace.path("staging_dir"), "integrity_verdict", context.partition_key)
        yield from _reject(context, "integrity_verdict", metadata, judged.reason, judged.base_day)


# --- snapshot_diff -------------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    group_name="history",
    kinds={"duckdb"},
    pool="duckdb",
    check_specs=[gate_spec(6, "snapshot_diff")],
    description=(
        "마지막 정상 수집일(비교 기준일)과 비교해 신규·변경·취하를 찾고, 게이트 6(변동률)을 통과하면 그날의 스냅샷과 "
        "이벤트를 한 트랜잭션으로 기록합니다. 게이트 6에서 거부된 날은 기록하지 않고 기준일을 그대로 두며, 이 날짜 "
        "파티션이 실패(빨간색)로 표시됩니다. Diff against the latest accepted day; commit the day atomically only if all "
        "six gates pass."
    ),
)
def snapshot_diff(
    context: dg.AssetExecutionContext, workspace: DmfWorkspace, duckdb: HistoryDatabase, integrity_verdict: JudgedDay
):
    with duckdb.get_connection() as conn:  # one transaction, under the database lock
        try:
            out = pipeline.diff_and_commit(conn, integrity_verdict, workspace.settings(), run_id=context.run_id)
        except pipeline.NotJudged as exc:
            raise dg.Failure(description=str(exc)) from None
    c = out.counts
    if out.status == "rejected":
        context.log.warning(f"{out.day}: 거부 — 기준일 {out.base_day}을(를) 유지합니다. {out.reason or ''}")
    else:
        context.log.info(
            f"{out.day}: {out.status} (기준일 {out.base_day or '없음'}) 신규 {c.get('NEW', 0)} · 변경 {c.get('CHANGED', 0)}"
            f" · 취하 {c.get('WITHDRAWN', 0)} · 표기 {c.get('COSMETIC', 0)} ({out.seconds:.2f}초)"
        )
    if out.rederived_day:
        context.log.info(f"{out.day}: 다음 정상 수집일 {out.rederived_day}의 이벤트를 새 기준으로 다시 계산했습니다.")
    metadata = {
        "status": out.status,
        "status_ko": STATUS_KO[out.status],
        "rejected_gate": out.rejected_gate or 0,
        "reason": out.reason or "-",
        "comparison_base": str(out.base_day) if out.base_day else "없음",
        "new": c.get("NEW", 0),
        "changed": c.get("CHANGED", 0),
        "withdrawn": c.get("WITHDRAWN", 0),
        "cosmetic": c.get("COSMETIC", 0),
        "rederived_day": str(out.rederived_day) if out.rederived_day else "",
        "diff_seconds": dg.MetadataValue.float(round(out.seconds, 3)),
    }
    if out.status != "rejected":
        yield dg.MaterializeResult(metadata=metadata)
    churn = out.churn or not_evaluated(6, f"{out.rejected_gate}번 게이트에서 이미 거부된 날입니다." if out.rejected_gate
                                       else "이미 거부된 날입니다.")
    yield gate_result(churn, "snapshot_diff")
    if out.status == "rejected":
        yield from _reject(context, "snapshot_diff", metadata, out.reason, out.base_day)


# --- events --------------------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    deps=[snapshot_diff],
    group_name="history",
    kinds={"duckdb"},
    pool="duckdb",
    check_specs=[warn_spec("change_rate_burst", "events",
                           f"품질 경고: 최근 {RATE_WINDOW_DAYS}일 변경률 λ̂이 전체 이력의 {BURST_FACTOR:g}배 이상 (burst) — "
                           "원천의 대규모 갱신인지 확인하세요")],
    description=(
        "그날 반영된 변경 이벤트(신규·변경·취하, 필드별 전후 값, 심각도)를 공개합니다: data/events/YYYY-MM-DD.jsonl. "
        "The day's published events (JSON Lines for other systems)."
    ),
)
def events(context: dg.AssetExecutionContext, workspace: DmfWorkspace, duckdb: HistoryDatabase):
    day = _day(context)
    with duckdb.get_connection() as conn:
        run = history.run_row(conn, day)
        if run is None or run["status"] == "pending":
            raise dg.Failure(description=f"{day}: snapshot_diff가 아직 이 날짜를 처리하지 않았습니다. Run snapshot_diff first.")
        frame = day_events_frame(conn, day) if run["status"] != "rejected" else pl.DataFrame()
        rate = change_rate(conn, day)
    path = workspace.path("events_dir") / f"{day.isoformat()}.jsonl"
    atomic_write_text(path, "".join(
        json.dumps({**row, "day": str(day), "comparison_base": str(history.to_date(run["base_day_id"]))},
                   ensure_ascii=False, default=str) + "\n"
        for row in frame.iter_rows(named=True)
    ))
    if run["status"] == "rejected":
        summary = f"거부된 날 — 반영된 이벤트 없음. 비교 기준일은 {history.to_date(run['base_day_id']) or '없음'}으로 유지됩니다."
        preview = "-"
    else:
        counts = frame.group_by("event_type", "severity").len().sort("event_type", "severity") if frame.height else None
        summary = md_table(["유형", "심각도", "건수"], [[EVENT_LABEL_KO[t], SEVERITY_LABEL_KO[s], n] for t, s, n in counts.rows()]
                           if counts is not None else [])
        top = frame.filter(~pl.col("is_cosmetic")).head(15) if frame.height else frame
        preview = md_table(
            ["유형", "심각도", "등록번호", "성분", "신청인", "변경 필드"],
            [[EVENT_LABEL_KO[r["event_type"]], SEVERITY_LABEL_KO[r["severity"]], r["dmf_key"], r["ingredient"], r["applicant"],
              ", ".join(r["changed_fields"] or [])] for r in top.iter_rows(named=True)],
        ) if top.height else "변경 없음"
    yield dg.MaterializeResult(
        metadata={
            "dagster/row_count": dg.MetadataValue.int(frame.height),
            "status": run["status"],
            "headline_events": int((~frame["is_cosmetic"]).sum()) if frame.height else 0,
            "cosmetic_events": int(frame["is_cosmetic"].sum()) if frame.height else 0,
            "summary": dg.MetadataValue.md(summary),
            "preview": dg.MetadataValue.md(preview),
            "jsonl": dg.MetadataValue.path(str(path)),
        }
    )
    yield dg.AssetCheckResult(
        check_name="change_rate_burst",
        passed=not rate.burst,
        severity=dg.AssetCheckSeverity.WARN,
        description=rate.text_ko,
        metadata={"rate_14d": rate.rate_14d, "rate_all": rate.rate_all, "per_week_14d": rate.per_week_14d,
                  "per_week_all": rate.per_week_all},
    )


# --- xlsx_report ---------------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    deps=[events],
    group_name="publish",
    kinds={"excel"},
    pool="duckdb",
    description=(
        "일일 엑셀 리포트 reports/DMF_리포트_YYYY-MM-DD.xlsx (및 DMF_리포트_최신.xlsx). 매일 마감 시각([alerts] "
        "overdue_at, KST)까지 만들어져야 합니다(검사 report_by_0900_kst). 거부된 날에도 '수집 실패 — 비교 기준은 여전히 YYYY-MM-DD' 리포트를 만듭니다. "
        "The daily workbook, with a download link."
    ),
)
def xlsx_report(context: dg.AssetExecutionContext, workspace: DmfWorkspace, duckdb: HistoryDatabase) -> dg.MaterializeResult:
    day = _day(context)
    settings = workspace.settings()
    try:
        with duckdb.get_connection() as conn:
            report = build_day_report(conn, day, settings, run_info={"리포트 생성 run": context.run_id})
    except DayNotReady as exc:
        raise dg.Failure(description=str(exc)) from None
    result = write_workbook(report, workspace.path("reports_dir"))  # no database lock needed for the file
    context.log.info(f"{day}: 리포트 {result.path.name} ({result.bytes:,} bytes, {result.seconds:.2f}초)")
    # `dmf ui --report-port N` tells the code location where its file server listens
    url = f"{os.environ.get('DMF_REPORT_BASE_URL') or settings.report.base_url}/{quote(result.path.name)}"
    delivery = {}
    if not _bulk_run(context):  # a backfill of old days does not fill inboxes
        record, raised = notify.deliver_day(settings, notify.ReportDelivery.from_day_report(
            report, result.path, url=url, run_id=context.run_id), alerts_dir=workspace.path("alerts_dir"), budget_s=60)
        delivery = record.metadata()
        context.log.info(f"{day}: 리포트 전달 {record.status} ({record.subject}); 경보 {len(raised)}건")
    k = report.kpis
    summary = (
        f"**{report.day} — {report.status.label_ko}**\n\n{report.status_reason}\n\n"
        + md_table(
            ["등록 수", "신규", "변경", "취하", "재등장", "번호 부여", "표기 변경(별도)", "관심목록"],
            [[k.registry_size, k.new, k.changed, k.withdrawn, k.reappeared, k.number_assigned, k.cosmetic, k.watchlist_hits]],
        )
    )
    return dg.MaterializeResult(
        metadata={
            # `dmf ui --report-port N` tells the code location where its file server listens
            "download": dg.MetadataValue.url(url),
            "path": dg.MetadataValue.path(str(result.path)),
            "file_size_bytes": dg.MetadataValue.int(result.bytes),
            "status": report.status.value,
            "comparison_base": str(report.comparison_base or "-"),
            "summary": dg.MetadataValue.md(summary),
            "latest_updated": bool(result.latest_updated),
            "written_at_kst": now_kst().isoformat(timespec="seconds"),
            "write_seconds": dg.MetadataValue.float(round(result.seconds, 3)),
            **delivery,
        }
    )


def _bulk_run(context: dg.AssetExecutionContext) -> bool:
    tags = context.run.tags
    return "dagster/backfill" in tags or tags.get("dmf/trigger") in ("cli-backfill", "demo")


#: the name of the on-time check (the sensor records it as overdue at 09:00 KST when no report exists)
ON_TIME_CHECK = "report_by_0900_kst"


@dg.asset_check(
    asset=xlsx_report,
    name=ON_TIME_CHECK,
    partitions_def=daily_partitions,
    description=(
        "그날의 리포트가 마감 시각([alerts] overdue_at, KST)까지 있는지. 리포트를 만든 실행에서 통과로 기록되고, 마감이 "
        "지나도 없으면 dmf_watch_sensor가 그 날짜 파티션에 실패(지연)로 기록합니다. Is the expected day's workbook there "
        "by the deadline ([alerts] overdue_at, KST)?"
    ),
)
def report_by_0900_kst(context: dg.AssetCheckExecutionContext, workspace: DmfWorkspace) -> dg.AssetCheckResult:
    from dmf_assets.report.retention import dated_workbook_name

    day = date.fromisoformat(context.partition_key)
    path = workspace.path("reports_dir") / dated_workbook_name(day)
    return dg.AssetCheckResult(
        passed=path.exists(),
        description=f"{day} 리포트 있음: {path.name}" if path.exists() else f"{day} 리포트가 없습니다: {path}",
        metadata={"checked_at_kst": now_kst().isoformat(timespec="seconds"), "path": dg.MetadataValue.path(str(path))},
    )
