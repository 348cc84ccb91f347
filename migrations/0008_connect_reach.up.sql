-- Kafka Connect's REST API reached with a client certificate or a bearer
-- token, besides basic authentication (docs/CONNECT.md). The private key
-- and the token are sealed by internal/secrets like the password, each
-- bound to its own label; NULL means none. The certificate is public and
-- kept as PEM text; '' means none.
ALTER TABLE connect_clusters ADD COLUMN client_cert_pem TEXT NOT NULL DEFAULT '';
ALTER TABLE connect_clusters ADD COLUMN client_key_ciphertext BLOB;
ALTER TABLE connect_clusters ADD COLUMN bearer_token_ciphertext BLOB;
