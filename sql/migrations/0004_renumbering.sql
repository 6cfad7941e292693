-- A registration re-numbered after publication (docs/DOMAIN.md §4, issue 30): the registry lists it under
-- another number, everything else the same. The diff reports it as one CHANGED event (number_changed) and
-- counts it apart (renumbered_count, like assigned_count); a WITHDRAWN or NEW event that may be one half of a
-- re-numbering names the numbers on the other side (renumber_candidates). Events stored before this
-- migration were computed without the rule: they keep false and an empty list. records.numbered_as and the
-- status 'numbered' (sql/queries/history.sql::refresh_records) now also mark a record re-numbered.
ALTER TABLE events ADD COLUMN number_changed BOOLEAN DEFAULT false;
ALTER TABLE events ADD COLUMN renumber_candidates VARCHAR[] DEFAULT [];
ALTER TABLE runs ADD COLUMN renumbered_count INTEGER;

-- One registration under several keys: a record that received its number (number_assigned) or was listed
-- under another number (number_changed) continues as the event's record. registration_id is the smallest
-- record_id of the records linked that way, directly or through others (SYN-… → number → corrected number);
-- a record with no such link is its own registration.
CREATE VIEW record_registrations AS
WITH RECURSIVE links(a, b) AS (
    SELECT base_record_id, record_id FROM events
    WHERE (number_assigned OR number_changed) AND record_id IS NOT NULL AND base_record_id IS NOT NULL
), edges(a, b) AS (
    SELECT a, b FROM links UNION SELECT b, a FROM links
), reach(record_id, linked) AS (
    SELECT a, a FROM edges
    UNION
    SELECT reach.record_id, edges.b FROM reach JOIN edges ON edges.a = reach.linked
)
SELECT r.record_id, coalesce(min(reach.linked), r.record_id) AS registration_id
FROM records r LEFT JOIN reach ON reach.record_id = r.record_id
GROUP BY r.record_id;
