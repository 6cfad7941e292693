"""`dmf bench`: speed and size of DMF Watch measured on this machine (see bench/README.md)."""
