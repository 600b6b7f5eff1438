COPY pg_temp.windowrag_embedding_stage (id, embedding) FROM STDIN WITH (FORMAT BINARY)
