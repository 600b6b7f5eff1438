-- Holds the turn taken by index_ddl_try_lock.sql: idle in this transaction on purpose, so the
-- server's idle timeout is off for it. Being a statement of its own, it also ends the SELECT's
-- portal, whose snapshot (kept until the next statement) every index build would wait for.
SET LOCAL idle_in_transaction_session_timeout = 0
