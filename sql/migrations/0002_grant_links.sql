-- Grant-link fields of a registration (docs/DOMAIN.md §10): a grant-derived (자료공유 허여) number
-- "…(n)" / "…(A)" points at its original (base_permit_no), and every standard/new-substance number
-- belongs to a cohort "{ingredient no}-{group}". Same rule as domain/permit.py; existing versions
-- are filled in here so old and new rows agree.
ALTER TABLE record_versions ADD COLUMN base_permit_no VARCHAR;
ALTER TABLE record_versions ADD COLUMN cohort VARCHAR;

UPDATE record_versions SET
    base_permit_no = CASE WHEN permit_grant IS NOT NULL
                          THEN regexp_replace(permit_no, '\([0-9A-Z]+\)$', '') END,
    cohort = CASE WHEN permit_ingr_no IS NOT NULL AND permit_group IS NOT NULL
                  THEN coalesce(nullif(ltrim(permit_ingr_no, '0'), ''), '0') || '-' || permit_group END;
