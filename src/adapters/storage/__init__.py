"""What every storage backend shares and none owns: the message-reference format, row
mappers, wakeups, checkpoint keys. adapters.sqlite, adapters.postgres and adapters.memory
import from here, never from each other (an import-linter independence contract)."""
