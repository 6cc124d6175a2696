"""`python -m lvu.cli ...`: the `lvu` command."""

from lvu.cli.root import main

main()
