UPDATE windowrag.collections SET name = %s WHERE id = %s
