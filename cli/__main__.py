"""`python -m cli` runs the `outcomes` command line."""

from cli.main import main

main()
