"""How people read one run: the status block, the report page, the export bundle and its
validator (docs/reports.md). Pure: records in, text and bytes out; no I/O, no clock."""
