"""Bzlmod (Bazel 7/8) entry to the venv toolchain of venv_python.bzl.

Bazel 4.2 never loads this file (it has no `module_extension`); modern
Bazel reaches it from a MODULE.bazel (see "Bazel" in README.md):

    venv = use_extension("//third_party/bazel/python:extensions.bzl", "venv_python_extension")
    use_repo(venv, "hmkeras_python")
    register_toolchains("@hmkeras_python//:toolchain")
"""

load(":venv_python.bzl", "venv_python")

def _venv_python_extension_impl(module_ctx):
    venv_python(name = "hmkeras_python")

venv_python_extension = module_extension(implementation = _venv_python_extension_impl)
