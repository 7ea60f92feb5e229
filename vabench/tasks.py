"""The command ``python -m vabench.tasks [--robot NAME] [--track NAME]``; the tasks themselves live
in :mod:`vabench.envs.tasks`, this listing in :mod:`vabench.envs.cli.tasks`."""

from vabench.envs.cli.tasks import main

if __name__ == "__main__":
    import sys

    sys.exit(main())
