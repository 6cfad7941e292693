-- How many rows the normalized snapshot judged by gates 1–5 had (beside judged_fingerprint): snapshot_diff
-- commits a handed-on frame only when its row count and fingerprint equal what was judged and recorded
-- here. Days judged before this migration have NULL (their fingerprint is still compared).
ALTER TABLE runs ADD COLUMN judged_rows INTEGER;
