-- Who called: the caller's User-Agent header (at most 256 bytes), NULL when
-- the call sent none. A migration of its own, never an edit of 0001: a
-- database file from before it has 0001 recorded as applied (with its
-- checksum) and gets only this ALTER on its next start. Rows written before
-- it read as NULL, as a call without the header does. No index: the audit
-- filters scan it anyway (only `account` is indexed) and every call pays for
-- an index on insert.
ALTER TABLE audit ADD COLUMN user_agent TEXT;
