"""Adapters for the frameworks services already use: windowrag_pg.integrations.llama_index
(extra `llama-index`) and windowrag_pg.integrations.langchain (extra `langchain`)."""
