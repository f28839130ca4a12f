-- What kind of figure each result is (its parser says so; the test that compares it
-- follows from it).
ALTER TABLE results ADD COLUMN kind TEXT NOT NULL DEFAULT 'mean'
    CHECK (kind IN ('mean', 'throughput', 'latency', 'count'));
