"""The `outcomes` command line: every command, one error path, options generated from
the settings table."""
