"""The error fusion_alias raises for a program it refuses (see ``fusion_alias.refusals``)."""


class AliasInputError(RuntimeError):
    """A program eager PyTorch rejects (e.g. an in-place write into an expanded tensor)."""
