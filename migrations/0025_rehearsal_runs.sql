-- A rehearsal (`kreg rehearse`): a run on lab machines standing in for the scenario's hosts,
-- which are gone when it ends; it is rehearsed again, never resumed.
ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_kind_check;
ALTER TABLE runs ADD CONSTRAINT runs_kind_check
    CHECK (kind IN ('matrix', 'adaptive', 'bisection', 'fleet', 'rehearsal'));
