COPY pg_temp.windowrag_stage_sections (ordinal, heading_path, level, start_char, end_char,
                                       first_sentence, last_sentence) FROM STDIN
