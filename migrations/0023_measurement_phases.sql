-- Where each bisection measurement's time went, phase by phase, in the order they ran:
-- [["checkout", 2.1], ["build", 301.5], ["install and boot", 40.2], ["tools", 3.0],
--  ["workload", 61.7], ["judging", 0.2]] (seconds). NULL for measurements stored before.
ALTER TABLE bisect_measurements ADD COLUMN phases JSONB;
