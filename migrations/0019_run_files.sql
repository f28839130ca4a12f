-- The files runs carry (tool tarballs and binaries, kernel images and source tarballs,
-- config files, patches), by content: one blob per distinct SHA-256 however many runs use
-- it, its bytes in chunks so that neither side holds a whole file. Secrets are not here.
CREATE TABLE blobs (
    sha256 TEXT PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    size BIGINT NOT NULL CHECK (size >= 0),
    stored_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE blob_chunks (
    sha256 TEXT NOT NULL REFERENCES blobs (sha256) ON DELETE CASCADE,
    n INTEGER NOT NULL CHECK (n >= 0),
    data BYTEA NOT NULL,
    PRIMARY KEY (sha256, n)
);

-- What each run carries: the path its scenario named (as resolved when the run was
-- recorded), what the scenario calls it, and its content.
CREATE TABLE run_files (
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    what TEXT NOT NULL,
    sha256 TEXT NOT NULL REFERENCES blobs (sha256),
    PRIMARY KEY (run_id, path)
);
CREATE INDEX run_files_sha256 ON run_files (sha256);
