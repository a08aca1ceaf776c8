/// The store's schema as shipped, one string per migration. Once a version
/// has shipped its text is frozen: later changes are new migrations.
/// Times are ISO 8601 UTC text (see `Timestamp`); SQL is kept portable to
/// PostgreSQL apart from AUTOINCREMENT.
enum Schema {
    static let v1 = """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY NOT NULL,
            value TEXT NOT NULL
        );
        CREATE TABLE users (
            id TEXT PRIMARY KEY NOT NULL,
            device TEXT,
            state TEXT NOT NULL DEFAULT 'anonymous' CHECK (state IN ('anonymous', 'linked')),
            prompt_state TEXT NOT NULL DEFAULT 'anonymous',
            created_at TEXT NOT NULL,
            last_seen_at TEXT NOT NULL,
            linked_at TEXT
        );
        CREATE INDEX users_state_last_seen ON users(state, last_seen_at);
        CREATE TABLE identities (
            provider TEXT NOT NULL,
            subject TEXT NOT NULL,
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            email TEXT,
            linked_at TEXT NOT NULL,
            PRIMARY KEY (provider, subject)
        );
        CREATE INDEX identities_user ON identities(user_id);
        CREATE TABLE credentials (
            user_id TEXT PRIMARY KEY NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            username TEXT NOT NULL UNIQUE,
            secret_hash TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE upgrade_locks (
            user_id TEXT PRIMARY KEY NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            provider TEXT NOT NULL,
            started_at TEXT NOT NULL
        );
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            action TEXT NOT NULL,
            at TEXT NOT NULL,
            count INTEGER NOT NULL DEFAULT 1,
            idempotency_key TEXT,
            properties TEXT
        );
        CREATE UNIQUE INDEX events_idempotency ON events(user_id, idempotency_key)
            WHERE idempotency_key IS NOT NULL;
        CREATE INDEX events_user_at ON events(user_id, at);
        CREATE INDEX events_action_at ON events(action, at);
        CREATE TABLE counters (
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            action TEXT NOT NULL,
            total INTEGER NOT NULL,
            PRIMARY KEY (user_id, action)
        );
        CREATE TABLE records (
            owner_id TEXT NOT NULL,
            collection TEXT NOT NULL,
            key TEXT NOT NULL,
            data TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (owner_id, collection, key)
        );
        CREATE TABLE meter_usage (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            meter TEXT NOT NULL,
            amount REAL NOT NULL,
            at TEXT NOT NULL,
            idempotency_key TEXT
        );
        CREATE UNIQUE INDEX meter_usage_idempotency ON meter_usage(user_id, meter, idempotency_key)
            WHERE idempotency_key IS NOT NULL;
        CREATE INDEX meter_usage_user_at ON meter_usage(user_id, meter, at);
        CREATE TABLE meter_warnings (
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            meter TEXT NOT NULL,
            period_start TEXT NOT NULL,
            percent REAL NOT NULL,
            level TEXT NOT NULL,
            fired_at TEXT NOT NULL,
            PRIMARY KEY (user_id, meter, period_start, percent)
        );
        CREATE TABLE plans (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            plan TEXT NOT NULL,
            granted_at TEXT NOT NULL,
            trial_ends_at TEXT,
            ends_at TEXT,
            revoked_at TEXT
        );
        CREATE INDEX plans_user ON plans(user_id);
        CREATE TABLE prompt_outcomes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            context TEXT NOT NULL,
            outcome TEXT NOT NULL,
            at TEXT NOT NULL
        );
        CREATE INDEX prompt_outcomes_user_at ON prompt_outcomes(user_id, at);
        CREATE TABLE experiment_assignments (
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            experiment TEXT NOT NULL,
            variant TEXT NOT NULL,
            assigned_at TEXT NOT NULL,
            PRIMARY KEY (user_id, experiment)
        );
        CREATE TABLE outbox (
            user_id TEXT PRIMARY KEY NOT NULL,
            queued_at TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            next_attempt_at TEXT
        );
        CREATE TABLE user_flags (
            user_id TEXT NOT NULL,
            flag TEXT NOT NULL,
            set_at TEXT NOT NULL,
            PRIMARY KEY (user_id, flag)
        );
        CREATE TABLE migration_journals (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            source_id TEXT NOT NULL,
            target_id TEXT NOT NULL,
            status TEXT NOT NULL,
            backup_path TEXT,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            error TEXT
        );
        CREATE TABLE migration_steps (
            journal_id INTEGER NOT NULL REFERENCES migration_journals(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            name TEXT NOT NULL,
            status TEXT NOT NULL,
            rows INTEGER NOT NULL DEFAULT 0,
            finished_at TEXT,
            PRIMARY KEY (journal_id, position)
        );
        """

    /// Records that lost a merge conflict are archived here, never dropped:
    /// a merge or migration must not lose data, even data it did not keep.
    /// Rows belong to the user who received the merge and travel in that
    /// user's backups, so `journal_id` is a plain number: the journal it
    /// names stays in the store where the merge ran.
    static let v2 = """
        CREATE TABLE conflict_archive (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            journal_id INTEGER,
            owner_id TEXT NOT NULL,
            collection TEXT NOT NULL,
            key TEXT NOT NULL,
            data TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            reason TEXT NOT NULL,
            archived_at TEXT NOT NULL
        );
        CREATE INDEX conflict_archive_owner ON conflict_archive(owner_id);
        """

    /// What `guestmode serve` keeps: server keys and refresh tokens by the
    /// SHA-256 of their secrets (never the secrets), session families (a
    /// reused refresh token revokes its family), and the first answer given
    /// to each idempotency key. Sessions go with their user.
    static let v3 = """
        CREATE TABLE server_keys (
            name TEXT PRIMARY KEY NOT NULL,
            scope TEXT NOT NULL CHECK (scope IN ('admin', 'user-data')),
            secret_hash TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL,
            revoked_at TEXT
        );
        CREATE TABLE session_families (
            id TEXT PRIMARY KEY NOT NULL,
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            created_at TEXT NOT NULL,
            revoked_at TEXT
        );
        CREATE INDEX session_families_user ON session_families(user_id);
        CREATE TABLE refresh_tokens (
            token_hash TEXT PRIMARY KEY NOT NULL,
            family_id TEXT NOT NULL REFERENCES session_families(id) ON DELETE CASCADE,
            issued_at TEXT NOT NULL,
            used_at TEXT
        );
        CREATE INDEX refresh_tokens_family ON refresh_tokens(family_id);
        CREATE TABLE kept_responses (
            principal TEXT NOT NULL,
            key TEXT NOT NULL,
            request_hash TEXT NOT NULL,
            status INTEGER NOT NULL,
            body TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (principal, key)
        );
        """

    /// `guest new --device` finds a device's oldest user by this index
    /// instead of scanning every user; most users have no device.
    static let v4 = """
        CREATE INDEX users_device ON users (device, created_at, id) WHERE device IS NOT NULL;
        """

    /// Grants of extra allowance on a meter (`meter grant`). Amounts are
    /// REAL as in meter_usage; a grant's idempotency key is unique per user.
    static let v5 = """
        CREATE TABLE meter_grants (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            meter TEXT NOT NULL,
            amount REAL NOT NULL,
            granted_at TEXT NOT NULL,
            expires_at TEXT,
            revoked_at TEXT,
            reason TEXT,
            idempotency_key TEXT
        );
        CREATE INDEX meter_grants_user ON meter_grants(user_id, meter);
        CREATE UNIQUE INDEX meter_grants_idempotency ON meter_grants(user_id, idempotency_key)
            WHERE idempotency_key IS NOT NULL;
        """

    /// The webhook outbox: one row per event and subscribing endpoint, written
    /// in the transaction of the change. Not tied to a user: an event about a
    /// deleted user still goes out. Deliveries go out per endpoint and user in
    /// `created_at`, then `id`, order.
    static let v6 = """
        CREATE TABLE webhook_outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            event_id TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            type TEXT NOT NULL,
            user_id TEXT NOT NULL,
            created_at TEXT NOT NULL,
            scope TEXT NOT NULL DEFAULT '',
            payload TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'held', 'delivered')),
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            next_attempt_at TEXT,
            delivered_at TEXT,
            UNIQUE (event_id, endpoint)
        );
        CREATE INDEX webhook_outbox_status ON webhook_outbox (status, created_at, id);
        CREATE INDEX webhook_outbox_user ON webhook_outbox (user_id, created_at, id);
        """

    /// Guest sign-in buckets, one per client address (`guestmode serve
    /// --guests-per-hour`), in the store so every server sharing it shares
    /// the limit. The store's own: no backup carries them.
    static let v7 = """
        CREATE TABLE sign_in_buckets (
            address TEXT PRIMARY KEY NOT NULL,
            tokens REAL NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE INDEX sign_in_buckets_updated ON sign_in_buckets (updated_at);
        """

    /// What `report migrations` counts beyond a journal's final state: how
    /// many times a journal was resumed, and how many times each step failed
    /// (a failed step rolls back whole, so its failures are counted in a
    /// transaction of their own, with the journal's status).
    static let v8 = """
        ALTER TABLE migration_journals ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE migration_steps ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
        """

    /// The oldest pending delivery of an endpoint and user is found with one
    /// seek, however many deliveries the outbox has kept.
    static let v9 = """
        CREATE INDEX webhook_outbox_pending_pair ON webhook_outbox (user_id, endpoint, created_at, id)
            WHERE status = 'pending';
        """

    /// The trigger statements that add the NEW use to its day's and month's totals and take the
    /// OLD one from theirs: an insert adds, a delete takes, an update does both.
    private static let addUse = """
        INSERT INTO meter_totals (user_id, meter, span, bucket, millionths)
            VALUES (NEW.user_id, NEW.meter, 'day', substr(NEW.at, 1, 10),
                    max(0, CAST(round(NEW.amount * 1000000) AS INTEGER))),
                   (NEW.user_id, NEW.meter, 'month', substr(NEW.at, 1, 7),
                    max(0, CAST(round(NEW.amount * 1000000) AS INTEGER)))
            ON CONFLICT (user_id, meter, span, bucket) DO UPDATE SET millionths = millionths + excluded.millionths;
        """
    private static let removeUse = """
        UPDATE meter_totals SET millionths = millionths - max(0, CAST(round(OLD.amount * 1000000) AS INTEGER))
        WHERE user_id = OLD.user_id AND meter = OLD.meter
            AND ((span = 'day' AND bucket = substr(OLD.at, 1, 10)) OR (span = 'month' AND bucket = substr(OLD.at, 1, 7)));
        """

    /// Kept totals of the usage ledger, so a meter's usage in its period is
    /// read from one row, however many uses the period holds: per user,
    /// meter and UTC day (`span` 'day', `bucket` YYYY-MM-DD) and month
    /// ('month', YYYY-MM), the boundaries of every period a meter can have.
    /// Triggers keep them with every change to meter_usage, whoever makes it
    /// (a use, a merge, an import, a deletion), in the same transaction; the
    /// totals of an existing store are built here from its ledger. Amounts
    /// are millionths, as the ledger's REAL amounts are read.
    static let v10 = """
        CREATE TABLE meter_totals (
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            meter TEXT NOT NULL,
            span TEXT NOT NULL CHECK (span IN ('day', 'month')),
            bucket TEXT NOT NULL,
            millionths INTEGER NOT NULL,
            PRIMARY KEY (user_id, meter, span, bucket)
        ) WITHOUT ROWID;
        INSERT INTO meter_totals (user_id, meter, span, bucket, millionths)
            SELECT user_id, meter, 'day', substr(at, 1, 10), sum(max(0, CAST(round(amount * 1000000) AS INTEGER)))
            FROM meter_usage GROUP BY user_id, meter, substr(at, 1, 10);
        INSERT INTO meter_totals (user_id, meter, span, bucket, millionths)
            SELECT user_id, meter, 'month', substr(at, 1, 7), sum(max(0, CAST(round(amount * 1000000) AS INTEGER)))
            FROM meter_usage GROUP BY user_id, meter, substr(at, 1, 7);
        CREATE TRIGGER meter_totals_add AFTER INSERT ON meter_usage BEGIN
            \(addUse)
        END;
        CREATE TRIGGER meter_totals_remove AFTER DELETE ON meter_usage BEGIN
            \(removeUse)
        END;
        CREATE TRIGGER meter_totals_move AFTER UPDATE OF user_id, meter, amount, at ON meter_usage BEGIN
            \(removeUse)
            \(addUse)
        END;
        """

    /// `user find --email` and `GET /v1/users?email=` find the identities that carry an address by
    /// this index, whatever the case of its ASCII letters: the email an identity was linked with, or
    /// an `email` identity's subject when it carries none. Most identities carry none.
    static let v11 = """
        CREATE INDEX identities_email ON identities (lower(coalesce(email, subject)))
            WHERE email IS NOT NULL OR provider = 'email';
        """

    /// The keys `guestmode serve` signs access tokens with (ES256): the
    /// public key, and the private key sealed with a key the deployment's
    /// backup key derives (never in the clear). The newest key not retired
    /// signs; the others not retired still verify. The store's own: no
    /// backup carries them.
    static let v12 = """
        CREATE TABLE signing_keys (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kid TEXT NOT NULL UNIQUE,
            algorithm TEXT NOT NULL,
            public_key TEXT NOT NULL,
            sealed_private_key TEXT NOT NULL,
            sealed_by TEXT NOT NULL,
            created_at TEXT NOT NULL,
            retired_at TEXT
        );
        """

    /// Plans a store sold (`GuestMode.applyStorePlanChange`): per store and
    /// original transaction, whose subscription it is, its plan, the newest
    /// signed date applied (an older notification never undoes a newer one)
    /// and the grant it made (what `plan status` names as the plan's origin);
    /// and every store event applied, once each. A merge moves the
    /// subscriptions with the plans; deleting a user deletes them.
    static let v13 = """
        CREATE TABLE store_purchases (
            source TEXT NOT NULL,
            original_transaction_id TEXT NOT NULL,
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            plan TEXT NOT NULL,
            signed_at TEXT NOT NULL,
            transaction_id TEXT NOT NULL,
            environment TEXT NOT NULL,
            granted_at TEXT,
            PRIMARY KEY (source, original_transaction_id)
        );
        CREATE INDEX store_purchases_user ON store_purchases (user_id);
        CREATE TABLE store_events (
            source TEXT NOT NULL,
            event_id TEXT NOT NULL,
            original_transaction_id TEXT NOT NULL,
            outcome TEXT NOT NULL,
            applied_at TEXT NOT NULL,
            PRIMARY KEY (source, event_id)
        );
        """

    /// What each meter grant of a user has drawn, kept so a meter with
    /// grants is read without replaying the user's ledger (see
    /// GuestModeKit's MeterGrantDraws.swift): per user and meter, the digest
    /// of the inputs it was made from, the time of the latest use it covers,
    /// what the grants gave in that use's period (millionths) and what each
    /// grant gave (`id:millionths,…`). The engine writes it; these triggers
    /// delete it with any change to the ledger it covers, whoever makes it
    /// (a use, a merge, an import, a deletion), in the same transaction, so
    /// a row is never older than its ledger. Derived: no backup or copy
    /// carries it; a store without it (this migration, an import, a copy)
    /// replays the ledger until the next use rebuilds it.
    static let v14 = """
        CREATE TABLE meter_grant_draws (
            user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            meter TEXT NOT NULL,
            inputs TEXT NOT NULL,
            latest_use_at TEXT,
            drawn_in_period INTEGER NOT NULL,
            drawn TEXT NOT NULL,
            PRIMARY KEY (user_id, meter)
        ) WITHOUT ROWID;
        CREATE TRIGGER meter_grant_draws_add AFTER INSERT ON meter_usage BEGIN
            DELETE FROM meter_grant_draws WHERE user_id = NEW.user_id AND meter = NEW.meter;
        END;
        CREATE TRIGGER meter_grant_draws_remove AFTER DELETE ON meter_usage BEGIN
            DELETE FROM meter_grant_draws WHERE user_id = OLD.user_id AND meter = OLD.meter;
        END;
        CREATE TRIGGER meter_grant_draws_move AFTER UPDATE OF user_id, meter, amount, at ON meter_usage BEGIN
            DELETE FROM meter_grant_draws WHERE user_id = OLD.user_id AND meter = OLD.meter;
            DELETE FROM meter_grant_draws WHERE user_id = NEW.user_id AND meter = NEW.meter;
        END;
        """

    /// Marks a store that holds grants as owing the kept draws of every
    /// holder (`meta` key `meter_grant_draws_owed`, "" before the first).
    /// v14 added their table empty; only the engine can fill it (a row is
    /// the replay of the ledger under the bound profile), so it builds them
    /// as the end of the migration (GuestModeKit's MeterGrantDrawsBuild.swift)
    /// and removes the mark. A step of its own, not part of v14, which had
    /// shipped: a store an earlier build took to v14 gets the mark too. A
    /// mark already there (a build under way) is kept where it is.
    static let v15 = """
        INSERT INTO meta (key, value) SELECT 'meter_grant_draws_owed', ''
        WHERE EXISTS (SELECT 1 FROM meter_grants)
        ON CONFLICT (key) DO NOTHING;
        """
}
