-- Up Migration
-- The run's results hash (tool call id → the result as recorded): a call whose tool message compaction
-- folded away has its result only there, and an archived event of it is read back with it. Rows archived
-- before this migration have none (NULL: read as an empty hash).
ALTER TABLE archived_runs ADD COLUMN results jsonb;
