-- Which registry each judged day came from (docs/DOMAIN.md §4, one source per history): `emulator:<seed>` or the
-- server's host (`apis.data.go.kr`). A day of another source than the history's is refused before it is judged.
-- Days judged before this migration have NULL (their archives' manifests still say where they came from).
ALTER TABLE runs ADD COLUMN source_id VARCHAR;
