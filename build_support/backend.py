"""The build backend: setuptools', with torch added to an isolated build's
requirements at the user's own release (torch_versions.py), so that
`pip install .` builds against the torch the library will run with."""
from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (every other hook as setuptools has it)

import torch_versions


def _requires():
    # setuptools' own hooks would run setup.py, which imports torch before it is there.
    return [torch_versions.build_requirement()]


def get_requires_for_build_wheel(config_settings=None):
    return _requires()


def get_requires_for_build_editable(config_settings=None):
    return _requires()


def get_requires_for_build_sdist(config_settings=None):
    return _requires()


__all__ = list(_setuptools.__all__)
