"""`python -m streams` runs the `outcomes` command line."""

from streams.cli import main

main()
