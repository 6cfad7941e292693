-- Named statements used by dmf_assets/storage/history.py. Values are always bound parameters.

-- name: latest_accepted_before
SELECT day_id, total_count, population
FROM runs
WHERE status IN ('accepted', 'baseline') AND day_id < ?
ORDER BY day_id DESC
LIMIT 1;

-- name: next_accepted_after
SELECT day_id
FROM runs
WHERE status IN ('accepted', 'baseline') AND day_id > ?
ORDER BY day_id
LIMIT 1;

-- name: rejected_between
-- the rejected days strictly between two days, with the gate that refused them and the base they were judged against
SELECT day_id, rejected_gate, base_day_id
FROM runs
WHERE status = 'rejected' AND day_id > ? AND day_id < ?
ORDER BY day_id;

-- name: reappearance_candidates
-- accepted days after the first ? whose NEW events may read otherwise now that the day of the second ? was
-- committed or refused: a NEW of a number (or synthetic key) that day lists, or a NEW that is a reappearance
SELECT DISTINCT e.day_id
FROM events e JOIN runs r ON r.day_id = e.day_id
WHERE e.day_id > ? AND r.status = 'accepted' AND e.event_type = 'NEW'
  AND (e.is_reappearance OR coalesce(e.permit_no, e.dmf_key) IN (
      SELECT coalesce(v.permit_no, 'SYN-' || left(v.syn_basis_hash, 12))
      FROM snapshots s JOIN record_versions v ON v.version_id = s.version_id WHERE s.day_id = ?))
ORDER BY 1;

-- name: load_snapshot
SELECT r.dmf_key, v.*
FROM snapshots s
JOIN records r ON r.record_id = s.record_id
JOIN record_versions v ON v.version_id = s.version_id
WHERE s.day_id = ?
ORDER BY r.dmf_key;

-- name: previously_seen
-- numbers (or synthetic keys) and identity hashes on an accepted day before the base, not in the base
SELECT coalesce(v.permit_no, 'SYN-' || left(v.syn_basis_hash, 12)) AS seen
FROM snapshots s JOIN record_versions v ON v.version_id = s.version_id WHERE s.day_id < ?
UNION
SELECT v.identity_hash FROM snapshots s JOIN record_versions v ON v.version_id = s.version_id WHERE s.day_id < ?
EXCEPT
(SELECT coalesce(v.permit_no, 'SYN-' || left(v.syn_basis_hash, 12))
 FROM snapshots s JOIN record_versions v ON v.version_id = s.version_id WHERE s.day_id = ?
 UNION
 SELECT v.identity_hash FROM snapshots s JOIN record_versions v ON v.version_id = s.version_id WHERE s.day_id = ?);

-- name: delete_day_snapshot
DELETE FROM snapshots WHERE day_id = ?;

-- name: delete_day_events
DELETE FROM events WHERE day_id = ?;

-- name: delete_day_changes
DELETE FROM event_changes WHERE day_id = ?;

-- name: insert_new_records
INSERT INTO records (record_id, dmf_key, permit_no, is_synthetic)
SELECT (SELECT coalesce(max(record_id), 0) FROM records) + row_number() OVER (ORDER BY f.dmf_key),
       f.dmf_key, f.permit_no, f.is_synthetic
FROM day_frame f
WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.dmf_key = f.dmf_key);

-- name: insert_new_versions
INSERT INTO record_versions BY NAME
SELECT (SELECT coalesce(max(version_id), 0) FROM record_versions)
           + row_number() OVER (ORDER BY r.record_id) AS version_id,
       r.record_id, ?::INTEGER AS first_day,
       f.* EXCLUDE (dmf_key, is_synthetic)
FROM day_frame f
JOIN records r ON r.dmf_key = f.dmf_key
WHERE NOT EXISTS (
    SELECT 1 FROM record_versions v WHERE v.record_id = r.record_id AND v.content_hash = f.content_hash
);

-- name: insert_snapshot
INSERT INTO snapshots
SELECT ?::INTEGER, r.record_id, v.version_id
FROM day_frame f
JOIN records r ON r.dmf_key = f.dmf_key
JOIN record_versions v ON v.record_id = r.record_id AND v.content_hash = f.content_hash
ORDER BY r.record_id;

-- name: insert_events
INSERT INTO events BY NAME
SELECT ?::BIGINT * 1000000 + e.ordinal AS event_id,
       ?::INTEGER AS day_id,
       ?::INTEGER AS base_day_id,
       e.event_type, e.severity,
       r.record_id,
       br.record_id AS base_record_id,
       s.version_id,
       bs.version_id AS base_version_id,
       e.dmf_key, e.base_dmf_key, e.permit_no,
       e.is_cosmetic, e.is_reappearance, e.number_assigned, e.number_changed, e.is_transfer, e.is_rename,
       e.watchlist_hit, e.watch_reasons, e.changed_fields, e.cosmetic_fields, e.renumber_candidates
FROM day_events e
LEFT JOIN records r ON r.dmf_key = e.dmf_key AND e.event_type <> 'WITHDRAWN'
LEFT JOIN records br ON br.dmf_key = e.base_dmf_key
LEFT JOIN snapshots s ON s.day_id = ? AND s.record_id = r.record_id
LEFT JOIN snapshots bs ON bs.day_id = ? AND bs.record_id = br.record_id;

-- name: insert_changes
INSERT INTO event_changes
SELECT ev.event_id, ev.day_id, c.field, c.before, c.after, c.is_cosmetic, c.severity
FROM day_changes c
JOIN events ev ON ev.day_id = ? AND ev.event_type = 'CHANGED'
             AND ev.dmf_key = c.dmf_key AND ev.base_dmf_key IS NOT DISTINCT FROM c.base_dmf_key;

-- name: refresh_records
UPDATE records SET
    first_day = l.first_day,
    last_day = l.last_day,
    current_version_id = l.current_version_id,
    status = CASE
        WHEN l.last_day = (SELECT max(day_id) FROM snapshots) THEN 'active'
        WHEN l.numbered_as IS NOT NULL THEN 'numbered'
        ELSE 'withdrawn' END,
    numbered_as = l.numbered_as,
    times_changed = l.times_changed,
    times_withdrawn = l.times_withdrawn,
    times_reappeared = l.times_reappeared
FROM (
    SELECT r.record_id,
           s.first_day, s.last_day, s.current_version_id,
           na.numbered_as,
           coalesce(ch.n, 0) AS times_changed,
           coalesce(wd.n, 0) AS times_withdrawn,
           coalesce(ra.n, 0) AS times_reappeared
    FROM records r
    LEFT JOIN (SELECT record_id, min(day_id) AS first_day, max(day_id) AS last_day,
                      arg_max(version_id, day_id) AS current_version_id
               FROM snapshots GROUP BY record_id) s ON s.record_id = r.record_id
    -- the record it continues as: its number received, or listed under another number (docs/DOMAIN.md §4)
    LEFT JOIN (SELECT base_record_id, arg_max(record_id, day_id) AS numbered_as
               FROM events WHERE number_assigned OR number_changed GROUP BY base_record_id) na
           ON na.base_record_id = r.record_id
    LEFT JOIN (SELECT record_id, count(*) AS n FROM events
               WHERE event_type = 'CHANGED' AND NOT is_cosmetic AND NOT number_assigned AND NOT number_changed  -- 실질 변경 only
               GROUP BY record_id) ch ON ch.record_id = r.record_id
    LEFT JOIN (SELECT base_record_id, count(*) AS n FROM events
               WHERE event_type = 'WITHDRAWN' GROUP BY base_record_id) wd ON wd.base_record_id = r.record_id
    LEFT JOIN (SELECT record_id, count(*) AS n FROM events
               WHERE is_reappearance GROUP BY record_id) ra ON ra.record_id = r.record_id
) l
WHERE records.record_id = l.record_id
  -- only rows whose lifecycle moved: rewriting all ~9k rows every day would leave dead blocks behind
  AND (records.first_day IS DISTINCT FROM l.first_day
       OR records.last_day IS DISTINCT FROM l.last_day
       OR records.current_version_id IS DISTINCT FROM l.current_version_id
       OR records.numbered_as IS DISTINCT FROM l.numbered_as
       OR records.times_changed IS DISTINCT FROM l.times_changed
       OR records.times_withdrawn IS DISTINCT FROM l.times_withdrawn
       OR records.times_reappeared IS DISTINCT FROM l.times_reappeared
       OR records.status IS DISTINCT FROM CASE
            WHEN l.last_day = (SELECT max(day_id) FROM snapshots) THEN 'active'
            WHEN l.numbered_as IS NOT NULL THEN 'numbered'
            ELSE 'withdrawn' END);

-- name: delete_orphan_versions
DELETE FROM record_versions v
WHERE NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.version_id = v.version_id)
  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.version_id = v.version_id OR e.base_version_id = v.version_id);

-- name: delete_orphan_records
DELETE FROM records r
WHERE NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.record_id = r.record_id)
  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.record_id = r.record_id OR e.base_record_id = r.record_id);

-- name: upsert_run_judgement
INSERT INTO runs (day_id, status, source, source_id, total_count, rows_received, dagster_run_id, fetch_seconds,
                  judged_fingerprint, judged_rows, judged_at)
VALUES (?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, now()::TIMESTAMP)
ON CONFLICT (day_id) DO UPDATE SET
    judged_fingerprint = excluded.judged_fingerprint,
    judged_rows = excluded.judged_rows,
    source = excluded.source,
    source_id = excluded.source_id,
    total_count = excluded.total_count,
    rows_received = excluded.rows_received,
    dagster_run_id = excluded.dagster_run_id,
    fetch_seconds = excluded.fetch_seconds,
    judged_at = excluded.judged_at;

-- name: set_run_outcome
UPDATE runs SET
    status = ?, rejected_gate = ?, reason = ?, base_day_id = ?, population = ?,
    new_count = ?, changed_count = ?, withdrawn_count = ?, cosmetic_count = ?,
    reappeared_count = ?, assigned_count = ?, renumbered_count = ?, process_seconds = ?,
    dagster_run_id = coalesce(?, dagster_run_id),
    committed_at = now()::TIMESTAMP, rederived_at = NULL, rederived_by = NULL
WHERE day_id = ?;

-- name: set_rederived
UPDATE runs SET
    status = ?, base_day_id = ?, new_count = ?, changed_count = ?, withdrawn_count = ?, cosmetic_count = ?,
    reappeared_count = ?, assigned_count = ?, renumbered_count = ?, rederived_at = now()::TIMESTAMP, rederived_by = ?
WHERE day_id = ?;

-- name: delete_gate
DELETE FROM gate_results WHERE day_id = ? AND gate_no = ?;

-- name: delete_day_gates
DELETE FROM gate_results WHERE day_id = ?;

-- name: insert_gate
INSERT INTO gate_results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now()::TIMESTAMP);

-- name: delete_quality
DELETE FROM quality_checks WHERE day_id = ?;

-- name: insert_quality
INSERT INTO quality_checks VALUES (?, ?, ?, ?, ?, ?, ?, ?);

-- name: delete_fetch_stats
DELETE FROM fetch_stats WHERE day_id = ?;

-- name: insert_fetch_stat
INSERT INTO fetch_stats VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: run_row
SELECT * FROM runs WHERE day_id = ?;

-- name: history_source
-- the registry the history is built from: that of its newest day judged since the source was recorded
SELECT source_id FROM runs WHERE source_id IS NOT NULL ORDER BY day_id DESC LIMIT 1;

-- name: latest_recorded_day
-- the newest day judged (accepted, baseline, rejected): a later "today" may follow it, never an earlier one
SELECT max(day_id) FROM runs;

-- name: gate_rows
SELECT * FROM gate_results WHERE day_id = ? ORDER BY gate_no;

-- name: days_since_change
-- accepted days in a row (ending at the base) whose diff found nothing
SELECT count(*) FROM runs
WHERE status = 'accepted' AND day_id <= ?
  AND day_id > coalesce((SELECT max(day_id) FROM runs
                         WHERE status IN ('accepted', 'baseline') AND day_id <= ?
                           AND (status = 'baseline' OR new_count + changed_count + withdrawn_count + cosmetic_count > 0)), 0);

-- name: missing_from_base
-- registrations of the base day absent today (the evidence of a failed drop gate); present_keys is registered
SELECT r.dmf_key, v.permit_no, v.ingredient, v.applicant
FROM snapshots s
JOIN records r ON r.record_id = s.record_id
JOIN record_versions v ON v.version_id = s.version_id
WHERE s.day_id = ? AND r.dmf_key NOT IN (SELECT dmf_key FROM present_keys)
ORDER BY r.dmf_key
LIMIT ?;

-- name: run_outcomes
-- Every judged day's outcome, without run ids or times: what a rebuilt history must reproduce.
SELECT day_id, status, rejected_gate, base_day_id, population, new_count, changed_count, withdrawn_count,
       cosmetic_count, reappeared_count, assigned_count, renumbered_count
FROM runs
ORDER BY day_id;

-- name: event_contents
-- Every stored event without its ids (a rebuild may number them otherwise); its changes are read apart.
SELECT event_id, day_id, base_day_id, event_type, severity, dmf_key, base_dmf_key, permit_no, is_cosmetic,
       is_reappearance, number_assigned, number_changed, is_transfer, is_rename, watchlist_hit, watch_reasons,
       changed_fields, cosmetic_fields, renumber_candidates
FROM events;

-- name: change_contents
SELECT event_id, field, before, after, is_cosmetic, severity
FROM event_changes;
