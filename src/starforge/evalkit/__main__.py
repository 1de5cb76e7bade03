"""`python -m starforge.evalkit`: run the benchmark job (see `starforge.evalkit._main`)."""

import sys

from starforge.evalkit._main import main

sys.exit(main())
