"""The fifteen quality metrics are ONE WARN check on normalized_records (`quality_metrics`): it passes only when
every metric is as expected, and its description and metadata name each failing metric."""

from __future__ import annotations

import dagster as dg

from dmf_assets.defs.checks import QUALITY_CHECK, QUALITY_METRICS, quality_result, quality_spec
from dmf_assets.domain.gates import QualityMetric


def _metrics(failing: dict[str, str] | None = None) -> list[QualityMetric]:
    failing = failing or {}
    return [
        QualityMetric(
            name,
            label,
            3.0 if name in failing else 0.0,
            "0",
            name not in failing,
            failing.get(name, "0건"),
            ({"row_no": 7, "permit_no": "X-1"},) if name in failing else (),
        )
        for name, label in QUALITY_METRICS
    ]


def test_one_spec_on_normalized_records_warn_only():
    spec = quality_spec()
    assert spec.name == QUALITY_CHECK and spec.asset_key == dg.AssetKey("normalized_records") and not spec.blocking
    assert all(name in spec.description for name, _ in QUALITY_METRICS)


def test_all_as_expected_passes_with_every_value_in_the_table():
    result = quality_result(_metrics())
    assert result.passed and result.severity == dg.AssetCheckSeverity.WARN and result.check_name == QUALITY_CHECK
    table = result.metadata["metrics"].value
    for name, label in QUALITY_METRICS:
        assert f"| {name} | {label} |" in table
        assert result.metadata[name].value == 0.0  # each metric's value plots under its own name
    assert result.metadata["failing"].value == "" and result.metadata["failing_count"].value == 0


def test_a_failing_metric_fails_the_check_and_is_named():
    result = quality_result(_metrics({"oversize_fields": "1건 초과", "schema_drift": "누락 필드: X"}))
    assert not result.passed and result.severity == dg.AssetCheckSeverity.WARN
    assert "oversize_fields" in result.description and "schema_drift" in result.description
    assert "누락 필드: X" in result.description and "row_count" not in result.description
    assert result.metadata["failing"].value == "oversize_fields, schema_drift"
    assert result.metadata["failing_count"].value == 2
    assert "⚠️ 경고" in result.metadata["metrics"].value
    assert "(oversize_fields)" in result.metadata["sample_rows"].value
    assert set(result.metadata["samples"].value) == {"oversize_fields", "schema_drift"}


def test_a_metric_not_evaluated_is_said_so_and_does_not_fail():
    result = quality_result([m for m in _metrics() if m.name != "page_repeats"])
    assert result.passed and "평가하지 않음" in result.description
    assert "| page_repeats | 페이지 간 반복 행 | — |" in result.metadata["metrics"].value
