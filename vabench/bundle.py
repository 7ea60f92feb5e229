"""``python -m vabench.bundle ...``: the command keeps its name; the code is :mod:`vabench.results.bundle`."""

import sys

from vabench.results.bundle import main

if __name__ == "__main__":
    sys.exit(main())
