-- nodes.sql - which node a run ran on, in SQL (the twin-group and run lists' node filter).

-- lockstep_hostlist_has - whether the Slurm hostlist `list` ("n[1-3,07],gpu01", "rack[1-2]n[1-4]") names
-- `host`; ranges keep their zero padding ("n[01-03]" names n01, not n1).
CREATE OR REPLACE FUNCTION lockstep_hostlist_has(list text, host text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    depth int := 0;
    cur text := '';
    ch text;
    parts text[] := '{}';
    part text;
    m text[];
    r text;
    digits text;
    v numeric;
    width int;
    tail text;
BEGIN
    IF list IS NULL OR host IS NULL OR host = '' THEN
        RETURN false;
    END IF;
    IF position('[' in list) = 0 THEN
        RETURN host = ANY (string_to_array(replace(list, ' ', ''), ','));
    END IF;
    FOR i IN 1..length(list) LOOP
        ch := substr(list, i, 1);
        IF ch = '[' THEN depth := depth + 1; ELSIF ch = ']' THEN depth := depth - 1; END IF;
        IF ch = ',' AND depth = 0 THEN
            parts := parts || btrim(cur);
            cur := '';
        ELSE
            cur := cur || ch;
        END IF;
    END LOOP;
    parts := parts || btrim(cur);
    FOREACH part IN ARRAY parts LOOP
        m := regexp_match(part, '^([^\[\]]*)\[([^\]]+)\](.*)$');
        IF m IS NULL THEN
            IF part = host THEN RETURN true; END IF;
            CONTINUE;
        END IF;
        IF left(host, length(m[1])) <> m[1] THEN
            CONTINUE;
        END IF;
        FOREACH r IN ARRAY string_to_array(m[2], ',') LOOP
            IF r ~ '^[0-9]+-[0-9]+$' THEN
                digits := substring(substr(host, length(m[1]) + 1) from '^[0-9]+');
                IF digits IS NULL THEN CONTINUE; END IF;
                v := digits::numeric;
                width := length(split_part(r, '-', 1));
                IF v < split_part(r, '-', 1)::numeric OR v > split_part(r, '-', 2)::numeric
                   OR digits <> lpad(v::text, greatest(width, length(v::text)), '0') THEN
                    CONTINUE;
                END IF;
            ELSIF substr(host, length(m[1]) + 1, length(r)) = r THEN
                digits := r;
            ELSE
                CONTINUE;
            END IF;
            tail := substr(host, length(m[1]) + length(digits) + 1);
            IF (m[3] = '' AND tail = '') OR (m[3] <> '' AND lockstep_hostlist_has(m[3], tail)) THEN
                RETURN true;
            END IF;
        END LOOP;
    END LOOP;
    RETURN false;
END $$;

-- lockstep_run_on_node - whether run `key` ran on `node`: its Slurm node list names it, or a rank's manifest
-- does (slurm_node, else node, else host: the same choice the suspects evaluation makes).
CREATE OR REPLACE FUNCTION lockstep_run_on_node(key bigint, nodes text, node text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT lockstep_hostlist_has(nodes, node) OR EXISTS (SELECT 1 FROM manifests m WHERE m.run_key = key
        AND coalesce(nullif(m.manifest->>'slurm_node', ''), nullif(m.manifest->>'node', ''), m.manifest->>'host') = node)
$$;
