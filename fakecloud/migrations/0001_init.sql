-- Every resource of every kind lives in one table: the kinds differ in their
-- JSON `spec`, not in how they are stored, listed, versioned or transitioned.
CREATE TABLE resources (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT, -- list order and page token
    account       TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    region        TEXT    NOT NULL,
    scope         TEXT    NOT NULL DEFAULT '',       -- node group: its cluster
    name          TEXT    NOT NULL,                  -- cloud id, name or identifier
    parent        TEXT    NOT NULL DEFAULT '',       -- subnet: its VPC id
    spec          TEXT    NOT NULL,                  -- normalized configuration (JSON)
    secret_hash   TEXT,                              -- database: salted password hash
    state         TEXT    NOT NULL,
    pending_state TEXT,                              -- state reached at transition_at
    transition_at INTEGER,                           -- unix ms
    version       INTEGER NOT NULL,                  -- ETag
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (account, kind, region, scope, name)
);
CREATE INDEX resources_transition ON resources (transition_at) WHERE transition_at IS NOT NULL;
CREATE INDEX resources_parent ON resources (account, kind, parent);

-- First result of each create sent with an Idempotency-Key.
CREATE TABLE idempotency (
    account      TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    status       INTEGER NOT NULL,
    body         TEXT    NOT NULL,
    etag         TEXT    NOT NULL,
    location     TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (account, key)
);

CREATE TABLE audit (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    time       INTEGER NOT NULL,
    account    TEXT,
    actor      TEXT    NOT NULL,
    method     TEXT    NOT NULL,
    path       TEXT    NOT NULL,
    status     INTEGER NOT NULL,
    request_id TEXT    NOT NULL
);
CREATE INDEX audit_account ON audit (account, seq);
