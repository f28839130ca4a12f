-- Warm-up runs (`warmup: N` of a scenario): the first N runs of each cell in each boot,
-- run and stored like any other, shown, but not judged. Their iteration is 0.
ALTER TABLE jobs ADD COLUMN warmup BOOLEAN NOT NULL DEFAULT false;
