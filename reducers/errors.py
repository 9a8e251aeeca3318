"""The project's root exception.

Every error that `outcomes` raises on purpose derives from :class:`OutcomesError`, so a
caller can catch the project's failures without catching programming errors.
"""


class OutcomesError(Exception):
    """Root of every error raised on purpose by outcomes.

    Operators: the message says what failed and what to do; a traceback is a bug.
    """


class InvalidEvent(OutcomesError):
    """An input event broke the contract (SPEC section 2); it becomes a dead letter.

    Operators: fix the producer that emitted it; the pipeline has already moved on.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
