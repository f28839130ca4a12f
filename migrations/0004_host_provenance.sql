-- What a comparison must not hide: the CPU model and the kernel command line of each boot.
ALTER TABLE hosts ADD COLUMN cpu_model TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN cmdline TEXT NOT NULL DEFAULT '';
