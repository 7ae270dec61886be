-- The operations log is written once per connection imported, refreshed,
-- proxied call logged or webhook sent, and read only by ListLogs (newest
-- first, by environment, optionally by type, integration or connection).
-- Each index costs every write. The lists by type and by integration walk
-- operations_log_environment_id_created_at_idx newest first and filter:
-- types and integrations are few and common, so the first page is found
-- early, while a connection id is rare and keeps its index. Bulk imports
-- write one entry per connection; this cuts two of the six index writes
-- of each.
DROP INDEX operations_log_environment_id_type_created_at_idx;
DROP INDEX operations_log_environment_id_integration_key_created_at_idx;
