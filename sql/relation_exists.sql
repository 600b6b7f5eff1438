SELECT to_regclass(%s) IS NOT NULL
