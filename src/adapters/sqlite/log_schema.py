"""Migration 9: the checkpoint log's last messages in their own storage format
(adapters.storage.message_log, format 1) instead of the API's MessageDto. `->` keeps each
value as JSON, so text, ids and arguments move over byte for byte."""

MIGRATION_LOG_FORMAT = """
UPDATE checkpoint_log SET last_message = json_object(
    'v', 1,
    'role', last_message -> '$.role',
    'id', last_message -> '$.id',
    'text', last_message -> '$.content',
    'calls', last_message -> '$.toolCalls',
    'tool', last_message -> '$.name',
    'call', last_message -> '$.toolCallId',
    'status', last_message -> '$.status',
    'covers', last_message -> '$.covers'
) WHERE last_message IS NOT NULL AND json_valid(last_message) AND last_message -> '$.v' IS NULL
"""
