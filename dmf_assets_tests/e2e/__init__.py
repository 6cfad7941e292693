"""End-to-end tests: other processes and servers — the `dmf` CLI in a subprocess, loopback HTTP and SMTP servers, the Dagster daemon, PostgreSQL, LibreOffice, the browser."""
