"""Keys, hashes and the diff on real MFDS rows: every rule of docs/DOMAIN.md §4–§5 with exact expectations."""

from __future__ import annotations

import copy
import random
import re

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmf_assets.domain.diff import Watchlist, diff_snapshots
from dmf_assets.domain.model import EventType, Severity, possible_renumbering_text, substantive_changes
from dmf_assets.domain.snapshot import build_snapshot, build_snapshot_pair_taking, seen_markers
from dmf_assets.emulator.faults import official_style


@pytest.fixture(scope="module")
def base_items(real_items) -> list[dict]:
    return copy.deepcopy(real_items)


@pytest.fixture(scope="module")
def base(base_items) -> pl.DataFrame:
    return build_snapshot(base_items)


def events_of(old_items, new_items, **kw):
    return diff_snapshots(build_snapshot(old_items), build_snapshot(new_items), **kw).to_events()


def only(events, event_type):
    found = [e for e in events if e.event_type is event_type]
    assert len(found) == 1, events
    return found[0]


def test_keys_are_unique_and_numbers_kept(base, base_items):
    assert base.height == len(base_items)
    assert base["dmf_key"].n_unique() == base.height
    assert base["is_synthetic"].sum() == 0
    # a unique number is its own key
    assert set(base["dmf_key"]) == {i["DMF_PERMIT_NO"].strip() for i in base_items}


def test_same_rows_no_events(base_items):
    diff = diff_snapshots(build_snapshot(base_items), build_snapshot(list(reversed(base_items))))
    assert diff.events.is_empty() and diff.changes.is_empty()
    assert diff.counts["substantive"] == 0


def test_baseline_has_no_events(base):
    diff = diff_snapshots(None, base)
    assert diff.baseline and diff.events.is_empty()


def test_cosmetic_retyping_is_cosmetic(base_items):
    new = copy.deepcopy(base_items)
    new[1]["ENTP_NAME"] = "  주식회사   하이플 "  # ㈜하이플 re-typed
    new[4]["MNFCTR_NAME"] = "GLOCHEM INDUSTRIES PRIVATE LIMITED."  # case + punctuation
    new[11]["MANUF_COUNTRY_CODE_NM"] = "체코"  # 체코공화국 -> canonical spelling
    events = events_of(base_items, new)
    assert len(events) == 3
    for e in events:
        assert e.event_type is EventType.CHANGED and e.is_cosmetic and e.severity is Severity.COSMETIC
        assert e.changed_fields == () and len(e.cosmetic_fields) == 1
    assert {e.cosmetic_fields[0] for e in events} == {"applicant", "manufacturer", "countries"}


def test_issue_dates_rewritten_in_the_korean_dotted_style_change_nothing(base_items):
    """MFDS writing every issue date as Korean official documents do (「2011. 6. 15.」) is a re-typing of the whole
    registry, not 9,000 changed dates: no event, and no row's issue date lost."""
    new = [{**item, "DMF_PERMIT_DATE": official_style(item["DMF_PERMIT_DATE"])} for item in base_items]
    assert [i for i in new if re.search(r"\. [1-9]\.", i["DMF_PERMIT_DATE"])]  # one-digit months and days among them
    diff = diff_snapshots(build_snapshot(base_items), build_snapshot(new))
    assert diff.counts["substantive"] == 0 and not diff.changes.height
    assert build_snapshot(new)["issue_date"].to_list() == build_snapshot(base_items)["issue_date"].to_list()


@pytest.mark.parametrize(
    ("api_field", "value", "field", "severity"),
    [
        ("MNFCTR_NAME", "Hetero Labs Limited", "manufacturer", Severity.CRITICAL),
        ("MNFCTR_PLACE", "Plot 1, Jeedimetla, Hyderabad, India", "address", Severity.CRITICAL),
        ("MANUF_COUNTRY_CODE_NM", "중국", "countries", Severity.CRITICAL),
        ("INGR_KOR_NAME", "암로디핀말레산염", "ingredient", Severity.HIGH),
        ("DMF_PERMIT_DATE", "2011-06-16", "issue_date", Severity.MEDIUM),
        ("NOTICE_CODE", "기타", "target_class", Severity.MEDIUM),
    ],
)
def test_substantive_change_severity(base_items, api_field, value, field, severity):
    new = copy.deepcopy(base_items)
    new[1][api_field] = value
    e = only(events_of(base_items, new), EventType.CHANGED)
    assert e.dmf_key == base_items[1]["DMF_PERMIT_NO"]
    assert e.changed_fields == (field,) and not e.is_cosmetic and e.severity is severity
    (change,) = e.changes
    assert change.after is not None and change.before != change.after


def test_transfer_and_rename(base_items):
    transfer = copy.deepcopy(base_items)
    transfer[2]["ENTP_NAME"] = "(주)파마피아"
    transfer[2]["BIZRNO"] = "1234567890"
    e = only(events_of(base_items, transfer), EventType.CHANGED)
    assert e.is_transfer and not e.is_rename and e.severity is Severity.HIGH
    assert set(e.changed_fields) == {"applicant", "bizrno"}

    rename = copy.deepcopy(base_items)
    rename[2]["ENTP_NAME"] = "하이플제약(주)"
    e = only(events_of(base_items, rename), EventType.CHANGED)
    assert e.is_rename and not e.is_transfer and e.changed_fields == ("applicant",)


def test_withdrawn_and_new(base_items):
    new = copy.deepcopy(base_items)
    gone = new.pop(7)
    added = dict(base_items[8], DMF_PERMIT_NO="20261130-209-J-9999", INGR_KOR_NAME="새성분")
    new.append(added)
    events = events_of(base_items, new)
    w = only(events, EventType.WITHDRAWN)
    n = only(events, EventType.NEW)
    assert w.dmf_key == gone["DMF_PERMIT_NO"] and w.severity is Severity.CRITICAL
    assert n.dmf_key == "20261130-209-J-9999" and n.severity is Severity.INFO and not n.is_reappearance


def test_reappearance_is_high(base_items):
    without = [i for k, i in enumerate(base_items) if k != 5]
    first, middle, last = build_snapshot(base_items), build_snapshot(without), build_snapshot(base_items)
    seen = seen_markers(first) - seen_markers(middle)
    e = only(diff_snapshots(middle, last, previously_seen=seen).to_events(), EventType.NEW)
    assert e.is_reappearance and e.severity is Severity.HIGH and e.dmf_key == base_items[5]["DMF_PERMIT_NO"]


def test_number_assignment_is_one_changed_event(base_items):
    pending = copy.deepcopy(base_items)
    pending[3]["DMF_PERMIT_NO"] = None
    pending[3]["DMF_PERMIT_DATE"] = None  # published before both number and date
    numbered = copy.deepcopy(base_items)
    events = events_of(pending, numbered)
    assert [e.event_type for e in events] == [EventType.CHANGED]
    e = events[0]
    assert e.number_assigned and e.base_dmf_key.startswith("SYN-") and e.dmf_key == base_items[3]["DMF_PERMIT_NO"]
    assert set(e.changed_fields) == {"permit_no", "issue_date"}
    assert not any(x.event_type is EventType.WITHDRAWN for x in events)


@pytest.mark.parametrize(
    ("before", "after", "changed"),
    [
        ({"DMF_PERMIT_NO": None, "BIZRNO": ""}, {}, {"permit_no", "bizrno"}),  # number and BIZRNO arrive together
        ({"DMF_PERMIT_NO": None, "BIZRNO": ""}, {"DMF_PERMIT_NO": None}, {"bizrno"}),  # the BIZRNO filled in
        ({"DMF_PERMIT_NO": None}, {"DMF_PERMIT_NO": None, "BIZRNO": "1338124994"}, {"bizrno"}),  # same name, new BIZRNO
        ({}, {"DMF_PERMIT_NO": "", "BIZRNO": ""}, {"permit_no", "bizrno"}),  # number and BIZRNO lost together
    ],
)
def test_a_registration_without_a_number_is_followed_when_its_bizrno_changes(base_items, before, after, changed):
    """Its synthetic key holds the applicant by BIZRNO when valid, by name otherwise: a BIZRNO filled in or changed
    (same applicant name) changed the key, and the registration came out WITHDRAWN (CRITICAL) and NEW."""
    old, new = copy.deepcopy(base_items), copy.deepcopy(base_items)
    old[1].update(before)
    new[1].update(after)
    (e,) = events_of(old, new)
    assert e.event_type is EventType.CHANGED and set(e.changed_fields) == changed, e


# --- a published number corrected (issue 30, docs/DOMAIN.md §4) -------------------------------------


def test_the_real_renumbering_is_one_medium_changed_event(base_items, renumbered_pair):
    """시롤리무스 분산용액 / 한국화이자제약: listed under its own number instead of the grant-style one, every
    other field identical — one registration re-numbered, never a CRITICAL withdrawal plus a NEW one."""
    before, after = renumbered_pair
    diff = diff_snapshots(build_snapshot([*base_items, before]), build_snapshot([*base_items, after]))
    (e,) = diff.to_events()
    assert e.event_type is EventType.CHANGED and e.number_changed and not e.number_assigned
    assert (e.base_dmf_key, e.dmf_key, e.permit_no) == (
        "20130329-190-I-83-01(1)",
        "20260922-190-I-769-04",
        "20260922-190-I-769-04",
    )
    assert e.severity is Severity.MEDIUM and not e.is_cosmetic and e.changed_fields == ("permit_no",)
    (change,) = e.changes
    assert (change.before, change.after, change.severity) == (
        "20130329-190-I-83-01(1)",
        "20260922-190-I-769-04",
        Severity.MEDIUM,
    )
    assert e.label_ko == "등록번호 변경 20130329-190-I-83-01(1) → 20260922-190-I-769-04"
    # counted apart: never a withdrawal, never a new registration, not in 변경 (실질 변경)
    c = diff.counts
    assert (c["NEW"], c["WITHDRAWN"], c["CHANGED"], c["NUMBER_CHANGED"], c["NUMBER_ASSIGNED"]) == (0, 0, 1, 1, 0)
    assert substantive_changes(c["CHANGED"], c["NUMBER_ASSIGNED"], c["NUMBER_CHANGED"]) == 0


def test_a_renumbering_that_also_retypes_a_field_is_one_event(base_items, renumbered_pair):
    before, after = renumbered_pair
    after["ENTP_NAME"] = "한국화이자제약 주식회사"  # the legal form re-typed the same day
    e = only(events_of([*base_items, before], [*base_items, after]), EventType.CHANGED)
    assert e.number_changed and e.changed_fields == ("permit_no",) and e.cosmetic_fields == ("applicant",)
    assert e.severity is Severity.MEDIUM and len(events_of([*base_items, before], [*base_items, after])) == 1


def test_a_renumbering_is_raised_by_the_watchlist_like_any_change(base_items, renumbered_pair):
    before, after = renumbered_pair
    e = only(
        events_of([*base_items, before], [*base_items, after], watchlist=Watchlist(ingredients=("시롤리무스",))),
        EventType.CHANGED,
    )
    assert e.number_changed and e.watchlist_hit and e.severity is Severity.HIGH


def test_a_new_number_with_another_substantive_change_is_not_a_renumbering(base_items, renumbered_pair):
    before, after = renumbered_pair
    after["MANUF_COUNTRY_CODE_NM"] = (
        "스위스,미국"  # a different site country: not the same registration as far as we can tell
    )
    events = events_of([*base_items, before], [*base_items, after])
    assert sorted(e.event_type.value for e in events) == ["NEW", "WITHDRAWN"]
    assert all(not e.number_changed and e.renumber_candidates == () for e in events)


@pytest.mark.parametrize("twin_side", ["new", "base"])
def test_an_ambiguous_renumbering_stays_withdrawn_and_new_and_says_it_may_be_one(
    base_items, renumbered_pair, twin_side
):
    """Two rows alike in everything but the number on one side and one on the other: no pairing is unique."""
    before, after = renumbered_pair
    old, new = [*base_items, before], [*base_items, after]
    if twin_side == "new":
        new.append({**after, "DMF_PERMIT_NO": "20260922-190-I-769-05"})
    else:
        old.append({**before, "DMF_PERMIT_NO": "20130329-190-I-83-01(2)"})
    diff = diff_snapshots(build_snapshot(old), build_snapshot(new))
    events = diff.to_events()
    assert not any(e.number_changed for e in events) and diff.counts["NUMBER_CHANGED"] == 0
    gone = [e for e in events if e.event_type is EventType.WITHDRAWN]
    added = [e for e in events if e.event_type is EventType.NEW]
    assert len(gone) + len(added) == 3 and gone and added
    for e in gone:
        assert e.renumber_candidates == tuple(sorted(a.permit_no for a in added))
    for e in added:
        assert e.renumber_candidates == tuple(sorted(g.permit_no for g in gone))
    assert possible_renumbering_text(gone[0].permit_no, gone[0].renumber_candidates).startswith(
        f"등록번호 변경 가능성: {gone[0].permit_no} ↔ "
    )


def test_unrelated_withdrawals_and_new_registrations_name_no_candidates(base_items):
    new = copy.deepcopy(base_items)
    new.pop(7)
    new.append(dict(base_items[8], DMF_PERMIT_NO="20261130-209-J-9999", INGR_KOR_NAME="새성분"))
    assert all(e.renumber_candidates == () for e in events_of(base_items, new))


def test_synthetic_key_survives_cosmetic_edit(base_items):
    a = copy.deepcopy(base_items)
    a[3]["DMF_PERMIT_NO"] = None
    b = copy.deepcopy(a)
    b[3]["ENTP_NAME"] = "주식회사 하이플"
    sa, sb = build_snapshot(a), build_snapshot(b)
    assert sa["dmf_key"][3] == sb["dmf_key"][3] and sa["dmf_key"][3].startswith("SYN-")
    e = only(diff_snapshots(sa, sb).to_events(), EventType.CHANGED)
    assert e.is_cosmetic


def test_duplicate_numbers_matched_group_to_group(base_items):
    twin = dict(
        base_items[9],
        MNFCTR_NAME="Other Manufacturer S.p.A.",
        MNFCTR_PLACE="Via Roma 1, Milano, Italy",
        MANUF_COUNTRY_CODE_NM="이탈리아",
    )
    old = copy.deepcopy(base_items) + [twin]
    snap = build_snapshot(old)
    keys = snap.filter(pl.col("permit_no") == base_items[9]["DMF_PERMIT_NO"])["dmf_key"].to_list()
    assert sorted(keys) == sorted([base_items[9]["DMF_PERMIT_NO"], base_items[9]["DMF_PERMIT_NO"] + "#2"])
    # reordering the duplicates (even across the list) produces nothing
    reordered = [twin] + list(reversed(copy.deepcopy(base_items)))
    assert diff_snapshots(snap, build_snapshot(reordered)).events.is_empty()
    # changing one of them changes exactly that one
    changed = copy.deepcopy(old)
    changed[-1]["MNFCTR_PLACE"] = "Via Torino 2, Milano, Italy"
    e = only(events_of(old, changed), EventType.CHANGED)
    assert e.changed_fields == ("address",) and e.permit_no == base_items[9]["DMF_PERMIT_NO"]


def test_watchlist_raises_to_high(base_items):
    new = copy.deepcopy(base_items)
    new[0]["DMF_PERMIT_DATE"] = "2010-04-03"  # MEDIUM on its own
    plain = only(events_of(base_items, new), EventType.CHANGED)
    watched = only(events_of(base_items, new, watchlist=Watchlist(ingredients=("인 태반",))), EventType.CHANGED)
    assert plain.severity is Severity.MEDIUM and not plain.watchlist_hit
    assert watched.severity is Severity.HIGH and watched.watchlist_hit and watched.watch_reasons == ("성분: 인 태반",)


def test_hashes_are_stable(base):
    # md5-based, so a library upgrade can never silently re-version the whole history
    row = base.filter(pl.col("dmf_key") == "20100402-01-HP-22-17").row(0, named=True)
    assert row["content_hash"] == "59e9792c23cdc309"
    assert len(row["identity_hash"]) == 16 and len(row["syn_basis_hash"]) == 16


# --- properties ----------------------------------------------------------------------------------

_COSMETIC = [
    lambda s: "  " + s + " ",
    lambda s: s.replace(" ", "  "),
    lambda s: s.replace("(주)", "㈜").replace("㈜", "주식회사 "),
    lambda s: s.upper(),
    # a dot becomes a space ("SDN.BHD." -> "SDN BHD "): dropping it would merge words ("SDNBHD"), a real retyping
    lambda s: s.replace(",", " ,").replace(".", " "),
]


def _substantive(base: pl.DataFrame, new_items: list[dict]) -> set:
    """(type, key, changed fields) of each substantive event from the `base` snapshot to `new_items`."""
    events = diff_snapshots(base, build_snapshot(new_items)).to_events()
    return {(e.event_type, e.dmf_key, e.changed_fields) for e in events if not e.is_cosmetic}


@pytest.fixture(scope="module")
def one_real_change(base_items, base) -> tuple[list[dict], set]:
    """The base with one real change — so the property below is about *keeping* the substantive events unchanged —
    and those events (the same for every example: worked out once)."""
    truth_new = copy.deepcopy(base_items)
    truth_new[10]["MNFCTR_NAME"] = "Completely Different Pharma Ltd"
    return truth_new, _substantive(base, truth_new)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), edits=st.integers(0, 6), repeats=st.integers(0, 3), shuffle=st.booleans())
def test_order_paging_and_retyping_never_change_substantive_events(
    base, one_real_change, seed, edits, repeats, shuffle
):
    rng = random.Random(seed)
    truth_new, reference = one_real_change
    noisy = copy.deepcopy(truth_new)
    for _ in range(edits):
        row = rng.choice(noisy)
        fld = rng.choice(["ENTP_NAME", "MNFCTR_NAME", "MNFCTR_PLACE", "INGR_KOR_NAME"])
        row[fld] = rng.choice(_COSMETIC)(row[fld])
    for _ in range(repeats):  # identical row served again on another page
        noisy.append(dict(rng.choice(noisy)))
    if shuffle:
        rng.shuffle(noisy)
    assert _substantive(base, noisy) == reference


# --- sites as first-class changes (issue 12) -----------------------------------------------------


def _row(items, permit):
    return next(i for i, it in enumerate(items) if it["DMF_PERMIT_NO"] == permit)


def _site_rows(diff, permit):
    ch = diff.changes.filter(pl.col("dmf_key") == permit)
    return ch.filter(pl.col("field") == "sites").rows(named=True), ch


def test_site_added_in_a_country_already_listed_is_critical_not_cosmetic(base_items):
    """The real two-site row 인도,중국 gets a third site in China: the country *set* is unchanged."""
    permit = "20210626-211-J-1002"  # Avik (인도) + Tianjin Tianyao (중국)
    new = copy.deepcopy(base_items)
    i = _row(new, permit)
    new[i]["MNFCTR_NAME"] += ",Zhejiang Huahai Pharmaceutical Co., Ltd."
    new[i]["MNFCTR_PLACE"] += ",Xunqiao, Linhai, Zhejiang, China"
    new[i]["MANUF_COUNTRY_CODE_NM"] += ",중국"
    diff = diff_snapshots(build_snapshot(base_items), build_snapshot(new))
    (ev,) = [e for e in diff.to_events() if e.dmf_key == permit]
    assert ev.event_type is EventType.CHANGED and ev.severity is Severity.CRITICAL and not ev.is_cosmetic
    assert set(ev.changed_fields) == {"manufacturer", "address", "countries"} and ev.cosmetic_fields == ()
    sites, ch = _site_rows(diff, permit)
    assert sites == [
        {
            "dmf_key": permit,
            "base_dmf_key": permit,
            "field": "sites",
            "before": None,
            "after": "Zhejiang Huahai Pharmaceutical Co., Ltd. (중국)",
            "is_cosmetic": False,
            "severity": "CRITICAL",
        }
    ]
    countries = ch.filter(pl.col("field") == "countries").row(0, named=True)
    assert (countries["before"], countries["after"], countries["is_cosmetic"]) == ("인도,중국", "인도,중국,중국", False)
    assert diff.counts["COSMETIC"] == 0 and diff.counts["CHANGED"] == 1


def test_site_removed_from_the_real_three_site_row(base_items):
    permit = "수30-4-ND"  # Vasudha, [데스로라타딘 제조원] Vasudha, [데스로라타딘 제조원] Vasudha Unit-II
    old = build_snapshot(base_items)
    three = old.filter(pl.col("dmf_key") == permit).row(0, named=True)
    assert three["site_count"] == 3 and three["sites_split_ok"]
    new = copy.deepcopy(base_items)
    i = _row(new, permit)
    names, places = new[i]["MNFCTR_NAME"], new[i]["MNFCTR_PLACE"]
    new[i]["MNFCTR_NAME"] = names[: names.rindex(",")]
    new[i]["MNFCTR_PLACE"] = places[: places.rindex(",[")]
    new[i]["MANUF_COUNTRY_CODE_NM"] = "인도,인도"
    diff = diff_snapshots(old, build_snapshot(new))
    sites, _ = _site_rows(diff, permit)
    last = three["sites"][2]
    assert [(s["before"], s["after"]) for s in sites] == [(f"[{last['role']}] {last['name']} (인도)", None)]
    (ev,) = [e for e in diff.to_events() if e.dmf_key == permit]
    assert ev.severity is Severity.CRITICAL and "countries" in ev.changed_fields


def test_retyped_site_list_has_no_site_rows_and_stays_cosmetic(base_items):
    """Same sites, only spacing after the comma: cosmetic, no site change."""
    permit = "20210626-211-J-1002"
    new = copy.deepcopy(base_items)
    i = _row(new, permit)
    new[i]["MNFCTR_NAME"] = new[i]["MNFCTR_NAME"].replace("Limited,Tianjin", "Limited, Tianjin")
    new[i]["MANUF_COUNTRY_CODE_NM"] = "인도, 중국"
    diff = diff_snapshots(build_snapshot(base_items), build_snapshot(new))
    sites, ch = _site_rows(diff, permit)
    assert sites == [] and ch.height >= 1 and ch["is_cosmetic"].all()
    (ev,) = [e for e in diff.to_events() if e.dmf_key == permit]
    assert ev.is_cosmetic and ev.severity is Severity.COSMETIC


def test_site_address_changed_is_one_changed_site(base_items):
    permit = "20200722-93-E-160-09"  # Avik (인도) + [베타메타손 제조소] Hunan Yuxin (중국)
    new = copy.deepcopy(base_items)
    i = _row(new, permit)
    new[i]["MNFCTR_PLACE"] = new[i]["MNFCTR_PLACE"].replace("Longxutang", "No. 8 Baoqing Road")
    diff = diff_snapshots(build_snapshot(base_items), build_snapshot(new))
    sites, _ = _site_rows(diff, permit)
    assert len(sites) == 1
    assert sites[0]["before"].startswith("[베타메타손 제조소] Hunan Yuxin Pharmaceutical Co. Ltd. (중국) — Longxutang")
    assert sites[0]["after"].startswith(
        "[베타메타손 제조소] Hunan Yuxin Pharmaceutical Co. Ltd. (중국) — No. 8 Baoqing Road"
    )


def test_change_rows_have_one_order_whatever_the_input_order(base_items):
    new = copy.deepcopy(base_items)
    for k, it in enumerate(new[:60]):
        it["MNFCTR_PLACE"] = (it["MNFCTR_PLACE"] or "") + f" Block {k}"
        it["ENTP_NAME"] = (it["ENTP_NAME"] or "") + " "  # cosmetic or none
        if k % 3 == 0:
            it["DMF_PERMIT_DATE"] = "2001-01-01"
    base_frame = build_snapshot(base_items)
    runs = []
    for seed in range(4):
        shuffled = list(new)
        random.Random(seed).shuffle(shuffled)
        runs.append(diff_snapshots(base_frame, build_snapshot(shuffled)).changes.rows())
    assert runs[0] and all(r == runs[0] for r in runs)


def _sites_of(items, permit) -> tuple[list[str], list[str], list[str]]:
    """The row's names, addresses and countries, one per site, as the split found them."""
    row = build_snapshot([items[_row(items, permit)]]).row(0, named=True)
    assert row["sites_split_ok"]
    names = [f"[{s['role']}]{s['name']}" if s["role"] else s["name"] for s in row["sites"]]
    places = [f"[{s['role']}]{s['address']}" if s["role"] else s["address"] for s in row["sites"]]
    return names, places, [s["country"] for s in row["sites"]]


@pytest.mark.parametrize("permit", ["20210626-211-J-1002", "20200722-93-E-160-09"])
def test_the_same_sites_listed_in_another_order_are_cosmetic(base_items, permit):
    """Nothing changed at any site: no CRITICAL 제조소명 변경, no site rows, nothing in the headline."""
    names, places, countries = _sites_of(base_items, permit)
    new = copy.deepcopy(base_items)
    i = _row(new, permit)
    new[i].update(
        MNFCTR_NAME=",".join(reversed(names)),
        MNFCTR_PLACE=",".join(reversed(places)),
        MANUF_COUNTRY_CODE_NM=",".join(reversed(countries)),
    )
    diff = diff_snapshots(build_snapshot(base_items), build_snapshot(new))
    (ev,) = diff.to_events()
    assert ev.is_cosmetic and ev.severity is Severity.COSMETIC and ev.changed_fields == ()
    assert set(ev.cosmetic_fields) == {"manufacturer", "address", "countries"}
    sites, _ = _site_rows(diff, permit)
    assert sites == [] and diff.counts["substantive"] == 0


def test_a_renumbering_that_also_lists_the_sites_in_another_order_is_one_event(base_items):
    """Re-numbered and the same sites listed in another order the same day: still one registration (a number
    change, its site fields cosmetic) — never a CRITICAL withdrawal plus a NEW one."""
    permit = "20210626-211-J-1002"
    names, places, countries = _sites_of(base_items, permit)
    new = copy.deepcopy(base_items)
    new[_row(new, permit)].update(
        DMF_PERMIT_NO="20261201-211-J-1077",
        MNFCTR_NAME=",".join(reversed(names)),
        MNFCTR_PLACE=",".join(reversed(places)),
        MANUF_COUNTRY_CODE_NM=",".join(reversed(countries)),
    )
    stored = (build_snapshot(base_items), build_snapshot(new))  # what a run compares (the sites split already)
    compared = build_snapshot_pair_taking([pl.DataFrame(base_items), pl.DataFrame(new)])  # `dmf diff`'s (no sites)
    assert "sites" in stored[1].columns and "sites" not in compared[1].columns
    for before, after in (stored, compared):
        diff = diff_snapshots(before, after)
        (ev,) = diff.to_events()
        assert ev.event_type is EventType.CHANGED and ev.number_changed, ev
        assert (ev.base_dmf_key, ev.dmf_key) == (permit, "20261201-211-J-1077")
        assert ev.changed_fields == ("permit_no",) and ev.severity is Severity.MEDIUM
        assert set(ev.cosmetic_fields) == {"manufacturer", "address", "countries"}
        assert _site_rows(diff, "20261201-211-J-1077")[0] == []
        assert (diff.counts["NEW"], diff.counts["WITHDRAWN"], diff.counts["NUMBER_CHANGED"]) == (0, 0, 1)


def test_names_swapped_over_the_same_addresses_are_two_changed_sites(base_items):
    """Another order of the names only pairs each manufacturer with the other's address: a real change."""
    permit = "20210626-211-J-1002"
    names, _, _ = _sites_of(base_items, permit)
    new = copy.deepcopy(base_items)
    new[_row(new, permit)]["MNFCTR_NAME"] = ",".join(reversed(names))
    diff = diff_snapshots(build_snapshot(base_items), build_snapshot(new))
    (ev,) = diff.to_events()
    assert ev.severity is Severity.CRITICAL and ev.changed_fields == ("manufacturer",)
    sites, _ = _site_rows(diff, permit)
    assert len(sites) == 2


@pytest.mark.parametrize(
    ("before", "after", "name", "transfer"),
    [
        ("433860017", "4338600179", None, False),  # the 9-digit quirk corrected, same applicant
        ("4338600179", "433860017", None, False),  # the reverse: a digit lost, same applicant
        ("433860017", "1234567890", "(주)파마피아", True),  # an invalid number, then another applicant's
        ("4338600179", "1234567890", None, True),  # two valid numbers: a transfer even under the same name
    ],
)
def test_a_corrected_bizrno_is_not_called_a_transfer(base_items, before, after, name, transfer):
    old, new = copy.deepcopy(base_items), copy.deepcopy(base_items)
    old[2]["BIZRNO"], new[2]["BIZRNO"] = before, after
    if name:
        new[2]["ENTP_NAME"] = name
    e = only(events_of(old, new), EventType.CHANGED)
    assert e.is_transfer is transfer and "bizrno" in e.changed_fields and e.severity is Severity.HIGH


def test_a_number_holding_a_hash_never_shares_a_key_with_a_duplicate(base_items):
    """'X#2' as listed and the second row of a duplicated 'X' once both had the key 'X#2': the withdrawal of
    one was lost and a change of it was wired to the other row."""
    number = base_items[9]["DMF_PERMIT_NO"]
    twin = dict(base_items[9], MNFCTR_NAME="Other Manufacturer S.p.A.", MANUF_COUNTRY_CODE_NM="이탈리아")
    hashed = dict(base_items[10], DMF_PERMIT_NO=f"{number}#2")
    old = [*copy.deepcopy(base_items), twin, hashed]
    snap = build_snapshot(old)
    assert snap["dmf_key"].n_unique() == snap.height
    assert f"{number}#2" in snap["dmf_key"].to_list() and f"{number}##2" in snap["dmf_key"].to_list()
    # the listed 'X#2' leaves: one WITHDRAWN of it, the duplicate group untouched
    w = only(events_of(old, old[:-1]), EventType.WITHDRAWN)
    assert w.dmf_key == w.permit_no == f"{number}#2"
    # the duplicate leaves instead: one WITHDRAWN of the group's second row, 'X#2' as listed untouched
    w = only(events_of(old, [*old[:-2], hashed]), EventType.WITHDRAWN)
    assert w.permit_no == number and w.dmf_key in (number, f"{number}##2")


def test_days_without_a_hash_in_any_number_keep_the_plain_separator(base_items):
    twin = dict(base_items[9], MNFCTR_NAME="Other Manufacturer S.p.A.")
    keys = build_snapshot([*base_items, twin])["dmf_key"].to_list()
    assert base_items[9]["DMF_PERMIT_NO"] + "#2" in keys and not any("##" in k for k in keys)
