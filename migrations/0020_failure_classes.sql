-- Who a failure is put down to: the commit's build, the lab (infrastructure), the kernel
-- once running, or the workload. A failure the lab caused is a missing measurement, never
-- a result. Failures stored before classes were have none.
ALTER TABLE jobs ADD COLUMN failure_class TEXT
    CHECK (failure_class IN ('build', 'infrastructure', 'kernel', 'workload'));
ALTER TABLE bisect_measurements ADD COLUMN failure_class TEXT
    CHECK (failure_class IN ('build', 'infrastructure', 'kernel', 'workload'));

-- Measurements the lab failed at the end of a finished bisection, set aside when
-- `kreg resume` tries them again: kept, never replayed.
ALTER TABLE bisect_measurements ADD COLUMN superseded BOOLEAN NOT NULL DEFAULT false;
