-- The vector indexes on windowrag.sentences of collections that no longer exist (named by the
-- collection's id, %(prefix)s<id>, or <id>_centred while being rebuilt): a tenant writer's
-- delete-collection leaves its index to the owner, who may drop it. For the owner only (row-level
-- security hides other tenants' collections from the rest, whose indexes would all look orphaned).
SELECT c.relname::text AS index_name, m[1]::integer AS collection_id
FROM pg_index x
JOIN pg_class c ON c.oid = x.indexrelid
CROSS JOIN LATERAL regexp_match(c.relname, '^' || %(prefix)s || '([0-9]+)(_centred)?$') m
WHERE x.indrelid = 'windowrag.sentences'::regclass
  AND m IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM windowrag.collections k WHERE k.id = m[1]::integer)
ORDER BY 2, 1
