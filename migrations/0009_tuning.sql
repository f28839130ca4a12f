-- The tuning setting a changed knob belongs to (`governor`, `cpus_offline`,
-- `sysctl.vm.swappiness`); NULL for kreg's own switches (kernel.sched_schedstats). The
-- knob itself is `setting`: its path under /sys or /proc/sys.
ALTER TABLE host_settings ADD COLUMN item TEXT;
