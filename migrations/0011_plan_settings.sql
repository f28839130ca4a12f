-- The settings an adaptive run's rounds are decided with (alpha, minimum effect as a
-- fraction), stored when the run is made: a resume decides with them, and a report judged
-- with others says so. NULL for runs made before: kreg's defaults then.
ALTER TABLE runs ADD COLUMN plan_alpha DOUBLE PRECISION;
ALTER TABLE runs ADD COLUMN plan_min_effect DOUBLE PRECISION;
