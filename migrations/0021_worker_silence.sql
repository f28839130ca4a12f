-- How often a worker says it is alive at most apart (idle: each look at the queue; driving:
-- each heartbeat of its lease): a worker silent for three of those is gone, stopped
-- without saying so (killed, or its host down).
ALTER TABLE workers ADD COLUMN heartbeat_every_secs FLOAT8 NOT NULL DEFAULT 60;
