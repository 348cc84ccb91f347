-- Roles and session revocation for console accounts.
--
-- role is what the account may do (viewer, operator, admin); the accounts
-- that exist already were all admins.
--
-- session_epoch is carried by every session the account signs in; raising
-- it (sign out everywhere, a password change) makes every older session
-- invalid at its next request.
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'admin' CHECK (role IN ('viewer', 'operator', 'admin'));
ALTER TABLE users ADD COLUMN session_epoch INTEGER NOT NULL DEFAULT 0;
