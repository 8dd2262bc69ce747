"""Kafka's TimelineHashMap order (the new group coordinator's members) and HashSet<Integer> order, against what
Kafka 3.9's own classes printed for the same operations (server-common's TimelineHashMap, java.util.HashSet)."""

from __future__ import annotations

import pytest

from kafka_shim.shim.javacompat.hash_orders import int_hash_set_order
from kafka_shim.shim.javacompat.java_hash import java_string_hash
from kafka_shim.shim.javacompat.timeline_table import TimelineTableOrder, find_slot

# (operations: +id two puts, ~id one put, -id a put then a removal; the keys as TimelineHashMap.entrySet iterated
# them; a list of partitions; new ArrayList<>(new HashSet<>(that list))), printed by a Java program on Kafka 3.9's jars.
VECTORS = [
    ('+21tfq49NPifdoUlMc88lbQ -21tfq49NPifdoUlMc88lbQ +ecuehoMMccLNzGkpL0XmeA -ecuehoMMccLNzGkpL0XmeA +ecuehoMMccLNzGkpL0XmeA ~ecuehoMMccLNzGkpL0XmeA +c6tIdnc018HH_egF7JkQjQ +L6kUJcsAiFOdLGftoT_-eQ +mG6Gywq4q2eia39isYUvJw -ecuehoMMccLNzGkpL0XmeA -L6kUJcsAiFOdLGftoT_-eQ -mG6Gywq4q2eia39isYUvJw +MJ1reZZe2jLa5EVQggHivQ +c_d4qvb6Xbhlar1y-3EHNA +21tfq49NPifdoUlMc88lbQ', ['c6tIdnc018HH_egF7JkQjQ', '21tfq49NPifdoUlMc88lbQ', 'c_d4qvb6Xbhlar1y-3EHNA', 'MJ1reZZe2jLa5EVQggHivQ'], [2, 0, 27, 26, 6, 60, 48, 50, 53, 9, 25, 34], [0, 2, 34, 6, 9, 48, 50, 53, 25, 26, 27, 60]),
    ('+LXxQSHygc4bMCZoedwZMLA -LXxQSHygc4bMCZoedwZMLA +u11rSPw7Zvow0LGUgkUBZA -u11rSPw7Zvow0LGUgkUBZA +PxNH3iJ06hgeNLPx7D-_TQ +copvzzA6B7KPLfdgrpygiw +u11rSPw7Zvow0LGUgkUBZA +D1UslALN8q8Z3ivBtP8Arg +VSRU8U-rbz4WTxUTVj6b7Q +LXxQSHygc4bMCZoedwZMLA +pMqDsmtSsI0hhw8LxP9k3g +a7aj3mUVHEAd03e_Yj2Otw +wg7xZGj5GNj2zbL4A-DWgQ -u11rSPw7Zvow0LGUgkUBZA -D1UslALN8q8Z3ivBtP8Arg ~VSRU8U-rbz4WTxUTVj6b7Q -wg7xZGj5GNj2zbL4A-DWgQ', ['copvzzA6B7KPLfdgrpygiw', 'PxNH3iJ06hgeNLPx7D-_TQ', 'a7aj3mUVHEAd03e_Yj2Otw', 'VSRU8U-rbz4WTxUTVj6b7Q', 'LXxQSHygc4bMCZoedwZMLA', 'pMqDsmtSsI0hhw8LxP9k3g'], [31, 24, 20, 70, 25, 49, 61, 10, 53, 6, 13, 13], [70, 6, 10, 13, 49, 20, 53, 24, 25, 61, 31]),
    ('+-ihaDbhpE1zt4mwuLOkz4Q +hSOVdEselD59siTLmLIEEQ +ZECd27RfUcO9ZWk7PQhA-w +Nl_c1ke8dUgS-tgCnUL2cA ~hSOVdEselD59siTLmLIEEQ +56KMvdLfLCBruo0hQcmIbg -ZECd27RfUcO9ZWk7PQhA-w ~hSOVdEselD59siTLmLIEEQ ~-ihaDbhpE1zt4mwuLOkz4Q +erNmAjp4LrsgW8MIEZtP5Q --ihaDbhpE1zt4mwuLOkz4Q +QVNjY_ZyS6CDKcBbCegDGQ +namxTdo24NanTEYRjzKh8g +ZECd27RfUcO9ZWk7PQhA-w +v719FDQ39avqOgaD6tgdzQ -56KMvdLfLCBruo0hQcmIbg -erNmAjp4LrsgW8MIEZtP5Q +erNmAjp4LrsgW8MIEZtP5Q', ['v719FDQ39avqOgaD6tgdzQ', 'QVNjY_ZyS6CDKcBbCegDGQ', 'hSOVdEselD59siTLmLIEEQ', 'Nl_c1ke8dUgS-tgCnUL2cA', 'erNmAjp4LrsgW8MIEZtP5Q', 'namxTdo24NanTEYRjzKh8g', 'ZECd27RfUcO9ZWk7PQhA-w'], [60, 9, 53, 3, 63, 1, 48, 48, 1, 9, 10, 11], [1, 3, 9, 10, 11, 48, 53, 60, 63]),
    ('+QdgSzf5KXOAdlqxWo7AAQw +dm5pAHDGFQh1L3vZlLlT7Q ~QdgSzf5KXOAdlqxWo7AAQw ~dm5pAHDGFQh1L3vZlLlT7Q ~dm5pAHDGFQh1L3vZlLlT7Q +sbQ9B7wrdc3vKxrlY3CQPw +qP5iKp1QFeXHqozzf0vQUg +BbTXVnsf_GoWdZ7Lme3U0Q -dm5pAHDGFQh1L3vZlLlT7Q -BbTXVnsf_GoWdZ7Lme3U0Q +hMlV8RVywHOKj3rv1p9rFg +dm5pAHDGFQh1L3vZlLlT7Q +VISz27prx3xqjx3U4ToJlg -qP5iKp1QFeXHqozzf0vQUg -QdgSzf5KXOAdlqxWo7AAQw +BbTXVnsf_GoWdZ7Lme3U0Q -VISz27prx3xqjx3U4ToJlg', ['sbQ9B7wrdc3vKxrlY3CQPw', 'hMlV8RVywHOKj3rv1p9rFg', 'BbTXVnsf_GoWdZ7Lme3U0Q', 'dm5pAHDGFQh1L3vZlLlT7Q'], [48, 66, 63, 40, 57, 41, 9, 4, 35, 5, 35, 45], [66, 35, 4, 5, 40, 41, 9, 45, 48, 57, 63]),
]


@pytest.mark.parametrize(("operations", "kafka_order", "partitions", "kafka_set_order"), VECTORS)
def test_orders_match_what_kafka_printed(operations: str, kafka_order: list[str], partitions: list[int],
                                         kafka_set_order: list[int]) -> None:
    table: TimelineTableOrder[str] = TimelineTableOrder(java_string_hash)
    for operation in operations.split():
        key = operation[1:]
        table.put(key)
        if operation[0] == "+":
            table.put(key)
        elif operation[0] == "-":
            table.remove(key)
    assert table.order() == kafka_order
    assert int_hash_set_order(partitions) == kafka_set_order


def test_a_table_of_two_slots_picks_by_the_top_bit_of_the_fibonacci_product() -> None:
    # 1 * -7046029254386353131 as unsigned 64 bits starts with bit 1; 0 stays 0.
    assert (find_slot(1, 2), find_slot(0, 2)) == (1, 0)
    assert find_slot(-1, 4) == find_slot(0xFFFFFFFF, 4)  # signed or unsigned hash codes alike


def test_a_put_of_a_present_key_can_grow_the_table_and_change_the_order() -> None:
    """Two keys fill a two-slot table; a third put, even of a key already there, doubles it first."""
    keys = [k for k in (f"m{i}" for i in range(50)) if find_slot(java_string_hash(k), 2) == 0][:2]
    grown: TimelineTableOrder[str] = TimelineTableOrder(java_string_hash)
    kept: TimelineTableOrder[str] = TimelineTableOrder(java_string_hash)
    for table in (grown, kept):
        for key in keys:
            table.put(key)
    grown.put(keys[0])
    assert kept.order() == list(reversed(keys))  # one slot, iterated from its last entry
    assert len(grown._slots) == 4 and len(kept._slots) == 2
