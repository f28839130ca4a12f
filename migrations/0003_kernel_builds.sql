-- Kernels kreg built: content key, what went in, the final .config and the build log.
CREATE TABLE kernel_builds (
    key           TEXT PRIMARY KEY,
    release       TEXT NOT NULL,
    localversion  TEXT NOT NULL,
    tree_hash     TEXT NOT NULL,
    config_hash   TEXT NOT NULL,
    patches_hash  TEXT NOT NULL,
    compiler      TEXT NOT NULL,
    build_id      TEXT NOT NULL,
    built_on      TEXT NOT NULL,
    path          TEXT NOT NULL,
    config        TEXT NOT NULL,
    build_log     TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Which runs used which build, under which kernel name.
CREATE TABLE kernel_build_runs (
    build_key  TEXT NOT NULL REFERENCES kernel_builds(key),
    run_id     BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    kernel     TEXT NOT NULL,
    PRIMARY KEY (build_key, run_id, kernel)
);
