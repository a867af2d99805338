"""`python -m tests.chaos --seed N --schedules K` (what `make chaos` runs)."""

import sys

from tests.chaos.cli import main

sys.exit(main())
