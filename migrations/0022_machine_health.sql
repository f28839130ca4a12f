-- A machine's health, as a lab keeps it: good (claimed), bad (failed the lab's part too
-- often in a row: out of the pool until released), maintenance (drained: its current slot
-- ends, nothing new), retired. Per machine: slots done, slots the lab failed, failures in a
-- row, the last slot that went well.
ALTER TABLE machines ADD COLUMN health TEXT NOT NULL DEFAULT 'good'
    CHECK (health IN ('good', 'bad', 'maintenance', 'retired'));
ALTER TABLE machines ADD COLUMN health_reason TEXT;
ALTER TABLE machines ADD COLUMN health_since TIMESTAMPTZ;
ALTER TABLE machines ADD COLUMN failing INTEGER NOT NULL DEFAULT 0;
ALTER TABLE machines ADD COLUMN slots_done INTEGER NOT NULL DEFAULT 0;
ALTER TABLE machines ADD COLUMN slots_lab_failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE machines ADD COLUMN last_good TIMESTAMPTZ;

-- A slot the lab failed moves to another pair and starts over there; what it measured on
-- the pair that failed stays stored, apart, under a slot of its own in state `set_aside`
-- (never in a report's tables).
ALTER TABLE run_slots DROP CONSTRAINT run_slots_state_check;
ALTER TABLE run_slots ADD CONSTRAINT run_slots_state_check
    CHECK (state IN ('queued', 'leased', 'done', 'failed', 'set_aside'));
