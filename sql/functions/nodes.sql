-- nodes.sql - Slurm node lists, which node and GPU ran a rank, and which node a run ran on, in SQL (the twin-group
-- and run lists' node filter); each restates a C rule and is held to that rule's case table by tests/sql/.

-- lockstep_hostlist_has - whether the Slurm node list `list` names `host`, by the rule of common/hostlist.h
-- (hostlist_expand): items split at commas outside brackets, blanks and tabs around them dropped, empty ones
-- skipped; in an item, any number of bracket groups of ranges ("n[1-3,07]", "rack[1-2]n[1-4]"), which keep their
-- zero padding ("n[01-03]" names n01, not n1); a malformed list (an unbalanced or nested bracket, an empty or bad
-- range, a number of 19 digits, a range of more than a million, a name of 64 characters or more) names no node at
-- all. Matched without expanding the list. Held to the C rule's case table (tests/data/hostlist/cases.json) by
-- tests/sql/test_hostlist.c.
CREATE OR REPLACE FUNCTION lockstep_hostlist_has(list text, host text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    depth int := 0;
    start int := 1;
    ch text;
    items text[] := '{}';
    item text;
    parts text[];  -- an item split at its brackets: text, ranges, text, ranges, ..., text
    ranges text[];
    m text[];
    len int;
    widest int;
    found boolean := false;
BEGIN
    IF list IS NULL OR host IS NULL OR host = '' THEN
        RETURN false;
    END IF;
    FOR i IN 1 .. length(list) + 1 LOOP -- the items; a bracket unbalanced or nested anywhere refuses the list
        ch := substr(list, i, 1); -- '' past the end
        IF ch = '[' THEN
            depth := depth + 1;
            IF depth > 1 THEN
                RETURN false;
            END IF;
        ELSIF ch = ']' THEN
            depth := depth - 1;
            IF depth < 0 THEN
                RETURN false;
            END IF;
        ELSIF ch = '' AND depth > 0 THEN
            RETURN false;
        ELSIF (ch = ',' AND depth = 0) OR ch = '' THEN
            items := items || btrim(substr(list, start, i - start), E' \t');
            start := i + 1;
        END IF;
    END LOOP;
    FOREACH item IN ARRAY items LOOP
        CONTINUE WHEN item = '';
        parts := regexp_split_to_array(item, '[][]');
        len := 0;
        FOR p IN 1 .. cardinality(parts) LOOP
            IF p % 2 = 1 THEN
                len := len + length(parts[p]);
                CONTINUE;
            END IF;
            ranges := string_to_array(parts[p], ',');
            IF cardinality(ranges) > 1 AND ranges[cardinality(ranges)] = '' THEN -- "n[1,]": one trailing comma
                ranges := ranges[1 : cardinality(ranges) - 1];
            END IF;
            widest := 0;
            FOR r IN 1 .. coalesce(cardinality(ranges), 0) LOOP
                m := regexp_match(ranges[r], '^([0-9]{1,18})(?:-([0-9]{1,18}))?$');
                IF m IS NULL OR m[2]::numeric < m[1]::numeric OR m[2]::numeric - m[1]::numeric > 1000000 THEN
                    RETURN false;
                END IF;
                widest := greatest(widest, length(m[1]), length(coalesce(m[2], m[1])::numeric::text));
            END LOOP;
            IF widest = 0 THEN -- "n[]"
                RETURN false;
            END IF;
            len := len + widest;
        END LOOP;
        IF len >= 64 THEN -- its longest name does not fit HOSTLIST_NAME_MAX
            RETURN false;
        END IF;
        found := found OR lockstep_hostlist_fits(parts, 1, host);
    END LOOP;
    RETURN found;
END $$;

-- lockstep_hostlist_fits - whether `host` is a name of one well-formed item of a node list (lockstep_hostlist_has
-- checked it), split at its brackets into `parts` (text, ranges, text, ..., text), from part `i` on: the text,
-- then a number of one of the ranges as the range prints it (zero-padded to its first number's width), then the
-- rest likewise.
CREATE OR REPLACE FUNCTION lockstep_hostlist_fits(parts text[], i int, host text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    rest text;
    lo text;
    hi text;
    s text;
    v numeric;
    printed text;
BEGIN
    IF left(host, length(parts[i])) <> parts[i] THEN
        RETURN false;
    END IF;
    rest := substr(host, length(parts[i]) + 1);
    IF i = cardinality(parts) THEN
        RETURN rest = '';
    END IF;
    FOREACH s IN ARRAY string_to_array(parts[i + 1], ',') LOOP
        CONTINUE WHEN s = '';
        lo := split_part(s, '-', 1);
        hi := coalesce(nullif(split_part(s, '-', 2), ''), lo);
        FOR w IN length(lo) .. greatest(length(lo), length(hi::numeric::text)) LOOP
            CONTINUE WHEN left(rest, w) !~ ('^[0-9]{' || w || '}$');
            v := left(rest, w)::numeric;
            printed := lpad(v::text, greatest(length(lo), length(v::text)), '0'); -- v as the range prints it
            IF v BETWEEN lo::numeric AND hi::numeric AND left(rest, w) = printed
               AND lockstep_hostlist_fits(parts, i + 2, substr(rest, w + 1)) THEN
                RETURN true;
            END IF;
        END LOOP;
    END LOOP;
    RETURN false;
END $$;

-- lockstep_node_of - which node and GPU ran a rank, by the rule of common/json/node_of.h (node_of_rank): its
-- manifest `m` (NULL or not an object: none arrived) weighed against the node slurmstepd attested for the rank
-- (`attested`, NULL or '': none), the trust_reported_hosts setting and the run's Slurm node list. reported: the
-- manifest's host (slurm_node, else node, else host: the first non-empty string), '' when it names none. node: the
-- attested node unless the manifest names another host (the node's name followed by '.' and a domain is the same
-- host), then NULL; not attested: NULL, or when reported hosts are trusted the reported host, else the run's node
-- when its list names a single one. gpu, gpu_name: the uuid and name of the manifest's `gpu` object, else of the
-- one element of `gpus`; '' when unknown and whenever node is NULL. One row. Held to the C rule's case table
-- (tests/data/node_of/cases.json) by tests/sql/test_node_of.c.
CREATE OR REPLACE FUNCTION lockstep_node_of(m jsonb, attested text, trust_reported boolean, run_nodes text)
RETURNS TABLE (reported text, node text, gpu text, gpu_name text)
LANGUAGE sql IMMUTABLE AS $$
    SELECT h.reported, n.node,
           CASE WHEN n.node IS NOT NULL AND jsonb_typeof(g.gpu->'uuid') = 'string' THEN g.gpu->>'uuid' ELSE '' END,
           CASE WHEN n.node IS NOT NULL AND jsonb_typeof(g.gpu->'name') = 'string' THEN g.gpu->>'name' ELSE '' END
    FROM (SELECT CASE WHEN jsonb_typeof($1) = 'object' THEN $1 END AS mf) o
    CROSS JOIN LATERAL (SELECT coalesce(
        CASE WHEN jsonb_typeof(o.mf->'slurm_node') = 'string' THEN nullif(o.mf->>'slurm_node', '') END,
        CASE WHEN jsonb_typeof(o.mf->'node') = 'string' THEN nullif(o.mf->>'node', '') END,
        CASE WHEN jsonb_typeof(o.mf->'host') = 'string' THEN nullif(o.mf->>'host', '') END, '') AS reported) h
    CROSS JOIN LATERAL (SELECT CASE
        WHEN coalesce($2, '') <> '' THEN
            CASE WHEN h.reported = '' OR h.reported = $2 OR left(h.reported, length($2) + 1) = $2 || '.' THEN $2 END
        WHEN NOT coalesce($3, false) THEN NULL
        WHEN h.reported <> '' THEN h.reported
        WHEN coalesce($4, '') <> '' AND translate($4, '[],', '') = $4 THEN $4 END AS node) n
    CROSS JOIN LATERAL (SELECT CASE
        WHEN jsonb_typeof(o.mf->'gpu') = 'object' THEN o.mf->'gpu'
        WHEN jsonb_typeof(o.mf->'gpus') = 'array' AND jsonb_array_length(o.mf->'gpus') = 1
             AND jsonb_typeof(o.mf->'gpus'->0) = 'object' THEN o.mf->'gpus'->0 END AS gpu) g
$$;

-- lockstep_run_on_node - whether run `key` ran on `node`: its Slurm node list names it (lockstep_hostlist_has), or
-- a rank's manifest reports it as its host (lockstep_node_of's reported); no run ran on node ''. By position:
-- `node` is also a column here.
CREATE OR REPLACE FUNCTION lockstep_run_on_node(key bigint, nodes text, node text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT lockstep_hostlist_has($2, $3) OR ($3 <> '' AND EXISTS (SELECT 1 FROM manifests mf
        CROSS JOIN LATERAL lockstep_node_of(mf.manifest, NULL, false, '') h WHERE mf.run_key = $1 AND h.reported = $3))
$$;
