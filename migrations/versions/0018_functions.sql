-- Frozen by migration 0018 (search_windows' default candidates 50 -> 20): what it replaced, as
-- the one statement that gives it back. 0018 changed no line of search_windows' body, only the
-- default of its candidates parameter, which ALTER FUNCTION cannot set: this re-creates the
-- function from its own definition with the old default (a copy of its 150 lines would say the
-- same). 0018's downgrade runs this; the upgrades of 0009-0017 run it after sql/functions.sql so
-- that a database stopped there has what it had. Never edit.
DO $$
DECLARE
    definition text := pg_get_functiondef(
        'windowrag.search_windows(text, text, vector, integer, integer, text, integer, text, integer,
                                  float8, float8, bigint[], integer, float8, float8, integer)'::regprocedure);
BEGIN
    IF position('candidates integer DEFAULT 20,' IN definition) = 0 THEN
        RAISE EXCEPTION 'windowrag: search_windows has no "candidates integer DEFAULT 20" to give back as 50';
    END IF;
    EXECUTE replace(definition, 'candidates integer DEFAULT 20,', 'candidates integer DEFAULT 50,');
END $$;
