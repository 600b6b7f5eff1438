-- Frozen by migration 0015 (generic plans for search_windows): what it replaced, as the one
-- statement that gives it back. 0015 changed no line of search_windows' body, only its
-- plan_cache_mode setting, so 0014's function is the live one without that setting (a copy of
-- its 150 lines would say the same). 0015's downgrade runs this; the upgrades of 0009–0014 run
-- it after sql/functions.sql so that a database stopped there has what it had. Never edit.
ALTER FUNCTION windowrag.search_windows(text, text, vector, integer, integer, text, integer, text, integer,
                                        float8, float8, bigint[], integer, float8, float8, integer)
    RESET plan_cache_mode;
