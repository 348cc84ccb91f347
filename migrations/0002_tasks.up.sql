-- Smart Connect tasks. A task's parameters never change after creation
-- (docs/TASKS.md: a task is immutable): spec is written once. Only the desired state, the last action
-- and the last error change.
--
-- spec is the task in the API's JSON shape with the peer password removed;
-- the password, for a peer given by address, is sealed by internal/secrets
-- under the label "task/<name>" and kept apart so no JSON or log of spec
-- can ever carry it.
CREATE TABLE tasks (
    name                     TEXT    PRIMARY KEY,
    -- A registered cluster cannot be removed while a task uses it, on
    -- either side.
    current_cluster          TEXT    NOT NULL REFERENCES clusters (name) ON DELETE RESTRICT,
    peer_cluster             TEXT             REFERENCES clusters (name) ON DELETE RESTRICT, -- NULL for a peer by address
    spec                     TEXT    NOT NULL,
    peer_password_ciphertext BLOB,            -- NULL when the peer has no password (or is a registered cluster)
    desired_state            TEXT    NOT NULL CHECK (desired_state IN ('running', 'paused')),
    last_action              TEXT    NOT NULL, -- create, pause, resume, restart
    last_action_by           TEXT    NOT NULL DEFAULT '',
    last_action_at           INTEGER NOT NULL, -- unix seconds, UTC
    -- Why the task could not be started here (a runtime error of the
    -- replicators is in the engine's status instead). Empty when none.
    last_error               TEXT    NOT NULL DEFAULT '',
    created_at               INTEGER NOT NULL
);

CREATE INDEX tasks_by_current_cluster ON tasks (current_cluster);
CREATE INDEX tasks_by_peer_cluster ON tasks (peer_cluster);
