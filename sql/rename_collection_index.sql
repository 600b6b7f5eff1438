ALTER INDEX windowrag.{staging} RENAME TO {index_name}
