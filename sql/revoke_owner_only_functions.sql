SELECT windowrag.revoke_owner_only_functions()
