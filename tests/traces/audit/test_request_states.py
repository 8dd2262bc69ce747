"""The audit's column-wise broker flow (``request_states``) against the request-by-request one (``flow``)."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_shim.traces.audit.decide import flow, request_states
from kafka_shim.traces.audit.tables import GATE_AFTER, KIND_SHORTCUT

CHECKS = ["describe", "create", "alter"]
KINDS = ["authorize", KIND_SHORTCUT, "authorized_operations"]
MODES = ["authorize-or-throw", "filter-with-error", "silent-filter", "gate", "bitfield"]

# a gate: a GATE check's, or GATE_AFTER + a check whose answer on the same name comes first (Metadata's CREATE)
GATES = st.one_of(st.none(), st.sampled_from(CHECKS), st.sampled_from([GATE_AFTER + c for c in CHECKS]))
question = st.tuples(st.sampled_from(CHECKS), st.sampled_from(KINDS), st.sampled_from(MODES), GATES,
                     st.sampled_from([True, False, None]), st.sampled_from(["orders", "payments", None]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(question, min_size=1, max_size=8), min_size=1, max_size=12))
def test_the_columnwise_flow_gives_each_question_the_state_the_broker_gives_it(requests) -> None:
    rows = [(index * 7 + 3, seq, *q) for index, qs in enumerate(requests) for seq, q in enumerate(qs)]
    table = pa.table({
        "request_index": pa.array([r[0] for r in rows], pa.int64()),
        "seq": pa.array([r[1] for r in rows], pa.int32()),
        "check": [r[2] for r in rows], "kind": [r[3] for r in rows], "mode": [r[4] for r in rows],
        "gate": pa.array([r[5] for r in rows], pa.string()), "allowed_a": pa.array([r[6] for r in rows], pa.bool_()),
        "resource_name": pa.array([r[7] for r in rows], pa.string()),
    })
    expected = [state for qs in requests for state in flow(*(list(column) for column in zip(*qs, strict=True)))]
    assert request_states(table, "a").to_pylist() == expected
