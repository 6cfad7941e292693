-- Named statements used by dmf_assets/web/ (through storage/web.py). Values are always bound parameters.
-- The page's other reads reuse the workbook's (report.sql) and the analyst commands' (analyst.sql) statements.

-- name: last_day_with_status
-- the latest day recorded with one of the statuses (a list: accepted + baseline, or rejected)
SELECT day_id FROM runs WHERE list_contains(?::VARCHAR[], status) ORDER BY day_id DESC LIMIT 1;

-- name: processed_span
-- the first and last day any run recorded
SELECT min(day_id), max(day_id) FROM runs;

-- name: day_site_names
-- one row per site of every registration listed on an accepted day: its name (the whole manufacturer field
-- when no site was split out), for counting manufacturers by their matching key
SELECT s.record_id,
       unnest(CASE WHEN len(v.sites) > 0 THEN list_transform(v.sites, lambda x: x.name) ELSE [v.manufacturer] END) AS name
FROM snapshots s JOIN record_versions v ON v.version_id = s.version_id
WHERE s.day_id = ?;
