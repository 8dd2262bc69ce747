"""The SparkSession the audit runs on, with the settings this project found to work (shared/clients-spark-traces.md §1).

Loopback driver address (``SPARK_LOCAL_IP``), the workers' Python = this interpreter, no UI, few shuffle partitions
(audit tables are small next to the trace), Arrow for the Python exchange, timestamps as UTC microseconds in Parquet,
and the JVM flags that cut its start-up (C1 only, serial GC). Java 17 or 21 must be on PATH (scripts/ensure-java).

The driver's JVM also maps a class archive (Java's AppCDS) of the classes a Spark audit loads: starting Spark on a
2-core machine is mostly loading and verifying Spark's classes, and with the archive a session and its first job
took 10 s instead of 16 s here (``class_archive``). The first ``kafka-shim audit`` on Spark on a machine records it
as its JVM exits; every later audit maps it. ``SparkStart`` starts the JVM in a background thread, so it comes up
while this process reads the ACL sets and plans the work.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kafka_shim.authorizer.library_logging import get_logger

log = get_logger("kafka_shim.traces.audit")

JVM_FLAGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# Set to "off" to start Spark without the class archive (and never record one).
CLASS_ARCHIVE_ENV = "KAFKA_SHIM_SPARK_CLASS_ARCHIVE"
# The archive's own messages (a jar Java will not archive, an archive another JDK wrote) are not the user's business:
# the JVM goes on without the archive where it cannot use it.
_QUIET_ARCHIVE = "-Xlog:cds=off -Xlog:cds+dynamic=off"
# A JVM that records writes the archive as its process ends (~15 s on a 2-core machine); a hidden recording this
# old belongs to an audit that died before its JVM could, and its publisher waits no longer than this.
_STALE_RECORDING_SECONDS = 3600
_DYNAMIC_ARCHIVE_MAGIC = 0xF00BABA8  # the first four bytes of an archive -XX:ArchiveClassesAtExit wrote
_submit_args: str | None = None  # the PYSPARK_SUBMIT_ARGS this module set last (any other value is the user's)


def spark_conf(master: str, shuffle_partitions: int = 8) -> dict[str, str]:
    return {
        "spark.master": master,
        "spark.app.name": "kafka-shim-audit",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.extraJavaOptions": JVM_FLAGS,
        "spark.executor.extraJavaOptions": JVM_FLAGS,
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.executorEnv.PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }


def _java() -> Path | None:
    """The java that spark-submit runs: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return Path(found).resolve() if found and os.path.exists(found) else None


def class_archive() -> Path | None:
    """Where the class archive for this JDK and this Spark lives (whether or not it is there yet); None when off.

    The name holds a digest of the java binary and of Spark's jars (names, sizes, times), so another JDK or Spark
    release gets an archive of its own instead of one the JVM would refuse.
    """
    if os.environ.get(CLASS_ARCHIVE_ENV, "").strip().lower() in ("off", "false", "0", "no"):
        return None
    java = _java()
    if java is None:
        return None
    import pyspark

    digest = hashlib.sha256()
    jars = Path(pyspark.__file__).parent / "jars"
    for path in (java, *sorted(jars.glob("*.jar"))):
        st = path.stat()
        digest.update(f"{path}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafka-shim"
    if any(c.isspace() or c in "'\"" for c in str(cache)):
        return None  # the path goes into --driver-java-options, which splits at spaces
    return cache / f"spark-{pyspark.__version__}-classes-{digest.hexdigest()[:16]}.jsa"


def prepare_environment(record_archive: bool = False) -> Path | None:
    """Environment the JVM reads before it starts (the conf above is too late for the driver's own JVM flags).

    Maps the class archive when there is one; with ``record_archive`` and none yet, has the JVM record one at a
    hidden path as it exits, and returns that path (``SparkStart.finish`` has it moved into place). A
    PYSPARK_SUBMIT_ARGS set by the user is left as it is.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    global _submit_args
    if os.environ.get("PYSPARK_SUBMIT_ARGS", _submit_args) != _submit_args:
        return None
    flags, recording = JVM_FLAGS, None
    archive = class_archive()
    if archive is not None:
        _drop_stale_recordings(archive)
    if archive is not None and archive_usable(archive):
        flags += f" -XX:SharedArchiveFile={archive} {_QUIET_ARCHIVE}"
    elif archive is not None and record_archive:
        try:
            archive.parent.mkdir(parents=True, exist_ok=True)
            writable = os.access(archive.parent, os.W_OK)
        except OSError as exc:
            writable = False
            log.debug("spark_class_archive_not_recorded", path=str(archive), error=str(exc))
        if writable:
            recording = archive.with_name(f".{archive.name}.{os.getpid()}.tmp")
            flags += f" -XX:ArchiveClassesAtExit={recording} {_QUIET_ARCHIVE}"
    _submit_args = os.environ["PYSPARK_SUBMIT_ARGS"] = f"--driver-java-options '{flags}' pyspark-shell"
    return recording


def archive_usable(archive: Path) -> bool:
    """Whether ``archive`` looks like a class archive Java wrote (one damaged on disk is recorded again)."""
    try:
        with archive.open("rb") as f:
            return int.from_bytes(f.read(4), sys.byteorder) == _DYNAMIC_ARCHIVE_MAGIC
    except OSError:
        return False


def _drop_stale_recordings(archive: Path) -> None:
    """Recordings an audit left when it ended before its JVM could write them whole (bad ACL sets, a kill)."""
    now = time.time()
    for path in archive.parent.glob(f".{archive.name}.*.tmp"):
        try:
            if now - path.stat().st_mtime > _STALE_RECORDING_SECONDS:
                path.unlink()
        except OSError:
            pass


def get_spark(master: str = "local[2]", shuffle_partitions: int = 8) -> Any:
    """A SparkSession for the audit (the running one when there is one: tests share a session)."""
    prepare_environment()
    return _session(master, shuffle_partitions)


def _session(master: str, shuffle_partitions: int) -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in spark_conf(master, shuffle_partitions).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class SparkStart:
    """A Spark session of the audit's own, started in a background thread (``session`` waits for it).

    With ``record_archive`` (``kafka-shim audit``, a process that ends with the audit) and no class archive yet, the
    JVM records one. When it does, ``finish`` leaves a small process behind that moves the archive into
    place once the JVM has exited and written it (it does so as this process ends; the audit does not wait for it),
    so that no audit ever maps half an archive. The JVM exits with this process, as a session from ``get_spark`` does.
    """

    def __init__(self, master: str, *, record_archive: bool = False) -> None:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession  # noqa: F401  (imported here: the thread then needs the GIL only briefly)

        self._session: Any = None
        self._error: BaseException | None = None
        # record only in a JVM this starts: a running one (another session of this process) already has its flags
        self._recording = prepare_environment(record_archive=record_archive and SparkContext._gateway is None)
        self._thread = threading.Thread(target=self._start, args=(master,), name="spark-start", daemon=True)
        self._thread.start()

    def _start(self, master: str) -> None:
        try:
            self._session = _session(master, 8)
        except BaseException as exc:  # handed to whoever waits for the session
            self._error = exc

    def session(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._session

    def finish(self) -> None:
        """Have the class archive this JVM records published once it is written (nothing when it records none)."""
        self._thread.join()
        recording, final = self._recording, class_archive()
        if self._session is None or recording is None or final is None:
            return
        from pyspark import SparkContext

        proc = getattr(SparkContext._gateway, "proc", None)
        if proc is None:
            return
        code = f"from {__name__} import publish_when_exited as p; p({proc.pid}, {str(recording)!r}, {str(final)!r})"
        subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
        log.info("spark_class_archive_recording", path=str(final),
                 detail="Spark's JVM records the classes it loaded as it exits, once for this JDK and Spark")


def publish_when_exited(jvm_pid: int, recording: str, final: str, timeout: float = _STALE_RECORDING_SECONDS) -> bool:
    """Wait for the JVM to exit, then move the archive it recorded into place if it is whole; else drop it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(jvm_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        return False  # still running: the hidden recording is dropped by a later audit once it is stale
    path = Path(recording)
    if path.is_file() and archive_usable(path):
        os.replace(path, final)
        return True
    path.unlink(missing_ok=True)
    return False
