-- 017_front_glance.sql - what the front page and the node page draw over time: a node's score events keep its
-- involvements and runs as numbers (the node page's charts), and node state changes are found by time (the front
-- page's open suspects per day).

-- The node's (or GPU's) weighted involvements and twin-compared runs when the event was written (score and state
-- events, server/fleet/rescore.c); null for events of other kinds and for those written before this migration.
ALTER TABLE hw_history ADD COLUMN IF NOT EXISTS involvements double precision;
ALTER TABLE hw_history ADD COLUMN IF NOT EXISTS exposures double precision;

-- A node's state over time is its newest event with a state at that time (GET /api/v1/fleet/timeline): those
-- events alone, by node, newest last.
CREATE INDEX IF NOT EXISTS hw_history_node_states ON hw_history (node, id) WHERE state IS NOT NULL AND gpu IS NULL;
