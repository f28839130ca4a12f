-- A fleet: machines registered once, scenarios queued as slots (a share of a run's jobs
-- for one machine pair), workers that lease a pair per slot with a heartbeat. A lease's
-- epoch comes from one sequence, so it only grows; agents refuse older epochs, and a job
-- is stored only under the epoch its slot holds now.
CREATE SEQUENCE lease_epochs;

CREATE TABLE workers (
    id BIGSERIAL PRIMARY KEY,
    -- host:pid, as the worker says it.
    name TEXT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    stopped_at TIMESTAMPTZ
);

CREATE TABLE machines (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL CHECK (role IN ('sut', 'loadgen')),
    -- The pool file that declared the machine (its transport is read from it) and the
    -- folder its relative paths are taken from.
    pool_yaml TEXT NOT NULL,
    pool_dir TEXT NOT NULL,
    -- A SUT's load generator, leased with it.
    loadgen TEXT,
    labels JSONB NOT NULL DEFAULT '{}',
    added_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    lease_worker BIGINT REFERENCES workers(id),
    lease_epoch BIGINT,
    lease_since TIMESTAMPTZ,
    lease_heartbeat TIMESTAMPTZ,
    lease_expires TIMESTAMPTZ
);
CREATE INDEX machines_lease ON machines (lease_epoch) WHERE lease_epoch IS NOT NULL;

-- A submitted run: how many pairs, which labels, whether machines of different labels may
-- be mixed in it.
CREATE TABLE fleet_runs (
    run_id BIGINT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    pairs INTEGER NOT NULL CHECK (pairs > 0),
    labels JSONB NOT NULL DEFAULT '{}',
    mix_labels BOOLEAN NOT NULL DEFAULT false,
    -- Whether the scenario has a load generator (a pair then needs one).
    needs_loadgen BOOLEAN NOT NULL DEFAULT false,
    submitted_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE run_slots (
    run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    slot INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'leased', 'done', 'failed')),
    -- The SUT the slot runs on, pinned when first leased (its jobs stay on one machine).
    sut TEXT REFERENCES machines(name),
    worker BIGINT REFERENCES workers(id),
    epoch BIGINT,
    leased_at TIMESTAMPTZ,
    finished_at TIMESTAMPTZ,
    -- Times another worker took the slot over from one that lost its lease.
    takeovers INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    PRIMARY KEY (run_id, slot)
);
CREATE INDEX run_slots_open ON run_slots (run_id, slot) WHERE state IN ('queued', 'leased');

-- Which slot a job belongs to (0 for a run driven by `kreg run`), the machine that ran it
-- and the lease epoch it was stored under.
ALTER TABLE jobs ADD COLUMN slot INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN machine TEXT;
ALTER TABLE jobs ADD COLUMN epoch BIGINT;
