"""``python -m annotator.cli``: the ``golden`` command."""

import sys

from annotator.cli import main

sys.exit(main())
