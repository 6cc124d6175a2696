"""StageRunner's closed slots (`slot_open`): a slot whose worker is gone for good (a Ray replica
that died) hands the item it took to the other slots and ends; nothing is lost or done twice."""

from __future__ import annotations

import asyncio

from lvu.runs.stage_runner import StageRunner


def run_slots(items: list[int], delays: list[float], closes_after: list[int | None]):
    """Slot i sleeps delays[i] per item and closes after closes_after[i] items (None: never)."""
    done: dict[int, list[int]] = {i: [] for i in range(len(delays))}
    committed: list[int] = []

    def slot(i: int):
        async def consume(item: int) -> int:
            await asyncio.sleep(delays[i])
            done[i].append(item)
            return item * 10
        return consume

    def is_open(i: int):
        return lambda: closes_after[i] is None or len(done[i]) < closes_after[i]

    runner = StageRunner(consumers=[slot(i) for i in range(len(delays))],
                         slot_open=[is_open(i) for i in range(len(delays))],
                         commit=lambda item, result: committed.append(result))
    asyncio.run(asyncio.wait_for(runner.run([item] for item in items), 30))
    return done, committed


def test_a_closed_slot_hands_its_item_to_the_open_ones_even_after_the_end_marker():
    # Slot 0 answers item 1 and closes; by then item 3 and the end markers are queued, so the item
    # it takes next must still reach slot 1, which is busy with item 2 until later.
    done, committed = run_slots([1, 2, 3], delays=[0.05, 0.3], closes_after=[1, None])
    assert done[0] == [1] and sorted(done[1]) == [2, 3]
    assert sorted(committed) == [10, 20, 30]


def test_every_slot_closed_ends_the_run_with_the_rest_uncommitted():
    done, committed = run_slots(list(range(8)), delays=[0.01, 0.01], closes_after=[1, 2])
    assert (len(done[0]), len(done[1])) == (1, 2)
    assert sorted(committed) == sorted(10 * i for i in done[0] + done[1])  # each once; the rest left for a resume


def test_slots_that_stay_open_take_everything():
    done, committed = run_slots(list(range(20)), delays=[0.005, 0.005, 0.005], closes_after=[None, 3, None])
    assert len(done[1]) <= 3 and sum(map(len, done.values())) == 20
    assert sorted(committed) == [10 * i for i in range(20)]
