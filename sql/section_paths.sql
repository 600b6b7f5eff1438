SELECT id, heading_path FROM windowrag.sections WHERE id = ANY (%(sections)s::bigint[])
