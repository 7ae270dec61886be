-- The records of syncs (functions.RecordStore). Runs with search_path set
-- to the target schema.
--
-- A scope is one model of one sync variant of one connection row. Its row
-- in record_scopes is the lock that serialises the scope's writes: every
-- write locks it first (an upsert by SaveRecords, an UPDATE or SELECT ...
-- FOR UPDATE by the others) and holds it until its transaction ends, and
-- hands out the Seq values of the records it changes from last_seq. Seq
-- order is therefore commit order within a scope, which is what lets a
-- reader page by Seq without missing a record. Writes may leave gaps in the
-- Seq values (a save reserves one per record given, changed or not).
--
-- There is no foreign key to connections: deleting a connection must stay
-- fast whatever its records, and DeleteOrphanRecords removes them later.
-- connection_id is the connection's row id, never reused, so a connection
-- deleted and created again under the same id starts without records.
CREATE TABLE record_scopes (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    environment_id bigint NOT NULL,
    connection_id  bigint NOT NULL,
    last_seq       bigint NOT NULL DEFAULT 0,
    model          text   COLLATE "C" NOT NULL,
    variant        text   COLLATE "C" NOT NULL,
    UNIQUE (environment_id, connection_id, model, variant)
);

-- The orphan sweep finds the scopes of connections that no longer exist.
CREATE INDEX record_scopes_connection_id_idx ON record_scopes (connection_id);

-- added_seq is the Seq of the write that last added the record (first, or
-- again after a deletion): a save counts a row as added when it sets both
-- to the same new value, without reading the rows first. touched is the
-- generation of the last save that named the record (0 for none), which
-- DeleteUntouched compares. sealed_payload is '' once pruned.
CREATE TABLE records (
    scope_id       bigint      NOT NULL,
    seq            bigint      NOT NULL,
    added_seq      bigint      NOT NULL,
    touched        bigint      NOT NULL DEFAULT 0,
    first_seen_at  timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    deleted_at     timestamptz,
    pruned_at      timestamptz,
    external_id    text        COLLATE "C" NOT NULL,
    hash           text        COLLATE "C" NOT NULL,
    sealed_payload text        NOT NULL,
    PRIMARY KEY (scope_id, external_id)
);

-- GET /records pages a scope by Seq; PruneRecords walks it in Seq order.
CREATE UNIQUE INDEX records_scope_id_seq_idx ON records (scope_id, seq);

-- Retention (PruneStaleRecords) finds the oldest payloads not pruned yet;
-- a pruned record leaves the index.
CREATE INDEX records_stale_idx ON records (updated_at) WHERE pruned_at IS NULL;

-- The key ids of sealed payloads, in the registry of migration 008. Once
-- per statement, on the statement's new rows (a save writes up to 1,000
-- records in one statement), as migration 010 does for connections; the
-- update trigger has no column list, which a transition table cannot go
-- with, so it also runs for statements that change no payload (deletions,
-- pruning), where it finds nothing to register. Its INSERT takes
-- sealing_keys' ROW EXCLUSIVE lock even when it adds nothing, which
-- ForgetSealingKeyID waits for.
CREATE FUNCTION register_record_sealing_keys() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    INSERT INTO sealing_keys (key_id)
    SELECT key_id FROM (
        SELECT sealing_key_id('v1:' || part || ':') AS key_id
        FROM (SELECT DISTINCT split_part(left(sealed_payload, 40), ':', 2) AS part
              FROM new_records
              WHERE sealed_payload LIKE 'v1:%:%') AS parts
    ) AS ids
    WHERE key_id IS NOT NULL
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER register_sealing_keys_insert AFTER INSERT ON records
    REFERENCING NEW TABLE AS new_records
    FOR EACH STATEMENT EXECUTE FUNCTION register_record_sealing_keys();
CREATE TRIGGER register_sealing_keys_update AFTER UPDATE ON records
    REFERENCING NEW TABLE AS new_records
    FOR EACH STATEMENT EXECUTE FUNCTION register_record_sealing_keys();
