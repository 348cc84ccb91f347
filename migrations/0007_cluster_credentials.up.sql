-- Client certificates (SSL and SASL_SSL) and OAUTHBEARER (docs/SECURITY.md).
--
-- client_cert_pem is public (a certificate chain) and kept in clear, like
-- ca_pem. oauth is the non-secret part of OAUTHBEARER's client-credentials
-- grant as JSON (token endpoint, client id, scope, audience); '' = none.
-- credentials_ciphertext seals, under the label "credentials/<name>", the
-- secrets beside the password as JSON: the client key, its password and the
-- OAuth client secret (internal/cluster.Secrets); NULL = none. The password
-- stays in password_ciphertext, as before.
ALTER TABLE clusters ADD COLUMN client_cert_pem TEXT NOT NULL DEFAULT '';
ALTER TABLE clusters ADD COLUMN oauth TEXT NOT NULL DEFAULT '';
ALTER TABLE clusters ADD COLUMN credentials_ciphertext BLOB;

-- The same secrets of a task's peer given by address, sealed under
-- "task-credentials/<name>"; spec never holds them.
ALTER TABLE tasks ADD COLUMN peer_credentials_ciphertext BLOB;
