-- Console accounts. password_hash is a bcrypt hash, never a clear password.
CREATE TABLE users (
    name          TEXT    PRIMARY KEY,
    password_hash TEXT    NOT NULL,
    created_at    INTEGER NOT NULL -- unix seconds, UTC
);

-- Registered Kafka clusters ("instances" in the console). The Kafka password
-- is stored sealed by internal/secrets (AES-256-GCM, key outside the database);
-- NULL means no password.
CREATE TABLE clusters (
    name                TEXT    PRIMARY KEY,
    bootstrap_servers   TEXT    NOT NULL, -- comma-separated host:port list
    security_protocol   TEXT    NOT NULL,
    sasl_mechanism      TEXT    NOT NULL DEFAULT '',
    username            TEXT    NOT NULL DEFAULT '',
    password_ciphertext BLOB,
    ca_pem              TEXT    NOT NULL DEFAULT '',
    created_at          INTEGER NOT NULL
);

-- Small service-wide values that are not worth a table of their own.
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
