"""The gate and quality checks as Dagster sees them: specs, results, and the UI's explanations.

Every check is partitioned like its asset, so each evaluation is recorded against its own day: the
partitions view and the checks tab show a rejected day as failed, with its observed value,
threshold and sample rows.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import dagster as dg

from dmf_assets.defs.partitions import daily_partitions
from dmf_assets.domain.gates import (
    COMPLETENESS,
    GATES,
    QUALITY_LABELS,
    RECHECK_RULE,
    Gate,
    GateOutcome,
    GateRegistry,
    QualityMetric,
)
from dmf_assets.report.rows import sample_table

# Partitioned check specs are what make a day's verdict visible on its partition; Dagster 1.13 marks
# them as a preview at every load, which is noise for users.
warnings.filterwarnings("ignore", message=r".*partitions_def on an AssetCheckSpec.*")

#: the normalized day's quality metrics (`domain.gates.quality_metrics`), in the order the UI lists them.
#: They are warnings, and Dagster records them as ONE check, `quality_metrics`: fifteen checks cost a run
#: thirty stored events (planned + evaluated) for what one table says as well.
QUALITY_METRICS = tuple(QUALITY_LABELS.items())
#: the one WARN check on normalized_records that holds all of QUALITY_METRICS
QUALITY_CHECK = "quality_metrics"


def gate_spec(g: Gate) -> dg.AssetCheckSpec:
    """A gate's blocking check, on the asset that judges it (its registry entry's `asset`)."""
    return dg.AssetCheckSpec(
        g.check_name,
        asset=g.asset,
        blocking=True,
        partitions_def=daily_partitions,
        description=f"게이트 {g.number} (차단) — {g.rule_text}. 실패하면 그날은 거부되고 비교 기준일은 그대로입니다.",
    )


def gate_specs(asset: str, registry: GateRegistry = GATES) -> list[dg.AssetCheckSpec]:
    """The blocking checks of every gate of `registry` judged on `asset`, in gate order."""
    return [gate_spec(g) for g in registry if g.asset == asset]


#: gate 2 judged again on snapshot_diff, on the day's would-be withdrawals (`commit.recheck_gate`): its own check, so
#: a day it refuses is a failed check on that day's partition, like any gate's
RECHECK_CHECK = f"{COMPLETENESS.check_name}_recheck"


def recheck_spec() -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        RECHECK_CHECK,
        asset="snapshot_diff",
        blocking=True,
        partitions_def=daily_partitions,
        description=f"게이트 {COMPLETENESS.number} (차단, 비교 뒤 한 번 더) — {RECHECK_RULE}. 원천이 아직 싣고 있는 "
        "등록이 수집본에 없거나 확인하지 못하면 그날은 거부되고 비교 기준일은 그대로입니다.",
    )


def warn_spec(name: str, asset: str, description: str) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(name, asset=asset, partitions_def=daily_partitions, description=description)


def md_table(header: Sequence[str], rows: Sequence[Sequence[object]], width: int = 120) -> str:
    """A Markdown table for the UI; a count is written as every other count the product writes (9,206, not 9206)."""

    def cell(v: object) -> str:
        text = f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str("" if v is None else v)
        return text.replace("|", "\\|").replace("\n", " ")[:width]

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def samples_md(samples: tuple[dict, ...] | list[dict]) -> str:
    """Sample rows under Korean headers, as the rejected day's 요약 shows them (`report.rows.sample_table`)."""
    if not samples:
        return "표본 행 없음"
    header, rows = sample_table(samples)
    return md_table(header, rows, width=80)


def gates_md(gates: list[GateOutcome]) -> str:
    mark = {True: "✅ 통과", False: "❌ 실패", None: "— 미평가"}
    return md_table(
        ["#", "게이트", "결과", "관측값", "기준", "설명"],
        [[g.number, g.label_ko, mark[g.passed], g.observed, g.threshold, g.detail] for g in gates],
    )


def gate_result(g: GateOutcome, asset: str, check_name: str | None = None) -> dg.AssetCheckResult:
    """One gate's verdict (on its own check, or `check_name`). A gate not evaluated (the day was already rejected)
    is a WARN, so it does not block the rejected day's own report."""
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=check_name or g.gate.check_name,
        passed=g.passed is not False,
        severity=dg.AssetCheckSeverity.ERROR if g.passed is not None else dg.AssetCheckSeverity.WARN,
        description=f"{g.label_ko}: {g.observed} (기준 {g.threshold}) — {g.detail}",
        metadata={
            "observed": dg.MetadataValue.text(g.observed),
            "observed_value": dg.MetadataValue.float(g.observed_value) if g.observed_value is not None else None,
            "threshold": dg.MetadataValue.text(g.threshold),
            "threshold_value": dg.MetadataValue.float(g.threshold_value) if g.threshold_value is not None else None,
            "detail": dg.MetadataValue.text(g.detail),
            "sample_rows": dg.MetadataValue.md(samples_md(g.samples)),
            "samples": dg.MetadataValue.json(list(g.samples)),
        },
    )


def quality_spec() -> dg.AssetCheckSpec:
    names = ", ".join(name for name, _ in QUALITY_METRICS)
    return warn_spec(
        QUALITY_CHECK,
        "normalized_records",
        f"품질 경고 (차단하지 않음): 품질 지표 {len(QUALITY_METRICS)}개를 한 검사로 — 하나라도 기대를 벗어나면 경고(WARN)이고, "
        f"설명과 메타데이터 'failing'이 그 지표를 이름으로 말합니다. 표는 메타데이터 'metrics'. Non-blocking quality "
        f"metrics, one check: it warns when any of them is off and names it ({names}).",
    )


def quality_result(metrics: list[QualityMetric]) -> dg.AssetCheckResult:
    """The day's quality metrics as one WARN check: passed only if every metric is as expected; the
    description and the metadata name each failing metric, and the table holds all of them."""
    by_name = {m.name: m for m in metrics}
    evaluated = [(name, label, by_name[name]) for name, label in QUALITY_METRICS if name in by_name]
    failing = [(name, label, m) for name, label, m in evaluated if not m.ok]
    rows = [
        [name, label, "—", "—", "— 미평가", "평가하지 않음 (not evaluated)"]
        if (m := by_name.get(name)) is None
        else [name, label, m.value, m.expected, "✅ 정상" if m.ok else "⚠️ 경고", m.detail]
        for name, label in QUALITY_METRICS
    ]
    if failing:
        description = f"품질 경고 {len(failing)}건 / {len(QUALITY_METRICS)} — " + "; ".join(
            f"{label}({name}): {m.detail} (기대 {m.expected})" for name, label, m in failing
        )
    else:
        n = len(evaluated)
        description = f"품질 지표 {n}개 모두 정상 (all {n} quality metrics as expected)"
        if n < len(QUALITY_METRICS):
            description += f" — {len(QUALITY_METRICS) - n}개는 평가하지 않음 (not evaluated)"
    # sample rows: the failing metrics' first, then those of passing metrics that still point at rows
    with_samples = [x for x in failing if x[2].samples] + [x for x in evaluated if x[2].ok and x[2].samples]
    sample_md = "\n\n".join(f"**{label} ({name})**\n\n{samples_md(m.samples)}" for name, label, m in with_samples)
    metadata: dict = {
        "failing": dg.MetadataValue.text(", ".join(name for name, _, _ in failing)),
        "failing_count": dg.MetadataValue.int(len(failing)),
        "metrics": dg.MetadataValue.md(md_table(["지표", "항목", "값", "기대", "결과", "설명"], rows)),
        "sample_rows": dg.MetadataValue.md(sample_md or "표본 행 없음"),
        "samples": dg.MetadataValue.json({name: list(m.samples) for name, _, m in with_samples}),
    }
    # each metric's value under its own name, so the check's history plots it day by day
    metadata.update({name: dg.MetadataValue.float(float(m.value)) for name, _, m in evaluated})
    return dg.AssetCheckResult(
        check_name=QUALITY_CHECK,
        passed=not failing,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata=metadata,
    )
