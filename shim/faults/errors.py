"""The one error of fault injection."""


class FaultError(ValueError):
    """A fault that cannot be applied; the message says what to write instead."""
