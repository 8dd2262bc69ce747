"""report.html in Debian's headless chromium (scripts/ensure-chromium): the page's own JavaScript draws the charts,
offline, and every bar carries the number the Parquet results hold (read back here with pyarrow, counted anew)."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from structlog.testing import capture_logs

from kafka_shim.authorizer import (
    AclOperation,
    PatternType,
    ResourceType,
)
from kafka_shim.traces.audit.acl_export import write_least_privilege
from kafka_shim.traces.audit.least_privilege import least_privilege
from kafka_shim.traces.audit.report import write_report
from kafka_shim.traces.audit.tables import DECISIONS, FLIPS
from kafka_shim.traces.audit.usage import acl_usage
from tests.support.audit_actions import START, acl, build_actions

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs chromium: run scripts/ensure-chromium")
BROWSER_TIMEOUT = 180  # seconds for chromium to start, run the page and exit on a busy 2-core machine
T, G = ResourceType.TOPIC, ResourceType.GROUP
Op = AclOperation



# A hostile principal name: it must reach the page as text, never as markup or script.
EVIL = 'User:</script><img src=x onerror="document.title=1">'
A = [acl(T, "orders", "User:alice", Op.READ), acl(T, "pay.", "User:bob", Op.WRITE, PatternType.PREFIXED),
     acl(G, "billing", "User:alice", Op.READ), acl(T, "ghost", "User:carol", Op.READ),
     acl(T, "pay.secret", "User:bob", Op.WRITE, deny=True), acl(T, "orders", EVIL, Op.DESCRIBE)]
B = [acl(T, "orders", "User:alice", Op.READ)]  # the what-if drops the others' grants
QUESTIONS = [("User:alice", "10.0.0.1", Op.READ, T, "orders"), ("User:alice", "10.0.0.1", Op.READ, G, "billing"),
             ("User:bob", "10.0.0.2", Op.WRITE, T, "pay.eu"), ("User:bob", "10.0.0.2", Op.WRITE, T, "pay.secret"),
             (EVIL, "10.0.0.3", Op.DESCRIBE, T, "orders")]


def decisions_table() -> pa.Table:
    """Decision rows over 4 minutes, decided by the project's authorizer under A and B."""
    actions = build_actions(A, [(*q, 1) for q in QUESTIONS], what_if=B)
    outcome = {tuple(r[k] for k in ("principal", "operation", "resource_type", "resource_name")): r
               for r in actions.to_pylist()}
    rows = []
    for i in range(37):
        q = QUESTIONS[i % len(QUESTIONS)]
        r = outcome[(q[0], q[2].name, q[3].name, q[4])]
        rows.append({"request_index": i, "time": START + timedelta(seconds=7 * i), "principal": q[0], "host": q[1],
                     "api_key": 1 if q[3] == T else 11, "request_name": "Fetch" if q[3] == T else "JoinGroup",
                     "kind": "authorize", "operation": q[2].name, "resource_type": q[3].name, "resource_name": q[4],
                     "hard": True, "asked_a": True, "allowed_a": r["allowed_a"], "rule_a": r["rule_a"],
                     "acl_a": r["acl_a"], "asked_b": True, "allowed_b": r["allowed_b"], "rule_b": r["rule_b"],
                     "acl_b": r["acl_b"]})
    return pa.Table.from_pylist(rows, schema=DECISIONS), actions


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("audit-out")
    decisions, actions = decisions_table()
    (out / "decisions").mkdir()
    pq.write_table(decisions, out / "decisions" / "part-00000.parquet")
    flips = decisions.filter(pa.compute.not_equal(decisions.column("allowed_a"), decisions.column("allowed_b")))
    flips = flips.append_column("direction", pa.array(["allow_to_deny"] * flips.num_rows))
    severity = ["soft" if name == "JoinGroup" else "hard" for name in flips.column("request_name").to_pylist()]
    flips = flips.append_column("severity", pa.array(severity))
    flips = flips.append_column("effect", pa.array(["denied under B"] * flips.num_rows)).cast(FLIPS)
    (out / "flips").mkdir()
    pq.write_table(flips, out / "flips" / "part-00000.parquet")
    (out / "acl_usage").mkdir()
    pq.write_table(acl_usage(actions, A), out / "acl_usage" / "part-00000.parquet")
    write_least_privilege(least_privilege(actions, A), out)
    write_report(out)
    return out


def chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                           "--disable-dev-shm-usage", "--virtual-time-budget=10000", *args],
                          capture_output=True, text=True, timeout=BROWSER_TIMEOUT, check=False)


class Bars(HTMLParser):
    """The rendered DOM's charts: per chart id, its bars as (series, label, value), and other facts."""

    def __init__(self) -> None:
        super().__init__()
        self.chart: str | None = None
        self.depth = 0
        self.bars: dict[str, list[tuple[str, str, int]]] = {}
        self.svgs: set[str] = set()
        self.body: dict[str, str] = {}
        self.imgs = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if tag == "img":
            self.imgs += 1
        if tag == "div" and a.get("data-chart"):
            self.chart, self.depth = a["id"], 0
            self.bars[self.chart] = []
        elif self.chart and tag == "div":
            self.depth += 1
        if self.chart and tag == "svg":
            self.svgs.add(self.chart)
        if self.chart and tag == "rect" and "bar" in a.get("class", ""):
            self.bars[self.chart].append((a["data-series"], a["data-label"], int(a["data-value"])))

    def handle_endtag(self, tag: str) -> None:
        if self.chart and tag == "div":
            if self.depth == 0:
                self.chart = None
            else:
                self.depth -= 1


@pytest.fixture(scope="module")
def rendered(results: Path) -> Bars:
    run = chromium("--dump-dom", (results / "report.html").as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    parser = Bars()
    parser.feed(run.stdout)
    assert parser.body.get("data-rendered") == "true", "report.js did not finish: " + run.stderr[-2000:]
    return parser


def series(bars: list[tuple[str, str, int]]) -> dict[tuple[str, str], int]:
    return {(label, s): value for s, label, value in bars}


def test_the_page_is_self_contained(results: Path) -> None:
    page = (results / "report.html").read_text()
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page
    assert "<script src" not in page and "<link" not in page


def test_decisions_per_minute_match_the_decisions_parquet(results: Path, rendered: Bars) -> None:
    decisions = pq.read_table(results / "decisions")
    expected: Counter = Counter()
    for row in decisions.to_pylist():
        minute = row["time"].replace(second=0, microsecond=0).strftime("%Y-%m-%d %H:%M")
        expected[(minute, "allowed" if row["allowed_a"] else "denied")] += 1
    drawn = series(rendered.bars["chart-timeline"])
    assert "chart-timeline" in rendered.svgs
    assert {k: v for k, v in drawn.items() if v} == dict(expected)
    assert len({label for label, _ in drawn}) == 5  # 37 rows 7 s apart span five minutes


def test_flips_by_principal_and_api_match_the_flips_parquet(results: Path, rendered: Bars) -> None:
    flips = pq.read_table(results / "flips").to_pylist()
    assert flips, "the what-if must flip something for this test to mean anything"
    by_principal = Counter((f["principal"], f["severity"]) for f in flips)
    by_api = Counter((f["request_name"], f["severity"]) for f in flips)
    assert {k: v for k, v in series(rendered.bars["chart-flips-principal"]).items() if v} == dict(by_principal)
    assert {k: v for k, v in series(rendered.bars["chart-flips-api"]).items() if v} == dict(by_api)


def test_usage_charts_match_the_acl_usage_parquet(results: Path, rendered: Bars) -> None:
    usage = pq.read_table(results / "acl_usage").to_pylist()
    classes = Counter(u["usage_class"] for u in usage)
    assert series(rendered.bars["chart-usage-classes"]) == {(c, "value"): n for c, n in classes.items()}
    assert classes["detached"] == 1  # carol's ACL
    decided = {u["acl"]: u["decided_requests"] for u in usage if u["decided_requests"]}
    assert series(rendered.bars["chart-top-acls"]) == {(k, "value"): v for k, v in decided.items()}


def test_trace_names_stay_text(rendered: Bars) -> None:
    assert rendered.imgs == 0  # the hostile principal's <img> was never parsed as markup
    assert EVIL in {label for _s, label, _v in rendered.bars["chart-flips-principal"]}


def test_screenshot(results: Path, tmp_path: Path) -> None:
    shot = results / "report.png"
    run = chromium(f"--screenshot={shot}", "--window-size=1200,2600", (results / "report.html").as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.stat().st_size > 10_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_missing_and_unreadable_results_leave_a_page_that_says_so(tmp_path: Path) -> None:
    (tmp_path / "flips").mkdir()
    (tmp_path / "flips" / "part-00000.parquet").write_bytes(b"PAR1 cut short")
    # The library logger goes through structlog once anything configured it (as other tests do): capture there.
    with capture_logs() as events:
        page = write_report(tmp_path).read_text()
    assert "flips/part-00000.parquet: unreadable, left out" in page
    assert [e["event"] for e in events] == ["report_input_unreadable"]
    run = chromium("--dump-dom", (tmp_path / "report.html").as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    rendered = Bars()
    rendered.feed(run.stdout)
    assert rendered.body.get("data-rendered") == "true"
    assert not any(rendered.bars.values()) and not rendered.svgs
    assert "No decisions in the results." in run.stdout
