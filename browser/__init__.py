"""The run browser (`outcomes ui`): runs, one run's account beside what its agent said,
the fleet's charts, live; a web app over the analysts' read-only ClickHouse path, mounted
on the HTTP door (common/door.py) like every server outcomes runs (docs/browser.md)."""
