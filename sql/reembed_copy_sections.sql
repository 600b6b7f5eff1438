INSERT INTO windowrag.sections (document_id, ordinal, heading_path, level, start_char, end_char,
                                first_sentence, last_sentence)
SELECT nd.id, sec.ordinal, sec.heading_path, sec.level, sec.start_char, sec.end_char,
       sec.first_sentence, sec.last_sentence
FROM windowrag.sections sec
JOIN windowrag.documents od ON od.id = sec.document_id
JOIN windowrag.documents nd ON nd.collection_id = %(new_id)s AND nd.external_id = od.external_id
WHERE od.collection_id = %(collection_id)s
