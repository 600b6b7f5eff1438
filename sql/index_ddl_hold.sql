-- Holds the turn taken by index_ddl_try_xact_lock.sql. A statement of its own on purpose: it ends
-- the SELECT's portal, whose snapshot (kept until the next statement) every index build would
-- otherwise wait for.
SET LOCAL idle_in_transaction_session_timeout = 0
