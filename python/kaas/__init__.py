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
    conv2d,
    dense,
    knn,
    softmax,
)

__version__ = "0.5.0"


class Model:
    """A model-repository entry run in this process (kaas::client's direct mode)."""

    def __init__(self, client):
        self._client = client

    @staticmethod
    def load(repository, name, backend="auto", parameters=None):
        """`parameters` replace or add the entry's config parameters, e.g. {"precision": "bf16"}."""
        return Model(Client.direct(str(repository), name, backend, dict(parameters or {})))

    @property
    def signature(self):
        """{"inputs": [(name, datatype, shape)], "outputs": [...], "max_batch": n}"""
        return self._client.signature

    def run(self, inputs, outputs=None):
        """{input name: array} -> {output name: array}"""
        return self._client.run(inputs, outputs=outputs)

    def __repr__(self):
        return f"<kaas.Model {self._client.model}>"
