"""`python -m dmf_assets …` = the `dmf` command."""

import sys

try:
    from dmf_assets.cli import main
except KeyboardInterrupt:  # Ctrl-C in the command's first second, while it loads
    print("dmf: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
