"""Daily maintenance at 05:30 KST, before the 06:00 collection: back up the history, then prune.

The backup step is in pool "duckdb" (like every step that opens the history database), so it waits
for a running day instead of competing with it; it also takes the database file lock. Pruning runs
only after a successful backup (a fresh backup is then the newest and can never be pruned), and it
never deletes the last accepted day's data (see `dmf_assets.ops.retention`).
"""

from collections.abc import Iterable
from pathlib import Path

import dagster as dg

from dmf_assets.defs.partitions import daily_schedule, scheduled_day
from dmf_assets.defs.resources import DmfWorkspace
from dmf_assets.ops import backup as ops_backup
from dmf_assets.ops import retention
from dmf_assets.ops.common import ProjectPaths, human_size, project_paths
from dmf_assets.orchestration.followups import TRIGGER_TAG


def _paths(context: dg.OpExecutionContext, workspace: DmfWorkspace) -> ProjectPaths:
    root_dir = getattr(context.instance, "root_directory", None)
    return project_paths(workspace.settings(), workspace.root, dagster_home=Path(root_dir) if root_dir else None)


@dg.op(
    pool="duckdb",
    description="DB를 잠근 채 CHECKPOINT 후 data/backups/dmf-YYYY-MM-DD-HHMMSS.duckdb로 복사하고, 사본을 열어 행 수를 검증",
)
def backup_history(context: dg.OpExecutionContext, workspace: DmfWorkspace) -> str:
    paths = _paths(context, workspace)
    result = ops_backup.backup_database(paths.database, paths.backups_dir)
    context.log.info(f"백업 완료 / backup written: {result.path} ({human_size(result.bytes)}, {result.runs} runs)")
    context.add_output_metadata(
        {
            "path": dg.MetadataValue.path(str(result.path)),
            "bytes": dg.MetadataValue.int(result.bytes),
            "size": human_size(result.bytes),
            "runs": dg.MetadataValue.int(result.runs),
            "tables": dg.MetadataValue.json(result.table_counts),
            "lock_wait_s": dg.MetadataValue.float(round(result.waited_s, 2)),
        }
    )
    return str(result.path)


@dg.op(
    description="보존 기간(config [retention])이 지난 원본·스테이징·리포트·백업·로그 삭제; 마지막 반영일의 데이터는 보존"
)
def prune_retention(context: dg.OpExecutionContext, workspace: DmfWorkspace, backup_path: str) -> None:
    paths = _paths(context, workspace)
    report = retention.prune(paths, workspace.settings().retention)
    context.log.info("\n".join(report.lines(limit=50)))
    by_kind = report.by_kind()
    context.add_output_metadata(
        {
            "last_accepted_day": report.last_accepted.isoformat() if report.last_accepted else "unknown",
            "removed": dg.MetadataValue.int(len(report.removed)),
            "bytes_freed": dg.MetadataValue.int(report.bytes),
            "by_kind": dg.MetadataValue.json({k: {"files": n, "bytes": b} for k, (n, b) in by_kind.items()}),
            "kept_backup": dg.MetadataValue.path(backup_path),
            "notes": dg.MetadataValue.md(_bullets(report.notes)),
            "removed_files": dg.MetadataValue.md(
                _bullets(f"[{r.kind}] `{r.path}` ({human_size(r.bytes)})" for r in report.removed[:200])
            ),
        }
    )


def _bullets(lines: Iterable[str]) -> str:
    """Markdown bullets, or 「없음 / none」: the UI renders Markdown, where a lone "-" is an empty bullet."""
    return "\n".join(f"- {line}" for line in lines) or "없음 / none"


@dg.job(
    description="매일 DB 백업 후 보존 기간 정리 (docs/DOMAIN.md §7: 원본 180일, 리포트 365일, 백업 30일)",
    tags={"dmf/kind": "maintenance"},
)
def dmf_maintenance_job() -> None:
    prune_retention(backup_history())


@daily_schedule(
    dmf_maintenance_job,
    "30 5 * * *",
    "매일 05:30(KST), 06:00 수집 전에 DB를 백업하고 보존 기간이 지난 파일을 정리합니다.",
)
def daily_maintenance(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    day = scheduled_day(context)
    return dg.RunRequest(run_key=f"maintenance:{day.isoformat()}", tags={TRIGGER_TAG: "schedule"})
