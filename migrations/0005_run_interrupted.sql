-- A run stopped by a signal or an error before its end is `interrupted` (resumable),
-- never left `running`.
ALTER TABLE runs DROP CONSTRAINT runs_state_check;
ALTER TABLE runs ADD CONSTRAINT runs_state_check CHECK (state IN ('running', 'done', 'failed', 'interrupted'));
