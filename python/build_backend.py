"""The SDK's build backend: setuptools, run on a copy of this folder in a temporary directory.

setuptools writes ``build/`` and ``mimic_sdk.egg-info/`` into the folder it builds, and pip builds
in place, so ``pip install ./python`` or ``pip wheel ./python`` would leave both in the repository.
Building from a copy keeps the sources clean; only editable installs, which must point at the
sources, run in place.
"""

import os
import shutil
import tempfile
from contextlib import contextmanager

from setuptools import build_meta as _setuptools

# Editable installs and the requirement queries need no copy.
from setuptools.build_meta import (  # noqa: F401
    build_editable,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
)

_LEFT_BEHIND = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "*.pyc", "tests")


@contextmanager
def _in_a_copy():
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="mimic-sdk-build-") as tmp:
        copy = os.path.join(tmp, "src")
        shutil.copytree(here, copy, ignore=_LEFT_BEHIND)
        os.chdir(copy)
        try:
            yield
        finally:
            os.chdir(here)


def _absolute(path):
    return None if path is None else os.path.abspath(path)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    metadata_directory = os.path.abspath(metadata_directory)
    with _in_a_copy():
        return _setuptools.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel_directory, metadata_directory = os.path.abspath(wheel_directory), _absolute(metadata_directory)
    with _in_a_copy():
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    sdist_directory = os.path.abspath(sdist_directory)
    with _in_a_copy():
        return _setuptools.build_sdist(sdist_directory, config_settings)
