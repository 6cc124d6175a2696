"""User-facing errors: one line that names the file or sample and says what to do."""


class LvuError(Exception):
    """An error shown to the user as one line (no traceback)."""


class VideoError(LvuError):
    """A video cannot be opened or decoded."""


class SubtitleError(LvuError):
    """A subtitle file cannot be read."""


class DataError(LvuError):
    """A benchmark file or record is malformed."""
