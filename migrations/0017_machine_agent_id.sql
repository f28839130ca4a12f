-- The id a pool machine's agent reported when the machine was added (the agent keeps it
-- in its data folder): two entries that reach one agent under two addresses are refused.
ALTER TABLE machines ADD COLUMN agent_id TEXT;
