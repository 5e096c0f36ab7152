"""Fixtures: a default model repository and a kaas-server, both from the kaas installation the
module was built against (KAAS_PREFIX) or from a build tree (KAAS_BIN_DIR)."""
import os
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "server"))
from server_fixture import KaasServer  # noqa: E402


def kaas_binary(name):
    for variable, sub in (("KAAS_PREFIX", "bin"), ("KAAS_BIN_DIR", "")):
        if os.environ.get(variable):
            return pathlib.Path(os.environ[variable]) / sub / name
    pytest.skip("set KAAS_PREFIX (an install prefix) to run the tests that need kaas binaries")


@pytest.fixture(scope="session")
def repository(tmp_path_factory):
    path = tmp_path_factory.mktemp("kaas") / "repository"
    subprocess.run([kaas_binary("kaas-make-repository"), "--repository", path], check=True,
                   stdout=subprocess.DEVNULL)
    return path


@pytest.fixture(scope="session")
def server(repository):
    process = KaasServer(kaas_binary("kaas-server"), repository, backend="serial")
    yield process
    assert process.stop() == 0
