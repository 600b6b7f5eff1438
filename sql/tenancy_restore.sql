-- Tenant assignments a downgrade below 0003 kept (migrations/versions/0003_tenancy.py) come back,
-- run by the 0003 upgrade right after sql/tenancy.sql. A collection gets its tenant back when its
-- id and name are the same (one deleted or re-created below 0003 stays in 'default': new data).
DO $$
DECLARE
    restored bigint := 0;
    kept bigint := 0;
BEGIN
    IF to_regclass('windowrag.kept_collection_tenants') IS NOT NULL THEN
        SELECT count(*) INTO kept FROM windowrag.kept_collection_tenants;
        UPDATE windowrag.collections c SET tenant = k.tenant
        FROM windowrag.kept_collection_tenants k
        WHERE k.collection_id = c.id AND k.name = c.name;
        GET DIAGNOSTICS restored = ROW_COUNT;
        DROP TABLE windowrag.kept_collection_tenants;
        IF restored < kept THEN
            RAISE NOTICE 'windowrag: % kept tenant assignment(s) matched no collection (deleted or re-created below 0003)',
                kept - restored;
        END IF;
    END IF;
    IF to_regclass('windowrag.kept_tenant_roles') IS NOT NULL THEN
        INSERT INTO windowrag.tenant_roles (tenant, role_name)
        SELECT tenant, role_name FROM windowrag.kept_tenant_roles ON CONFLICT DO NOTHING;
        DROP TABLE windowrag.kept_tenant_roles;
    END IF;
END $$;
