-- Named statements used by dmf_assets/ops (dmf doctor, dmf prune). Read-only; values are bound parameters.
-- Every integrity query returns (problem_count, sample) where sample lists up to five day ids or keys.

-- name: tables
SELECT table_name
FROM information_schema.tables
WHERE table_schema = 'main' AND table_type = 'BASE TABLE'
ORDER BY table_name;

-- name: last_accepted_day
SELECT max(day_id) FROM runs WHERE status IN ('accepted', 'baseline');

-- name: latest_run
SELECT day_id, status, rejected_gate FROM runs ORDER BY day_id DESC LIMIT 1;

-- name: snapshot_without_record
SELECT count(*), (array_agg(DISTINCT s.day_id ORDER BY s.day_id))[1:5]
FROM snapshots s
WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.record_id = s.record_id);

-- name: snapshot_without_version
SELECT count(*), (array_agg(DISTINCT s.day_id ORDER BY s.day_id))[1:5]
FROM snapshots s
WHERE NOT EXISTS (SELECT 1 FROM record_versions v WHERE v.version_id = s.version_id);

-- name: snapshot_version_of_other_record
SELECT count(*), (array_agg(DISTINCT s.day_id ORDER BY s.day_id))[1:5]
FROM snapshots s JOIN record_versions v ON v.version_id = s.version_id
WHERE v.record_id <> s.record_id;

-- name: snapshot_duplicates
SELECT count(*), (array_agg(DISTINCT day_id ORDER BY day_id))[1:5]
FROM (SELECT day_id, record_id FROM snapshots GROUP BY day_id, record_id HAVING count(*) > 1);

-- name: version_without_record
SELECT count(*), (array_agg(DISTINCT v.version_id ORDER BY v.version_id))[1:5]
FROM record_versions v
WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.record_id = v.record_id);

-- name: record_current_version_missing
SELECT count(*), (array_agg(DISTINCT r.dmf_key ORDER BY r.dmf_key))[1:5]
FROM records r
WHERE r.current_version_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM record_versions v WHERE v.version_id = r.current_version_id);

-- name: event_without_record
SELECT count(*), (array_agg(DISTINCT e.day_id ORDER BY e.day_id))[1:5]
FROM events e
WHERE (e.record_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM records r WHERE r.record_id = e.record_id))
   OR (e.base_record_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM records r WHERE r.record_id = e.base_record_id));

-- name: event_without_version
SELECT count(*), (array_agg(DISTINCT e.day_id ORDER BY e.day_id))[1:5]
FROM events e
WHERE (e.version_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM record_versions v WHERE v.version_id = e.version_id))
   OR (e.base_version_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM record_versions v WHERE v.version_id = e.base_version_id));

-- name: change_without_event
SELECT count(*), (array_agg(DISTINCT c.event_id ORDER BY c.event_id))[1:5]
FROM event_changes c
WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = c.event_id);

-- name: duplicate_event_ids
SELECT count(*), (array_agg(DISTINCT event_id ORDER BY event_id))[1:5]
FROM (SELECT event_id FROM events GROUP BY event_id HAVING count(*) > 1);

-- name: accepted_day_without_snapshot
SELECT count(*), (array_agg(DISTINCT r.day_id ORDER BY r.day_id))[1:5]
FROM runs r
WHERE r.status IN ('accepted', 'baseline')
  AND NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.day_id = r.day_id);

-- name: rejected_day_with_history
SELECT count(*), (array_agg(DISTINCT r.day_id ORDER BY r.day_id))[1:5]
FROM runs r
WHERE r.status = 'rejected'
  AND (EXISTS (SELECT 1 FROM snapshots s WHERE s.day_id = r.day_id)
       OR EXISTS (SELECT 1 FROM events e WHERE e.day_id = r.day_id));

-- name: snapshot_day_not_accepted
SELECT count(*), (array_agg(DISTINCT s.day_id ORDER BY s.day_id))[1:5]
FROM (SELECT DISTINCT day_id FROM snapshots) s
WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.day_id = s.day_id AND r.status IN ('accepted', 'baseline'));

-- name: event_day_not_accepted
SELECT count(*), (array_agg(DISTINCT e.day_id ORDER BY e.day_id))[1:5]
FROM (SELECT DISTINCT day_id FROM events) e
WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.day_id = e.day_id AND r.status = 'accepted');

-- name: snapshot_size_mismatch
SELECT count(*), (array_agg(r.day_id ORDER BY r.day_id))[1:5]
FROM runs r
JOIN (SELECT day_id, count(*) AS n FROM snapshots GROUP BY day_id) s ON s.day_id = r.day_id
WHERE r.status IN ('accepted', 'baseline') AND r.population IS NOT NULL AND s.n <> r.population;

-- name: unfinished_days
-- Days whose latest judgement (integrity_verdict) was neither committed nor rejected afterwards: the run stopped
-- between integrity_verdict and snapshot_diff (or is between them right now).
SELECT day_id, judged_at
FROM runs
WHERE judged_at IS NOT NULL AND (status = 'pending' OR committed_at IS NULL OR judged_at > committed_at)
ORDER BY day_id;
