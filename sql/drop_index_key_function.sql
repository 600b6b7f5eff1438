-- An index key function no index uses any more (sql/unused_index_keys.sql). The name: windowrag.index_key_c<id>_<digest>.
DROP FUNCTION IF EXISTS {name}(halfvec)
