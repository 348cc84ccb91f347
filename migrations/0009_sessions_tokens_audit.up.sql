-- Sessions bound to accounts, tokens that end, an audit log that can be
-- pruned (docs/SECURITY.md, "Accounts, sessions and tokens").
--
-- account_id is an account's immutable identity: random, never reused. A
-- session or a token belongs to an account_id, not to a name, so a user
-- deleted and created again under the same name is another account and
-- gets nothing of the old one's.
ALTER TABLE users ADD COLUMN account_id TEXT;
UPDATE users SET account_id = lower(hex(randomblob(16)));
CREATE UNIQUE INDEX users_by_account_id ON users (account_id);

-- A console session lives on the server: the cookie carries a random id,
-- only its SHA-256 is kept here. Signing out deletes the row, so a copied
-- cookie stops working; deleting the account deletes its sessions. This
-- replaces the session epoch (every older cookie is signed out).
CREATE TABLE console_sessions (
    id_sha256  TEXT    PRIMARY KEY, -- hex
    account_id TEXT    NOT NULL REFERENCES users (account_id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL     -- unix seconds, UTC
);
CREATE INDEX console_sessions_by_account ON console_sessions (account_id);
ALTER TABLE users DROP COLUMN session_epoch;

-- An API token's owner is the account that made it; it ends with that
-- account. NULL: made without an account (with KMIRROR_TOKEN, or before
-- owners by someone no longer there): it lives until revoked or expired.
ALTER TABLE api_tokens ADD COLUMN owner_account_id TEXT REFERENCES users (account_id) ON DELETE CASCADE;
UPDATE api_tokens SET owner_account_id = (SELECT account_id FROM users WHERE users.name = api_tokens.created_by);
ALTER TABLE api_tokens ADD COLUMN expires_at INTEGER;   -- unix seconds; NULL: never
ALTER TABLE api_tokens ADD COLUMN last_used_at INTEGER; -- unix seconds; NULL: never used

-- The audit log stays append-only for the application, except for a prune
-- (`kmirror audit prune --before DATE`): it sets audit_prune.before_id in
-- the same transaction as its DELETE, which may remove only entries with a
-- smaller id, then sets it back to 0 and appends an entry saying so.
CREATE TABLE audit_prune (
    one       INTEGER PRIMARY KEY CHECK (one = 1),
    before_id INTEGER NOT NULL
);
INSERT INTO audit_prune (one, before_id) VALUES (1, 0);
DROP TRIGGER audit_log_no_delete;
-- coalesce: without the gate's row the gate is shut, never open.
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
WHEN OLD.id >= coalesce((SELECT before_id FROM audit_prune WHERE one = 1), 0)
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only (kmirror audit prune removes old entries)');
END;
CREATE TRIGGER audit_prune_no_delete BEFORE DELETE ON audit_prune
BEGIN
    SELECT RAISE(ABORT, 'the audit log''s prune gate stays');
END;

-- The destination policy: which Kafka addresses operators may give as a
-- task's peer (admins may always give any). mode 'any' is kmirror's
-- behaviour before the policy existed; 'registered' allows registered
-- instances only; 'networks' also addresses inside networks (CIDRs,
-- comma-separated).
CREATE TABLE destination_policy (
    one        INTEGER PRIMARY KEY CHECK (one = 1),
    mode       TEXT    NOT NULL CHECK (mode IN ('any', 'registered', 'networks')),
    networks   TEXT    NOT NULL DEFAULT '',
    changed_by TEXT    NOT NULL DEFAULT '',
    changed_at INTEGER NOT NULL DEFAULT 0 -- unix seconds; 0: never changed
);
INSERT INTO destination_policy (one, mode) VALUES (1, 'any');
