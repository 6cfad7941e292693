"""`python -m dmf_assets …` = the `dmf` command."""

import sys

from dmf_assets.cli import main

sys.exit(main())
