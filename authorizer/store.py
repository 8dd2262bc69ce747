"""Where ACLs live between restarts. The authorizer writes a whole batch before it acknowledges it."""

from __future__ import annotations

from typing import Protocol

from kafka_shim.authorizer.model import AclBinding


class AclStore(Protocol):
    def load(self) -> list[AclBinding]:
        """Every stored ACL. A store that cannot be read raises, naming its file; never an empty list."""
        ...

    def apply(self, created: list[AclBinding], deleted: list[AclBinding]) -> None:
        """Apply one batch atomically and durably: after it returns, the batch survives kill -9."""
        ...

    def close(self) -> None: ...


class MemoryStore:
    """No data directory: ACLs last as long as the process."""

    def __init__(self) -> None:
        self._acls: set[AclBinding] = set()

    def load(self) -> list[AclBinding]:
        return list(self._acls)

    def apply(self, created: list[AclBinding], deleted: list[AclBinding]) -> None:
        self._acls.difference_update(deleted)
        self._acls.update(created)

    def close(self) -> None:
        pass
