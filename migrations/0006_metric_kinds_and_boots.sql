-- What kind of figure each result is (its parser says so; the test that compares it
-- follows from it).
ALTER TABLE results ADD COLUMN kind TEXT NOT NULL DEFAULT 'mean'
    CHECK (kind IN ('mean', 'throughput', 'latency', 'count'));

-- The boot of its kernel a job runs in (`boots: N`), from 1.
ALTER TABLE jobs ADD COLUMN boot INTEGER NOT NULL DEFAULT 1;
