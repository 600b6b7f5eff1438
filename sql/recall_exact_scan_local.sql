SET LOCAL enable_indexscan = off
