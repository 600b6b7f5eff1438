(SELECT coalesce(array_agg(d.id), '{{}}')
   FROM windowrag.documents d
  WHERE d.collection_id = windowrag.collection_id(%(collection)s) AND {condition})
