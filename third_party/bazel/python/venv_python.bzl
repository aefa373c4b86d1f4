"""A Python toolchain that runs py_binary and py_test with the project's venv.

The interpreter is `.venv/bin/python` in the workspace (the venv that
`pip install -e ".[cpu,test]"` fills, with TensorFlow and Keras), or the
interpreter named by the HMKERAS_PYTHON environment variable. WORKSPACE
declares the repository and registers its toolchain:

    load("//third_party/bazel/python:venv_python.bzl", "venv_python")
    venv_python(name = "hmkeras_python")
    register_toolchains("@hmkeras_python//:toolchain")
"""

_BUILD = """\
load("@rules_python//python:defs.bzl", "py_runtime", "py_runtime_pair")

package(default_visibility = ["//visibility:public"])

py_runtime(
    name = "py3_runtime",
    interpreter_path = "{interpreter}",
    python_version = "PY3",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
"""

def _venv_python_impl(rctx):
    interpreter = rctx.os.environ.get("HMKERAS_PYTHON", "")
    if not interpreter:
        workspace = rctx.path(Label("@//:WORKSPACE")).dirname
        interpreter = "%s/.venv/bin/python" % workspace
    if not interpreter.startswith("/"):
        fail("HMKERAS_PYTHON must be an absolute path, got %r" % interpreter)
    if not rctx.path(interpreter).exists:
        fail(("no Python interpreter at %s: create the project's venv first " +
              "(python3 -m venv .venv && .venv/bin/pip install -e \".[cpu,test]\") " +
              "or set HMKERAS_PYTHON to an interpreter with TensorFlow") % interpreter)
    rctx.file("WORKSPACE", 'workspace(name = "%s")\n' % rctx.name)
    rctx.file("BUILD", _BUILD.format(interpreter = interpreter))

venv_python = repository_rule(
    implementation = _venv_python_impl,
    environ = ["HMKERAS_PYTHON"],
    local = True,
)
