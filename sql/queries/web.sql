-- Named statements used by dmf_assets/web/ (through storage/web.py). Values are always bound parameters.
-- The page's other reads reuse the workbook's (report.sql) and the analyst commands' (analyst.sql) statements.

-- name: last_day_with_status
-- the latest day recorded with one of the statuses (a list: accepted + baseline, or rejected)
SELECT day_id FROM runs WHERE list_contains(?::VARCHAR[], status) ORDER BY day_id DESC LIMIT 1;

-- name: processed_span
-- the first and last day any run recorded
SELECT min(day_id), max(day_id) FROM runs;

-- name: day_sites
-- every registration listed on an accepted day with its sites and its manufacturer field, for counting
-- manufacturers (web/data.py names them: each site's name, the whole field when no site was split out)
SELECT s.record_id, v.sites, v.manufacturer
FROM snapshots s JOIN record_versions v ON v.version_id = s.version_id
WHERE s.day_id = ?;
