-- Up Migration
-- Finished runs, one row each, partitioned by day of finishing so that retention drops whole partitions.
-- The full record is kept as Redis held it (listing hash, state, messages, decisions, events), and every
-- field the API filters on is a column of its own with an index.
CREATE TABLE archived_runs (
  run_id         text COLLATE "C" NOT NULL,
  finished_at    timestamptz      NOT NULL,
  created_ms     bigint           NOT NULL,
  agent          text             NOT NULL,
  status         text             NOT NULL,
  reason         text,
  trace_id       text             NOT NULL DEFAULT '',
  tenant         text             NOT NULL,
  session_id     text,
  workflow_id    text,
  config_version integer,
  tools          text[]           NOT NULL DEFAULT '{}',
  error_kinds    text[]           NOT NULL DEFAULT '{}',
  metadata       jsonb,
  meta           jsonb            NOT NULL,
  state          jsonb            NOT NULL,
  messages       jsonb            NOT NULL,
  approvals      jsonb            NOT NULL,
  events         jsonb            NOT NULL,
  archived_at    timestamptz      NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, finished_at)
) PARTITION BY RANGE (finished_at);

-- Listing order (newest first by creation time, then run id) and each filter, led by the tenant every
-- query names.
CREATE INDEX archived_runs_listing ON archived_runs (tenant, created_ms DESC, run_id DESC);
CREATE INDEX archived_runs_agent ON archived_runs (agent, created_ms DESC, run_id DESC);
CREATE INDEX archived_runs_status ON archived_runs (status, created_ms DESC, run_id DESC);
CREATE INDEX archived_runs_reason ON archived_runs (reason, created_ms DESC, run_id DESC);
CREATE INDEX archived_runs_trace ON archived_runs (trace_id);
CREATE INDEX archived_runs_session ON archived_runs (session_id, created_ms DESC) WHERE session_id IS NOT NULL;
CREATE INDEX archived_runs_workflow ON archived_runs (workflow_id) WHERE workflow_id IS NOT NULL;
CREATE INDEX archived_runs_created ON archived_runs (created_ms DESC, run_id DESC);
CREATE INDEX archived_runs_tools ON archived_runs USING gin (tools);
CREATE INDEX archived_runs_error_kinds ON archived_runs USING gin (error_kinds);
CREATE INDEX archived_runs_metadata ON archived_runs USING gin (metadata jsonb_path_ops);

-- One day's partition, `archived_runs_pYYYYMMDD`, unless it exists. Archivers create them ahead (and for
-- any day a batch needs); the advisory lock keeps two archivers from racing on one.
CREATE FUNCTION archive_ensure_partition(day date) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  name text := 'archived_runs_p' || to_char(day, 'YYYYMMDD');
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('archived_runs_partitions'));
  IF to_regclass(name) IS NULL THEN
    EXECUTE format(
      'CREATE TABLE %I PARTITION OF archived_runs FOR VALUES FROM (%L) TO (%L)',
      name, (day::timestamp AT TIME ZONE 'UTC'), ((day + 1)::timestamp AT TIME ZONE 'UTC'));
  END IF;
END $$;

-- Drops the daily partitions that end on or before `cutoff`; returns their names.
CREATE FUNCTION archive_drop_partitions_before(cutoff timestamptz) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  part record;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('archived_runs_partitions'));
  FOR part IN
    SELECT c.relname
      FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'archived_runs'::regclass
       AND c.relname ~ '^archived_runs_p[0-9]{8}$'
       AND (to_date(substr(c.relname, 16), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC' <= cutoff
  LOOP
    EXECUTE format('DROP TABLE %I', part.relname);
    RETURN NEXT part.relname;
  END LOOP;
END $$;
