-- Named statements used by dmf_assets/report/day_data.py. Values are always bound parameters.

-- name: history_points
-- 변경 = 실질 변경: changed_count counts number assignments and changes too (domain.model.substantive_changes)
SELECT day_id, status, population, coalesce(new_count, 0),
       coalesce(changed_count, 0) - coalesce(assigned_count, 0) - coalesce(renumbered_count, 0),
       coalesce(withdrawn_count, 0), coalesce(cosmetic_count, 0), coalesce(assigned_count, 0),
       coalesce(renumbered_count, 0)
FROM runs
WHERE day_id BETWEEN ? AND ?
ORDER BY day_id;

-- name: by_ingredient
-- group_key: what a row counts by, for the web page's search that lists exactly those registrations
SELECT coalesce(v.ingredient_base, '(성분명 없음)') AS label,
       v.ingredient_base AS group_key,
       count(*) AS registrations,
       count(DISTINCT v.manufacturer_key) AS manufacturers,
       count(DISTINCT coalesce(v.bizrno, v.applicant_key)) AS applicants,
       count(DISTINCT v.countries_key) AS countries
FROM snapshots s JOIN record_versions v ON v.version_id = s.version_id
WHERE s.day_id = ?
GROUP BY v.ingredient_base
ORDER BY registrations DESC, label;

-- name: by_applicant
SELECT mode(v.applicant) AS label,
       coalesce(v.bizrno, v.applicant_key) AS group_key,
       count(*) AS registrations,
       count(DISTINCT v.manufacturer_key) AS manufacturers,
       count(DISTINCT v.ingredient_base) AS ingredients,
       count(DISTINCT v.countries_key) AS countries
FROM snapshots s JOIN record_versions v ON v.version_id = s.version_id
WHERE s.day_id = ?
GROUP BY coalesce(v.bizrno, v.applicant_key)
ORDER BY registrations DESC, label;

-- name: by_country
SELECT c.country AS label,
       c.country AS group_key,
       count(DISTINCT c.record_id) AS registrations,
       count(DISTINCT c.manufacturer_key) AS manufacturers,
       count(DISTINCT c.applicant) AS applicants,
       count(DISTINCT c.ingredient_base) AS ingredients
FROM (
    SELECT s.record_id, v.manufacturer_key, coalesce(v.bizrno, v.applicant_key) AS applicant,
           v.ingredient_base, unnest(list_distinct(v.country_list)) AS country
    FROM snapshots s JOIN record_versions v ON v.version_id = s.version_id
    WHERE s.day_id = ?
) c
WHERE c.country IS NOT NULL
GROUP BY 1
ORDER BY registrations DESC, label;

-- name: day_quality
SELECT name, label, value, expected, ok, detail FROM quality_checks WHERE day_id = ? ORDER BY ok, name;

-- name: day_fetch_pages
SELECT count(*), sum(attempts), sum(bytes), sum(elapsed_ms) FROM fetch_stats WHERE day_id = ?;

-- name: recent_events
-- every event of the accepted days in [from, to] (the 이력 sheet; one day's events: from = to), with display values
SELECT e.event_id, e.event_type, e.severity, e.dmf_key, e.base_dmf_key, e.permit_no,
       e.is_cosmetic, e.is_reappearance, e.number_assigned, e.number_changed, e.is_transfer, e.is_rename,
       e.watchlist_hit, e.watch_reasons, e.changed_fields, e.cosmetic_fields, e.renumber_candidates,
       v.ingredient, v.ingredient_base, v.applicant, v.bizrno, v.manufacturer, v.address,
       v.countries, v.issue_date, v.target_class,
       e.day_id, e.base_day_id, v.ingredient_key, v.manufacturer_key,
       bv.ingredient_key AS base_ingredient_key, bv.manufacturer_key AS base_manufacturer_key,
       -- a reappearance: the first day it was missing under this key (its latest disappearance, or the day it
       -- continued under another number, before this day)
       (SELECT max(w.day_id) FROM events w
        WHERE e.is_reappearance AND w.base_record_id = e.record_id AND w.day_id < e.day_id
          AND (w.event_type = 'WITHDRAWN' OR w.number_changed OR w.number_assigned)) AS gone_since_day_id,
       e.record_id, e.base_record_id
FROM events e
LEFT JOIN record_versions v ON v.version_id = coalesce(e.version_id, e.base_version_id)
LEFT JOIN record_versions bv ON bv.version_id = e.base_version_id
WHERE e.day_id BETWEEN ? AND ?
ORDER BY e.day_id DESC, e.event_id;

-- name: recent_changes
-- the field changes of those events
SELECT event_id, field, before, after, is_cosmetic, severity
FROM event_changes
WHERE day_id BETWEEN ? AND ?
ORDER BY event_id;

-- name: rate_runs
-- accepted comparisons up to a day: changed registrations (실질 변경), the base's population, the interval
SELECT r.day_id, r.base_day_id,
       coalesce(r.changed_count, 0) - coalesce(r.assigned_count, 0) - coalesce(r.renumbered_count, 0), b.population
FROM runs r JOIN runs b ON b.day_id = r.base_day_id
WHERE r.status = 'accepted' AND r.day_id <= ?
ORDER BY r.day_id;

-- name: population_on_or_before
SELECT population FROM runs WHERE status IN ('accepted', 'baseline') AND day_id <= ? ORDER BY day_id DESC LIMIT 1;

-- name: period_runs
-- the days' figures are history_points'
SELECT day_id, status, base_day_id, reason, rejected_gate
FROM runs
WHERE day_id BETWEEN ? AND ?
ORDER BY day_id;

-- name: first_run_day
-- monitoring began on the first day anything was run: earlier days are no missing runs
SELECT min(day_id) FROM runs;
