SELECT windowrag.bm25_rebuild(%s)
