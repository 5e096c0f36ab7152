"""kaas: HEP reconstruction kernels, models and the inference client on numpy arrays."""
from ._kaas import (  # noqa: F401
    Client,
    DeadlineExceeded,
    Error,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
    Unavailable,
    Unimplemented,
    backends,
    knn,
)

__version__ = "0.5.0"
