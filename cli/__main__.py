"""`python -m cli` runs the `outcomes` command line."""

from outcomes.cli.main import main

main()
