-- A run stopped by a signal or an error before its end is `interrupted` (resumable),
-- never left `running`.
ALTER TABLE runs DROP CONSTRAINT runs_state_check;
ALTER TABLE runs ADD CONSTRAINT runs_state_check CHECK (state IN ('running', 'done', 'failed', 'interrupted'));

-- Every setting kreg changes on a host for a run (e.g. kernel.sched_schedstats, which the
-- schedstat counters need), with the value it had, and when it was put back.
CREATE TABLE host_settings (
    id           BIGSERIAL PRIMARY KEY,
    run_id       BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    host         TEXT NOT NULL,
    boot_id      TEXT NOT NULL,
    setting      TEXT NOT NULL,
    before       TEXT NOT NULL,
    after        TEXT NOT NULL,
    restored_at  TIMESTAMPTZ,
    UNIQUE (run_id, host, boot_id, setting)
);
