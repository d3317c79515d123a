"""``python -m fusion_alias.fuzz``."""

import sys

from fusion_alias.fuzz.cli import main

sys.exit(main())
