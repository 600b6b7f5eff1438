SELECT windowrag.bm25_pack_recent(%s)
