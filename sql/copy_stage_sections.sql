COPY pg_temp.windowrag_section_stage (document_id, ordinal, heading_path, level, start_char, end_char,
                                      first_sentence, last_sentence) FROM STDIN
