-- Whether the current role may write documents (an ingest asks before its first document).
SELECT has_table_privilege('windowrag.documents', 'INSERT')
   AND has_table_privilege('windowrag.sentences', 'INSERT')
