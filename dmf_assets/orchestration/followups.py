"""What still has to run for a day, read from Dagster's event log (never from DuckDB).

A blocking gate check stops the rest of *its own run* (DAGSTER_NOTES): a rejected day's
snapshot_diff / events / xlsx_report are skipped there. They still must materialize — the rejected day
needs its "collection failed" workbook, and the next days need the chain to continue. The sensor
(and `dmf demo`, `dmf run` without a daemon) completes such days with a follow-up run of exactly the
missing tail of the chain. A day whose events were re-derived after an earlier day changed gets its
events and workbook refreshed the same way.

Alerts (rejected day, overdue day) are written as JSON files under data/alerts/ and logged.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import dagster as dg
from dagster._core.event_api import AssetRecordsFilter

KST = ZoneInfo("Asia/Seoul")
CHAIN = ("raw_pages", "normalized_records", "integrity_verdict", "snapshot_diff", "events", "xlsx_report")
#: assets that a blocking check may have skipped: the only ones completed automatically
AUTO_COMPLETE_FROM = CHAIN.index("snapshot_diff")
OVERDUE_AT = time(9, 0)


@dataclass(frozen=True)
class Latest:
    storage_id: int
    timestamp: float
    run_id: str
    metadata: dict


@dataclass(frozen=True)
class FollowUp:
    day: str
    assets: tuple[str, ...]
    reason: str
    run_key: str


@dataclass(frozen=True)
class Alert:
    day: str
    kind: str  # rejected | overdue
    message: str
    key: str  # identity of the situation, so an alert is written once


def _meta_value(value) -> object:
    return getattr(value, "value", value)


def latest_by_partition(instance: dg.DagsterInstance, asset: str, partitions: list[str]) -> dict[str, Latest]:
    """The latest materialization of `asset` for each of `partitions`."""
    out: dict[str, Latest] = {}
    if not partitions:
        return out
    result = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=partitions), limit=len(partitions) * 20
    )
    for record in result.records:  # newest first
        key = record.partition_key
        if key and key not in out:
            mat = record.asset_materialization
            out[key] = Latest(
                record.storage_id,
                record.timestamp,
                record.run_id,
                {k: _meta_value(v) for k, v in (mat.metadata if mat else {}).items()},
            )
    return out


def recent_partitions(instance: dg.DagsterInstance, limit: int = 400) -> list[str]:
    """Days with recent judgement activity (integrity_verdict materializations), newest first."""
    result = instance.fetch_materializations(dg.AssetKey("integrity_verdict"), limit=limit)
    seen: dict[str, None] = {}
    for record in result.records:
        if record.partition_key:
            seen.setdefault(record.partition_key, None)
    return list(seen)


def _busy_partitions(instance: dg.DagsterInstance) -> set[str]:
    busy = set()
    runs = instance.get_runs(
        filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
                      dg.DagsterRunStatus.NOT_STARTED]
        )
    )
    for run in runs:
        tags = run.tags
        if "dagster/partition" in tags:
            busy.add(tags["dagster/partition"])
        start, end = tags.get("dagster/asset_partition_range_start"), tags.get("dagster/asset_partition_range_end")
        if start and end:
            d = date.fromisoformat(start)
            while d <= date.fromisoformat(end):
                busy.add(d.isoformat())
                d += timedelta(days=1)
    return busy


def plan_followups(instance: dg.DagsterInstance, partitions: list[str] | None = None) -> list[FollowUp]:
    partitions = partitions if partitions is not None else recent_partitions(instance)
    latest = {asset: latest_by_partition(instance, asset, partitions) for asset in CHAIN}
    busy = _busy_partitions(instance)
    plans: dict[str, FollowUp] = {}
    for day in sorted(partitions):
        if day in busy:
            continue
        for i in range(AUTO_COMPLETE_FROM, len(CHAIN)):
            upstream = latest[CHAIN[i - 1]].get(day)
            mine = latest[CHAIN[i]].get(day)
            if upstream is not None and (mine is None or mine.storage_id < upstream.storage_id):
                plans[day] = FollowUp(
                    day,
                    CHAIN[i:],
                    f"{CHAIN[i - 1]} 이후 {CHAIN[i]}가 실행되지 않았습니다 (게이트 검사로 중단된 실행 등)",
                    f"complete:{day}:{CHAIN[i]}:{upstream.storage_id}",
                )
                break
    # a day whose events were re-derived by a later commit of an earlier day
    for day, diff in latest["snapshot_diff"].items():
        for rederived in diff.metadata.get("rederived_days") or []:
            report = latest["xlsx_report"].get(rederived)
            if rederived in busy or rederived in plans:
                continue
            if report is None or report.storage_id < diff.storage_id:
                plans[rederived] = FollowUp(
                    rederived,
                    ("events", "xlsx_report"),
                    f"{day} 처리로 이 날의 이벤트가 다시 계산되었습니다",
                    f"rederived:{rederived}:{diff.storage_id}",
                )
    return [plans[d] for d in sorted(plans)]


def find_alerts(instance: dg.DagsterInstance, now: datetime, partitions: list[str] | None = None) -> list[Alert]:
    partitions = partitions if partitions is not None else recent_partitions(instance, limit=60)
    alerts = []
    verdicts = latest_by_partition(instance, "integrity_verdict", partitions)
    diffs = latest_by_partition(instance, "snapshot_diff", partitions)
    for day in sorted(partitions):
        v, d = verdicts.get(day), diffs.get(day)
        if v and v.metadata.get("verdict") == "rejected" and (d is None or d.storage_id < v.storage_id or d.metadata.get("status") == "rejected"):
            alerts.append(Alert(day, "rejected", f"{day} 수집이 게이트 1–5에서 거부되었습니다. 기준일 {v.metadata.get('comparison_base')} 유지.", f"v{v.storage_id}"))
        elif d and d.metadata.get("status") == "rejected" and (v is None or d.storage_id > v.storage_id):
            alerts.append(Alert(day, "rejected", f"{day} 변경이 게이트 6(변동률)에서 거부되었습니다. 기준일 {d.metadata.get('comparison_base')} 유지.", f"d{d.storage_id}"))
    local = now.astimezone(KST)
    today = local.date().isoformat()
    if local.time() >= OVERDUE_AT:
        report = latest_by_partition(instance, "xlsx_report", [today]).get(today)
        if report is None:
            alerts.append(Alert(today, "overdue", f"{today} 리포트가 09:00(KST)까지 만들어지지 않았습니다.", f"overdue:{today}"))
    return alerts


def write_alerts(alerts_dir: Path, alerts: list[Alert]) -> list[Alert]:
    """Write each alert once (a file per day and kind); return the new ones."""
    alerts_dir.mkdir(parents=True, exist_ok=True)
    new = []
    for alert in alerts:
        path = alerts_dir / f"{alert.day}-{alert.kind}.json"
        if path.exists():
            try:
                if json.loads(path.read_text(encoding="utf-8")).get("key") == alert.key:
                    continue
            except json.JSONDecodeError:
                pass
        payload = {"day": alert.day, "kind": alert.kind, "message": alert.message, "key": alert.key,
                   "raised_at": datetime.now(KST).isoformat(timespec="seconds")}
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, path)
        with open(alerts_dir / "alerts.log", "a", encoding="utf-8") as log:
            log.write(f"{payload['raised_at']}\t{alert.kind}\t{alert.day}\t{alert.message}\n")
        new.append(alert)
    return new
