"""`python -m local_stack` (what `scripts/demo` runs): see local_stack."""

import sys

from local_stack import main

sys.exit(main())
