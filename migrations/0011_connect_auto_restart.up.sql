-- A Connect cluster's failed connectors and tasks of kmirror's tasks may be
-- restarted automatically, with back-off (docs/CONNECT.md): opt-in, off for
-- every cluster registered before.
ALTER TABLE connect_clusters ADD COLUMN auto_restart INTEGER NOT NULL DEFAULT 0;
