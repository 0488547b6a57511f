-- Named snapshots of the whole state (admin /admin/snapshots). Each row is
-- the portable file itself, as saved or uploaded, with what the list shows
-- beside it (from the file's header) so that listing never reads a file.
-- Not part of the state: a reset or a load leaves this table alone.
CREATE TABLE snapshots (
    name              TEXT    PRIMARY KEY,
    created_at        INTEGER NOT NULL, -- unix ms, saved or uploaded
    size              INTEGER NOT NULL, -- bytes of `file`
    format_version    INTEGER NOT NULL,
    fakecloud_version TEXT    NOT NULL, -- the fakecloud that wrote the file
    accounts          TEXT    NOT NULL, -- JSON array of account names
    counts            TEXT    NOT NULL, -- JSON {vpc, subnet, nodeGroup, databaseInstance}
    file              BLOB    NOT NULL  -- gzip'd JSON lines (snapshot::format)
);
