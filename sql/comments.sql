-- What psql's \df+, \dt+ and \d+ show for the windowrag schema (migration 0025). COMMENT ON
-- names a function by its argument types: CREATE OR REPLACE keeps a comment, but a migration
-- that changes a function's arguments drops it, so such a migration runs this file again
-- (tests/test_comments.py checks that every function and table at head has one). README.md
-- and docs/ say more; these are the one-line reminders.

COMMENT ON FUNCTION windowrag.search_windows(text, text, vector, integer, integer, text, integer, text, integer,
    double precision, double precision, bigint[], integer, double precision, double precision, integer) IS
'Hybrid search with sentence windows: BM25 and HNSW lists fused by RRF, each hit with its window_size sentences on each side (clamped at the section), overlapping windows merged; one row per window, cited by document, section path (with clamp document, the headings shared by the sections a window runs over) and character offsets into documents.text. Example: SELECT * FROM windowrag.search_windows(''docs'', ''query text'', :''embedding''::vector, k => 5)';

COMMENT ON FUNCTION windowrag.hybrid_search(text, text, vector, integer, text, integer, double precision,
    double precision, bigint[], integer, double precision, double precision) IS
'Sentence ids ranked by Reciprocal Rank Fusion of the BM25 and dense lists, each n long (default 50; search_windows fuses candidates => 20 a list); mode hybrid, dense or bm25.';

COMMENT ON FUNCTION windowrag.dense_search(text, vector, integer, bigint[], integer) IS
'The n sentences nearest the query embedding by cosine, through the collection''s HNSW index (ef_search wide; an index over centred or binary keys re-ranks the nearest by the stored halfvecs); document_ids filters with iterative scan.';

COMMENT ON FUNCTION windowrag.bm25_search(text, text, integer, bigint[], double precision, double precision,
    integer, integer) IS
'The n best sentences by BM25 (Okapi, k1 and b) over the collection''s postings (packed in bm25_blocks, and rows of bm25_postings written since the last pack); exact scores, those of rank-bm25.';

COMMENT ON FUNCTION windowrag.candidate_sentences(text, text, vector, integer, integer, text, text, integer,
    double precision, double precision, bigint[], integer, double precision, double precision) IS
'What the Python pipeline selects from: the fused hits and every sentence within radius of them in their section, each with its cosine, window cosine, BM25 score, matched query terms, ranks, the text up to the next sentence of its section when more than whitespace (gap), its kind (sentence, heading, list_item, table_row, code, chunk), and for a list item its list''s lead-in sentence (a nested item: its parent item), for a table row its table''s header row (lead_*: its ordinal, offsets and tokens).';

COMMENT ON FUNCTION windowrag.sentence_window(bigint, integer, text) IS
'The window of one sentence: window_size sentences on each side, clamped at its section (clamp section) or document; section_path is the sentence''s own section, or with clamp document the headings the sections of the window share.';

COMMENT ON FUNCTION windowrag.search_limits() IS
'The bounds the search functions check their arguments against (k, candidates, ef_search, rrf_k, window, max_sentences, the query''s and a collection name''s length), and why.';

COMMENT ON FUNCTION windowrag.check_search_limits(text, text, integer, integer, integer, integer, integer, integer,
    integer) IS
'Raises a clear error when a search argument is outside search_limits(); called by the search functions.';

COMMENT ON FUNCTION windowrag.collection_id(text) IS
'The id of a collection by name; an error naming it when it does not exist (or row-level security hides it from this role).';

COMMENT ON FUNCTION windowrag.query_lexemes(regconfig, text) IS
'The distinct lexemes BM25 looks up for a query text under a text search configuration.';

COMMENT ON FUNCTION windowrag.bm25_term_weight(integer, integer, double precision, double precision,
    double precision) IS
'The BM25 term-frequency weight of one posting: tf (k1 + 1) / (tf + k1 (1 - b + b length / average length)).';

COMMENT ON FUNCTION windowrag.bm25_rebuild(integer) IS
'Repacks every BM25 posting of a collection into bm25_blocks and recounts its statistics; returns the postings written. windowrag doctor --fix runs it when the counts disagree.';

COMMENT ON FUNCTION windowrag.bm25_pack_recent(integer) IS
'Packs the postings written since the last pack (rows of bm25_postings) into the recent tier of bm25_blocks; ingests run it on their own.';

COMMENT ON FUNCTION windowrag.bm25_write_blocks(integer, double precision, bigint) IS
'Writes a collection''s postings, 128 to a row in impact order, into bm25_blocks; used by bm25_rebuild and bm25_pack_recent.';

COMMENT ON FUNCTION windowrag.bm25_after_insert() IS
'Statement trigger on sentences: BM25 statistics, document frequencies and postings of the new rows.';

COMMENT ON FUNCTION windowrag.bm25_after_delete() IS
'Statement trigger on sentences: takes the deleted rows out of the BM25 statistics and postings.';

COMMENT ON FUNCTION windowrag.forbid_sentence_update() IS
'Trigger: a sentence''s tsvector, length and collection are never updated in place (the BM25 statistics would drift); a changed document is replaced whole.';

COMMENT ON FUNCTION windowrag.forbid_moving_rows() IS
'Trigger: a row keeps its id and stays in its document and collection (row-level security relies on it).';

COMMENT ON FUNCTION windowrag.section_collection_id() IS
'Trigger: a section takes its collection from its document.';

COMMENT ON FUNCTION windowrag.current_tenants() IS
'The tenants the current role may see: its own through tenant_roles, or the windowrag.tenant setting for members of windowrag_service (docs/tenancy.md). Row-level security reads it.';

COMMENT ON FUNCTION windowrag.role_tenants(name) IS
'The tenants of a role through tenant_roles, following its role memberships; only for roles the session user is a member of.';

COMMENT ON FUNCTION windowrag.visible_collection_ids() IS
'The ids of the collections of current_tenants(); row-level security on documents, sections and sentences reads it.';

COMMENT ON FUNCTION windowrag.setup_tenancy_roles() IS
'Creates the windowrag_reader, windowrag_writer and windowrag_service roles where it may and grants their privileges (docs/tenancy.md); safe to run again, as the schema owner.';

COMMENT ON FUNCTION windowrag.setup_tenancy_roles_0003() IS
'The grants of migration 0003, called by setup_tenancy_roles().';

COMMENT ON TABLE windowrag.collections IS
'One row per collection: its embedding model and dimension, text search configuration, unit (sentence or chunk), vector index kind and tenant.';

COMMENT ON TABLE windowrag.documents IS
'The documents of each collection with their whole text: every offset in sections and sentences is into documents.text.';

COMMENT ON TABLE windowrag.sections IS
'The sections of each document (heading path, level, character range): windows are clamped at their section (unless clamp => ''document'').';

COMMENT ON TABLE windowrag.sentences IS
'One row per sentence (or chunk): its text, offsets, embedding (halfvec) and tsvector; the HNSW index of each collection is a partial index on this table.';

COMMENT ON COLUMN windowrag.sentences.start_char IS
'0-based offset into documents.text, end_char exclusive: substr(d.text, start_char + 1, end_char - start_char) = text.';

COMMENT ON COLUMN windowrag.sentences.ordinal IS
'Position of the sentence in its document, from 0; windows are ranges of ordinals.';

COMMENT ON TABLE windowrag.bm25_stats IS
'Per collection: sentence count and total length (the BM25 average length), and the postings packed, pending and stale.';

COMMENT ON TABLE windowrag.bm25_terms IS
'Per collection and lexeme: its document frequency (df) and how many of those postings are packed in bm25_blocks (packed_df; recent_df of them in the recent tier).';

COMMENT ON TABLE windowrag.bm25_blocks IS
'BM25 postings packed 128 to a row per lexeme in impact order (sentence ids, tfs, lengths), each block with its largest impact.';

COMMENT ON TABLE windowrag.bm25_postings IS
'BM25 postings written since the last pack, a row each; bm25_pack_recent moves them into bm25_blocks.';

COMMENT ON TABLE windowrag.alembic_version IS
'The schema''s migration (Alembic revision); the library migrates it on connect.';

COMMENT ON TABLE windowrag.tenant_roles IS
'Which database roles belong to which tenant (docs/tenancy.md).';
