-- A metric bisection is a run (its scenario, jobs, samples and builds as any run's) with
-- what it bisects: the kernel of the scenario it builds, the metric, the range's commits
-- in order (0 is good, the last bad) and the rules it decides with. Every boot it asks for
-- is a measurement: which commit, why (its role), the boot's jobs (kernel name and boot
-- number), and once measured its value or why it could not be built or booted. The
-- decisions are replayed from the measurements in order, so a resume decides the same.
CREATE TABLE bisections (
    run_id BIGINT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    kernel TEXT NOT NULL,
    workload TEXT NOT NULL,
    metric TEXT NOT NULL,
    variant TEXT NOT NULL,
    good TEXT NOT NULL,
    bad TEXT NOT NULL,
    -- [{hash, subject, author}], good first.
    commits JSONB NOT NULL,
    rules JSONB NOT NULL,
    -- The outcome once it ended (JSON), with the builds it took.
    outcome JSONB,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE bisect_measurements (
    run_id BIGINT NOT NULL REFERENCES bisections(run_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    commit_index INTEGER NOT NULL,
    -- endpoint, step, reference, parent, culprit or revert.
    role TEXT NOT NULL,
    -- For a revert: the commit reverted on top of bad.
    reverted INTEGER,
    kernel TEXT NOT NULL,
    boot INTEGER NOT NULL,
    value DOUBLE PRECISION,
    error TEXT,
    measured_at TIMESTAMPTZ,
    PRIMARY KEY (run_id, seq)
);

-- Whether the boot's kernel was compiled for it (not found in the build cache): a
-- bisection's builds are these, one per commit it tested.
ALTER TABLE bisect_measurements ADD COLUMN compiled BOOLEAN NOT NULL DEFAULT false;

-- A job is one iteration of a cell in one boot: warm-ups (iteration 0) of each boot of a
-- cell, and a bisection's boots of one commit (each numbering its iterations from 1), are
-- told apart by their boot. Iterations of one cell stay unique within a boot.
ALTER TABLE jobs DROP CONSTRAINT jobs_run_id_kernel_variant_workload_iteration_key;
ALTER TABLE jobs ADD CONSTRAINT jobs_cell_boot_iteration_key UNIQUE (run_id, kernel, variant, workload, boot, iteration);
