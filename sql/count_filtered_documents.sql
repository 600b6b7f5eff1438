-- How many documents of a collection match {condition} (to say which filter matches nothing).
SELECT count(*) FROM windowrag.documents d WHERE d.collection_id = %(collection_id)s AND {condition}
