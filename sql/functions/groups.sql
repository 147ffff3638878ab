-- groups.sql - twin groups scoped to their owners: the runs a claim sets aside, who reads a group, and which group a
-- name read from a request means (server/api/group.h). Registration's rule (who may join, which group a
-- registration's name means) is C, server/rules/group_rule.h; the key is NAME or OWNER/NAME as it says.

-- lockstep_group_set_aside - inside the claim's transaction (server/store/groups.c), once group `g` belongs to
-- `owner` as attested: the group's runs not attested as `owner` leave it (runs.set_aside_*; their ids are
-- returned), and when any did, the group's comparison state goes, so that it is compared again from its shared
-- start without them: its divergences (step, restore and logical ones: a divergence only a run set aside caused
-- would otherwise stand), its marks (group_checks, the logical mark rank -1 too: a rank without a mark is
-- compared from the shared start) and its restore checks. What the fleet concluded from them is taken back in the
-- same transaction (server/fleet/set_aside.c). A comparison under way commits its mark with the members it saw;
-- the next look finds other members and starts over (lockstep_cmp_ranks).
CREATE OR REPLACE FUNCTION lockstep_group_set_aside(g text, owner text) RETURNS TABLE (run_id uuid)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    UPDATE runs r SET twin_group = NULL, set_aside_from = g, set_aside_at = now(),
        set_aside_reason = format('%s claimed twin group %s with an attested run; this run %s, so it no longer '
                                  'counts in the group''s comparison or in hardware evidence', owner, g,
                                  CASE WHEN r.attested_user IS NULL
                                       THEN format('was not attested (it reported user %s)',
                                                   coalesce(nullif(r.user_name, ''), '(none)'))
                                       ELSE format('was attested as %s', r.attested_user) END)
    WHERE r.twin_group = g AND r.attested_user IS DISTINCT FROM owner
    RETURNING r.run_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    DELETE FROM divergences WHERE twin_group = g;
    DELETE FROM group_checks WHERE twin_group = g;
    DELETE FROM restore_checks WHERE twin_group = g;
    DELETE FROM group_absorbed WHERE twin_group = g;
END $$;

-- lockstep_group_visible - whether viewer `v` reads group `g` ('' = anyone: open reads, the admin token). `v_att`:
-- v is the user slurmstepd (or the admin) attested for the viewer's job; else only what its run reported, which
-- reads only groups whose owner was only reported too. A group reads by its owner and the users it is shared
-- with; one shared with '*' by anyone.
CREATE OR REPLACE FUNCTION lockstep_group_visible(g text, v text, v_att boolean) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT v = '' OR EXISTS (SELECT 1 FROM twin_groups o WHERE o.twin_group = g AND (
        '*' = ANY (o.shared_with)
        OR ((v_att OR NOT o.owner_attested) AND (o.owner = v OR v = ANY (o.shared_with)))))
$$;

-- lockstep_group_resolve - the group(s) a name read from a request means for viewer `v` (as above): the group of
-- that key; else the viewer's own attested group of that name (NAME, or v/NAME); else the attested group OWNER/NAME
-- it spells; else the groups of that name the viewer may read (two or more: the caller answers 409 with them). No
-- row: no such group.
-- Keys stay what links, alerts and history name, so a key always means its own group.
CREATE OR REPLACE FUNCTION lockstep_group_resolve(t text, v text, v_att boolean)
RETURNS TABLE (key text, owner text, owner_attested boolean, name text) LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY SELECT o.twin_group, o.owner, o.owner_attested, o.name FROM twin_groups o WHERE o.twin_group = t;
    IF FOUND THEN
        RETURN;
    END IF;
    IF v <> '' AND v_att THEN
        RETURN QUERY SELECT o.twin_group, o.owner, o.owner_attested, o.name FROM twin_groups o
            WHERE o.owner_attested AND o.owner = v AND (o.name = t OR v || '/' || o.name = t) LIMIT 1;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    IF strpos(t, '/') > 1 THEN
        RETURN QUERY SELECT o.twin_group, o.owner, o.owner_attested, o.name FROM twin_groups o
            WHERE o.owner_attested AND o.owner = split_part(t, '/', 1) AND o.name = substr(t, strpos(t, '/') + 1);
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT o.twin_group, o.owner, o.owner_attested, o.name FROM twin_groups o
        WHERE o.name = t AND lockstep_group_visible(o.twin_group, v, v_att) ORDER BY o.twin_group LIMIT 16;
END $$;

-- lockstep_group_key - the key a name read by anyone means: lockstep_group_resolve's one group, else the name
-- itself (no such group, or several: the statement then finds nothing under it).
CREATE OR REPLACE FUNCTION lockstep_group_key(t text) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN count(*) = 1 THEN min(r.key) ELSE t END FROM lockstep_group_resolve(t, '', false) r
$$;
