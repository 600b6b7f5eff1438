-- Argument checks of the search functions (migration 0027), called on their first lines
-- (sql/functions.sql). Installed by 0027 before the functions and dropped by its downgrade.

-- Raise null_value_not_allowed naming the arguments of FUNCTION_NAME passed as NULL (the keys of
-- ARGUMENTS, jsonb_build_object(name, value, ...), whose value is null). Until migration 0027 a
-- NULL k, n, window_size, rrf_k, clamp, ... silently changed what a search returned (every row,
-- scores of 0, windows across sections); check_search_limits skips NULLs, for the optional ones.
CREATE OR REPLACE FUNCTION windowrag.check_not_null(function_name text, arguments jsonb) RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    missing text;
BEGIN
    SELECT string_agg(a.key, ', ' ORDER BY a.key) INTO missing
    FROM jsonb_each(arguments) a WHERE jsonb_typeof(a.value) = 'null';
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'windowrag.%: % must not be NULL (leave an argument out to get its default)',
            function_name, missing USING ERRCODE = 'null_value_not_allowed';
    END IF;
END $$;
COMMENT ON FUNCTION windowrag.check_not_null(text, jsonb) IS
'Raises a clear error naming the arguments of a search function passed as NULL; called by the search functions.';

-- Raise invalid_parameter_value unless VALUE (the argument NAME of FUNCTION_NAME) is a finite
-- number from LOW to HIGH (migration 0027: k1 => -1 gave every BM25 score 0, 'NaN' NaN scores).
CREATE OR REPLACE FUNCTION windowrag.check_number(function_name text, name text, value float8,
                                                  low float8, high float8 DEFAULT 'Infinity') RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF value IS NOT NULL AND (value = 'NaN' OR value = 'Infinity' OR value < low OR value > high) THEN
        RAISE EXCEPTION 'windowrag.%: % must be %, not %', function_name, name,
            CASE WHEN high = 'Infinity' THEN format('a finite number of at least %s', low)
                 ELSE format('a number from %s to %s', low, high) END, value
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END $$;
COMMENT ON FUNCTION windowrag.check_number(text, text, double precision, double precision, double precision) IS
'Raises a clear error naming a search function''s numeric argument (k1, b, a weight, ...) outside its range; called by the search functions.';
