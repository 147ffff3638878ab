-- leases.sql - the twin groups' comparison leases (027_group_leases.sql): taken, renewed and given back by
-- server/peers/lease.c. Times are the database's, so instances whose clocks differ agree on who holds a lease.

-- lockstep_lease_take - instance `me` asks for group `g`'s lease for `ttl_s` seconds: it gets it when nobody holds
-- it, when it holds it already (renewed), or when its holder let it expire. Returns the holder after the call, the
-- seconds its lease has left, and whether `me` just took it over from another instance.
CREATE OR REPLACE FUNCTION lockstep_lease_take(g text, me text, ttl_s double precision)
RETURNS TABLE (holder text, left_s double precision, took_over boolean)
LANGUAGE plpgsql AS $$
DECLARE
    o text;
    e timestamptz;
BEGIN
    LOOP
        SELECT l.owner, l.expires_at INTO o, e FROM group_leases l WHERE l.twin_group = g FOR UPDATE;
        IF NOT FOUND THEN
            INSERT INTO group_leases (twin_group, owner, taken_at, expires_at)
                VALUES (g, me, clock_timestamp(), clock_timestamp() + ttl_s * interval '1 second')
                ON CONFLICT (twin_group) DO NOTHING;
            IF FOUND THEN
                RETURN QUERY SELECT me, ttl_s, false;
                RETURN;
            END IF;
            CONTINUE; -- another instance inserted it first: read its row
        END IF;
        IF o = me OR e < clock_timestamp() THEN
            UPDATE group_leases SET owner = me, expires_at = clock_timestamp() + ttl_s * interval '1 second',
                                    taken_at = CASE WHEN o = me THEN taken_at ELSE clock_timestamp() END
                WHERE twin_group = g;
            RETURN QUERY SELECT me, ttl_s, o <> me;
            RETURN;
        END IF;
        RETURN QUERY SELECT o, extract(epoch FROM e - clock_timestamp())::double precision, false;
        RETURN;
    END LOOP;
END $$;

-- lockstep_lease_renew - every lease `me` holds, renewed for `ttl_s` seconds, but those of the groups `gone` names (a
-- JSON array of names: groups it has stopped comparing, given back); returns the groups it still holds. Leases
-- expired an hour ago, whoever held them (an instance that died), go too.
CREATE OR REPLACE FUNCTION lockstep_lease_renew(me text, ttl_s double precision, gone jsonb)
RETURNS TABLE (twin_group text)
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM group_leases l WHERE (l.owner = me AND l.twin_group IN (SELECT jsonb_array_elements_text(gone)))
                                  OR l.expires_at < clock_timestamp() - interval '1 hour';
    RETURN QUERY
        UPDATE group_leases l SET expires_at = clock_timestamp() + ttl_s * interval '1 second'
            WHERE l.owner = me RETURNING l.twin_group;
END $$;
