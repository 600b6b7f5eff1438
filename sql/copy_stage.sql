COPY pg_temp.windowrag_sentence_stage (document_id, ordinal, section_ord, start_char, end_char, kind,
                                       text, gap, token_count, page, embedding) FROM STDIN WITH (FORMAT BINARY)
