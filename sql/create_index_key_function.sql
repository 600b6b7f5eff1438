-- The key of a collection's HNSW index when it holds constants (the centre, the spread): a
-- function whose body holds them, because pg_index rows cannot before PostgreSQL 18
-- (store.collections._key_function). IMMUTABLE SQL with one expression for a body (the standard
-- RETURN form, parsed once here): the planner inlines it where it reads the index's expression,
-- so queries written with the same constants use the index. The name: windowrag.index_key_c<id>_<digest>.
CREATE OR REPLACE FUNCTION {name}(v halfvec) RETURNS {returns}
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN {body}
;
COMMENT ON FUNCTION {name}(halfvec) IS {comment}
