"""The emulated MFDS DMF registry: any day's full list, its evolution, and the ground truth.

`RegistrySimulator(seed)` builds, once per instance, a compact event log for 2025-01-01..2030-12-31:
an initial registry of ≈8,600 rows (the 151 real seed rows among them) and, day by day, new
registrations on Korean business days, grant-derived copies, numbers assigned to registrations
published without one, substantive changes, cosmetic re-typings, withdrawals and reappearances —
and, drawn afterwards, numbers corrected after publication (re-numberings).
Each registration is an *entity* with a list of (first day, row) versions, so `items(day)` is a
replay (one bisect per entity) and `truth(old, new)` compares the two rendered states directly.

Benchmark-sized frames (`synthetic_registry`, `churn_day`) live outside the package, in `bench/synthetic.py`.
"""

from __future__ import annotations

import bisect
import itertools
import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from dmf_assets.domain.model import API_FIELDS, GroundTruth
from dmf_assets.emulator import _keys, _timeline_cache, _vocab
from dmf_assets.emulator._calendar import (
    FIRST_DATE,
    LAST_DATE,
    add_business_days,
    check_in_range,
    is_business_day,
    next_business_day,
    parse_day,
    previous_business_day,
)
from dmf_assets.emulator._edits import (
    COMPARED_POSITIONS,
    SINGLE_SITE_EDITS,
    SUBSTANTIVE_EDITS,
    SUBSTANTIVE_KINDS,
    compare_rows,
    is_valid_substantive,
    single_site,
    truth_change,
)
from dmf_assets.emulator._records import (
    APP,
    BIZ,
    CTRY,
    DATE,
    ING,
    Applicant,
    Draft,
    Factory,
    P,
    Row,
    corrected_serial,
    cosmetic_edit,
    group_date,
    malform_number,
    own_number,
    split_grant,
    with_field,
)
from dmf_assets.emulator._sampling import allocate, cumulative, pick, poisson
from dmf_assets.emulator._vocab import COUNTRIES, COUNTRY_BY_NAME

__all__ = ["FIRST_DATE", "LAST_DATE", "RegistrySimulator", "compare_rows"]

SEED_DATE = date.fromisoformat(_vocab.SEED_OBSERVED_ON)
INITIAL_SIZE = 8600
#: registry size the simulation steers towards (docs/DOMAIN.md §2: 9,167 on 2026-10-08)
SIZE_PATH = ((FIRST_DATE, 8600), (date(2026, 10, 8), 9170), (date(2027, 12, 31), 9500), (LAST_DATE, 10400))
#: the emulated history first ended here. The days after it were added later, built after it with generators
#: of their own, so that every day up to it stays as the tests and the fault matrix know it
FIRST_HISTORY_END = date(2027, 12, 31)
#: Re-numberings (docs/DOMAIN.md §4): the registry lists a registration under a corrected number — a grant-style
#: "(n)" number replaced by the registration's own standard number (the real case, seen between 2026-09-25 and
#: 10-08), or a standard number's serial corrected; the two kinds alternate. Rare, as in the real registry
#: (one among ≈9,200 registrations in 13 days): one every RENUMBER_GAP business days, so any 30 days hold at
#: least one, and one on RENUMBER_ANCHOR, the emulated day of the real case.
RENUMBER_GAP = (8, 15)
RENUMBER_ANCHOR = date(2026, 10, 7)
#: a re-numbered registration is otherwise untouched (and listed) this many days before and after: any
#: comparison up to that long sees the number change alone, as the real dumps did
RENUMBER_QUIET_DAYS = 21


# --- the simulation ----------------------------------------------------------------------------------


class _Entity:
    __slots__ = ("created", "draft", "eid", "is_grant", "is_seed", "locked_until", "rows", "starts")

    def __init__(
        self,
        eid: int,
        day: int,
        row: Row | None,
        draft: Draft | None = None,
        *,
        is_grant: bool = False,
        is_seed: bool = False,
    ) -> None:
        self.eid = eid
        self.starts: list[int] = [day]
        self.rows: list[Row | None] = [row]
        self.draft = draft
        self.is_grant = is_grant
        self.is_seed = is_seed
        self.locked_until = -1
        self.created = day

    def row_at(self, day: int) -> Row | None:
        i = bisect.bisect_right(self.starts, day) - 1
        return self.rows[i] if i >= 0 else None

    @property
    def current(self) -> Row | None:
        return self.rows[-1]

    @property
    def present_row(self) -> Row:
        """`current` of an entity known to be present (listed in `present`, or picked as editable)."""
        row = self.rows[-1]
        assert row is not None, f"#{self.eid} is withdrawn"
        return row

    def set(self, day: int, row: Row | None) -> None:
        if self.starts[-1] == day:
            self.rows[-1] = row
        else:
            self.starts.append(day)
            self.rows.append(row)


@dataclass
class _Counters:
    withdrawals: int = 0
    pending_numbers: int = 0


class _Timeline:
    """Builds the whole 2025–2030 history for one seed (deterministic; ≈1.3 s, cached: `_timeline_cache`)."""

    def __init__(self, seed: int, last: date = LAST_DATE) -> None:
        self.rng = random.Random(seed)
        self.ndays = (last - FIRST_DATE).days + 1
        self.seed_lock = (SEED_DATE - FIRST_DATE).days
        self.entities: list[_Entity] = []
        self.logs: list[list[str]] = [[] for _ in range(self.ndays)]
        self.present: list[int] = []
        self._pos: dict[int, int] = {}
        self.scheduled: dict[int, list[tuple]] = {}
        self.counters = _Counters()
        self.factory = Factory(self.rng, _vocab.load_seed_rows())
        self._subst_cycle: list[str] = []
        self._build_initial()
        self._evolve()
        end = (FIRST_HISTORY_END - FIRST_DATE).days
        self._renumber(random.Random(f"renumber-{seed}"), FIRST_DATE, FIRST_HISTORY_END, horizon=end)
        self._renumber(random.Random(f"renumber-{seed}-{FIRST_HISTORY_END}"), FIRST_HISTORY_END, last)

    # --- bookkeeping ----------------------------------------------------------------------------
    def _new_entity(self, day: int, row: Row | None, draft: Draft | None = None, **kw: bool) -> _Entity:
        e = _Entity(len(self.entities), day, row, draft, **kw)
        self.entities.append(e)
        if row is not None:
            self._add_present(e.eid)
        return e

    def _add_present(self, eid: int) -> None:
        self._pos[eid] = len(self.present)
        self.present.append(eid)

    def _remove_present(self, eid: int) -> None:
        i = self._pos.pop(eid)
        last = self.present.pop()
        if last != eid:
            self.present[i] = last
            self._pos[last] = i

    def _schedule(self, day: int, *event: object) -> None:
        if day < self.ndays:
            self.scheduled.setdefault(day, []).append(event)

    def _log(self, day: int, text: str) -> None:
        self.logs[day].append(text)

    def _log_new(self, di: int, e: _Entity, note: str = "") -> None:
        row = e.present_row
        self._log(di, f"NEW #{e.eid} {row[P]} {row[ING]} / {row[APP]}{note}")

    def _editable(self, e: _Entity, day: int) -> bool:
        return e.current is not None and e.locked_until < day and e.current[P] is not None

    def _pick_editable(
        self, day: int, ok: Callable[[_Entity], bool] = lambda e: True, tries: int = 60
    ) -> _Entity | None:
        rng = self.rng
        for _ in range(tries):
            e = self.entities[rng.choice(self.present)]
            if self._editable(e, day) and ok(e):
                return e
        return None

    # --- initial registry ---------------------------------------------------------------------
    def _build_initial(self) -> None:
        rng, f = self.rng, self.factory
        seed_rows = _vocab.load_seed_rows()
        initial: list[tuple[Row, Draft | None, dict]] = []  # row, draft, entity kwargs
        later: list[tuple[date, Row, dict]] = []
        seed_numbers = {_keys.permit_key(r["DMF_PERMIT_NO"]) for r in seed_rows}
        f.used |= seed_numbers
        bases: dict[str, tuple[date, Row]] = {}
        for r in seed_rows:
            row: Row = tuple(r[k] for k in API_FIELDS)
            base_no, suffix = split_grant(_keys.permit_key(row[P]) or "")
            issue = date.fromisoformat(row[DATE])
            if suffix:
                f.grants.setdefault(base_no, []).append(suffix)
                if base_no not in seed_numbers:
                    prev = bases.get(base_no)
                    if prev is None or issue < prev[0]:
                        bases[base_no] = (issue, row)
            if issue <= FIRST_DATE:
                initial.append((row, None, {"is_seed": True}))
            else:
                later.append((issue, row, {"is_seed": True}))
        # the originals the seed rows were derived from (other applicants, same ingredient and sites)
        for base_no in sorted(bases):
            grant_issue, srow = bases[base_no]
            head = base_no[:8]
            if head.isdigit():
                issue = date(int(head[:4]), int(head[4:6]), int(head[6:8]))
            else:
                issue = grant_issue - timedelta(days=rng.randint(200, 2500))
            issue = min(issue, grant_issue)
            applicant = f.pick_applicant()
            row = with_field(
                srow,
                permit_no=base_no,
                applicant=applicant.name,
                issue_date=issue.isoformat(),
                bizrno=applicant.bizrno,
            )
            f.used.add(base_no)
            if issue <= FIRST_DATE:
                initial.append((row, None, {}))
            else:
                later.append((issue, row, {}))
        n_pending, n_dups = 4, 18
        n_gen = INITIAL_SIZE - len(initial) - n_pending - n_dups
        n_grants = int(n_gen * 0.3)
        n_orig = n_gen - n_grants
        slots = allocate([a.weight for a in f.applicants], n_gen)
        rng.shuffle(slots)
        countries = allocate([c.entries / 1.1 for c in COUNTRIES], n_gen)
        rng.shuffle(countries)
        latest = FIRST_DATE - timedelta(days=1)
        drafts: list[Draft] = []
        for i in range(n_orig):
            applicant = f.applicants[slots[i]]
            ing = f.pick_ingredient()
            earliest = max(date(2003, 6, 1), group_date(ing))
            issue = f.random_issue_date(earliest, latest)
            drafts.append(f.original(issue, applicant, ingredient=ing, first_country=COUNTRIES[countries[i]]))
        drafts.sort(key=lambda d: (d.accept, d.issue))
        originals: list[tuple[Row, Draft]] = []
        for d in drafts:
            f.assign_number(d)
            originals.append((f.render(d), d))
        # grant-derived copies: popular originals are copied many times (heavy tail)
        by_country: dict[int, list[tuple[Row, Draft]]] = {}
        for brow, bd in originals:
            by_country.setdefault(COUNTRIES.index(bd.sites[0][1].country), []).append((brow, bd))
        weights = {k: cumulative([rng.paretovariate(1.1) for _ in v]) for k, v in by_country.items()}
        plan = []
        for i in range(n_orig, n_gen):
            applicant = f.applicants[slots[i]]
            group = countries[i] if countries[i] in by_country else 0
            for _ in range(20):
                brow, bd = by_country[group][pick(rng, weights[group])]
                if bd.applicant.bizrno != applicant.bizrno and bd.issue < latest - timedelta(days=20):
                    break
            gissue = f.random_issue_date(bd.issue + timedelta(days=20), latest)
            plan.append((gissue, brow, bd, applicant))
        plan.sort(key=lambda p: (p[0], p[1][P]))
        grants: list[tuple[Row, Draft]] = []
        for gissue, brow, bd, applicant in plan:
            assert bd.number is not None  # every original was numbered above
            g = f.grant(brow, bd.number, bd.ingredient, gissue, applicant)
            for _ in range(50):
                if g is not None:
                    break
                brow, bd = originals[rng.randrange(len(originals))]
                if bd.issue < gissue and bd.applicant.bizrno != applicant.bizrno:
                    assert bd.number is not None  # every original was numbered above
                    g = f.grant(brow, bd.number, bd.ingredient, gissue, applicant)
            if g is not None:
                grants.append((f.render(g), g))
        # a few duplicate numbers: a second record published under an existing number
        dups = []
        for _ in range(n_dups):
            brow, bd = originals[rng.randrange(len(originals))]
            d = f.original(bd.issue, f.pick_applicant(bd.applicant.bizrno), ingredient=bd.ingredient)
            d.number, d.accept, d.ingr_text = bd.number, bd.accept, bd.ingr_text
            dups.append((f.render(d), d))
        rows = originals + grants + dups
        # a few malformed numbers (they normalize to the clean number, which stays unique)
        for i in rng.sample(range(len(originals)), int(len(rows) * 0.003)):
            row, d = rows[i]
            rows[i] = (with_field(row, permit_no=malform_number(row[P], rng)), d)
        # registrations published just before the first day, still waiting for their number
        for k in range(n_pending):
            issue = previous_business_day(latest - timedelta(days=2 * k))
            d = f.original(issue, f.pick_applicant(), accept=issue)
            row = f.render(d, with_number=False, with_date=rng.random() < 0.6)
            initial.append((row, d, {"pending": add_business_days(FIRST_DATE, 1 + k * 2)}))
        initial.extend((row, d, {"is_grant": d.base_no is not None}) for row, d in rows)
        self._ensure_country_spellings(initial)
        initial.sort(key=lambda t: (t[0][DATE] or "9999", t[0][P] or ""))
        for row, draft, kw in initial:
            pending = kw.pop("pending", None)
            e = self._new_entity(0, row, draft, **kw)
            if e.is_seed:
                e.locked_until = self.seed_lock
            if pending is not None:
                assert draft is not None  # a registration waiting for its number has its draft
                self._lock_pending(e, (draft.issue - FIRST_DATE).days, pending)
        for issue, row, kw in sorted(later, key=lambda t: (t[0], t[1][P])):
            day = (next_business_day(issue) - FIRST_DATE).days
            self._schedule(day, "appear", row, kw)

    def _ensure_country_spellings(self, initial: list[tuple[Row, Draft | None, dict]]) -> None:
        """Every one of the 49 planned country spellings is written somewhere on day one."""
        written = Counter(p for row, _, _ in initial for p in (row[CTRY] or "").split(","))
        planned = [(c.canonical, s) for c in COUNTRIES for s, _ in c.spellings] + [
            (c.canonical, c.canonical) for c in COUNTRIES
        ]
        for canonical, spelling in planned:
            spellings = (canonical,) + tuple(s for s, _ in COUNTRY_BY_NAME[canonical].spellings)
            for i, (row, d, kw) in enumerate(initial):
                if written[spelling] >= 3:
                    break
                if kw.get("is_seed") or "pending" in kw or row[CTRY] not in spellings or row[CTRY] == spelling:
                    continue
                if written[row[CTRY]] > 3:
                    written[row[CTRY]] -= 1
                    written[spelling] += 1
                    initial[i] = (with_field(row, countries=spelling), d, kw)

    def _lock_pending(self, e: _Entity, publish_day: int, assign_day: date) -> None:
        day = (assign_day - FIRST_DATE).days
        e.locked_until = day
        self.counters.pending_numbers += 1
        self._schedule(day, "assign", e.eid, publish_day)

    # --- evolution --------------------------------------------------------------------------------
    def _evolve(self) -> None:
        rng = self.rng
        bdays = {}
        for (d0, _), (d1, _) in itertools.pairwise(SIZE_PATH):
            bdays[d0] = sum(1 for k in range((d1 - d0).days) if is_business_day(d0 + timedelta(days=k)))
        next_withdrawal = add_business_days(FIRST_DATE, rng.randint(3, 9))
        for di in range(1, self.ndays):
            d = FIRST_DATE + timedelta(days=di)
            for event in self.scheduled.pop(di, []):
                self._run_scheduled(di, d, event)
            if is_business_day(d):
                self._new_registrations(di, d, self._mean_new(d, bdays))
                if rng.random() < 0.72:
                    self._substantive(di, d)
                if d >= next_withdrawal:
                    self._withdraw(di, d)
                    next_withdrawal = add_business_days(d, rng.randint(3, 8))
                n_cosm = (rng.random() < 0.6) + (rng.random() < 0.1)
            else:
                n_cosm = rng.random() < 0.08
            for _ in range(n_cosm):
                self._cosmetic(di)

    def _mean_new(self, d: date, bdays: dict) -> float:
        for (d0, v0), (d1, v1) in itertools.pairwise(SIZE_PATH):
            if d <= d1:
                slope = (v1 - v0) / bdays[d0]
                target = v0 + (v1 - v0) * (d - d0).days / (d1 - d0).days
                break
        # withdrawals run at ≈0.1 a business day net of reappearances; steer gently back to the path
        mean = slope + 0.1 + (target - len(self.present)) * 0.08
        return min(4.0, max(0.3, mean))

    def _run_scheduled(self, di: int, d: date, event: tuple) -> None:
        kind = event[0]
        if kind == "appear":
            _, row, kw = event
            e = self._new_entity(di, row, **kw)
            if e.is_seed:
                e.locked_until = self.seed_lock
            self._log_new(di, e, " (real seed row)" if e.is_seed else " (original of a seed grant)")
        elif kind == "assign":
            _, eid, publish_day = event
            e = self.entities[eid]
            row = e.current
            publish = FIRST_DATE + timedelta(days=publish_day)
            number = self.factory.assign_number(e.draft, accept=min(publish, d))
            e.set(di, with_field(row, permit_no=number, issue_date=row[DATE] or d.isoformat()))
            self.counters.pending_numbers -= 1
            self._log(
                di,
                f"NUMBER #{eid} assigned {number} (published without a number"
                f"{'' if row[DATE] else ' and date'} on {publish.isoformat()})",
            )
        elif kind == "reappear":
            _, eid = event
            e = self.entities[eid]
            if e.current is None:
                row = next(r for r in reversed(e.rows) if r is not None)
                e.set(di, row)
                self._add_present(eid)
                self._log(di, f"REAPPEAR #{eid} {row[P]} (withdrawn earlier, same number and content)")

    def _new_registrations(self, di: int, d: date, mean: float) -> None:
        rng, f = self.rng, self.factory
        lam = mean * rng.gammavariate(2.5, 1 / 2.5)
        n = min(10, poisson(rng, lam))
        if n == 0 and rng.random() < 0.5:  # the real registry rarely has a working day without one
            n = 1
        for _ in range(n):
            if rng.random() < 0.25 and self._new_grant(di, d):
                continue
            applicant = f.pick_applicant()
            accept = previous_business_day(d - timedelta(days=rng.choice((0, 0, 0, 1, 3, 7, 14))))
            draft = f.original(d, applicant, accept=accept)
            if rng.random() < 0.3 and self.counters.pending_numbers < 8:
                with_date = rng.random() < 0.6
                row = f.render(draft, with_number=False, with_date=with_date)
                e = self._new_entity(di, row, draft)
                self._lock_pending(e, di, add_business_days(d, rng.randint(1, 10)))
                self._log(di, f"NEW #{e.eid} (no number yet{'' if with_date else ', no date'}) {row[ING]} / {row[APP]}")
            else:
                f.assign_number(draft)
                self._log_new(di, self._new_entity(di, f.render(draft), draft))

    def _new_grant(self, di: int, d: date) -> bool:
        f = self.factory
        base = self._pick_editable(
            di,
            lambda e: (
                not e.is_grant
                and e.draft is not None
                and e.draft.number is not None
                and split_grant(e.draft.number)[1] is None
            ),
        )
        if base is None:
            return False
        draft = base.draft
        assert draft is not None and draft.number is not None  # what the picker asked for
        applicant = f.pick_applicant(base.present_row[BIZ])
        g = f.grant(base.present_row, draft.number, draft.ingredient, d, applicant)
        if g is None:
            return False
        e = self._new_entity(di, f.render(g), g, is_grant=True)
        self._log_new(di, e, f" (grant-derived from #{base.eid})")
        return True

    def _withdraw(self, di: int, d: date) -> None:
        e = self._pick_editable(di)
        if e is None:
            return
        row = e.present_row
        e.set(di, None)
        self._remove_present(e.eid)
        self.counters.withdrawals += 1
        note = ""
        if self.counters.withdrawals % 3 == 0:
            back = add_business_days(d, self.rng.randint(3, 12))
            self._schedule((back - FIRST_DATE).days, "reappear", e.eid)
            note = f" (will reappear {back.isoformat()})"
        self._log(di, f"WITHDRAWN #{e.eid} {row[P]} {row[ING]} / {row[APP]}{note}")

    def _cosmetic(self, di: int) -> None:
        rng = self.rng
        for _ in range(25):
            e = self._pick_editable(di)
            if e is None:
                return
            fld = rng.choices(
                ("applicant", "manufacturer", "address", "countries", "ingredient"), (0.1, 0.35, 0.35, 0.1, 0.1)
            )[0]
            new_value = cosmetic_edit(rng, e.present_row, fld)
            if new_value is None:
                continue
            old = e.present_row
            e.set(di, with_field(old, **{fld: new_value}))
            self._log(di, f"COSMETIC #{e.eid} {old[P]} {fld}: {old[COMPARED_POSITIONS[fld]]!r} -> {new_value!r}")
            return

    # --- substantive changes ------------------------------------------------------------------------
    def _substantive(self, di: int, d: date) -> None:
        if not self._subst_cycle:
            self._subst_cycle = list(SUBSTANTIVE_KINDS)
            self.rng.shuffle(self._subst_cycle)
        kind = self._subst_cycle.pop()
        for _ in range(30):
            if kind == "rename":
                if self._op_rename(di, d):
                    return
                continue
            edit_fn = SUBSTANTIVE_EDITS[kind]
            e = self._pick_editable(
                di, (lambda e: single_site(e.present_row)) if kind in SINGLE_SITE_EDITS else (lambda e: True)
            )
            if e is not None and self._apply(di, e, edit_fn(self.rng, self.factory, e.present_row, d)):
                return

    def _apply(self, di: int, e: _Entity, edit: tuple[Row, str, tuple[str, ...]] | None) -> bool:
        if edit is None or not is_valid_substantive(e.present_row, edit):
            return False
        old = e.present_row
        e.set(di, edit[0])
        self._log(di, f"CHANGED #{e.eid} {old[P]} {edit[1]}")
        return True

    def _op_rename(self, di: int, d: date) -> bool:
        rng, f = self.rng, self.factory
        by_biz: dict[str, list[int]] = {}
        for eid in self.present:
            by_biz.setdefault(self.entities[eid].present_row[BIZ] or "", []).append(eid)
        candidates = [i for i, a in enumerate(f.applicants[7:], start=7) if 1 <= len(by_biz.get(a.bizrno, ())) <= 15]
        if not candidates:
            return False
        k = rng.choice(candidates)
        a = f.applicants[k]
        members = sorted(by_biz[a.bizrno])
        if any(not self._editable(self.entities[eid], di) for eid in members):
            return False
        new_name = _vocab.korean_company_name(rng)
        if any(
            not _keys.is_substantive_edit("applicant", self.entities[eid].present_row[APP], new_name) for eid in members
        ):
            return False
        if any(_keys.text_key("applicant", new_name) == _keys.text_key("applicant", b.name) for b in f.applicants):
            return False
        for eid in members:
            e = self.entities[eid]
            e.set(di, with_field(e.present_row, applicant=new_name))
        f.applicants[k] = Applicant(new_name, a.bizrno, a.weight)
        self._log(
            di,
            f"RENAMED applicant [{a.bizrno}] {a.name} -> {new_name} on {len(members)} records "
            f"(#{', #'.join(map(str, members))})",
        )
        return True

    # --- re-numberings ------------------------------------------------------------------------------
    def _renumber(self, rng: random.Random, start: date, end: date, *, horizon: int | None = None) -> None:
        """Re-number a registration on each planned day after `start` up to `end`, after the rest of the history
        is built and with a generator of its own: nothing else in the timeline moves. `horizon` (a day index):
        see only what the history held up to that day, as when it ended there."""
        days: set[date] = {RENUMBER_ANCHOR} if start <= RENUMBER_ANCHOR <= end else set()
        d = add_business_days(start, rng.randint(*RENUMBER_GAP))
        while d <= end:
            days.add(d)
            d = add_business_days(d, rng.randint(*RENUMBER_GAP))
        last = self.ndays - 1 if horizon is None else horizon
        known = [e for e in self.entities if e.created <= last]
        owners: dict[str, set[int]] = {}  # every number ever listed -> the registrations listed under it
        for e in known:
            for first, row in zip(e.starts, e.rows, strict=True):
                if first <= last and row is not None and row[P] is not None:
                    owners.setdefault(_keys.permit_key(row[P]) or "", set()).add(e.eid)
        for i, d in enumerate(sorted(days)):
            kind = "grant" if d == RENUMBER_ANCHOR or i % 2 == 0 else "serial"
            self._renumber_one(rng, d, kind, owners, known, last)

    def _renumber_one(
        self, rng: random.Random, d: date, kind: str, owners: dict[str, set[int]], known: list[_Entity], last: int
    ) -> None:
        di = (d - FIRST_DATE).days
        lo, hi = di - RENUMBER_QUIET_DAYS, min(di + RENUMBER_QUIET_DAYS, last)
        for _ in range(3000):
            e = known[rng.randrange(len(known))]
            row = e.row_at(di)
            if e.is_seed or row is None or row[P] is None or row[DATE] is None or lo < 0:
                continue
            if e.row_at(lo) is not row or any(lo < s <= hi for s in e.starts):  # listed, untouched, all along
                continue
            old = _keys.permit_key(row[P]) or ""
            if len(owners.get(old, ())) != 1:  # a duplicate number: which one was corrected is not clear
                continue
            new = own_number(old, date.fromisoformat(row[DATE]), rng) if kind == "grant" else corrected_serial(old, rng)
            if new is None or new in owners:
                continue
            owners[new] = {e.eid}
            k = bisect.bisect_right(e.starts, di) - 1
            e.starts.insert(k + 1, di)
            e.rows.insert(k + 1, with_field(row, permit_no=new))
            for j in range(k + 2, len(e.rows)):  # later versions (a reappearance too) carry the new number
                later = e.rows[j]
                if later is not None and _keys.permit_key(later[P]) == old:
                    e.rows[j] = with_field(later, permit_no=new)
            self._log(di, f"RENUMBERED #{e.eid} {row[P]} -> {new} ({kind}) {row[ING]} / {row[APP]}")
            return


class _History:
    """What serving needs of a built `_Timeline`: each entity's versions and the per-day log (cached
    per user, see `_timeline_cache`)."""

    def __init__(self, entities: list[_Entity], logs: list[list[str]]) -> None:
        self.entities = entities
        self.logs = logs

    @classmethod
    def of_seed(cls, seed: int, cache_dir: Path | None = None) -> _History:
        def build() -> _timeline_cache.Payload:
            tl = _Timeline(seed)
            return [(e.starts, e.rows) for e in tl.entities], tl.logs

        versions, logs = _timeline_cache.load_or_build(seed, build, cache_dir)
        entities = []
        for eid, (starts, rows) in enumerate(versions):  # eid = position, as `_Timeline._new_entity` numbers them
            e = _Entity(eid, starts[0], rows[0])
            e.starts, e.rows = starts, rows
            entities.append(e)
        return cls(entities, logs)


# --- public API ----------------------------------------------------------------------------------------


class RegistrySimulator:
    """Deterministic emulation of the MFDS DMF registry for any day in FIRST_DATE..LAST_DATE."""

    def __init__(self, seed: int = 20250101) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        self.seed = seed
        self._timeline: _History | None = None
        self._snapshots: dict[int, list[tuple[int, Row]]] = {}
        self._lock = threading.Lock()  # the HTTP half may serve pages from several threads

    @property
    def _tl(self) -> _History:
        if self._timeline is None:
            with self._lock:
                if self._timeline is None:
                    self._timeline = _History.of_seed(self.seed)
        return self._timeline

    def _index(self, day: date | str, what: str = "day") -> int:
        return (check_in_range(parse_day(day, what=what)) - FIRST_DATE).days

    def _snapshot(self, di: int) -> list[tuple[int, Row]]:
        """(entity id, row) present on day index `di`, in served order (issue date, then id)."""
        snap = self._snapshots.get(di)
        if snap is None:
            rows = []
            for e in self._tl.entities:
                row = e.row_at(di)
                if row is not None:
                    rows.append((e.eid, row))
            rows.sort(key=lambda t: (t[1][DATE] or "9999-99-99", t[0]))
            with self._lock:
                if len(self._snapshots) > 8:
                    self._snapshots.pop(next(iter(self._snapshots)))
                self._snapshots[di] = snap = rows
        return snap

    def items(self, day: date | str) -> list[dict[str, str | None]]:
        """The registry as the API serves it on `day`: the 9 API fields per row, in served order."""
        return [dict(zip(API_FIELDS, row, strict=True)) for _, row in self._snapshot(self._index(day))]

    def entities(self, day: date | str) -> dict[int, dict[str, str | None]]:
        """Emulator identity -> row on `day` (for tests and scoring; same rows as `items`)."""
        return {eid: dict(zip(API_FIELDS, row, strict=True)) for eid, row in self._snapshot(self._index(day))}

    def truth(self, old: date | str, new: date | str, seen: Iterable[date | str] = ()) -> GroundTruth:
        """What really changed between the registry on `old` and on `new` (old < new).

        `seen`: earlier dates the observer accepted; a NEW entity absent on `old` but present on any
        of them is a reappearance. Dates on or after `new` are ignored for that purpose.
        """
        o, n = self._index(old, "old"), self._index(new, "new")
        if o >= n:
            raise ValueError(f"truth needs old < new, got old={old} new={new}")
        seen_idx = sorted({self._index(s, "seen date") for s in seen})
        seen_idx = [s for s in seen_idx if s < n]
        changes = []
        for e in self._tl.entities:
            if e.starts[0] > n:
                continue
            a, b = e.row_at(o), e.row_at(n)
            if a is b:
                continue
            reappeared = a is None and any(e.row_at(s) is not None for s in seen_idx)
            c = truth_change(e.eid, a, b, reappeared)
            if c is not None:
                changes.append(c)
        return GroundTruth(
            (FIRST_DATE + timedelta(days=o)).isoformat(), (FIRST_DATE + timedelta(days=n)).isoformat(), tuple(changes)
        )

    def day_log(self, day: date | str) -> list[str]:
        """What the simulation did on `day`, one line per action (empty list: nothing happened)."""
        return list(self._tl.logs[self._index(day)])

    def items_json(self, day: date | str) -> str:
        """`items(day)` as canonical JSON text (for determinism checks and fixtures)."""
        return json.dumps(self.items(day), ensure_ascii=False, separators=(",", ":"))
