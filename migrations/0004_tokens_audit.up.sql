-- API tokens with a role. Only a SHA-256 of the token is kept: the token
-- itself is shown once, when created.
CREATE TABLE api_tokens (
    name         TEXT    PRIMARY KEY,
    role         TEXT    NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    token_sha256 TEXT    NOT NULL UNIQUE, -- hex
    created_by   TEXT    NOT NULL,
    created_at   INTEGER NOT NULL          -- unix seconds, UTC
);

-- Audit log of every change and sign-in. The application only appends:
-- the triggers refuse any UPDATE or DELETE of a row.
CREATE TABLE audit_log (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      INTEGER NOT NULL, -- unix milliseconds, UTC
    actor   TEXT    NOT NULL, -- user name, "token:<name>", "KMIRROR_TOKEN" or "system"
    role    TEXT    NOT NULL,
    address TEXT    NOT NULL,
    action  TEXT    NOT NULL, -- e.g. task.create, user.delete, signin
    object  TEXT    NOT NULL,
    outcome TEXT    NOT NULL  -- ok, denied, or failed: <code>
);

CREATE INDEX audit_log_by_actor ON audit_log (actor, id);

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;
