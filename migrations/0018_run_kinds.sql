-- What a run is, fixed when it is recorded: a matrix of fixed iterations, an adaptive one
-- (rounds added while rows stay inconclusive), a bisection, or a fleet run (slots driven by
-- workers). Runs recorded before are settled from their side tables here; a matrix or an
-- adaptive run of before is told by its stored scenario when kreg next opens the database.
ALTER TABLE runs ADD COLUMN kind TEXT CHECK (kind IN ('matrix', 'adaptive', 'bisection', 'fleet'));
UPDATE runs SET kind = 'bisection' WHERE id IN (SELECT run_id FROM bisections);
UPDATE runs SET kind = 'fleet' WHERE id IN (SELECT run_id FROM fleet_runs);
