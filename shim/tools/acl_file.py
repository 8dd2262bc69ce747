"""The ``--acls FILE`` parser moved to ``kafka_shim.authorizer.acl_file`` (pure, so the trace audit can use it too)."""

from kafka_shim.authorizer.acl_file import AclFileError, load_acl_file

__all__ = ["AclFileError", "load_acl_file"]
