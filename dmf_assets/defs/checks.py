"""The gate and quality checks as Dagster sees them: specs, results, and the UI's explanations.

Every check is partitioned like its asset, so each evaluation is recorded against its own day: the
partitions view and the checks tab show a rejected day as failed, with its observed value,
threshold and sample rows.
"""

from __future__ import annotations

import warnings

import dagster as dg

from dmf_assets.defs.partitions import daily_partitions
from dmf_assets.domain.gates import GATE_BY_NUMBER, GATES, GateOutcome, QualityMetric
from dmf_assets.report.rows import sample_table

# Partitioned check specs are what make a day's verdict visible on its partition; Dagster 1.13 marks
# them as a preview at every load, which is noise for users.
warnings.filterwarnings("ignore", message=r".*partitions_def on an AssetCheckSpec.*")

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


def gate_spec(n: int) -> dg.AssetCheckSpec:
    """Gate `n`'s blocking check, on the asset that judges it (its registry entry's `asset`)."""
    g = GATE_BY_NUMBER[n]
    return dg.AssetCheckSpec(
        g.check_name, asset=g.asset, blocking=True, partitions_def=daily_partitions,
        description=f"게이트 {n} (차단) — {g.rule_text}. 실패하면 그날은 거부되고 비교 기준일은 그대로입니다.",
    )


def gate_specs(asset: str) -> list[dg.AssetCheckSpec]:
    """The blocking checks of every gate judged on `asset`, in gate order."""
    return [gate_spec(g.number) for g in GATES if g.asset == asset]


def warn_spec(name: str, asset: str, description: str) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(name, asset=asset, partitions_def=daily_partitions, description=description)


def md_table(header: list[str], rows: list[list], width: int = 120) -> str:
    def cell(v: object) -> str:
        return str("" if v is None else v).replace("|", "\\|").replace("\n", " ")[:width]

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


def gate_result(g: GateOutcome, asset: str) -> dg.AssetCheckResult:
    """One gate's verdict. A gate not evaluated (the day was already rejected) is a WARN, so it does not
    block the rejected day's own report."""
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=GATE_BY_NUMBER[g.number].check_name,
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


def quality_result(name: str, label: str, m: QualityMetric | None) -> dg.AssetCheckResult:
    if m is None:
        return dg.AssetCheckResult(check_name=name, passed=True, severity=dg.AssetCheckSeverity.WARN,
                                   description=f"{label}: 평가하지 않음 (not evaluated)")
    return dg.AssetCheckResult(
        check_name=name,
        passed=bool(m.ok),
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{label}: {m.detail} (기대 {m.expected})",
        metadata={
            "value": dg.MetadataValue.float(float(m.value)),
            "expected": m.expected,
            "sample_rows": dg.MetadataValue.md(samples_md(m.samples)),
            "samples": dg.MetadataValue.json(list(m.samples)),
        },
    )
