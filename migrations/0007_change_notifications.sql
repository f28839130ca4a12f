-- Every change of a job's or a run's state is announced on channel `kreg_changes`, from
-- the transaction that makes it (delivered when it commits), for the dashboard's live
-- pages: {"run": id, "job": id, "state": "..."} or {"run": id, "state": "..."}.
CREATE FUNCTION kreg_notify_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kreg_changes',
        json_build_object('run', NEW.run_id, 'job', NEW.id, 'state', NEW.state)::text);
    RETURN NULL;
END
$$;

CREATE FUNCTION kreg_notify_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kreg_changes', json_build_object('run', NEW.id, 'state', NEW.state)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify AFTER INSERT OR UPDATE OF state ON jobs
    FOR EACH ROW EXECUTE FUNCTION kreg_notify_job();
CREATE TRIGGER runs_notify AFTER INSERT OR UPDATE OF state ON runs
    FOR EACH ROW EXECUTE FUNCTION kreg_notify_run();
