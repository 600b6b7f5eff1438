-- Planner statistics after a collection's index is built (a bulk load changes the row counts a lot).
ANALYZE windowrag.sentences
