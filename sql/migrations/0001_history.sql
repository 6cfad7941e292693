-- DMF Watch history schema (docs/DOMAIN.md §7).
-- Content and membership are separate: a registration's distinct contents live once in
-- record_versions; a day's snapshot is integers only (day × record × version).
-- Days are INTEGER yyyymmdd. History tables are written only for accepted days, in one transaction.

CREATE TABLE records (
    record_id          INTEGER PRIMARY KEY,
    dmf_key            VARCHAR NOT NULL UNIQUE,   -- permit number, "#n" for duplicates, SYN-… without a number
    permit_no          VARCHAR,
    is_synthetic       BOOLEAN NOT NULL,
    first_day          INTEGER,                   -- lifecycle, refreshed after every commit
    last_day           INTEGER,
    status             VARCHAR,                   -- active | withdrawn | numbered
    numbered_as        INTEGER,                   -- synthetic record whose registration received a number
    times_changed      INTEGER NOT NULL DEFAULT 0,
    times_withdrawn    INTEGER NOT NULL DEFAULT 0,
    times_reappeared   INTEGER NOT NULL DEFAULT 0,
    current_version_id INTEGER
);

CREATE TABLE record_versions (
    version_id           INTEGER PRIMARY KEY,
    record_id            INTEGER NOT NULL,
    content_hash         VARCHAR NOT NULL,
    identity_hash        VARCHAR NOT NULL,
    syn_basis_hash       VARCHAR NOT NULL,
    first_day            INTEGER NOT NULL,
    permit_no_raw        VARCHAR,
    permit_no            VARCHAR,
    permit_fmt           VARCHAR,
    permit_accept_date   VARCHAR,
    permit_ingr_no       VARCHAR,
    permit_group         VARCHAR,
    permit_serial        VARCHAR,
    permit_seq           VARCHAR,
    permit_grant         VARCHAR,
    permit_prefix        VARCHAR,
    permit_table         VARCHAR,
    permit_group_date    VARCHAR,
    ingredient           VARCHAR,
    ingredient_key       VARCHAR,
    ingredient_base      VARCHAR,
    is_micronized        BOOLEAN,
    applicant            VARCHAR,
    applicant_key        VARCHAR,
    manufacturer         VARCHAR,
    manufacturer_key     VARCHAR,
    address              VARCHAR,
    address_key          VARCHAR,
    countries            VARCHAR,
    countries_key        VARCHAR,
    country_list         VARCHAR[],
    site_count           INTEGER,
    sites                STRUCT(name VARCHAR, address VARCHAR, country VARCHAR, role VARCHAR)[],
    sites_split_ok       BOOLEAN,
    issue_date           VARCHAR,
    issue_date_invalid   BOOLEAN,
    bizrno               VARCHAR,
    bizrno_valid         BOOLEAN,
    target_class         VARCHAR,
    target_class_key     VARCHAR,
    oversize_fields      VARCHAR[],
    has_replacement_char BOOLEAN,
    unresolved_countries VARCHAR[],
    UNIQUE (record_id, content_hash)
);

-- No index on purpose: ~9k rows per accepted day, read by day_id; DuckDB's zone maps suffice and an
-- index would cost more disk than the table.
CREATE TABLE snapshots (
    day_id     INTEGER NOT NULL,
    record_id  INTEGER NOT NULL,
    version_id INTEGER NOT NULL
);

CREATE TABLE events (
    event_id        BIGINT NOT NULL,              -- day_id * 1e6 + ordinal: re-running a day gives the same ids
    day_id          INTEGER NOT NULL,
    base_day_id     INTEGER NOT NULL,
    event_type      VARCHAR NOT NULL,             -- NEW | CHANGED | WITHDRAWN
    severity        VARCHAR NOT NULL,             -- CRITICAL | HIGH | MEDIUM | INFO | COSMETIC
    record_id       INTEGER,
    base_record_id  INTEGER,
    version_id      INTEGER,
    base_version_id INTEGER,
    dmf_key         VARCHAR NOT NULL,
    base_dmf_key    VARCHAR,
    permit_no       VARCHAR,
    is_cosmetic     BOOLEAN NOT NULL,
    is_reappearance BOOLEAN NOT NULL,
    number_assigned BOOLEAN NOT NULL,
    is_transfer     BOOLEAN NOT NULL,
    is_rename       BOOLEAN NOT NULL,
    watchlist_hit   BOOLEAN NOT NULL,
    watch_reasons   VARCHAR[],
    changed_fields  VARCHAR[],
    cosmetic_fields VARCHAR[]
);

CREATE TABLE event_changes (
    event_id    BIGINT NOT NULL,
    day_id      INTEGER NOT NULL,
    field       VARCHAR NOT NULL,
    before      VARCHAR,
    after       VARCHAR,
    is_cosmetic BOOLEAN NOT NULL,
    severity    VARCHAR NOT NULL
);

-- Operations: one row per processed day (accepted or not), replaced when the day is re-run.
CREATE TABLE runs (
    day_id            INTEGER PRIMARY KEY,
    status            VARCHAR NOT NULL,           -- judged | accepted | baseline | rejected
    rejected_gate     INTEGER,
    reason            VARCHAR,
    base_day_id       INTEGER,
    source            VARCHAR,
    total_count       INTEGER,
    rows_received     INTEGER,
    population        INTEGER,                    -- registrations in the accepted snapshot
    new_count         INTEGER,
    changed_count     INTEGER,
    withdrawn_count   INTEGER,
    cosmetic_count    INTEGER,
    reappeared_count  INTEGER,
    assigned_count    INTEGER,
    dagster_run_id    VARCHAR,
    fetch_seconds     DOUBLE,
    process_seconds   DOUBLE,
    judged_at         TIMESTAMP,
    judged_fingerprint VARCHAR,                   -- which normalized snapshot gates 1–5 judged
    committed_at      TIMESTAMP,
    rederived_at      TIMESTAMP,                  -- its events were recomputed after an earlier day changed
    rederived_by      INTEGER
);

CREATE TABLE gate_results (
    day_id          INTEGER NOT NULL,
    gate_no         INTEGER NOT NULL,
    name            VARCHAR NOT NULL,
    passed          BOOLEAN,                      -- NULL = not evaluated
    observed_value  DOUBLE,
    threshold_value DOUBLE,
    observed        VARCHAR,
    threshold       VARCHAR,
    detail          VARCHAR,
    samples         JSON,
    evaluated_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (day_id, gate_no)
);

CREATE TABLE quality_checks (
    day_id   INTEGER NOT NULL,
    name     VARCHAR NOT NULL,
    label    VARCHAR,
    value    DOUBLE,
    expected VARCHAR,
    ok       BOOLEAN NOT NULL,
    detail   VARCHAR,
    samples  JSON,
    PRIMARY KEY (day_id, name)
);

CREATE TABLE fetch_stats (
    day_id      INTEGER NOT NULL,
    page_no     INTEGER NOT NULL,
    status      VARCHAR,
    rows        INTEGER,
    total_count INTEGER,
    attempts    INTEGER,
    elapsed_ms  DOUBLE,
    bytes       BIGINT,
    sha256      VARCHAR
);
