-- How the engine reached each host: 'http URL', 'ssh USER@HOST:PORT (host key SHA256:…)',
-- or 'lab'. Empty for rows stored before kreg said so.
ALTER TABLE hosts ADD COLUMN reached TEXT NOT NULL DEFAULT '';
