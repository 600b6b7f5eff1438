-- {concurrently}: CONCURRENTLY (outside a transaction: readers and writers are not blocked) or empty.
DROP INDEX {concurrently} IF EXISTS windowrag.{index_name}
