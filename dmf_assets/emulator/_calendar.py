"""Korean business days 2025–2030: MFDS publishes new registrations on working days only.

The holiday list is hard-coded (lunar holidays 설날/추석, 부처님오신날 and substitute holidays do not
follow a simple rule). Source: 관공서의 공휴일에 관한 규정 as applied for 2025–2027, including the
2025-01-27 temporary holiday and the election days 2025-06-03 and 2026-06-03. 2028–2030 are that rule's
holidays for the lunar dates as published, with the election days the election law sets (2028-04-12,
2030-03-27, 2030-06-05); a temporary holiday declared later is not in it.
"""

from __future__ import annotations

from datetime import date, timedelta

FIRST_DATE = date(2025, 1, 1)
LAST_DATE = date(2030, 12, 31)

KOREAN_HOLIDAYS: dict[date, str] = {
    # 2025
    date(2025, 1, 1): "신정",
    date(2025, 1, 27): "임시공휴일",
    date(2025, 1, 28): "설날 연휴",
    date(2025, 1, 29): "설날",
    date(2025, 1, 30): "설날 연휴",
    date(2025, 3, 1): "삼일절",
    date(2025, 3, 3): "삼일절 대체공휴일",
    date(2025, 5, 5): "어린이날·부처님오신날",
    date(2025, 5, 6): "대체공휴일",
    date(2025, 6, 3): "제21대 대통령 선거일",
    date(2025, 6, 6): "현충일",
    date(2025, 8, 15): "광복절",
    date(2025, 10, 3): "개천절",
    date(2025, 10, 5): "추석 연휴",
    date(2025, 10, 6): "추석",
    date(2025, 10, 7): "추석 연휴",
    date(2025, 10, 8): "추석 대체공휴일",
    date(2025, 10, 9): "한글날",
    date(2025, 12, 25): "성탄절",
    # 2026
    date(2026, 1, 1): "신정",
    date(2026, 2, 16): "설날 연휴",
    date(2026, 2, 17): "설날",
    date(2026, 2, 18): "설날 연휴",
    date(2026, 3, 1): "삼일절",
    date(2026, 3, 2): "삼일절 대체공휴일",
    date(2026, 5, 5): "어린이날",
    date(2026, 5, 24): "부처님오신날",
    date(2026, 5, 25): "부처님오신날 대체공휴일",
    date(2026, 6, 3): "제9회 전국동시지방선거일",
    date(2026, 6, 6): "현충일",
    date(2026, 8, 15): "광복절",
    date(2026, 8, 17): "광복절 대체공휴일",
    date(2026, 9, 24): "추석 연휴",
    date(2026, 9, 25): "추석",
    date(2026, 9, 26): "추석 연휴",
    date(2026, 10, 3): "개천절",
    date(2026, 10, 5): "개천절 대체공휴일",
    date(2026, 10, 9): "한글날",
    date(2026, 12, 25): "성탄절",
    # 2027
    date(2027, 1, 1): "신정",
    date(2027, 2, 6): "설날 연휴",
    date(2027, 2, 7): "설날",
    date(2027, 2, 8): "설날 연휴",
    date(2027, 2, 9): "설날 대체공휴일",
    date(2027, 3, 1): "삼일절",
    date(2027, 5, 5): "어린이날",
    date(2027, 5, 13): "부처님오신날",
    date(2027, 6, 6): "현충일",
    date(2027, 8, 15): "광복절",
    date(2027, 8, 16): "광복절 대체공휴일",
    date(2027, 9, 14): "추석 연휴",
    date(2027, 9, 15): "추석",
    date(2027, 9, 16): "추석 연휴",
    date(2027, 10, 3): "개천절",
    date(2027, 10, 4): "개천절 대체공휴일",
    date(2027, 10, 9): "한글날",
    date(2027, 10, 11): "한글날 대체공휴일",
    date(2027, 12, 25): "성탄절",
    date(2027, 12, 27): "성탄절 대체공휴일",
    # 2028
    date(2028, 1, 1): "신정",
    date(2028, 1, 25): "설날 연휴",
    date(2028, 1, 26): "설날",
    date(2028, 1, 27): "설날 연휴",
    date(2028, 3, 1): "삼일절",
    date(2028, 4, 12): "제23대 국회의원 선거일",
    date(2028, 5, 2): "부처님오신날",
    date(2028, 5, 5): "어린이날",
    date(2028, 6, 6): "현충일",
    date(2028, 8, 15): "광복절",
    date(2028, 10, 2): "추석 연휴",
    date(2028, 10, 3): "추석·개천절",
    date(2028, 10, 4): "추석 연휴",
    date(2028, 10, 5): "대체공휴일",
    date(2028, 10, 9): "한글날",
    date(2028, 12, 25): "성탄절",
    # 2029
    date(2029, 1, 1): "신정",
    date(2029, 2, 12): "설날 연휴",
    date(2029, 2, 13): "설날",
    date(2029, 2, 14): "설날 연휴",
    date(2029, 3, 1): "삼일절",
    date(2029, 5, 5): "어린이날",
    date(2029, 5, 7): "어린이날 대체공휴일",
    date(2029, 5, 20): "부처님오신날",
    date(2029, 5, 21): "부처님오신날 대체공휴일",
    date(2029, 6, 6): "현충일",
    date(2029, 8, 15): "광복절",
    date(2029, 9, 21): "추석 연휴",
    date(2029, 9, 22): "추석",
    date(2029, 9, 23): "추석 연휴",
    date(2029, 9, 24): "추석 대체공휴일",
    date(2029, 10, 3): "개천절",
    date(2029, 10, 9): "한글날",
    date(2029, 12, 25): "성탄절",
    # 2030
    date(2030, 1, 1): "신정",
    date(2030, 2, 2): "설날 연휴",
    date(2030, 2, 3): "설날",
    date(2030, 2, 4): "설날 연휴",
    date(2030, 2, 5): "설날 대체공휴일",
    date(2030, 3, 1): "삼일절",
    date(2030, 3, 27): "제22대 대통령 선거일",
    date(2030, 5, 5): "어린이날",
    date(2030, 5, 6): "어린이날 대체공휴일",
    date(2030, 5, 9): "부처님오신날",
    date(2030, 6, 5): "제10회 전국동시지방선거일",
    date(2030, 6, 6): "현충일",
    date(2030, 8, 15): "광복절",
    date(2030, 9, 11): "추석 연휴",
    date(2030, 9, 12): "추석",
    date(2030, 9, 13): "추석 연휴",
    date(2030, 10, 3): "개천절",
    date(2030, 10, 9): "한글날",
    date(2030, 12, 25): "성탄절",
}


def is_business_day(day: date) -> bool:
    """Monday–Friday and not a Korean public holiday."""
    return day.weekday() < 5 and day not in KOREAN_HOLIDAYS


def next_business_day(day: date) -> date:
    """`day` itself when it is a business day, otherwise the next one."""
    while not is_business_day(day):
        day += timedelta(days=1)
    return day


def previous_business_day(day: date) -> date:
    """`day` itself when it is a business day, otherwise the last one before it."""
    while not is_business_day(day):
        day -= timedelta(days=1)
    return day


def add_business_days(day: date, n: int) -> date:
    """The n-th business day after `day` (n ≥ 1)."""
    while n > 0:
        day += timedelta(days=1)
        if is_business_day(day):
            n -= 1
    return day


def parse_day(value: date | str, *, what: str = "date") -> date:
    """A `date` or an ISO `YYYY-MM-DD` string; ValueError with the offending value otherwise."""
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise ValueError(f"{what} must be a date or 'YYYY-MM-DD', got {value!r}")


def check_in_range(day: date) -> date:
    if not FIRST_DATE <= day <= LAST_DATE:
        raise ValueError(
            f"the emulated registry covers {FIRST_DATE.isoformat()}..{LAST_DATE.isoformat()}; "
            f"{day.isoformat()} is outside that range"
        )
    return day
