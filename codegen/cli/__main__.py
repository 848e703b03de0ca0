"""`python -m codegen.cli`: the same as the `hogen` console script."""

import sys

from codegen.cli.entry import main

if __name__ == "__main__":
    sys.exit(main())
