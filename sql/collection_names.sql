SELECT name FROM windowrag.collections ORDER BY name
