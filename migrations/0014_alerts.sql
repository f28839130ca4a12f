-- The commit a run's git kernel was checked out at (a build is keyed by its tree's content,
-- so the commit that asked for it is the run's): what a history's change is bisected between.
ALTER TABLE kernel_build_runs ADD COLUMN git_commit TEXT;

-- A change point in a history (scenario, workload, metric, kernel, variant over the finished
-- runs in time order), raised once and kept: `run_id` is the first run of the new level,
-- `previous_run_id` the last one before it. The numbers are those of the scan that raised it;
-- the triage state is set by people through `kreg alerts`.
CREATE TABLE alerts (
    id BIGSERIAL PRIMARY KEY,
    scenario TEXT NOT NULL,
    workload TEXT NOT NULL,
    metric TEXT NOT NULL,
    kernel TEXT NOT NULL,
    variant TEXT NOT NULL,
    run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    previous_run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    -- regression, improvement (by the metric's direction) or change (neither side better).
    direction TEXT NOT NULL CHECK (direction IN ('regression', 'improvement', 'change')),
    unit TEXT NOT NULL,
    before_centre DOUBLE PRECISION NOT NULL,
    after_centre DOUBLE PRECISION NOT NULL,
    before_runs INTEGER NOT NULL,
    after_runs INTEGER NOT NULL,
    -- The change as a fraction of the level before, with its 95 % interval (NULL: unbounded).
    change DOUBLE PRECISION,
    change_low DOUBLE PRECISION,
    change_high DOUBLE PRECISION,
    -- The permutation p-value of the change point.
    p DOUBLE PRECISION NOT NULL,
    state TEXT NOT NULL DEFAULT 'new' CHECK (state IN ('new', 'acknowledged', 'invalid', 'fixed')),
    note TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    state_changed_at TIMESTAMPTZ,
    UNIQUE (scenario, workload, metric, kernel, variant, run_id)
);
CREATE INDEX alerts_state ON alerts (state, id);
