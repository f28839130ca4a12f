-- Labels that only describe a machine (serial, rack, asset tag): shown with it, never
-- matched by `--label` nor compared between the pairs of a run.
ALTER TABLE machines ADD COLUMN about JSONB NOT NULL DEFAULT '{}';
