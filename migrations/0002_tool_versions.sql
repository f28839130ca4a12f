-- The version of every tool a job ran (declared tools and the workload's own program),
-- keyed "tool@host".
ALTER TABLE jobs ADD COLUMN tool_versions JSONB NOT NULL DEFAULT '{}';
