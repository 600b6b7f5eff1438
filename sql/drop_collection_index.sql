DROP INDEX IF EXISTS windowrag.{index_name}
