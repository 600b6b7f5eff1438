-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION windowrag_native" to load this file. \quit

-- readers (tenant roles included) call bm25_search, which calls the aggregate
GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;

CREATE TYPE @extschema@.bm25_sums AS (sentence_ids bigint[], sums float8[]);

CREATE FUNCTION @extschema@.bm25_sums_step(internal, bigint[], smallint[], integer[],
                                           float8, float8, float8, float8, integer)
RETURNS internal AS 'MODULE_PATHNAME', 'bm25_sums_step' LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

CREATE FUNCTION @extschema@.bm25_sums_final(internal)
RETURNS @extschema@.bm25_sums AS 'MODULE_PATHNAME', 'bm25_sums_final' LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;

-- bm25_sums(sentence_ids, tfs, lengths, idf, avg_length, k1, b, keep): over rows of packed
-- postings (each row one term's block, with that term's idf), each sentence's summed
-- idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_length)); the best `keep` sums
-- (all when keep <= 0), sum descending then sentence id ascending.
CREATE AGGREGATE @extschema@.bm25_sums(bigint[], smallint[], integer[], float8, float8, float8, float8, integer) (
    SFUNC = @extschema@.bm25_sums_step,
    STYPE = internal,
    FINALFUNC = @extschema@.bm25_sums_final
);

-- bm25_score(tsv, lexemes, idfs, length, avg_length, k1, b): one sentence's score from its
-- tsvector, tf = a lexeme's number of positions; 0 when no lexeme is in it.
CREATE FUNCTION @extschema@.bm25_score(tsvector, text[], float8[], integer, float8, float8, float8)
RETURNS float8 AS 'MODULE_PATHNAME', 'bm25_score' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
