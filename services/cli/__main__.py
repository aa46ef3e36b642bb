"""``python -m studroom.services.cli``: the ``studroom`` program (the supervisor starts
each service this way)."""

import sys

from .main import main

sys.exit(main())
