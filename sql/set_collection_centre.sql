-- Record the centre of a collection's vector index (migration 0022), with the index it is
-- written into (NULL: not centred).
UPDATE windowrag.collections SET vector_centre = %(centre)s::halfvec WHERE id = %(collection_id)s
