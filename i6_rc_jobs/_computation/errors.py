"""Why a capture is refused."""


class NotCaptured(Exception):
    """The capture is not proven complete: the computation hash is not made (the code hash counts), for this
    reason."""
