"""Migration 5: each message of a thread stored once (adapters/postgres/message_rows.py),
and autovacuum settings for the tables whose rows churn.

A thread keeps its latest few checkpoints and deletes the older ones at every step, and a
run's row is updated at every heartbeat: these tables are small and rewritten all the
time, so the default trigger (20% of the table dead) comes late on a small table and
never on a large one's hot part. They are vacuumed after a fixed number of dead rows
instead, without the cost-based pauses. The official saver's tables are created by its
own setup, after our migrations: the same settings are applied to them there
(`SAVER_TUNING`, idempotent)."""

CHURN = (
    "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 200, autovacuum_vacuum_cost_delay = 0, "
    "toast.autovacuum_vacuum_scale_factor = 0, toast.autovacuum_vacuum_threshold = 200"
)
SAVER_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")

MIGRATION_MESSAGES = f"""
CREATE TABLE checkpoint_messages (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    digest BYTEA NOT NULL,
    seq BIGINT NOT NULL,
    message BYTEA NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, digest),
    UNIQUE (thread_id, checkpoint_ns, seq)
);
ALTER TABLE checkpoint_messages SET ({CHURN});
ALTER TABLE checkpoint_log SET ({CHURN});
ALTER TABLE runs SET ({CHURN});
ALTER TABLE processes SET ({CHURN})
"""

# the saver's tables not tuned yet (reloptions NULL): a started server alters nothing
UNTUNED = "SELECT relname FROM pg_class WHERE relname = ANY(%s) AND relkind = 'r' AND reloptions IS NULL"


def tuning(table: str) -> str:
    return f"ALTER TABLE {table} SET ({CHURN})"
