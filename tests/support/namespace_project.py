"""A user's project whose own top-level packages are named like kafka-shim's folders: ``schemas``, ``protocol`` and
``authorizer`` (issue 16: installing kafka-shim must not collide with them). Used by
tests/shim/testing/test_plugin_namespace.py and, from a built wheel, by scripts/check-wheel.

    python tests/support/namespace_project.py DIR     # writes the project into DIR (stdlib only)

Its test imports the project's own modules and uses the ``kafka_shim`` fixture, which must also keep working: a
topic created through the fixture is seen by a Metadata request over the wire.
"""

from __future__ import annotations

import sys
from pathlib import Path

OWN_PACKAGES = ("schemas", "protocol", "authorizer")

TEST = '''
import asyncio

import authorizer
import protocol
import schemas


def test_own_modules_and_kafka_shim_together(kafka_shim):
    assert (schemas.OWNER, protocol.OWNER, authorizer.OWNER) == ("user-project",) * 3
    assert not hasattr(protocol, "messages")  # the user's module, not kafka_shim.protocol

    from kafka_shim.protocol.codes import ApiKey
    from kafka_shim.protocol.messages import MetadataRequest
    from kafka_shim.shim.client.wire import WireClient

    kafka_shim.create_topic("from-the-user")
    host, port = kafka_shim.bootstrap_servers.rsplit(":", 1)

    async def topics():
        client = await WireClient.connect(host, int(port), client_id="namespace-check")
        try:
            answer = await client.request(ApiKey.METADATA, 12, MetadataRequest(topics=None))
        finally:
            await client.close()
        return [t.name for t in answer.topics]

    assert "from-the-user" in asyncio.run(topics())
'''


def write_project(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in OWN_PACKAGES:
        package = directory / name
        package.mkdir(exist_ok=True)
        (package / "__init__.py").write_text('OWNER = "user-project"\n')
    (directory / "test_user_project.py").write_text(TEST)
    return directory


if __name__ == "__main__":
    print(write_project(Path(sys.argv[1])))
