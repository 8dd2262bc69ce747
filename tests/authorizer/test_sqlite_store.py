"""SqliteAclStore: round trips, atomic batches, restarts, refusal of damaged files, one opener at a time."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_shim.authorizer import (
    MATCH_ANY,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AclStoreError,
    Authorizer,
    MemoryStore,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka_shim.authorizer.sqlite_store import (
    ACL_DB_NAME,
    AclStoreCorrupt,
    AclStoreLocked,
    AclStoreUnavailable,
    SqliteAclStore,
    open_acl_store,
)

REPO = Path(__file__).resolve().parents[2]


def acl(name: str = "t", principal: str = "User:alice", *, rtype: ResourceType = ResourceType.TOPIC,
        ptype: PatternType = PatternType.LITERAL, host: str = "*", op: AclOperation = AclOperation.READ,
        perm: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, ptype), AccessControlEntry(principal, host, op, perm))


BAD = acl("\ud800")  # a lone surrogate cannot be encoded as UTF-8: binding it fails inside the transaction


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / ACL_DB_NAME


@pytest.fixture
def store(db: Path) -> Iterator[SqliteAclStore]:
    s = SqliteAclStore(db)
    yield s
    s.close()


def reopen(s: SqliteAclStore) -> SqliteAclStore:
    s.close()
    return SqliteAclStore(s.path)


# -- round trips -------------------------------------------------------------------------------------------------
ODD_STRINGS = [
    "", " ", "*", "User:*", "kafka-cluster", "ünïcødé", "日本語のトピック", "emoji-🦀-🔥", "עברית", "e\u0301", "\u200b",
    "a\x00b", "line\nbreak\ttab\r", "'; DROP TABLE acls; --", "%_%", '"quoted"', "\\back\\slash", "x" * 10_000,
]


def test_round_trip_every_enum_value(store: SqliteAclStore) -> None:
    bindings = [
        acl("r", "User:a", rtype=rt, ptype=pt, op=op, perm=perm)
        for rt in ResourceType if rt != ResourceType.ANY
        for pt in PatternType if pt not in (PatternType.ANY, PatternType.MATCH)
        for op in AclOperation if op != AclOperation.ANY
        for perm in AclPermissionType if perm != AclPermissionType.ANY
    ]
    store.apply(created=bindings, deleted=[])
    store = reopen(store)
    loaded = store.load()
    assert loaded == bindings  # same order (creation order), same values
    for a, b in zip(loaded, bindings, strict=True):  # enums come back as enum members, not plain ints
        assert type(a.pattern.resource_type) is ResourceType and a.pattern.resource_type is b.pattern.resource_type
        assert type(a.pattern.pattern_type) is PatternType and a.pattern.pattern_type is b.pattern.pattern_type
        assert type(a.entry.operation) is AclOperation and a.entry.operation is b.entry.operation
        assert type(a.entry.permission_type) is AclPermissionType and a.entry.permission_type is b.entry.permission_type
    store.close()


def test_round_trip_odd_strings(store: SqliteAclStore) -> None:
    # The store stores what it is given; whether a name or principal is valid is the Authorizer's business.
    rotated = ODD_STRINGS[3:] + ODD_STRINGS[:3]
    bindings = [acl(name=s, principal=p, host=h) for s, p, h in zip(ODD_STRINGS, reversed(ODD_STRINGS), rotated, strict=True)]
    bindings += [acl(name=s) for s in ODD_STRINGS] + [acl(principal=s) for s in ODD_STRINGS] + [acl(host=s) for s in ODD_STRINGS]
    bindings = list(dict.fromkeys(bindings))
    store.apply(created=bindings, deleted=[])
    store = reopen(store)
    assert store.load() == bindings
    # Deleting finds each by exact value (no LIKE wildcards, no case folding, no Unicode normalization).
    store.apply(created=[], deleted=bindings[::2])
    store = reopen(store)
    assert store.load() == bindings[1::2]
    store.close()


def test_strings_differing_only_in_case_or_normalization_are_distinct(store: SqliteAclStore) -> None:
    variants = [acl("Topic"), acl("topic"), acl("TOPIC"), acl("\u00e9"), acl("e\u0301")]
    store.apply(created=variants, deleted=[])
    store.apply(created=[], deleted=[acl("topic"), acl("e\u0301")])
    assert store.load() == [acl("Topic"), acl("TOPIC"), acl("\u00e9")]


def test_delete_then_create_in_one_batch(store: SqliteAclStore) -> None:
    a, b = acl("a"), acl("b")
    store.apply(created=[a], deleted=[])
    store.apply(created=[a, b], deleted=[a])  # deletes run first, as MemoryStore's difference_update then update
    assert set(store.load()) == {a, b}
    mem = MemoryStore()
    mem.apply([a], [])
    mem.apply([a, b], [a])
    assert set(mem.load()) == set(store.load())


def test_empty_batch_is_a_no_op(store: SqliteAclStore) -> None:
    store.apply(created=[], deleted=[])
    assert store.load() == []


# -- idempotence ---------------------------------------------------------------------------------------------------
def test_duplicates_are_idempotent(store: SqliteAclStore, db: Path) -> None:
    a, b = acl("a"), acl("b")
    store.apply(created=[a, a, b], deleted=[])
    store.apply(created=[a], deleted=[])
    assert store.load() == [a, b]
    store.apply(created=[], deleted=[acl("never-stored"), b, b])
    assert store.load() == [a]
    store.close()
    with sqlite3.connect(db) as raw:
        assert raw.execute("SELECT count(*) FROM acls").fetchone() == (1,)
        with pytest.raises(sqlite3.IntegrityError):  # the UNIQUE constraint over all seven columns
            raw.execute("INSERT INTO acls VALUES (2, 3, 'a', 'User:alice', '*', 3, 3)")
    raw.close()


# -- atomicity -----------------------------------------------------------------------------------------------------
def test_failed_create_batch_applies_nothing(store: SqliteAclStore) -> None:
    keep = [acl("keep-1"), acl("keep-2")]
    store.apply(created=keep, deleted=[])
    with pytest.raises(UnicodeEncodeError):
        store.apply(created=[acl("new-1"), acl("new-2"), BAD, acl("new-3")], deleted=[keep[0]])
    assert store.load() == keep  # neither the delete nor the inserts before the failure landed
    store = reopen(store)
    assert store.load() == keep
    store.apply(created=[acl("after")], deleted=[])  # the store is still usable
    assert store.load() == [*keep, acl("after")]
    store.close()


def test_failed_delete_batch_applies_nothing(store: SqliteAclStore) -> None:
    keep = [acl(f"k{i}") for i in range(5)]
    store.apply(created=keep, deleted=[])
    with pytest.raises(UnicodeEncodeError):
        store.apply(created=[acl("new")], deleted=[keep[0], keep[1], BAD, keep[2]])
    store = reopen(store)
    assert store.load() == keep
    store.close()


class _FailingCommit:
    """Wraps a sqlite3.Connection; COMMIT fails as an fsync error would (outcome unknown)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)


def test_failed_commit_rolls_back_and_refuses_further_batches(store: SqliteAclStore) -> None:
    store.apply(created=[acl("before")], deleted=[])
    real = store._conn
    assert real is not None
    store._conn = _FailingCommit(real)  # type: ignore[assignment]
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        store.apply(created=[acl("x")], deleted=[])
    assert not real.in_transaction
    store._conn = real
    with pytest.raises(AclStoreUnavailable, match="restart"):
        store.apply(created=[acl("y")], deleted=[])
    store = reopen(store)  # a restart reloads what the file holds and accepts changes again
    assert store.load() == [acl("before")]
    store.apply(created=[acl("y")], deleted=[])
    store.close()


def test_closed_store_refuses(db: Path) -> None:
    s = SqliteAclStore(db)
    s.close()
    s.close()  # twice is harmless
    with pytest.raises(AclStoreUnavailable, match="closed"):
        s.apply(created=[acl()], deleted=[])
    with pytest.raises(AclStoreUnavailable, match="closed"):
        s.load()


def test_concurrent_applies_from_threads(store: SqliteAclStore) -> None:
    def work(t: int) -> None:
        for i in range(25):
            store.apply(created=[acl(f"t{t}-{i}"), acl(f"t{t}-{i}-b")], deleted=[acl(f"t{t}-{i - 1}-b")])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    expected = {acl(f"t{t}-{i}") for t in range(4) for i in range(25)} | {acl(f"t{t}-24-b") for t in range(4)}
    assert set(store.load()) == expected


# -- restarts ------------------------------------------------------------------------------------------------------
def test_reopen_keeps_acls_in_creation_order(db: Path) -> None:
    with SqliteAclStore(db) as s:
        s.apply(created=[acl(f"n{i}") for i in range(50)], deleted=[])
        s.apply(created=[], deleted=[acl(f"n{i}") for i in range(0, 50, 3)])
        s.apply(created=[acl("n0")], deleted=[])  # re-created: now the newest
    with SqliteAclStore(db) as s:
        assert s.load() == [acl(f"n{i}") for i in range(50) if i % 3] + [acl("n0")]
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0  # close checkpoints the log


def test_open_acl_store(tmp_path: Path) -> None:
    assert isinstance(open_acl_store(None), MemoryStore)
    data_dir = tmp_path / "a" / "b"
    s = open_acl_store(data_dir)
    try:
        assert isinstance(s, SqliteAclStore)
        assert s.path == data_dir / ACL_DB_NAME and s.path.is_file()
        s.apply(created=[acl()], deleted=[])
    finally:
        s.close()
    s = open_acl_store(data_dir)
    try:
        assert s.load() == [acl()]
    finally:
        s.close()
    (tmp_path / "file").write_text("x")
    with pytest.raises(AclStoreCorrupt, match=str(tmp_path / "file")):
        open_acl_store(tmp_path / "file")


OPERATIONS = [op for op in AclOperation if op not in (AclOperation.ANY, AclOperation.UNKNOWN)]


def _decisions(az: Authorizer) -> list[object]:
    principals = ["User:alice", "User:bob", "User:carol", "User:*", "Group:ops"]
    hosts = ["10.0.0.1", "10.0.0.2", "*"]
    names = ["orders", "orders-eu", "payments", "logs-2024", "x", "kafka-cluster", "txn-1", "grp"]
    out: list[object] = []
    for p, h in itertools.product(principals, hosts):
        for rt in (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID):
            for name in names:
                out.append(az.authorized_operations(p, h, rt, name))
                out.extend(az.authorize(p, h, op, rt, name) for op in OPERATIONS)
            out.extend(az.authorize_by_resource_type(p, h, op, rt) for op in OPERATIONS)
    return out


def test_authorizer_end_to_end_restart(db: Path) -> None:
    store = SqliteAclStore(db)
    az = Authorizer(store=store)
    created = [
        acl("orders", "User:alice"),
        acl("orders", "User:alice", op=AclOperation.WRITE, host="10.0.0.1"),
        acl("orders-", "User:bob", ptype=PatternType.PREFIXED, op=AclOperation.ALL),
        acl("orders-eu", "User:bob", op=AclOperation.WRITE, perm=AclPermissionType.DENY),
        acl("*", "User:*", op=AclOperation.DESCRIBE),
        acl("logs-", "Group:ops", ptype=PatternType.PREFIXED, op=AclOperation.ALTER_CONFIGS),
        acl("grp", "User:carol", rtype=ResourceType.GROUP),
        acl("kafka-cluster", "User:alice", rtype=ResourceType.CLUSTER, op=AclOperation.IDEMPOTENT_WRITE),
        acl("txn-", "User:carol", rtype=ResourceType.TRANSACTIONAL_ID, ptype=PatternType.PREFIXED, op=AclOperation.WRITE),
        acl("payments", "User:carol", op=AclOperation.ALL, host="10.0.0.2"),
        acl("payments", "User:carol", op=AclOperation.READ, host="10.0.0.2", perm=AclPermissionType.DENY),
    ]
    results = az.create_acls([*created, acl("", "User:x"), created[0]])  # one invalid, one duplicate
    assert [r.error is None for r in results] == [True] * len(created) + [False, True]
    deleted = az.delete_acls([AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "payments", PatternType.LITERAL),
                                               AccessControlEntryFilter(None, None, AclOperation.READ, AclPermissionType.ANY))])
    assert deleted[0].deleted == [created[-1]]
    before = _decisions(az)
    described = set(az.describe_acls(MATCH_ANY))
    assert described == set(created[:-1])
    store.close()

    store = SqliteAclStore(db)  # a restart: a new Authorizer on the same file
    az2 = Authorizer(store=store)
    assert set(az2.describe_acls(MATCH_ANY)) == described
    assert _decisions(az2) == before
    assert az2.acls() and sorted(map(str, az2.acls())) == sorted(map(str, az.acls()))
    store.close()


def test_authorizer_store_failure_leaves_file_and_memory_unchanged(db: Path) -> None:
    store = SqliteAclStore(db)
    az = Authorizer(store=store)
    az.create_acls([acl("a")])
    results = az.create_acls([acl("b"), acl("\ud800"), acl("c")])  # valid to the Authorizer, unstorable
    assert all(isinstance(r.error, AclStoreError) for r in results)
    assert set(az.acls()) == {acl("a")}
    store.close()
    with SqliteAclStore(db) as s:
        assert s.load() == [acl("a")]


# -- damaged files -------------------------------------------------------------------------------------------------
def _make_store(db: Path, n: int = 300) -> None:
    with SqliteAclStore(db) as s:
        s.apply(created=[acl(f"topic-{i}", f"User:u{i % 7}") for i in range(n)], deleted=[])


def _assert_refused(db: Path, *phrases: str) -> str:
    with pytest.raises(AclStoreCorrupt) as info:
        s = SqliteAclStore(db)
        try:
            s.load()
        finally:
            s.close()
    message = str(info.value)
    assert str(db) in message
    for phrase in phrases:
        assert phrase in message, message
    return message


MOVE_ASIDE = "move it"


def test_garbage_file(db: Path) -> None:
    db.write_bytes(os.urandom(20_000))
    _assert_refused(db, MOVE_ASIDE, "backup")


def test_text_file(db: Path) -> None:
    db.write_text("this is not a database\n" * 100)
    _assert_refused(db, MOVE_ASIDE)


def test_empty_file(db: Path) -> None:
    db.write_bytes(b"")
    _assert_refused(db, "empty", MOVE_ASIDE)


@pytest.mark.parametrize("keep", [50, 100, 4096, 0.5, -4096, -1])
def test_truncated_file(db: Path, keep: float) -> None:
    _make_store(db, 3000)
    size = db.stat().st_size
    cut = int(size * keep) if isinstance(keep, float) else (keep if keep > 0 else size + keep)
    os.truncate(db, cut)
    _assert_refused(db, MOVE_ASIDE)


def test_overwritten_page(db: Path) -> None:
    _make_store(db, 3000)
    with db.open("r+b") as f:
        f.seek(db.stat().st_size // 2)
        f.write(os.urandom(4096))
    _assert_refused(db, MOVE_ASIDE)


def test_directory_in_its_place(db: Path) -> None:
    db.mkdir()
    _assert_refused(db, "directory", MOVE_ASIDE)


def test_newer_schema_version(db: Path) -> None:
    _make_store(db)
    with sqlite3.connect(db) as raw:
        raw.execute("PRAGMA user_version = 99")
    raw.close()
    _assert_refused(db, "schema version 99", "newer kafka-shim")


def test_zero_schema_version(db: Path) -> None:
    _make_store(db)
    with sqlite3.connect(db) as raw:
        raw.execute("PRAGMA user_version = 0")
    raw.close()
    _assert_refused(db, "schema version 0", MOVE_ASIDE)


def test_foreign_sqlite_database(db: Path) -> None:
    with sqlite3.connect(db) as raw:
        raw.execute("CREATE TABLE acls (x)")
        raw.execute("PRAGMA user_version = 1")
    raw.close()
    _assert_refused(db, "not a kafka-shim ACL store", MOVE_ASIDE)


def test_wrong_table_shape(db: Path) -> None:
    _make_store(db)
    with sqlite3.connect(db) as raw:
        raw.execute("ALTER TABLE acls RENAME TO old")
    raw.close()
    _assert_refused(db, "columns", MOVE_ASIDE)


@pytest.mark.parametrize("column,value", [("resource_type", 1), ("resource_type", 42), ("pattern_type", 2),
                                          ("operation", 1), ("operation", 99), ("permission_type", 1)])
def test_row_it_cannot_represent(db: Path, column: str, value: int) -> None:
    _make_store(db)
    with sqlite3.connect(db) as raw:
        raw.execute(f"UPDATE acls SET {column} = ? WHERE rowid = 7", (value,))
    raw.close()
    _assert_refused(db, "row 7", MOVE_ASIDE)
    with pytest.raises(AclStoreCorrupt, match="row 7"):  # the Authorizer does not start either
        Authorizer(store=SqliteAclStore(db))


def test_wal_without_its_database(db: Path) -> None:
    _make_store(db)
    Path(f"{db}-wal").write_bytes(b"\0" * 64)
    db.unlink()
    message = _assert_refused(db, "write-ahead log")
    assert f"{db}-wal" in message


def _permission_probe(db: Path, mode: int) -> tuple[str, str]:
    """Open db with the given file mode as an unprivileged user; (exception class name, message)."""
    os.chmod(db, mode)
    if os.geteuid() != 0:
        try:
            SqliteAclStore(db).close()
        except Exception as exc:
            return type(exc).__name__, str(exc)
        return "", ""
    # root bypasses file permissions: fork, drop to nobody, report through a pipe
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.close(read_fd)
            os.setgid(65534)
            os.setuid(65534)
            try:
                SqliteAclStore(db).close()
                result = "\n"
            except Exception as exc:
                result = f"{type(exc).__name__}\n{exc}"
            os.write(write_fd, result.encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        name, _, message = pipe.read().partition("\n")
    os.waitpid(pid, 0)
    return name, message


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the unprivileged user can use (pytest's tmp_path is private to root)."""
    d = Path(tempfile.mkdtemp(prefix="acl-perm-"))
    try:
        if os.geteuid() == 0:
            os.chown(d, 65534, 65534)
        yield d
    finally:
        shutil.rmtree(d)


@pytest.mark.parametrize("mode", [0o000, 0o200, 0o444])
def test_permission_denied(shared_dir: Path, mode: int) -> None:
    db = shared_dir / ACL_DB_NAME
    _make_store(db)
    if os.geteuid() == 0:
        os.chown(db, 65534, 65534)
        os.chown(f"{db}.lock", 65534, 65534)
    name, message = _permission_probe(db, mode)
    assert name == "AclStoreCorrupt", message
    assert str(db) in message and "Permission denied" in message and "writable" in message


# -- one opener ----------------------------------------------------------------------------------------------------
def test_second_opener_in_process_is_refused(db: Path) -> None:
    first = SqliteAclStore(db)
    with pytest.raises(AclStoreLocked) as info:
        SqliteAclStore(db)
    assert str(db) in str(info.value) and f"pid {os.getpid()}" in str(info.value)
    first.apply(created=[acl()], deleted=[])  # the refused opener did not disturb the holder
    first.close()
    with SqliteAclStore(db) as again:  # released on close
        assert again.load() == [acl()]


def test_second_opener_through_a_symlink_is_refused(db: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.db"
    with SqliteAclStore(db):
        link.symlink_to(db)
        with pytest.raises(AclStoreLocked):
            SqliteAclStore(link)


def test_other_process_holding_the_store(db: Path) -> None:
    _make_store(db, 3)
    code = textwrap.dedent(f"""
        import sys, time
        from kafka_shim.authorizer.sqlite_store import SqliteAclStore
        s = SqliteAclStore({str(db)!r})
        print("ready", flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        with pytest.raises(AclStoreLocked) as info:
            SqliteAclStore(db)
        assert str(db) in str(info.value) and f"pid {child.pid}" in str(info.value)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    with SqliteAclStore(db) as s:  # the kernel releases a killed holder's lock
        assert len(s.load()) == 3
