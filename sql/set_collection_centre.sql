-- Record the statistics of a collection's vector index (migrations 0022, 0023), with the index
-- they are written into (NULL: built without).
UPDATE windowrag.collections SET vector_centre = %(centre)s::halfvec, vector_spread = %(spread)s::halfvec
WHERE id = %(collection_id)s
