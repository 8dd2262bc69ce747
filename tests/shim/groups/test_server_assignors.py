"""ConsumerGroup.serverAssignors as Kafka 3.9 keeps it (a TimelineHashMap of counts) and the two ways it picks the
preferred assignor: ConsumerGroupDescribe streams the map, a heartbeat's target assignment a HashMap copy changed by
``compute`` (tests/differential/new_group_coordinator/test_group_probe_findings_2.py compares them with Kafka)."""

from __future__ import annotations

from kafka_shim.shim.groups.server_assignors import ServerAssignorCounts


def counts(*names: str) -> ServerAssignorCounts:
    table = ServerAssignorCounts()
    for name in names:
        table.update(None, name)
    return table


def test_no_choice_means_none() -> None:
    table = ServerAssignorCounts()
    assert table.preferred() is None
    assert table.preferred_with(None, None) is None
    table.update(None, None)
    assert table.counts == {}


def test_a_name_added_by_the_heartbeat_wins_a_tie_in_the_copy_only() -> None:
    table = counts("uniform")
    assert table.preferred_with(None, "range") == "range"  # linked at the head of the copy's bin
    table.update(None, "range")
    assert table.preferred() == "uniform"  # the TimelineHashMap has uniform in slot 0, range after


def test_a_member_counting_one_takes_its_name_back_to_the_head() -> None:
    table = counts("uniform", "range")
    assert table.preferred_with("range", "range") == "range"
    assert table.preferred_with("uniform", "uniform") == "uniform"
    assert table.preferred_with(None, None) == "uniform"
    assert table.preferred() == "uniform"


def test_a_name_counting_two_stays_in_place() -> None:
    table = counts("uniform", "uniform", "range", "range")
    assert table.preferred_with("range", "range") == "uniform"
    assert table.preferred_with(None, None) == "uniform"
    assert table.preferred_with("uniform", "range") == "range"  # 1-3


def test_counts_going_to_zero_and_back() -> None:
    table = counts("range")
    table.update("range", "uniform")
    assert table.counts == {"uniform": 1}
    assert table.preferred_with("uniform", "range") == "range"
    table.update("uniform", None)
    assert table.counts == {} and table.preferred() is None
    table.update(None, "range")
    table.update(None, "uniform")
    assert table.counts == {"range": 1, "uniform": 1}
    assert table.preferred() == "uniform"
    table.update("nothing", None)  # decValue of a missing name leaves the map alone
    assert table.counts == {"range": 1, "uniform": 1}
