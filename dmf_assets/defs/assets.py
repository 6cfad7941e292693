"""The daily asset graph: raw_pages → normalized_records → integrity_verdict → snapshot_diff → events → xlsx_report.

One partition (a Korean day) per run. Each asset is a short recipe over `orchestration.pipeline`:
the first three hand their values on through the day store (`defs/io.py`), the last three read the
history database that `snapshot_diff` writes.

The gates live in the data as well as in the checks: `integrity_verdict` records the verdict and
rejects the day in the database itself, and `snapshot_diff` commits history only for a day that
passed all six gates. A rejected day is said once: the asset whose gate refused it records an
observation carrying the typed rejection (`orchestration.verdict`) and yields no value, and its failed
blocking check makes Dagster fail that step — the partition is red, the rest of the run stops. The
sensor `dmf_watch_sensor` then completes the day in a follow-up run: snapshot_diff records "rejected —
comparison base carried forward" (its gate 6 is then not evaluated: Dagster shows it as skipped), and
the "collection failed" workbook is written.

No backfill policy: a backfill launches one run per day tagged with its partition, so every check is
recorded against its day (a ranged run would record them without a partition). Days carry no
dependency on each other: the comparison base is chosen in SQL as the latest accepted
day, so a rejected day never holds up the days after it in a backfill. Runs that touch the history
wait for each other in the run queue (pool "duckdb", one run at a time, in the order they were
queued), and a day committed out of order re-derives the next accepted day in the same transaction.
"""

import json
import time
from collections.abc import Iterator, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl

from dmf_assets import links, notify
from dmf_assets.clock import ClockBehind, now_kst
from dmf_assets.defs.checks import (
    RECHECK_CHECK,
    gate_result,
    gate_specs,
    gates_md,
    md_table,
    quality_result,
    quality_spec,
    recheck_spec,
    samples_md,
    warn_spec,
)
from dmf_assets.defs.io import discard_value, staged_path
from dmf_assets.defs.partitions import daily_partitions
from dmf_assets.defs.resources import DmfWorkspace, HistoryDatabase
from dmf_assets.domain.gates import (
    BEFORE_DIFF,
    COMPLETENESS,
    GATES,
    STALENESS,
    Gate,
    GateOutcome,
    GateRegistry,
    Needs,
    Rejection,
    first_failure,
    gates_labelled,
    gates_text,
    not_evaluated,
)
from dmf_assets.domain.model import FIELD_LABEL_KO, NORMALIZED_COLUMNS, SEVERITY_LABEL_KO, DayStatus
from dmf_assets.domain.recheck import Query
from dmf_assets.fsutil import atomic_write_text
from dmf_assets.korean import josa
from dmf_assets.orchestration import followups, pipeline, verdict
from dmf_assets.orchestration.commit import DayOutcome
from dmf_assets.orchestration.followups import REFETCH_TAG
from dmf_assets.orchestration.pipeline import FetchedDay, JudgedDay, NormalizedDay
from dmf_assets.report.day_data import (
    BURST_FACTOR,
    RATE_WINDOW_DAYS,
    DayNotReady,
    build_day_report,
    change_rate,
    day_event_rows,
    day_events_frame,
    day_summary,
)
from dmf_assets.report.model import DayReport, EventRow
from dmf_assets.report.sentences import field_label
from dmf_assets.report.summary import EVENT_KIND_LABEL_KO, FIGURES, HEADLINE_KINDS, DaySummary
from dmf_assets.settings import Settings
from dmf_assets.source.client import MfdsClient
from dmf_assets.source.errors import RequestCapExceeded, SourceError
from dmf_assets.source.identity import SourceMismatch
from dmf_assets.source.recheck import RecheckAnswers


def _day(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext) -> date:
    return date.fromisoformat(context.partition_key)


def _reject(
    context: dg.AssetExecutionContext,
    asset: str,
    rejection: Rejection,
    rederived: tuple[date, ...] = (),
    rejudge: tuple[date, ...] = (),
) -> Iterator[dg.AssetObservation]:
    """A rejected day, said once: the observation that carries the typed rejection (what the UI's run log
    and the asset's events show, and what the sensor and the alerts read). No value follows, and the
    gate's failed blocking check — already yielded — makes Dagster fail the step: a red partition,
    the rest of the run stopped, without an error of ours."""
    next_step = (
        "dmf_watch_sensor의 후속 실행이 이 날의 '수집 실패' 리포트를 만듭니다. 비교 기준일은 움직이지 않습니다. "
        "The sensor's follow-up run writes the day's 'collection failed' workbook."
    )
    metadata = verdict.rejection_metadata(rejection, next_step)
    metadata[verdict.SAMPLES] = dg.MetadataValue.md(samples_md(rejection.samples))
    if rederived or rejudge:  # the later days this rejection recomputed or moved: the sensor follows them up
        metadata |= verdict.rederived_metadata(rederived, rejudge)
    _say_later_days(context, rederived, rejudge)
    context.log.warning(f"{context.partition_key} 거부 — {rejection.sentence}")
    # the reason where the on-call engineer first sees the run: the Runs list and the run's header
    context.instance.add_run_tags(context.run_id, {verdict.REJECTED_TAG: verdict.rejection_tag(rejection)})
    yield dg.AssetObservation(asset_key=asset, partition=context.partition_key, metadata=metadata)


def _say_later_days(context: dg.AssetExecutionContext, rederived: tuple[date, ...], rejudge: tuple[date, ...]) -> None:
    if rederived:
        days = ", ".join(map(str, rederived))
        context.log.info(f"{context.partition_key}: 뒤의 정상 수집일 {days}의 이벤트를 새 기준으로 다시 계산했습니다.")
    if rejudge:
        days = ", ".join(map(str, rejudge))
        context.log.info(
            f"{context.partition_key}: 뒤에 거부된 {days}의 비교 기준이 바뀌었습니다 — 센서의 후속 실행이 그 날의 "
            "수집분을 새 기준으로 다시 판정합니다."
        )


# --- raw_pages -----------------------------------------------------------------------------------

#: the page table's columns before 재사용, as a page's stats name them
PAGE_COLUMNS = ("page_no", "status", "rows", "total_count", "attempts")


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
    except (SourceError, ClockBehind) as exc:  # past date on the real API, request cap, missing key, clock set back
        # the cap reached is recorded as such: the sensor's alert says it from this, not from the error's words
        facts = {followups.REQUEST_CAP_KEY: exc.cap} if isinstance(exc, RequestCapExceeded) else None
        raise dg.Failure(description=str(exc), metadata=facts) from None
    f, x = fetched.facts, fetched.fetch
    context.log.info(
        f"{day}: {f.rows_after_dedup:,}건 수신 (totalCount {f.total_count}), 쪽 {f.pages_ok}/{f.pages_ok + f.pages_failed}, "
        f"요청 {x['requests']}회, 재시도 {x['retries']}회, {x['elapsed_s']:.1f}초, 출처 {x['source']}"
    )
    pages = list(x["pages"])
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
                md_table(
                    ["쪽", "상태", "행", "totalCount", "시도", "재사용"],
                    [[*(p.get(k) for k in PAGE_COLUMNS), "예" if p.get("reused") else ""] for p in pages],
                )
            ),
        },
    )


# --- normalized_records --------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    group_name="collect",
    kinds={"polars", "parquet"},
    check_specs=[quality_spec()],
    description=(
        "원본 행을 표시값(사람이 읽는 값)과 비교 키(띄어쓰기·문장부호·법인 표기 무시)로 정규화하고 등록번호를 해석해 "
        "dmf_key를 부여합니다. Normalized, keyed rows of the day, with non-blocking quality warnings."
    ),
)
def normalized_records(
    context: dg.AssetExecutionContext, workspace: DmfWorkspace, raw_pages: FetchedDay
) -> Iterator[dg.Output | dg.AssetCheckResult]:
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
    yield quality_result(normalized.quality)


# --- integrity_verdict ---------------------------------------------------------------------------


def verdict_asset(registry: GateRegistry = GATES) -> dg.AssetsDefinition:
    """integrity_verdict over `registry`'s gates judged before the diff, each with its blocking check."""
    before = registry.needing(BEFORE_DIFF)

    @dg.asset(
        name="integrity_verdict",
        partitions_def=daily_partitions,
        group_name="verify",
        kinds={"duckdb"},
        pool="duckdb",
        output_required=False,  # a rejected day has no judged value to hand on
        check_specs=[
            *gate_specs("integrity_verdict", registry),
            warn_spec(
                "source_staleness",
                "integrity_verdict",
                "품질 경고: 원천 데이터가 [quality] stale_source_days일 넘게 바뀌지 않음",
            ),
        ],
        description=(
            f"수집본을 {josa(gates_labelled(before), '으로/로')} 판정해 DB에 기록합니다. 하나라도 실패하면 그날은 거부되고 "
            "비교 기준일은 움직이지 않습니다. 거부된 날은 이 자산의 파티션이 실패(빨간색)로 표시됩니다 — 사유(게이트·관측값·"
            "기준)는 Runs 목록에서 그 날 실행의 dmf/rejected 태그에 있고, 이 파티션 패널의 'View all historical events'에서 "
            "'판정' 관측을 펼치면 비교 기준일과 표본 행까지 보입니다. 실패한 게이트는 Checks 탭 → 해당 게이트 → Partitions에서도 "
            f"빨간색입니다. {gates_text(before, 'Gates')}; a failure rejects the day in the database itself (reason: the "
            "run's dmf/rejected tag in the Runs list; the partition panel's View all historical events → the verdict "
            "observation)."
        ),
    )
    def integrity_verdict(
        context: dg.AssetExecutionContext,
        workspace: DmfWorkspace,
        duckdb: HistoryDatabase,
        normalized_records: NormalizedDay,
    ) -> Iterator[dg.Output | dg.AssetCheckResult | dg.AssetObservation]:
        with duckdb.get_connection(writing=_day(context)) as conn:  # a run's first access to the history
            try:
                pipeline.time_moves_forward(conn)
                settings = workspace.settings()
                judged = pipeline.judge(conn, normalized_records, settings, run_id=context.run_id, registry=registry)
            except (ClockBehind, SourceMismatch) as exc:  # nothing judged, nothing recorded: one line
                raise dg.Failure(description=str(exc), allow_retries=False) from None
        if judged.passed:
            context.log.info(
                f"{judged.day}: {gates_text(before)} 통과 (기준일 {judged.base_day or '없음 — 첫 수집일'})"
            )
            yield dg.Output(
                judged,
                metadata={
                    verdict.VERDICT: verdict.PASSED_TEXT,
                    verdict.BASE: str(judged.base_day) if judged.base_day else verdict.NO_BASE,
                    "rows": judged.keyed.height,
                    "gates": dg.MetadataValue.md(gates_md(judged.gates)),
                },
            )
        for g in judged.gates:
            yield gate_result(g, "integrity_verdict")
        stale = next((q for q in judged.quality if q.name == STALENESS), None)
        yield dg.AssetCheckResult(
            check_name="source_staleness",
            passed=stale is None or stale.ok,
            severity=dg.AssetCheckSeverity.WARN,
            description=stale.detail if stale else "비교 기준이 없어 평가하지 않음",
        )
        if (failed := first_failure(judged.gates)) is not None:
            discard_value(workspace.path("staging_dir"), "integrity_verdict", context.partition_key)
            rejection = Rejection.of(failed, judged.base_day)
            yield from _reject(context, "integrity_verdict", rejection, judged.rederived_days, judged.rejudge_days)

    return integrity_verdict


integrity_verdict = verdict_asset()


# --- snapshot_diff -------------------------------------------------------------------------------


def diff_asset(registry: GateRegistry = GATES) -> dg.AssetsDefinition:
    """snapshot_diff with the blocking checks of `registry`'s gates judged on the diff.

    A multi-asset of one asset, for one reason: `can_subset` makes its value and its checks optional outputs.
    A day refused here records no diff (a red partition), and a day already refused by its verdict records
    "rejected — base carried forward" without evaluating the gates after the diff, which Dagster then shows as
    skipped on that partition — instead of "execution failed"."""
    after = registry.needing((Needs.DIFF,))

    @dg.multi_asset(
        name="snapshot_diff",
        specs=[
            dg.AssetSpec(
                "snapshot_diff",
                deps=["integrity_verdict"],
                partitions_def=daily_partitions,
                group_name="history",
                kinds={"duckdb"},
                description=_diff_description(registry.needing(BEFORE_DIFF), after),
            )
        ],
        check_specs=[*gate_specs("snapshot_diff", registry), recheck_spec()],
        can_subset=True,
        pool="duckdb",
    )
    def snapshot_diff(
        context: dg.AssetExecutionContext,
        workspace: DmfWorkspace,
        duckdb: HistoryDatabase,
        mfds: MfdsClient,
        integrity_verdict: JudgedDay | None,
    ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult | dg.AssetObservation]:
        out, summary = _diff_and_commit(context, workspace, duckdb, mfds, integrity_verdict, registry)
        yield from _diff_outcome(context, out, summary, after)

    return snapshot_diff


def _diff_description(before: tuple[Gate, ...], after: tuple[Gate, ...]) -> str:
    described = gates_labelled(after)
    return (
        "마지막 정상 수집일(비교 기준일)과 비교해 신규·변경·목록에서 삭제(취하 등)와 등록번호 변경을 찾고, 목록에서 "
        f"삭제될 후보는 원천에 다시 물어 목록에 없음을 확인한 뒤, {josa(described, '을/를')} 통과하면 그날의 "
        "스냅샷과 이벤트를 한 트랜잭션으로 기록합니다. 원천이 아직 싣고 있는 등록이 수집본에 없으면 "
        f"{josa(gates_labelled([COMPLETENESS]), '으로/로')}, 비교 결과가 기준을 넘으면 {josa(described, '으로/로')} "
        "거부하며, 거부된 날은 기록하지 않고 기준일을 그대로 두고 이 날짜 파티션이 실패(빨간색)로 표시됩니다. "
        f"{gates_text(before)}에서 이미 거부된 날은 '거부 — 기준일 유지'로 기록되고 "
        f"{josa(gates_text(after), '은/는')} 평가하지 않습니다(Skipped). Diff against the latest accepted day, "
        "confirm each would-be withdrawal with the source; commit the day atomically only if every gate passes."
    )


def _diff_outcome(
    context: dg.AssetExecutionContext, out: DayOutcome, summary: DaySummary | None, after: tuple[Gate, ...]
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult | dg.AssetObservation]:
    """What snapshot_diff says of the day: the log, and either the rejection or the materialization, with the
    checks of the gates judged on the diff."""
    base = str(out.base_day) if out.base_day else verdict.NO_BASE
    if out.status is DayStatus.REJECTED:
        why = out.failed_gate.detail if out.failed_gate is not None else out.reason or ""
        context.log.warning(f"{out.day}: 거부 — 비교 기준일 {base} 유지. {why}")
    elif summary is not None:
        context.log.info(
            f"{out.day}: {summary.status.label_ko_en} (기준일 {base}) {summary.counts_text} · 표기 {summary.cosmetic} "
            f"({out.seconds:.2f}초)"
        )
    if out.failed_gate is not None:  # refused here: by a gate on the diff, by one on a moved base, or gate 2
        yield from _after_diff_results(out, after)
        rejection = Rejection.of(out.failed_gate, out.base_day)
        yield from _reject(context, "snapshot_diff", rejection, out.rederived_days, out.rejudge_days)
        refused_by_a_check = out.failed_gate.gate.after_diff or (out.recheck is not None and not out.recheck.passed)
        if not refused_by_a_check:
            # no check of this step failed, so none stops it: the red partition needs the step to fail
            raise dg.Failure(description=f"{out.day} 거부 — {rejection.sentence}", allow_retries=False)
        return
    assert summary is not None  # a day not refused here was committed or carried forward: it has its figures
    _say_later_days(context, out.rederived_days, out.rejudge_days)
    metadata: dict[str, Any] = {
        **verdict.committed_metadata(summary.status),
        "comparison_base": base,
        **_figures(summary),
        **verdict.rederived_metadata(out.rederived_days, out.rejudge_days),
        "diff_seconds": dg.MetadataValue.float(round(out.seconds, 3)),
        "recheck_requests": out.recheck_requests,
    }
    if out.carried_forward:
        metadata["reason"] = (
            f"{josa(f'게이트 {out.rejected_gate}', '이/가')} 이미 거부한 날입니다 — 기록할 비교가 없고 "
            f"비교 기준일 {josa(base, '을/를')} 유지합니다. {josa(gates_text(after), '은/는')} 평가하지 않았습니다."
        )
    yield dg.MaterializeResult(metadata=metadata)
    if not out.carried_forward:  # a day rejected before the diff: Dagster shows these checks as skipped
        yield from _after_diff_results(out, after)


def _diff_and_commit(
    context: dg.AssetExecutionContext,
    workspace: DmfWorkspace,
    duckdb: HistoryDatabase,
    mfds: MfdsClient,
    judged: JudgedDay | None,
    registry: GateRegistry,
) -> tuple[DayOutcome, DaySummary | None]:
    """The day committed (or refused) under the database lock, and the figures it committed; a day that cannot be
    diffed is a failed step saying what to run."""
    day = _day(context)

    def recheck(asked: date, queries: list[Query]) -> RecheckAnswers:  # would-be withdrawals, asked again
        return mfds.recheck(asked, queries, log=context.log)

    with duckdb.get_connection() as conn:  # one transaction, under the database lock
        try:
            if judged is None:  # rejected by its verdict: no judged value was handed on
                out = pipeline.carry_forward(conn, day, registry=registry)
            else:
                settings = workspace.settings()
                out = pipeline.diff_and_commit(
                    conn, judged, settings, run_id=context.run_id, recheck=recheck, registry=registry
                )
            return out, (day_summary(conn, out.day) if out.failed_gate is None else None)  # what it committed
        except pipeline.NotJudged as exc:
            raise dg.Failure(description=str(exc)) from None
        except SourceError as exc:  # the day's archive is being fetched again right now (its lock is held)
            raise dg.Failure(
                description=f"{day}: 목록에서 삭제될 후보를 원천에 다시 확인하지 못했습니다 — {exc}"
            ) from None
        except pipeline.NotTheJudgedFrame as exc:
            staged = staged_path(workspace.path("staging_dir"), "integrity_verdict", context.partition_key)
            raise dg.Failure(
                description=(
                    f"{exc.day}: {exc.reason_ko} — 손상되었거나 바뀐 파일이므로 아무것도 반영하지 않았습니다: {staged}. "
                    f"이 날짜를 raw_pages부터 다시 실행하세요 (dmf run --date {exc.day}, 또는 UI에서 raw_pages부터 Materialize). "
                    f"The staged value is not the frame the gates judged ({exc.handed.rows:,} rows handed on); nothing was "
                    "committed: re-run the day from raw_pages."
                ),
                metadata={
                    "staged_value": dg.MetadataValue.path(str(staged)),
                    "handed_rows": exc.handed.rows,
                    **({"judged_rows": exc.recorded.rows} if exc.recorded.rows is not None else {}),
                },
                allow_retries=False,
            ) from None


def _after_diff_results(out: DayOutcome, after: tuple[Gate, ...]) -> Iterator[dg.AssetCheckResult]:
    """The checks of the gates judged on the diff, and gate 2's once more on its withdrawals; those a gate before
    them refused are not evaluated (a WARN)."""
    judged = {g.number: g for g in out.gates}
    for gate in after:
        reason = f"게이트 {out.rejected_gate}에서 거부되어 {josa(gate.label_ko, '은/는')} 평가하지 않았습니다."
        yield gate_result(judged.get(gate.number) or not_evaluated(gate, reason), "snapshot_diff")
    yield gate_result(_recheck_outcome(out), "snapshot_diff", RECHECK_CHECK)


def _recheck_outcome(out: DayOutcome) -> GateOutcome:
    """Gate 2 on the day's withdrawals as its check shows it: as judged, or why it was not asked."""
    if out.recheck is not None:
        return out.recheck
    if out.failed_gate is not None:
        reason = f"게이트 {out.rejected_gate}에서 거부되어 목록에서 삭제될 후보를 원천에 다시 묻지 않았습니다."
    else:
        reason = "이 날의 보관본은 삭제 후보를 원천에 다시 묻기 전에 받은 것이어서 그때처럼 반영했습니다."
    return not_evaluated(COMPLETENESS, reason)


snapshot_diff = diff_asset()


def _figures(summary: DaySummary) -> dict[str, int]:
    """The day's headline figures and its cosmetic count as the UI shows them — the `DaySummary` every sheet and mail
    reads (its 'changed' is 실질 변경, as on 요약). A rejected day has none: nothing was compared, so the UI leaves
    them out, as the workbook leaves them blank — never a 0 that reads as "nothing changed"."""
    return {} if summary.is_rejected else {name: getattr(summary, name) for name in FIGURES}


def _event_totals(summary: DaySummary) -> dict[str, Any]:
    """The events asset's totals beside the figures: none on a rejected day, for the same reason."""
    if summary.is_rejected:
        return {}
    return {
        "headline_events": summary.headline_events,
        "cosmetic_events": summary.cosmetic,
        **_figures(summary),
        "by_severity": summary.severity_text,
    }


# --- events --------------------------------------------------------------------------------------


@dg.asset(
    partitions_def=daily_partitions,
    deps=[snapshot_diff],
    group_name="history",
    kinds={"duckdb"},
    pool="duckdb",
    check_specs=[
        warn_spec(
            "change_rate_burst",
            "events",
            f"품질 경고: 최근 {RATE_WINDOW_DAYS}일 하루 평균 변경 건수가 평소(전체 기간)의 {BURST_FACTOR:g}배 "
            "이상이면 급증(burst)으로 알립니다 — 원천의 대규모 갱신인지 확인하세요",
        )
    ],
    description=(
        "그날 반영된 변경 이벤트(신규·변경·목록에서 삭제·등록번호 부여/변경, 필드별 전후 값, 심각도)를 공개합니다: data/events/YYYY-MM-DD.jsonl. "
        "The day's published events (JSON Lines for other systems)."
    ),
)
def events(
    context: dg.AssetExecutionContext, workspace: DmfWorkspace, duckdb: HistoryDatabase
) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    day = _day(context)
    with duckdb.get_connection() as conn:
        summary = day_summary(conn, day)
        if summary is None:
            raise dg.Failure(
                description=f"{day}: snapshot_diff가 아직 이 날짜를 처리하지 않았습니다. Run snapshot_diff first."
            )
        frame = day_events_frame(conn, day) if not summary.is_rejected else pl.DataFrame()
        shown = day_event_rows(conn, day)
        rate = change_rate(conn, day)
    path = workspace.path("events_dir") / f"{day.isoformat()}.jsonl"
    _write_events(path, frame, day, summary.comparison_base)
    table, preview = _events_tables(summary, shown)
    yield dg.MaterializeResult(
        metadata={
            "dagster/row_count": dg.MetadataValue.int(summary.events),
            "status": summary.status.label_ko_en,
            **_event_totals(summary),
            "summary": dg.MetadataValue.md(table),
            "preview": dg.MetadataValue.md(preview),
            "jsonl": dg.MetadataValue.path(str(path)),
        }
    )
    yield dg.AssetCheckResult(
        check_name="change_rate_burst",
        passed=not rate.burst,
        severity=dg.AssetCheckSeverity.WARN,
        description=rate.text_ko,
        # registrations changed per day, as the text says them (λ̂ itself is no figure a person reads)
        metadata={
            f"changed_per_day_{span}": dg.MetadataValue.float(round(value, 2))
            for span, value in (("14d", rate.per_day_14d), ("all", rate.per_day_all))
            if value is not None
        },
    )


def _write_events(path: Path, frame: pl.DataFrame, day: date, base: date | None) -> None:
    """The day's published events, one JSON object a line, each with its day and comparison base."""
    atomic_write_text(
        path,
        "".join(
            json.dumps({**row, "day": str(day), "comparison_base": str(base)}, ensure_ascii=False, default=str) + "\n"
            for row in frame.iter_rows(named=True)
        ),
    )


def _events_tables(summary: DaySummary, shown: Sequence[EventRow]) -> tuple[str, str]:
    """The day's events per kind and severity, and its first fifteen headline events, as the UI shows them."""
    if summary.is_rejected:
        base_text = str(summary.comparison_base or "없음")
        # words, not "-": the UI renders the metadata as Markdown, where a lone "-" is an empty bullet
        return (
            f"거부된 날 — 반영된 이벤트 없음. 비교 기준일은 {josa(base_text, '으로/로')} 유지됩니다.",
            "거부된 날 — 표시할 이벤트 없음",
        )
    kinds = list(EVENT_KIND_LABEL_KO)
    table = md_table(
        ["유형", "심각도", "건수"],
        [
            [EVENT_KIND_LABEL_KO[kind], SEVERITY_LABEL_KO[severity], n]
            for (kind, severity), n in sorted(
                summary.by_kind_severity.items(), key=lambda item: (kinds.index(item[0][0]), item[0][1])
            )
        ],
    )
    top = [e for e in shown if not e.is_cosmetic][:15]
    if not top:
        return table, "변경 없음"
    preview = md_table(
        ["유형", "심각도", *(FIELD_LABEL_KO[f] for f in ("permit_no", "ingredient", "applicant")), "변경 항목"],
        [
            [
                e.label,
                SEVERITY_LABEL_KO[e.severity],
                e.dmf_key,
                e.ingredient,
                e.applicant,
                ", ".join(field_label(f) for f in e.changed_fields),
            ]
            for e in top
        ],
    )
    return table, preview


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
def xlsx_report(
    context: dg.AssetExecutionContext, workspace: DmfWorkspace, duckdb: HistoryDatabase
) -> dg.MaterializeResult:
    day = _day(context)
    settings = workspace.settings()
    try:
        with duckdb.get_connection() as conn:
            report = build_day_report(conn, day, settings, run_info={"리포트 생성 run": context.run_id})
    except DayNotReady as exc:
        raise dg.Failure(description=str(exc)) from None
    from dmf_assets.report.workbook import write_workbook  # openpyxl: only the workbook step needs it

    result = write_workbook(report, workspace.path("reports_dir"))  # no database lock needed for the file
    context.log.info(f"{day}: 리포트 {result.path.name} ({result.bytes:,} bytes, {result.seconds:.2f}초)")
    # from [web] public_base_url (`links`), never the port a server listens on now: old days' links keep working
    base = links.base_url(settings.web)
    try:
        delivery = _deliver(context, settings, workspace, report, result.path)
    except Exception as exc:  # noqa: BLE001 - sending never fails the pipeline (README): the workbook is written
        context.log.error(f"{day}: 메일·웹훅 발송 실패 / sending failed: {type(exc).__name__}: {exc}")
        delivery = {"delivery_status": "failed", "delivery": f"{type(exc).__name__}: {exc}"}
    k = report.summary
    if k.is_rejected:  # what came that day and the registry still in force, apart
        table = md_table(
            ["받은 목록", "원천이 밝힌 전체", "비교 기준일 등록"], [[k.received, k.total_count, k.base_registry_size]]
        )
    else:
        table = md_table(
            ["등록 수", *(EVENT_KIND_LABEL_KO[c] for c in HEADLINE_KINDS), "재등장", "표기 변경(별도)", "관심목록"],
            [
                [
                    k.registry_size,
                    *(k.by_kind.get(c, 0) for c in HEADLINE_KINDS),
                    k.reappeared,
                    k.cosmetic,
                    k.watchlist_hits,
                ]
            ],
        ) + (f"\n\n심각도별 이벤트: {k.severity_text}" if k.headline_events else "")
    summary = f"**{report.day} — {report.status.label_ko}**\n\n{report.status_reason}\n\n{table}"
    return dg.MaterializeResult(
        metadata={
            "day_page": dg.MetadataValue.url(links.day_link(base, report.day)),
            "download": dg.MetadataValue.url(links.workbook_link(base, result.path.name)),
            "path": dg.MetadataValue.path(str(result.path)),
            "file_size_bytes": dg.MetadataValue.int(result.bytes),
            "status": report.status.label_ko_en,
            "comparison_base": str(report.comparison_base or "-"),
            "summary": dg.MetadataValue.md(summary),
            "latest_updated": bool(result.latest_updated),
            "written_at_kst": now_kst().isoformat(timespec="seconds"),
            "write_seconds": dg.MetadataValue.float(round(result.seconds, 3)),
            **delivery,
        }
    )


def _deliver(
    context: dg.AssetExecutionContext, settings: Settings, workspace: DmfWorkspace, report: DayReport, path: Path
) -> dict[str, Any]:
    """The day's one workbook mail — held while a same-morning retry may still change the day — and the
    alerts the day raises by itself. A backfill of old days, or the sensor's follow-up of one, fills no inbox:
    it sends only the correction (정정) of a mail that went out and now reads differently. Returns what the UI
    shows of the delivery."""
    day, now, redone = context.partition_key, now_kst(), followups.redone_of(context.run.tags)
    notifier = notify.Notifier(
        settings, workspace.path("alerts_dir"), budget_s=60, config_file=workspace.config_file or None
    )
    if followups.is_bulk(context.run.tags):
        correction, _ = notifier.deliver_day(
            notify.ReportDelivery.from_day_report(report, path, run_id=context.run_id, redone=redone),
            corrections_only=True,
        )
        if correction is None:
            return {}
        context.log.info(
            f"{day}: 정정 메일 {notify.STATE_KO.get(correction.state, correction.state)} — {correction.line}"
        )
        return correction.metadata()
    policy = followups.RetryPolicy.of(settings)
    state = followups.day_states(context.instance, [day])[day]
    outlook = followups.retry_outlook(
        day, state, now, policy, daemon_alive=followups.daemon_alive(context.instance, now)
    )
    held = report.is_rejected and outlook is not None and outlook.planned
    delivery = notify.ReportDelivery.from_day_report(
        report,
        path,
        run_id=context.run_id,
        retry_attempt=0 if report.is_rejected else followups.retry_number(dict(context.run.tags)),
        retries_failed=state.retries if report.is_rejected and not held else 0,
        redone=redone,
    )
    # the last retry starts before [retry] until and ends within [runs] max_minutes: the hold ends then at the latest
    hold_until = policy.window_end(day) + timedelta(minutes=settings.runs.max_minutes) if held else None
    mail, raised = notifier.deliver_day(delivery, hold_until=hold_until)
    if mail is None:
        context.log.info(f"{day}: 리포트 내용이 이미 보낸 메일과 같아 다시 보내지 않습니다 (unchanged, not re-sent)")
        return {"delivery_status": "unchanged"}
    context.log.info(
        f"{day}: 리포트 메일 {notify.STATE_KO.get(mail.state, mail.state)} — {mail.line}; 경보 {len(raised)}건"
    )
    return mail.metadata()


#: the name of the on-time check (the sensor records it as overdue at 09:00 KST when no report exists)
ON_TIME_CHECK = "report_by_0900_kst"


@dg.asset_check(
    asset=xlsx_report,
    name=ON_TIME_CHECK,
    partitions_def=daily_partitions,
    description=(
        "그날의 리포트가 마감 시각([alerts] overdue_at, KST)까지 있는지. 리포트를 만든 실행에서 통과로 기록되고, 06:00 "
        "일정(daily_0600_kst)이 그 날을 실행했는데 마감이 지나도 리포트가 없으면 dmf_watch_sensor가 그 날짜 파티션에 "
        "실패(지연)로 기록합니다 — 일정이 아직 실행하지 않은 날(새 프로젝트, 데모·백필 진행 중)은 지연이 아닙니다. "
        "Is the expected day's workbook there by the deadline ([alerts] overdue_at, KST), once the schedule ran it?"
    ),
)
def report_by_0900_kst(context: dg.AssetCheckExecutionContext, workspace: DmfWorkspace) -> dg.AssetCheckResult:
    from dmf_assets.report.retention import dated_workbook_name

    day = _day(context)
    path = workspace.path("reports_dir") / dated_workbook_name(day)
    return dg.AssetCheckResult(
        passed=path.exists(),
        description=f"{day} 리포트 있음: {path.name}" if path.exists() else f"{day} 리포트가 없습니다: {path}",
        metadata={"checked_at_kst": now_kst().isoformat(timespec="seconds"), "path": dg.MetadataValue.path(str(path))},
    )
