"""What a finished message never contains, as the notification tests check it (a support module, not a test
module: the texts' tests and the SMTP / webhook tests share it).

`assert_readable`: any text a person receives — no open particle, no missing value, no sheet the workbook lacks.
`assert_team_words`: the team's mail (docs/DOMAIN.md §9, two audiences) — no command, run id, `[section]` key,
API field, internal key, snake_case identifier or English jargon; only analyst words.
"""

from __future__ import annotations

import re

from dmf_assets.report.model import SHEET_NAMES

#: what a finished text never contains: open particles, missing values, unformatted code
FORBIDDEN = (
    "이(가)",
    "을(를)",
    "은(는)",
    "와(과)",
    "(으)로",
    "None",
    "nan",
    " - — ",
    "{",
    "}",
    "관측값 -",
    "기준 -",
    "--date …",
    "상태를, ",
)

#: what the team's mail never says: each pattern with what it would be
TEAM_FORBIDDEN = (
    (r"dmf ", "a dmf command"),
    (r"`", "a command in backquotes"),
    (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-", "a run id"),
    (r"\[[a-z_]+(\.[a-z_]+)?\]", "a [section] config key"),
    (r"\b[a-z]+_[a-z_]+\b", "a snake_case identifier (setting, asset, fault)"),
    (r"totalCount|resultCode|numOfRows|serviceKey", "an API field name"),
    (r"SYN-", "an internal key"),
    (r"Dagster|게이트|run id|\brun\b", "the engineer's words"),
    (
        r"(?i)\b(accepted|rejected|baseline|unchanged|updated|no change|collection failed|comparison base|status"
        r"|details|workbook|link|what happened|what to do|retry|retries|transient|gate|observed|threshold)\b",
        "English jargon",
    ),
    (r"/ [A-Z][a-z]", "a bilingual 'Korean / English' label"),
)


def assert_readable(text: str) -> None:
    for bad in FORBIDDEN:
        assert bad not in text, (bad, text)
    for sheet in re.findall(r"'([^']+)' 시트", text):
        assert sheet in SHEET_NAMES, (sheet, text)


def assert_team_words(text: str) -> None:
    """The team's mail reads as analyst words only (and is readable)."""
    assert_readable(text)
    for pattern, what in TEAM_FORBIDDEN:
        found = re.search(pattern, text)
        assert found is None, f"{what}: {found.group(0)!r} in\n{text}"
