"""Tests of the kafka-shim command line (a package, so its module names never clash with tests/differential's)."""
