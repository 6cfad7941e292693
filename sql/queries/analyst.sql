-- Named statements used by dmf_assets/analyst/queries.py. Values are always bound parameters.

-- name: records_by_key
-- a permit number (normalized), a dmf_key ("…#2", "SYN-…") — and every record of the same registration
-- (record_registrations: the synthetic record that received the number, the number it received, the
-- numbers it was listed under before or after a re-numbering)
WITH hit AS (
    SELECT g.registration_id
    FROM records r JOIN record_registrations g ON g.record_id = r.record_id
    WHERE r.permit_no = ? OR r.dmf_key = ?
)
SELECT record_id FROM record_registrations WHERE registration_id IN (SELECT registration_id FROM hit);

-- name: records_by_compact_key
-- the same, matching the number with spacing and punctuation removed on both sides (`queries.compact_key`):
-- what a user typed as "20240418 54 C 374 06" is 20240418-54-C-374-06
WITH hit AS (
    SELECT g.registration_id
    FROM records r JOIN record_registrations g ON g.record_id = r.record_id
    WHERE regexp_replace(r.permit_no, '[^0-9A-Z가-힣]', '', 'g') = ?
)
SELECT record_id FROM record_registrations WHERE registration_id IN (SELECT registration_id FROM hit);

-- name: records_by_pattern
-- any version whose matching key contains the pattern's key (column chosen by the caller's constant)
SELECT DISTINCT record_id FROM record_versions
WHERE (? = 'ingredient' AND contains(ingredient_key, ?))
   OR (? = 'applicant' AND contains(applicant_key, ?))
   OR (? = 'manufacturer' AND contains(manufacturer_key, ?));

-- name: record_versions
-- every distinct content of the registrations, with the accepted days it was observed on (and the registration
-- each belongs to: its numbers before and after a re-numbering, or before it received one, are one)
SELECT g.registration_id, r.dmf_key, v.version_id, v.permit_no, v.ingredient, v.applicant, v.bizrno, v.manufacturer, v.address,
       v.countries, v.site_count, v.sites, v.issue_date, v.target_class, v.base_permit_no, v.cohort,
       min(s.day_id) AS first_day, max(s.day_id) AS last_day, count(s.day_id) AS days_observed
FROM record_versions v
JOIN records r ON r.record_id = v.record_id
JOIN record_registrations g ON g.record_id = v.record_id
LEFT JOIN snapshots s ON s.version_id = v.version_id
WHERE v.record_id IN (SELECT unnest(?::INTEGER[]))
GROUP BY ALL
ORDER BY first_day NULLS LAST, r.dmf_key, v.version_id;

-- name: record_events
-- the events of the registrations observed in [from, to]
SELECT e.event_id, e.day_id, e.base_day_id, e.event_type, e.severity, e.dmf_key, e.base_dmf_key, e.permit_no,
       e.is_cosmetic, e.is_reappearance, e.number_assigned, e.number_changed, e.is_transfer, e.is_rename,
       e.watchlist_hit, e.watch_reasons, e.changed_fields, e.cosmetic_fields, e.renumber_candidates,
       v.ingredient, v.applicant, v.manufacturer, v.countries
FROM events e
LEFT JOIN record_versions v ON v.version_id = coalesce(e.version_id, e.base_version_id)
WHERE (e.record_id IN (SELECT unnest(?::INTEGER[])) OR e.base_record_id IN (SELECT unnest(?::INTEGER[])))
  AND e.day_id BETWEEN ? AND ?
ORDER BY e.day_id, e.event_id;

-- name: record_presence
-- on which accepted days each registration was listed, and as which version
SELECT r.dmf_key, s.day_id, s.version_id
FROM snapshots s JOIN records r ON r.record_id = s.record_id
WHERE s.record_id IN (SELECT unnest(?::INTEGER[]))
ORDER BY r.dmf_key, s.day_id;

-- name: number_links
-- (key, the key it continued as, day, re-numbered?) for the registrations that received their number or were
-- listed under another number, oldest first
SELECT e.base_dmf_key, e.dmf_key, e.day_id, e.number_changed
FROM events e
WHERE (e.number_assigned OR e.number_changed)
  AND (e.record_id IN (SELECT unnest(?::INTEGER[])) OR e.base_record_id IN (SELECT unnest(?::INTEGER[])))
ORDER BY e.day_id;

-- name: accepted_days
SELECT day_id FROM runs WHERE status IN ('accepted', 'baseline') ORDER BY day_id;

-- name: event_changes_of
SELECT event_id, field, before, after, is_cosmetic, severity
FROM event_changes
WHERE event_id IN (SELECT unnest(?::BIGINT[]))
ORDER BY event_id;

-- name: accepted_day_on_or_before
SELECT day_id FROM runs WHERE status IN ('accepted', 'baseline') AND day_id <= ? ORDER BY day_id DESC LIMIT 1;

-- name: first_accepted_day
SELECT min(day_id) FROM runs WHERE status IN ('accepted', 'baseline');

-- name: registry_asof
-- the registry exactly as accepted on that day: one row per registration, with its lifecycle up to then —
-- counted over every record of the registration (record_registrations): a registration that received its
-- number counts from the day it was published without one, a re-numbered one from the day it was listed
-- under its earlier number, which is its previous number (the latest one before this row's)
WITH listed AS (
    SELECT s.record_id, g.registration_id, min(s.day_id) AS first_day, max(s.day_id) AS last_day
    FROM snapshots s JOIN record_registrations g ON g.record_id = s.record_id
    WHERE s.day_id <= ?
    GROUP BY ALL
), seen AS (
    SELECT registration_id, min(first_day) AS first_day FROM listed GROUP BY 1
), changed AS (
    -- 실질 변경 only: a number assigned (번호 부여) or changed (번호 변경) is not a change of the content
    SELECT g.registration_id, max(e.day_id) AS last_changed_day, count(*) AS times_changed
    FROM events e JOIN record_registrations g ON g.record_id = e.record_id
    WHERE e.event_type = 'CHANGED' AND NOT e.is_cosmetic AND NOT e.number_assigned AND NOT e.number_changed
      AND e.day_id <= ?
    GROUP BY 1
), previous AS (
    -- the number each record of a registration listed under several numbers was listed under last before it
    SELECT l.record_id, arg_max(r.permit_no, o.last_day) AS previous_permit_no
    FROM listed l
    JOIN listed o ON o.registration_id = l.registration_id AND o.record_id <> l.record_id
                 AND o.last_day < l.last_day
    JOIN records r ON r.record_id = o.record_id
    WHERE r.permit_no IS NOT NULL
    GROUP BY 1
)
SELECT r.dmf_key, v.permit_no, previous.previous_permit_no, v.permit_no_raw, v.permit_fmt, v.permit_accept_date, v.permit_ingr_no, v.permit_group,
       v.permit_serial, v.permit_seq, v.permit_grant, v.permit_prefix, v.permit_table, v.permit_group_date,
       v.base_permit_no, v.cohort,
       v.ingredient, v.ingredient_base, v.applicant, v.bizrno, v.manufacturer, v.address, v.countries,
       v.country_list, v.site_count, v.sites, v.issue_date, v.target_class,
       v.ingredient_key, v.applicant_key, v.manufacturer_key,
       seen.first_day, changed.last_changed_day, coalesce(changed.times_changed, 0) AS times_changed,
       s.record_id
FROM snapshots s
JOIN records r ON r.record_id = s.record_id
JOIN record_versions v ON v.version_id = s.version_id
JOIN record_registrations g ON g.record_id = s.record_id
LEFT JOIN seen ON seen.registration_id = g.registration_id
LEFT JOIN changed ON changed.registration_id = g.registration_id
LEFT JOIN previous ON previous.record_id = s.record_id
WHERE s.day_id = ?
ORDER BY v.permit_no NULLS LAST, r.dmf_key;
