"""Running days from the command line: `dmf run | backfill | demo | ui` on the Dagster definitions."""
