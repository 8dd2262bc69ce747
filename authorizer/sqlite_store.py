"""ACLs in a SQLite file: one transaction per batch, durable before the authorizer acknowledges it.

    store = open_acl_store(data_dir)        # MemoryStore if data_dir is None, else <data_dir>/kafka-shim-acls.db
    az = Authorizer(store=store)            # loads every ACL; create/delete write through store.apply
    store.close()

Start-up refuses, with AclStoreCorrupt naming the file and what to do, anything it cannot read
completely: garbage, a truncated file, a directory, a foreign or newer database, permission problems,
a row it cannot turn back into an AclBinding. It never starts with an empty ACL set in their place,
because an empty set under allow.everyone.if.no.acl.found would open every resource.

One broker per file: an exclusive flock on "<file>.lock" (which records the holder's pid) is held
from open to close; a second opener gets AclStoreLocked.
"""

from __future__ import annotations

import errno
import fcntl
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from kafka_shim.authorizer.model import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_shim.authorizer.store import AclStore, MemoryStore

ACL_DB_NAME = "kafka-shim-acls.db"

# PRAGMA application_id marks the file as ours ("KSAC"), so another program's SQLite file is refused, not adopted.
APPLICATION_ID = 0x4B534143
# PRAGMA user_version. Bump it when the schema changes and add a step to _MIGRATIONS that upgrades the previous version.
SCHEMA_VERSION = 1

_COLUMNS = ("resource_type", "pattern_type", "name", "principal", "host", "operation", "permission_type")

# A rowid table: load() returns ACLs in the order they were created, so a restarted broker lists them as before.
# The UNIQUE constraint (its index) makes INSERT OR IGNORE idempotent and serves the DELETE's equality lookup.
# The CHECKs keep SQLite's type affinity from storing something load() would misread (a STRICT table
# would need SQLite 3.37, and older libraries could then not even open the file to report it).
_SCHEMA = """
CREATE TABLE acls (
    resource_type   INTEGER NOT NULL CHECK (typeof(resource_type) = 'integer'),
    pattern_type    INTEGER NOT NULL CHECK (typeof(pattern_type) = 'integer'),
    name            TEXT    NOT NULL CHECK (typeof(name) = 'text'),
    principal       TEXT    NOT NULL CHECK (typeof(principal) = 'text'),
    host            TEXT    NOT NULL CHECK (typeof(host) = 'text'),
    operation       INTEGER NOT NULL CHECK (typeof(operation) = 'integer'),
    permission_type INTEGER NOT NULL CHECK (typeof(permission_type) = 'integer'),
    UNIQUE (resource_type, pattern_type, name, principal, host, operation, permission_type)
)
"""

_INSERT = f"INSERT OR IGNORE INTO acls ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
_DELETE = f"DELETE FROM acls WHERE {' AND '.join(f'{c} = ?' for c in _COLUMNS)}"
_SELECT = f"SELECT rowid, {', '.join(_COLUMNS)} FROM acls ORDER BY rowid"

# Upgrades from version v to v + 1, each run inside one transaction with user_version set after it.
_MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {}

_Row = tuple[int, int, str, str, str, int, int]

# SQLite result codes that mean "not allowed to open/write", as opposed to "the contents are bad".
_PERMISSION_ERRORS = frozenset({"SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_READONLY", "SQLITE_AUTH"})


class AclStoreCorrupt(RuntimeError):
    """The ACL store cannot be opened or read completely. The message names the file and what to do."""


class AclStoreLocked(RuntimeError):
    """Another live process (another broker) holds the ACL store."""


class AclStoreUnavailable(RuntimeError):
    """The store is closed, or an earlier commit failed so the file's state is unknown; restart to reload it."""


def _corrupt_advice(path: Path) -> str:
    return (f"kafka-shim will not start without its ACLs. Restore {path} from a backup, or stop the broker and move it "
            f"(with any {path.name}-wal and {path.name}-shm beside it) aside to start with no ACLs")


def _permission_advice(path: Path) -> str:
    return (f"make {path}, its -wal/-shm/.lock files and the directory {path.parent} readable and writable "
            f"by the user running kafka-shim")


def _row(binding: AclBinding) -> _Row:
    p, e = binding.pattern, binding.entry
    return (int(p.resource_type), int(p.pattern_type), p.name, e.principal, e.host, int(e.operation), int(e.permission_type))


def _fsync_dir(directory: Path) -> None:
    """Make a new or renamed directory entry durable (POSIX leaves that to an fsync of the directory)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SqliteAclStore:
    """An AclStore in one SQLite file (WAL mode, synchronous=FULL). See the module docstring."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.lock_path = Path(os.path.realpath(self.path) + ".lock")
        self._mutex = threading.Lock()  # one sqlite3 connection, used from whichever thread calls
        self._conn: sqlite3.Connection | None = None
        self._failed: str | None = None  # why apply() refuses after a commit whose outcome is unknown
        self._lock_fd = self._acquire_lock()
        try:
            if not os.path.lexists(self.path):
                self._create()
            self._conn = self._open()
        except BaseException:
            os.close(self._lock_fd)
            raise

    # -- the AclStore protocol ----------------------------------------------------------------
    def load(self) -> list[AclBinding]:
        """Every stored ACL in creation order. Raises AclStoreCorrupt (naming the file) rather than skip a row."""
        with self._mutex:
            conn = self._require_open()
            try:
                rows = conn.execute(_SELECT).fetchall()
            except sqlite3.Error as exc:
                raise AclStoreCorrupt(f"cannot read the ACLs in {self.path}: {exc}. {_corrupt_advice(self.path)}") from exc
        return self._bindings(rows)

    def apply(self, created: list[AclBinding], deleted: list[AclBinding]) -> None:
        """Delete, then insert, in one transaction that is on stable storage when this returns.

        Inserting a stored ACL or deleting a missing one is not an error. On any error nothing of the batch is
        applied and the error propagates; if the COMMIT itself failed (an I/O error: the batch may or may not be
        on disk) the store refuses further batches, so the authorizer's memory cannot drift from the file
        unnoticed — a restart reloads whatever the file holds.
        """
        if not created and not deleted:
            return
        with self._mutex:
            conn = self._require_open()
            if self._failed is not None:
                raise AclStoreUnavailable(f"ACL store {self.path} refuses changes after a failed commit ({self._failed}); "
                                          "restart the broker to reload the ACLs from the file")
            conn.execute("BEGIN IMMEDIATE")
            try:
                if deleted:
                    conn.executemany(_DELETE, map(_row, deleted))
                if created:
                    conn.executemany(_INSERT, map(_row, created))
            except BaseException:
                self._rollback(conn)
                raise
            try:
                conn.execute("COMMIT")
            except BaseException as exc:
                self._failed = f"{type(exc).__name__}: {exc}"
                self._rollback(conn)
                raise

    def close(self) -> None:
        """Close the file (checkpointing the WAL into it) and release the lock. Closing twice is harmless."""
        with self._mutex:
            conn, self._conn = self._conn, None
            fd, self._lock_fd = self._lock_fd, -1
            try:
                if conn is not None:
                    conn.close()
            finally:
                if fd >= 0:
                    os.close(fd)  # releases the flock

    def __enter__(self) -> SqliteAclStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteAclStore({str(self.path)!r})"

    # -- internals -----------------------------------------------------------------------------
    def _require_open(self) -> sqlite3.Connection:
        if self._conn is None:
            raise AclStoreUnavailable(f"ACL store {self.path} is closed")
        return self._conn

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        # SQLite may already have rolled back (after an I/O error, say); the caller's error is the one to report.
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def _acquire_lock(self) -> int:
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise AclStoreCorrupt(f"cannot open the lock file {self.lock_path} of ACL store {self.path}: {exc.strerror}; "
                                  f"{_permission_advice(self.path)}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = ""
            try:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            except OSError:
                pass
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                who = f"pid {holder}" if holder.isdigit() else "another process"
                raise AclStoreLocked(f"ACL store {self.path} is in use by {who} (it holds {self.lock_path}); two brokers must "
                                     "not share a data directory: stop the other broker or give this one its own "
                                     "data directory") from None
            raise AclStoreCorrupt(f"cannot lock {self.lock_path} for ACL store {self.path}: {exc.strerror}; "
                                  "put the data directory on a local file system that supports flock") from exc
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)  # for the message a second opener gets; not needed for safety
        except OSError:
            pass
        return fd

    def _create(self) -> None:
        """A new, empty store: built under a temporary name and renamed into place.

        So a file at self.path is always a complete, version-stamped store, and anything else found there
        (an empty file, a file without our schema) is damage to report, never a fresh store to initialize.
        """
        path = self.path
        wal = path.with_name(path.name + "-wal")
        if os.path.lexists(wal):
            # SQLite would replay that log into the new file.
            raise AclStoreCorrupt(f"ACL store {path} is missing but its write-ahead log {wal} is there; a log without its "
                                  f"database cannot be used: put {path} back beside it, or move {wal} aside too to start "
                                  "with no ACLs")
        tmp = path.with_name(path.name + ".init")
        try:
            for leftover in (tmp, tmp.with_name(tmp.name + "-journal")):  # from a start-up that crashed here
                if os.path.lexists(leftover):
                    os.unlink(leftover)
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                # Rollback-journal mode for this one transaction, synced at COMMIT; _open switches the file to WAL.
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(_SCHEMA)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("COMMIT")
            finally:
                conn.close()
            os.replace(tmp, path)
            _fsync_dir(path.parent)
        except (OSError, sqlite3.Error) as exc:
            raise AclStoreCorrupt(f"cannot create ACL store {path}: {exc}; make sure {path.parent} exists, is writable by "
                                  "the user running kafka-shim and has free space") from exc

    def _open(self) -> sqlite3.Connection:
        path = self.path
        if os.path.isdir(path):
            raise AclStoreCorrupt(f"ACL store {path} is a directory, not a database file. {_corrupt_advice(path)}")
        try:  # the OS's reason (permission, read-only file system, dangling link) is clearer than SQLite's CANTOPEN
            os.close(os.open(path, os.O_RDWR))
        except OSError as exc:
            raise AclStoreCorrupt(f"cannot open ACL store {path} for reading and writing: {exc.strerror}; "
                                  f"{_permission_advice(path)}") from exc
        if os.path.getsize(path) == 0:
            raise AclStoreCorrupt(f"ACL store {path} is empty (0 bytes), not a complete store (kafka-shim never leaves one "
                                  f"empty). {_corrupt_advice(path)}")
        try:
            # mode=rw: never create a file here; check_same_thread=False: self._mutex serializes use instead.
            conn = sqlite3.connect(f"{Path(os.path.abspath(path)).as_uri()}?mode=rw", uri=True,
                                   isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._open_error(exc) from exc
        try:
            self._check(conn)
            # WAL: a commit appends to <file>-wal and syncs once; readers (a backup, the sqlite3 shell) do not block
            # it. synchronous=FULL: that sync happens at every COMMIT, so an acknowledged batch survives kill -9 and
            # power loss as far as SQLite and the disk guarantee (NORMAL would sync only at checkpoints and could lose
            # the last acknowledged batches on power loss; kill -9 alone cannot lose them, the OS has the data).
            # fullfsync: on macOS fsync() does not flush the drive's cache, F_FULLFSYNC does; elsewhere a no-op.
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise AclStoreCorrupt(f"cannot put ACL store {path} in WAL mode (SQLite stays in {mode!r} mode); "
                                      "keep the data directory on a local file system")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA fullfsync = ON")
            self._migrate(conn)
            # Write probe: a store we can read but not write (read-only file, read-only mount) fails now, not at the
            # first CreateAcls. Rewrites user_version with its own value: one tiny synced commit.
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except AclStoreCorrupt:
            conn.close()
            raise
        except sqlite3.Error as exc:
            conn.close()
            raise self._open_error(exc) from exc
        return conn

    def _open_error(self, exc: sqlite3.Error) -> AclStoreCorrupt:
        name = getattr(exc, "sqlite_errorname", "")
        if any(name == code or name.startswith(code + "_") for code in _PERMISSION_ERRORS):
            return AclStoreCorrupt(f"cannot open ACL store {self.path}: {exc}; {_permission_advice(self.path)}")
        return AclStoreCorrupt(f"ACL store {self.path} is corrupt or unreadable ({exc}). {_corrupt_advice(self.path)}")

    def _check(self, conn: sqlite3.Connection) -> None:
        """Is this a complete store of a schema version we read? Raises AclStoreCorrupt otherwise."""
        path = self.path
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id != APPLICATION_ID:
            raise AclStoreCorrupt(f"{path} is a SQLite database but not a kafka-shim ACL store (application_id {app_id}). "
                                  f"{_corrupt_advice(path)}")
        if version > SCHEMA_VERSION:
            raise AclStoreCorrupt(f"ACL store {path} has schema version {version}, written by a newer kafka-shim (this one "
                                  f"reads versions up to {SCHEMA_VERSION}): run that newer kafka-shim, or restore a backup "
                                  "made by this version")
        if version < 1 or (version < SCHEMA_VERSION and any(v not in _MIGRATIONS for v in range(version, SCHEMA_VERSION))):
            raise AclStoreCorrupt(f"ACL store {path} has schema version {version}, which this kafka-shim cannot read or "
                                  f"upgrade. {_corrupt_advice(path)}")
        # integrity_check, not quick_check: it also verifies the UNIQUE index against the table, and a stale index
        # would make a DELETE miss its row. About 0.1 s per 100k ACLs.
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check(5)").fetchall()]
        if problems != ["ok"]:
            raise AclStoreCorrupt(f"ACL store {path} is corrupt (integrity check: {'; '.join(problems)}). "
                                  f"{_corrupt_advice(path)}")
        if version == SCHEMA_VERSION:
            columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(acls)").fetchall())
            if columns != _COLUMNS:
                raise AclStoreCorrupt(f"ACL store {path} has schema version {version} but its acls table has columns "
                                      f"{columns or 'none'}, not {_COLUMNS}. {_corrupt_advice(path)}")

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        while version < SCHEMA_VERSION:
            conn.execute("BEGIN IMMEDIATE")
            try:
                _MIGRATIONS[version](conn)
                conn.execute(f"PRAGMA user_version = {version + 1}")
                conn.execute("COMMIT")
            except BaseException:
                self._rollback(conn)
                raise
            version += 1

    def _bindings(self, rows: Iterable[tuple[int, int, int, str, str, str, int, int]]) -> list[AclBinding]:
        """Rows to bindings, sharing equal patterns and entries (many ACLs have the same pattern or the same entry)."""
        resource_types = {int(m): m for m in ResourceType}
        pattern_types = {int(m): m for m in PatternType}
        operations = {int(m): m for m in AclOperation}
        permissions = {int(m): m for m in AclPermissionType}
        patterns: dict[tuple[int, int, str], ResourcePattern] = {}
        entries: dict[tuple[str, str, int, int], AccessControlEntry] = {}
        out: list[AclBinding] = []
        for rowid, rtype, ptype, name, principal, host, op, perm in rows:
            try:
                pkey = (rtype, ptype, name)
                pattern = patterns.get(pkey)
                if pattern is None:
                    pattern = patterns[pkey] = ResourcePattern(resource_types[rtype], name, pattern_types[ptype])
                ekey = (principal, host, op, perm)
                entry = entries.get(ekey)
                if entry is None:
                    entry = entries[ekey] = AccessControlEntry(principal, host, operations[op], permissions[perm])
            except (KeyError, ValueError, TypeError) as exc:
                raise AclStoreCorrupt(f"ACL store {self.path} holds an ACL this kafka-shim cannot read (row {rowid}: "
                                      f"{(rtype, ptype, name, principal, host, op, perm)!r}: {type(exc).__name__} {exc}). "
                                      f"{_corrupt_advice(self.path)}") from exc
            out.append(AclBinding(pattern, entry))
        return out


def open_acl_store(data_dir: Path | None) -> AclStore:
    """The broker's ACL store: in memory without a data directory, else <data_dir>/kafka-shim-acls.db (made if missing)."""
    if data_dir is None:
        return MemoryStore()
    data_dir = Path(data_dir)
    missing = [d for d in (data_dir, *data_dir.parents) if not d.exists()]
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        for d in missing:  # new directories' entries, so the store's file is findable after a power loss
            _fsync_dir(d.parent)
    except OSError as exc:
        raise AclStoreCorrupt(f"cannot create the ACL data directory {data_dir}: {exc.strerror or exc}; "
                              "create it, writable by the user running kafka-shim, or choose another") from exc
    return SqliteAclStore(data_dir / ACL_DB_NAME)
