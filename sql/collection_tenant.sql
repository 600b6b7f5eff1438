SELECT tenant FROM windowrag.collections WHERE id = %s
