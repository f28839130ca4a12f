-- kreg's first schema. Migrations are append-only: never edit this file, add a new one.

CREATE TABLE scenarios (
    id          BIGSERIAL PRIMARY KEY,
    name        TEXT NOT NULL,
    yaml        TEXT NOT NULL,
    sha256      TEXT NOT NULL UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE runs (
    id           BIGSERIAL PRIMARY KEY,
    scenario_id  BIGINT NOT NULL REFERENCES scenarios(id),
    source_path  TEXT NOT NULL,
    state        TEXT NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done', 'failed')),
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at  TIMESTAMPTZ
);

CREATE TABLE jobs (
    id              BIGSERIAL PRIMARY KEY,
    run_id          BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    ordinal         INTEGER NOT NULL,
    kernel          TEXT NOT NULL,
    variant         TEXT NOT NULL,
    workload        TEXT NOT NULL,
    iteration       INTEGER NOT NULL,
    state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    error           TEXT,
    kernel_release  TEXT,
    boot_id         TEXT,
    observed_policy TEXT,
    started_at      TIMESTAMPTZ,
    finished_at     TIMESTAMPTZ,
    UNIQUE (run_id, ordinal),
    UNIQUE (run_id, kernel, variant, workload, iteration)
);

CREATE TABLE results (
    id                BIGSERIAL PRIMARY KEY,
    run_id            BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    job_id            BIGINT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    metric            TEXT NOT NULL,
    value             DOUBLE PRECISION NOT NULL,
    unit              TEXT NOT NULL,
    higher_is_better  BOOLEAN NOT NULL,
    kernel_release    TEXT NOT NULL,
    observed_policy   TEXT NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (run_id, job_id, metric)
);

CREATE TABLE raw_outputs (
    id          BIGSERIAL PRIMARY KEY,
    run_id      BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    job_id      BIGINT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    content     TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (job_id, kind)
);

CREATE TABLE hosts (
    id              BIGSERIAL PRIMARY KEY,
    run_id          BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    boot_id         TEXT NOT NULL,
    kernel_release  TEXT NOT NULL,
    proc_version    TEXT NOT NULL,
    nr_cpus         INTEGER NOT NULL,
    schedstat_version INTEGER,
    -- how the engine got the host onto this boot: 'start' (the lab started a VM), 'kexec', or 'none'
    boot_method     TEXT NOT NULL DEFAULT 'none',
    seen_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (run_id, name, boot_id)
);

CREATE INDEX results_run ON results (run_id);
CREATE INDEX jobs_run_state ON jobs (run_id, state);
