"""The two ways ``kafka-shim acls`` refuses, each printed as kafka-acls.sh prints it (see command.main)."""

from __future__ import annotations


class UsageError(Exception):
    """kafka-acls.sh's printUsageAndExit: a mistake in the flags."""


class CommandError(Exception):
    """kafka-acls.sh's "Error while executing ACL command: ..."."""
