-- Sections and sentences go with the document (ON DELETE CASCADE); the BM25 statistics follow
-- through the statement trigger on windowrag.sentences.
DELETE FROM windowrag.documents WHERE collection_id = %s AND external_id = %s RETURNING id
