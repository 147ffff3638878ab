-- 027_group_leases.sql - which lockstepd compares a twin group: a lease each group's owner renews, so that several
-- lockstepd on one database compare a group in one memory (server/peers/lease.c, docs/server.md "Several lockstepd
-- on one database"). Memory is never the authority (the marks it writes are checked against the database), so a
-- lease decides who does the work, not what is true: two owners at once would only compare twice.

CREATE TABLE IF NOT EXISTS group_leases (
    twin_group text PRIMARY KEY,
    owner      text NOT NULL,        -- the instance (lockstepd's host and address, or its pid when its port is chosen
                                     -- at start)
    taken_at   timestamptz NOT NULL, -- when this owner took it
    expires_at timestamptz NOT NULL  -- the owner renews it well before; past it, any instance may take it
);
