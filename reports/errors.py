"""Errors of the reports: each says what the reader should do."""

from __future__ import annotations

from outcomes.reducers.errors import OutcomesError


class ReportError(OutcomesError):
    """Root of the reports' errors."""


class RunNotFound(ReportError):
    """The source holds no account revision of the run.

    Readers: check the run id (`outcomes query "SELECT run_id FROM current_accounts"`),
    and that the replay output or the ClickHouse database is the one the run went to.
    """


class RevisionNotFound(ReportError):
    """`--revision N` names a revision the run does not have. Readers: pick one listed."""


class UnreadableSource(ReportError):
    """A replay output, events or bundle file cannot be read or is not what it should
    be. Readers: the message names the file and line; pass the right file."""


class BundleInvalid(ReportError):
    """An export bundle does not hold together (its problems are listed above the line).

    Readers: do not rely on it; export the run again from its source.
    """
