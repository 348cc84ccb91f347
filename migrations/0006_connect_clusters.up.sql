-- Kafka Connect clusters a task can run on as MirrorMaker 2 connectors
-- (docs/CONNECT.md). The basic-auth password is sealed by internal/secrets
-- like a Kafka password; NULL means none. kafka_cluster is the registered
-- Kafka cluster the workers write to (their config, offset and status
-- topics live there): a flow runs on a Connect cluster whose workers write
-- to the flow's target.
CREATE TABLE connect_clusters (
    name                TEXT    PRIMARY KEY,
    urls                TEXT    NOT NULL, -- comma-separated REST base URLs
    username            TEXT    NOT NULL DEFAULT '',
    password_ciphertext BLOB,
    ca_pem              TEXT    NOT NULL DEFAULT '',
    kafka_cluster       TEXT    NOT NULL REFERENCES clusters (name) ON DELETE RESTRICT,
    -- The name of a config provider the workers define (config.providers),
    -- used to reference secrets instead of writing them into connector
    -- configs, which Connect stores in its config topic. '' = none.
    config_provider     TEXT    NOT NULL DEFAULT '',
    created_at          INTEGER NOT NULL
);

-- The engine a task runs on: NULL is the in-process engine, else the
-- Connect cluster, which cannot be removed while a task runs there.
ALTER TABLE tasks ADD COLUMN connect_cluster TEXT REFERENCES connect_clusters (name) ON DELETE RESTRICT;
CREATE INDEX tasks_by_connect_cluster ON tasks (connect_cluster);

-- Smart Connect per Kafka cluster: whether it is enabled and on which engine
-- new tasks run by default (NULL = in-process). Clusters registered before
-- this migration keep working as they did: enabled, in-process.
ALTER TABLE clusters ADD COLUMN smart_connect_enabled INTEGER NOT NULL DEFAULT 1;
ALTER TABLE clusters ADD COLUMN smart_connect_engine TEXT REFERENCES connect_clusters (name) ON DELETE RESTRICT;
