SELECT set_config('statement_timeout', %s, false)
