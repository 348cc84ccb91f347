-- Switchovers (docs/SWITCHOVER.md): a task's consumers moved to the copy as
-- one guided operation. body is the switchover in the API's JSON shape
-- (steps, report), rewritten after every change, so a restarted kmirror
-- goes on from the stored step. state mirrors body's, for the index.
CREATE TABLE switchovers (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task       TEXT    NOT NULL REFERENCES tasks (name) ON DELETE CASCADE,
    state      TEXT    NOT NULL CHECK (state IN ('running', 'waiting', 'done', 'failed')),
    body       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

-- One switchover at a time per task: a second is refused while one has not
-- ended.
CREATE UNIQUE INDEX switchovers_one_open_per_task ON switchovers (task) WHERE state IN ('running', 'waiting');
CREATE INDEX switchovers_by_task ON switchovers (task, id);
