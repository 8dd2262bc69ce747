"""Packaging glue that pyproject.toml cannot express: the repository's top-level folders are installed under one
``kafka_shim`` namespace (``protocol/`` -> ``kafka_shim.protocol``), so the wheel claims no generic top-level
names. Packages are found by walking the folders, never listed by hand. Everything else is in pyproject.toml.
"""

from setuptools import find_namespace_packages, find_packages, setup

# The repository's code folders, each a top-level package in the checkout and kafka_shim.<name> once installed.
CODE = ("protocol", "authorizer", "shim", "traces")
# Data folders: vendored unchanged, so they carry no __init__.py and are found as namespace packages.
DATA = ("schemas",)
ROOTS = CODE + DATA

found = find_packages(include=[*CODE, *(f"{root}.*" for root in CODE)]) + find_namespace_packages(include=list(DATA))
missing = [root for root in ROOTS if root not in found]
if missing:
    raise SystemExit(f"setup.py: {', '.join(missing)} not found; every code folder needs an __init__.py")

# The namespace's own modules (only __main__.py: ``python -m kafka_shim``) live in this folder of the checkout.
NAMESPACE_OWN = "shim/tools/module_main"

setup(
    packages=["kafka_shim", *(f"kafka_shim.{name}" for name in found)],
    package_dir={"kafka_shim": NAMESPACE_OWN, **{f"kafka_shim.{root}": root for root in ROOTS}},
    # The generated typing stub of the message classes ships beside messages.py, for users' type checkers.
    package_data={"kafka_shim.schemas": ["*.json", "LICENSE", "NOTICE", "README.md"], "kafka_shim.protocol": ["messages.pyi"],
                  # the audit's HTML report template, CSS and JavaScript (traces/audit/report.py inlines them)
                  "kafka_shim.traces.audit": ["report_assets/*"]},
    include_package_data=False,
)
