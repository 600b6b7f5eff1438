INSERT INTO windowrag.sections (document_id, ordinal, heading_path, level, start_char, end_char,
                                first_sentence, last_sentence)
SELECT document_id, ordinal, heading_path, level, start_char, end_char, first_sentence, last_sentence
FROM pg_temp.windowrag_section_stage
ORDER BY document_id, ordinal
