"""The fleet's scripts on a real redis-server against their Python model:
the same ARGV sequences (poison in the keys included), the same answers and
keys, every branch reached; then what each branch of the model does."""

from __future__ import annotations

from itertools import count

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from redis_server import RedisServer, require_binary

from backoff_iter.fleet import _budget_script, _count_script
from backoff_iter.fleet._budget_script import CREDIT, CRUMB, OWED, TRIMMED
from backoff_iter.fleet._ledger import (
    GONE,
    LEFT,
    LONGEST_HORIZON,
    REPAIRED,
    Scores,
    lua_number,
    whole,
)
from backoff_iter.fleet._member import Timing
from backoff_iter.fleet._shared import Ledger

names = (f"ledger-{i}" for i in count())
NOW = 1_700_000_000_000_000  # microseconds
TIMING = (100_000, 300_000, 1_200_000, 10**9)  # interval, stale, horizon; ttl (ms): never
LEVEL = ("level", 2_001, 10_000, 10_000, 0, 1)  # a TokenBucket of 10 tokens
WINDOW = ("window", 1_000, 750_000, 2, 3_000, 10**11)  # RetryBudget(window=1.5), reserve 3
QUOTA = ("level", 20_000, 50_000, 0, 1, 20_000)  # RetryQuota(capacity=50): owes
MIXED = ("level", 20_000, 50_000, 0, 1, 10_000)  # retry_cost=5, timeout_cost=10
THROTTLE = (500_000, 4, 10**12)  # a throttle's window: 4 slots of 0.5 s
BREAKER = (0.5, 4, 500_000, 4, 10**12)  # failure ratio, minimum throughput, the window


@pytest.fixture(scope="module")
def client():
    """One redis-server for the module."""
    server = RedisServer(require_binary())
    yield server.client()
    server.stop()


class Twins:
    """One part's five keys in Redis and in the model, run and compared side by side."""

    def __init__(self, client, script):
        self.client = client
        name = next(names)
        self.keys = [
            f"{{{name}}}:{key}" for key in ("counts", "members", "ledger", "demand", "gone")
        ]
        self.lua = client.register_script(
            getattr(_count_script, script, None) or _budget_script.BUDGET
        )
        self.model = Ledger()
        self.method = getattr(self.model, script.lower())
        self.numbered = script == "BUDGET"  # the model numbers a budget's slots
        self.seen = 0

    def run(self, *arguments):
        """Both answer the same ARGV alike, and leave the same keys."""
        got = tuple(int(x) for x in self.lua(keys=self.keys, args=[str(a) for a in arguments]))
        expected = tuple(self.method(*arguments))
        assert got == expected, (arguments, got, expected)
        assert self.state() == self.modelled()
        self.seen |= got[0]
        return got

    def state(self):
        counts, members, ledger, demand, gone = self.keys
        read = self.client
        return (
            _text(read.hgetall(counts)),
            {m.decode(): int(s) for m, s in read.zrange(members, 0, -1, withscores=True)},
            _text(read.hgetall(ledger)),
            {m.decode(): int(s) for m, s in read.zrange(demand, 0, -1, withscores=True)},
            {m.decode(): int(s) for m, s in read.zrange(gone, 0, -1, withscores=True)},
        )

    def modelled(self):
        model = self.model
        return (
            {str(k): str(v) for k, v in model.counts.items()},
            dict(model.members.score),
            {str(k): str(v) for k, v in model.ledger.items()},
            dict(model.demand.score),
            dict(model.gone.score),
        )

    def poison(self, what, member):
        """Write to both what a stray client could: a bad number, a ghost member, a key of another type, or no key."""
        counts, members, ledger, _, gone = self.keys
        model, client = self.model, self.client
        if what == "delete counts":
            client.delete(counts)
            model.counts = {}
        elif what == "string for counts":
            client.delete(counts)
            client.set(counts, "x")
            model.counts = "x"
        elif what == "string for ledger":
            client.delete(ledger)
            client.set(ledger, "x")
            model.ledger = "x"
        elif what == "hash for members":
            client.delete(members)
            client.hset(members, "x", "1")
            model.members = {"x": "1"}
        elif what == "ghost member":
            if type(model.members) is not Scores:  # a hash there now: gone first
                client.delete(members)
                model.members = Scores()
            client.zadd(members, {"ghost": NOW * 4})
            model.members.add("ghost", NOW * 4)
        elif what == "hash for gone":
            client.delete(gone)
            client.hset(gone, "x", "1")
            model.gone = {"x": "1"}
        elif what == "ghost gone":  # forgotten, its fields dropped only in ages
            if type(model.gone) is not Scores:
                client.delete(gone)
                model.gone = Scores()
            client.zadd(gone, {member: NOW * 4})
            model.gone.add(member, NOW * 4)
        else:  # (key, field, value)
            key, field, value = what
            name = {"counts": counts, "ledger": ledger}[key]
            field = field.replace("@", member)
            if client.type(name) not in (b"hash", b"none"):
                return
            client.hset(name, field, value)
            target = getattr(model, key)
            numbered = self.numbered and key == "counts" and field.lstrip("-").isdigit()
            target[int(field) if numbered else field] = value


def _text(mapping):
    return {k.decode(): v.decode() for k, v in mapping.items()}


BAD_NUMBERS = ["1e17", "-1", "abc", "", "1.5", "nan", "inf", "0x10", "9007199254740993"]


def poison(fields):
    """What a stray client may write between exchanges: bad numbers in *fields*
    (``@`` is a member's name), ghost members, keys of other types, no counts."""
    return st.one_of(
        st.sampled_from(
            [
                "delete counts",
                "string for counts",
                "string for ledger",
                "hash for members",
                "ghost member",
                "hash for gone",
                "ghost gone",
            ]
        ),
        st.tuples(
            st.sampled_from(["counts", "ledger"]),
            st.sampled_from(fields),
            st.sampled_from([*BAD_NUMBERS, "5", "open", "half", "closed"]),
        ),
        st.tuples(
            st.just("counts"),
            st.sampled_from(["2266666666", "2266666667", "9999999999", "-5"]),
            st.sampled_from([*BAD_NUMBERS, "5", "-70"]),
        ),
    )


STEPS = st.sampled_from([0, 1, 50_000, 100_000, 400_000, 1_300_000, 3_000_000])
ACTIONS = st.sampled_from(["answer", "answer", "answer", "lost", "leave"])


def budget_events():
    return st.lists(
        st.one_of(
            st.tuples(
                st.just("exchange"),
                st.integers(0, 4),  # member
                st.integers(-7_000, 7_000),  # its counts since last time
                STEPS,
                st.sampled_from([0, 0, 1_000, 9_000]),  # keep
                st.sampled_from([0, 0, 1, 3, 40]),  # want
                st.sampled_from(["heard", "heard", ""]),
                ACTIONS,
                st.sampled_from([0, 0, 10_000, 20_000]),  # need (the examples below: 0)
            ),
            st.tuples(
                st.just("poison"),
                st.integers(0, 4),
                poison(["level", "born", "junk", "leased", "a:@", "l:@", "t:@", "turn"]),
            ),
        ),
        min_size=8,
        max_size=40,
    )


@pytest.mark.long_run(measured=True)
def test_the_budget_script_and_its_model_answer_alike_and_reach_every_branch(client):
    """Random exchanges of buckets, windows and quotas (lost answers, members leaving and expiring, poison written between them): Redis and the model give the same answers and keys, and between them reach every branch of the script."""
    seen = 0

    # The rarest branches, reached whatever the examples drawn: a deposit about
    # to leave the window, counts rebuilt, a share too small for one retry,
    # counts rebuilt and then lowered.
    quiet = ("exchange", 0, 0, 400_000, 0, 0, "heard", "answer")
    leaving = [("exchange", 0, 5_000, 0, 0, 0, "heard", "answer"), quiet, quiet]
    leaving += [
        ("exchange", 0, 0, 100_000, 0, 0, "heard", "answer"),
        ("poison", 0, "delete counts"),
    ]
    leaving += [("exchange", 0, -9_000, 0, 0, 0, "heard", "answer")]
    wanting = [("exchange", m, 0, 1, 0, 1, "heard", "answer") for m in range(5)]
    lowered = [  # rebuilt from m0's view (8,000), then lowered by m1's (3,000)
        ("exchange", 0, -2_000, 0, 0, 0, "heard", "answer"),
        ("exchange", 1, -5_000, 1, 0, 0, "heard", "answer"),
        ("poison", 0, "delete counts"),
        ("exchange", 0, 0, 1, 0, 0, "heard", "answer"),
        ("exchange", 1, 0, 1, 0, 0, "heard", "answer"),
    ]
    # And what tells each check of a number read from Redis from its model's:
    # a fraction where a level was, a lease held beyond the leases counted, a
    # withdrawal in a slot about to leave the window (still counted).
    fraction = [
        ("exchange", 0, -3_000, 0, 0, 0, "heard", "answer"),
        ("poison", 0, ("counts", "level", "1.5")),
        ("exchange", 0, 0, 1, 0, 0, "heard", "answer"),
    ]
    overdrawn = [
        ("poison", 0, ("ledger", "l:@", "5")),
        ("poison", 0, ("ledger", "leased", "0")),
        ("exchange", 0, 0, 0, 0, 0, "heard", "answer"),
    ]
    # A quota spent to 2 retries' worth among 5 members: shares too small to
    # lend, so retries on credit, 2 in each 5 quiet exchanges; and spent
    # beyond empty: owed.
    credit = [("exchange", 0, -30_000, 0, 0, 0, "heard", "answer")]
    credit += [("exchange", m, 0, 1, 0, 0, "heard", "answer") for m in (1, 2, 3, 4, 0, 1, 2)]
    beyond = [("exchange", 0, -7_000, 1, 0, 0, "heard", "lost")] * 22  # owes, then 2 quotas
    # Room for 2 retries, held by m0 when m1 fails (so m1 waits unlent): then
    # 2 credits in every 4 quiet exchanges, the turn reaching 4 exactly.
    wanting_credit = [("exchange", 0, -30_000, 0, 0, 0, "heard", "answer")]
    wanting_credit += [("exchange", m, 0, 0, 0, 0, "heard", "answer") for m in (1, 2, 3, 4)]
    wanting_credit += [("exchange", 1, 0, 1, 0, 1, "heard", "answer")]
    wanting_credit += [("exchange", m, 0, 1, 0, 0, "heard", "answer") for m in (0, 2, 3, 4)] * 2
    # A crumb: room for 2 retries of 5 (20,000 halves); m1 holds 15,000 of
    # it, and the 5,000 left is lent to m0 no more.
    crumbs = [("exchange", 0, -40_000, 0, 0, 0, "heard", "answer")]
    crumbs += [("exchange", 1, 0, 1, 0, 1, "heard", "answer")]
    crumbs += [("exchange", 0, 0, 1, 5_000, 0, "heard", "answer")]
    crumbs += [("exchange", 1, 0, 1, 15_000, 1, "heard", "answer")]
    crumbs += [("exchange", 0, 0, 1, 0, 1, "heard", "answer")]
    # 15,000 free, m1 wanting a retry whose kind costs 20,000: not lent.
    needy = [("exchange", 0, -42_500, 0, 0, 0, "heard", "answer")]
    needy += [("exchange", 1, 0, 1, 0, 1, "heard", "answer")]
    needy += [("exchange", 0, 0, 1, 0, 0, "heard", "answer")]
    needy += [("exchange", 1, 0, 1, 0, 1, "heard", "answer", 20_000)]
    needy_exactly = [*needy[:3], ("exchange", 1, 0, 1, 0, 1, "heard", "answer", 15_000)]  # lent
    # A bucket spent beyond empty stops at 0, where a quota would owe.
    emptied = [("exchange", 0, -15_000, 0, 0, 0, "heard", "answer")]
    owed = [  # NOW is half a slot in; 950 ms later its slot leaves within an interval
        ("exchange", 0, -2_000, 0, 0, 0, "heard", "answer"),
        ("exchange", 0, 0, 950_000, 0, 0, "heard", "answer"),
    ]

    @settings(max_examples=120)
    @given(kind=st.sampled_from([LEVEL, WINDOW, QUOTA, MIXED]), events=budget_events())
    @example(kind=WINDOW, events=leaving)
    @example(kind=LEVEL, events=[*wanting, ("poison", 0, "delete counts"), wanting[0]])
    @example(kind=LEVEL, events=lowered)
    @example(kind=LEVEL, events=fraction)
    @example(kind=LEVEL, events=overdrawn)
    @example(kind=WINDOW, events=owed)
    @example(kind=QUOTA, events=credit)
    @example(kind=QUOTA, events=beyond)
    @example(kind=QUOTA, events=wanting_credit)
    @example(kind=MIXED, events=crumbs)
    @example(kind=MIXED, events=needy)
    @example(kind=MIXED, events=needy_exactly)
    @example(kind=LEVEL, events=emptied)
    def run(kind, events):
        nonlocal seen
        twins = Twins(client, "BUDGET")
        now, acked, sent, heard = NOW, {}, {}, {}
        for event in events:
            if event[0] == "poison":
                twins.poison(event[2], f"m{event[1]}")
                continue
            _, index, counts, step, keep, want, hear, action, *need = event
            now += step
            member = f"m{index}"
            cumulative = sent.get(member, 0) + counts
            leave = int(action == "leave")
            answer = twins.run(
                member,
                now,
                *TIMING,
                leave,
                acked.get(member, 0),
                cumulative,
                keep,
                want,
                heard.get(member, "") if hear else "",
                need[0] if need else 0,
                *kind,
            )
            sent[member] = cumulative
            if action == "answer":
                acked[member], heard[member] = cumulative, answer[1]
            elif action == "leave":
                for memory in (acked, sent, heard):
                    memory.pop(member, None)
        seen |= twins.seen

    run()
    missing = [name for name, bit in _budget_script.BITS.items() if not seen & bit]
    assert not missing, f"branches no example reached: {missing}"


def count_events():
    return st.lists(
        st.one_of(
            st.tuples(
                st.just("exchange"),
                st.integers(0, 3),  # member
                st.integers(0, 6),  # its first count since last time
                st.integers(0, 6),  # its second
                STEPS,
                st.sampled_from(["", "", "", "1", "0"]),  # a probe's outcome
                st.sampled_from([False, True]),  # the member is the probe's holder, if any
                st.integers(0, 1),  # asks
                st.sampled_from([0, 200_000, 2_000_000]),  # the break
                ACTIONS,
            ),
            st.tuples(
                st.just("poison"),
                st.integers(0, 3),
                poison(["f@", "s9", "junk", "leased", "a:@", "b:@", "state", "until", "probe"]),
            ),
        ),
        min_size=8,
        max_size=40,
    )


@pytest.mark.long_run(measured=True)
@pytest.mark.parametrize("script", ["THROTTLE", "BREAKER"])
def test_the_count_scripts_and_their_model_answer_alike_and_reach_every_branch(client, script):
    """Random exchanges of throttles and breakers (probes told by their holder or not, poison between them): Redis and the model give the same answers and keys, and reach every branch."""
    seen = 0

    # A breaker's rarest branches, reached whatever the examples drawn: opened,
    # probed, closed by the probe, and a state no exchange could have written.
    cycle = [
        ("exchange", 0, 0, 4, 0, "", False, 0, 200_000, "answer"),
        ("exchange", 0, 0, 0, 400_000, "", False, 1, 200_000, "answer"),
        ("exchange", 1, 1, 0, 1, "1", True, 0, 200_000, "answer"),
        ("poison", 0, ("ledger", "state", "abc")),
        ("exchange", 0, 0, 0, 1, "", False, 0, 200_000, "answer"),
    ]
    # Failures first, then successes that bring the calls to the minimum at a
    # ratio of one half: no failure in that exchange, so the circuit stays closed.
    late = [
        ("exchange", 0, 0, 2, 0, "", False, 0, 200_000, "answer"),
        ("exchange", 0, 2, 0, 1, "", False, 0, 200_000, "answer"),
    ]
    # The break over, a member that asks as it leaves is given no probe; the
    # next that asks is.
    parting = [
        cycle[0],
        ("exchange", 0, 0, 0, 400_000, "", False, 1, 200_000, "leave"),
        ("exchange", 1, 0, 0, 1, "", False, 1, 200_000, "answer"),
    ]

    @settings(max_examples=120)
    @given(events=count_events())
    @example(events=cycle)
    @example(events=late)
    @example(events=parting)
    def run(events):
        nonlocal seen
        twins = Twins(client, script)
        now, acked, sent, holder = NOW, {}, {}, None
        for event in events:
            if event[0] == "poison":
                twins.poison(event[2], f"m{event[1]}")
                continue
            _, index, first, second, step, outcome, held, asks, duration, action = event
            now += step
            member = holder if held and holder is not None else f"m{index}"
            before = sent.get(member, (0, 0))
            cumulative = (before[0] + first, before[1] + second)
            known = acked.get(member, (0, 0))
            leave = int(action == "leave")
            arguments = [
                member,
                now,
                *TIMING,
                leave,
                known[0],
                cumulative[0],
                known[1],
                cumulative[1],
            ]
            if script == "BREAKER":
                arguments += [outcome, asks, duration, *BREAKER]
            else:
                arguments += [*THROTTLE]
            answer = twins.run(*arguments)
            if script == "BREAKER" and answer[5]:
                holder = member
            elif holder == member:
                holder = None
            sent[member] = cumulative
            if action == "answer":
                acked[member] = cumulative
            elif action == "leave":
                acked.pop(member, None)
                sent.pop(member, None)
        seen |= twins.seen

    run()
    bits = dict(_count_script.BITS)
    if script == "THROTTLE":  # a throttle has no state to open, probe or break
        for name in ("OPENED", "PROBE", "CLOSED", "REOPENED", "LATE", "BROKEN"):
            del bits[name]
    missing = [name for name, bit in bits.items() if not seen & bit]
    assert not missing, f"branches no example reached: {missing}"


# -- The model's reading of what Redis holds ---------------------------------


def test_numbers_are_read_as_lua_reads_them():
    """Words, blanks and underscores are no number; hexadecimal and exponents are; None is false."""
    assert [lua_number(x) for x in ("5", " 5 ", "1e3", "0x10", "-0", b"7")] == [
        5.0,
        5.0,
        1e3,
        16.0,
        0.0,
        7.0,
    ]
    assert [lua_number(x) for x in ("abc", "", "1_000", None, 4.5)] == [None] * 5
    assert lua_number(7) == 7


def test_only_whole_numbers_within_their_bounds_count():
    """whole(): fractions, NaN, infinities and numbers out of bounds are None."""
    assert [whole(x, 0, 10) for x in ("3", 3, "10", "0")] == [3, 3, 10, 0]
    assert [whole(x, 0, 10) for x in ("11", -1, "1.5", "nan", "inf", "-inf", None)] == [None] * 7


def test_a_sorted_set_gives_back_the_members_below_and_above_a_score():
    """Scores: below() and above() remove what they return; a member moved keeps its newest score only."""
    scores = Scores()
    for member, score in (("a", 5), ("b", 1), ("c", 9), ("a", 7)):
        scores.add(member, score)
    assert scores.below(6) == ["b"]
    assert scores.above(8) == ["c"]
    assert dict(scores.score) == {"a": 7} and len(scores) == 1
    for turn in range(200):  # the max-heap is compacted, not grown without end
        scores.add("a", turn)
    assert len(scores._high) <= 2 * len(scores.score) + 64


def test_the_model_forgets_its_keys_after_their_ttl():
    """The model, as Redis, empties the keys (the gone one too) when no exchange renewed them for ttl milliseconds."""
    model = Ledger()
    arguments = (100_000, 300_000, 1_200_000, 500)  # ttl: half a second
    model.budget("a", NOW, *arguments, 0, 0, -6_000, 0, 0, "", 0, *LEVEL)
    model.gone.add("x", NOW + 2_000_000)  # forgotten lately
    assert (
        model.budget("a", NOW + 499_999, *arguments, 0, -6_000, -6_000, 0, 0, "", 0, *LEVEL)[1]
        == 4_000
    )
    assert model.budget("b", NOW + 999_999, *arguments, 0, 0, 0, 0, 0, "", 0, *LEVEL)[1] == 10_000
    assert not len(model.gone)


def test_common_bits_are_named_alike_in_every_script():
    """Each script's Lua declares the bits its Python names, with the same numbers."""
    for module in (_budget_script, _count_script):
        for name, bit in module.BITS.items():
            assert f"local {name} = {bit}\n" in (module.__dict__.get("BUDGET") or module.BREAKER)
    assert (REPAIRED, GONE, LEFT) == (1, 8, 16)


# -- What each branch of a budget's exchange does --------------------------------


def exchange(
    model,
    member,
    cumulative=0,
    *,
    at=NOW,
    acked=0,
    keep=0,
    want=0,
    heard="",
    need=0,
    leave=0,
    kind=LEVEL,
):
    """One budget exchange of the model: (mask, value, n, lease)."""
    return model.budget(
        member, at, *TIMING, leave, acked, cumulative, keep, want, heard, need, *kind
    )


def leases(model, members, at, **options):
    return [exchange(model, m, at=at, **options)[3] for m in members]


def test_members_wanting_nothing_settle_on_equal_shares_of_the_room():
    """Four idle members of a 10-token bucket (room 10,000 halves): the first alone takes all; once all are heard from, each holds a quarter."""
    model = Ledger()
    assert leases(model, "abcd", NOW) == [10_000, 0, 0, 0]  # no room is lent twice
    assert leases(model, "abcd", NOW + 1) == [2_500] * 4


def test_a_lease_is_held_until_its_member_next_exchanges():
    """What a member holds is not lent to another; its next exchange gives it back."""
    model = Ledger()
    assert leases(model, "ab", NOW) == [10_000, 0]
    assert exchange(model, "a", at=NOW + 1)[3] == 5_000
    assert exchange(model, "b", at=NOW + 2)[3] == 5_000


def test_what_a_member_may_still_spend_while_exchanging_stays_held():
    """keep: a member that may spend 8,000 more while its answer travels holds 8,000, its share being 5,000."""
    model = Ledger()
    leases(model, "ab", NOW)
    mask, _, _, lease = exchange(model, "a", at=NOW + 1, keep=8_000)
    assert lease == 5_000 and mask & _budget_script.HELD
    assert exchange(model, "b", at=NOW + 2)[3] == 2_000  # 8,000 stay held for a


def test_a_member_wanting_room_gets_a_retrys_worth_for_each_of_its_failures():
    """A member with 3 failures since its last exchange gets 3 retries' worth, its share among the wanting allowing it; an idle one a share of what one retry's worth for each wanting member leaves."""
    model = Ledger()
    leases(model, "abc", NOW)  # a alone took all; b and c nothing
    mask, _, _, lease = exchange(model, "a", at=NOW + 1, want=3)
    assert (lease, mask & _budget_script.NEED) == (3 * 2_001, _budget_script.NEED)
    mask, _, _, lease = exchange(model, "b", at=NOW + 2)
    assert (lease, mask & _budget_script.STANDBY) == ((10_000 - 2_001) // 3, _budget_script.STANDBY)


def test_a_member_wanting_more_than_its_share_gets_its_share():
    """Two members wanting 40 retries each share the room: half each, as far as leases leave it free."""
    model = Ledger()
    leases(model, "ab", NOW)  # a alone took all
    assert exchange(model, "b", at=NOW + 1, want=40)[3] == 0  # all of it, but a holds it
    mask, _, _, lease = exchange(model, "a", at=NOW + 2, want=40)
    assert (lease, mask & _budget_script.SHARE) == (5_000, _budget_script.SHARE)
    assert exchange(model, "b", at=NOW + 3, want=40)[3] == 5_000


def test_a_share_too_small_for_one_retry_goes_whole_to_members_with_failures():
    """Ten members, room for 5 retries: shares of half a retry go to no idle member; a member that failed gets one retry's worth, while the room lasts."""
    model = Ledger()
    leases(model, [f"m{i}" for i in range(10)], NOW)
    assert exchange(model, "m0", at=NOW + 1)[3] == 0  # 1,000 of 10,000 halves: of no use
    wanted = leases(model, [f"m{i}" for i in range(10)], NOW + 2, want=1)
    assert wanted == [2_001] * 4 + [1_996] + [0] * 5


def test_a_member_alone_keeps_its_whole_room_however_small():
    """One member: its lease is all the room, even less than a retry's worth (exactly the in-process budget)."""
    mask, _, _, lease = exchange(Ledger(), "a", -4_500)
    assert lease == 1_000 and mask & _budget_script.ALONE


def test_a_member_that_leaves_gives_its_lease_back_at_once():
    """leave=1: it is lent nothing, and the others share the whole room at their next exchange."""
    model = Ledger()
    leases(model, "ab", NOW)
    mask, _, _, lease = exchange(model, "a", at=NOW + 1, leave=1, want=5)
    assert lease == 0 and mask & LEFT
    assert exchange(model, "b", at=NOW + 2)[2:] == (1, 10_000)


def test_a_member_not_heard_from_within_its_horizon_is_forgotten():
    """After the horizon (1.2 s) the silent member's lease and count are gone; just before, not."""
    model = Ledger()
    leases(model, "ab", NOW)
    assert exchange(model, "b", at=NOW + 1_200_000)[2:] == (2, 0)  # at the horizon: still there
    mask, _, n, lease = exchange(model, "b", at=NOW + 1_200_001)
    assert (n, lease) == (1, 10_000) and mask & GONE


def test_counts_resent_after_a_lost_answer_land_once():
    """A member that never heard back resends its cumulative count from the same acked: applied once."""
    model = Ledger()
    assert exchange(model, "a", -3_000)[1] == 7_000
    assert exchange(model, "a", -3_000, at=NOW + 1)[1] == 7_000  # the answer was lost
    assert exchange(model, "a", -4_000, at=NOW + 2)[1] == 6_000
    # forgotten after a long silence: its acked count is what it last heard
    assert exchange(model, "a", -5_000, at=NOW + 5_000_000, acked=-4_000)[1] == 5_000


def test_counts_after_a_lost_answer_and_an_outage_longer_than_the_horizon_land_once(client):
    """A bucket member's 10 failures applied, their answer lost, then silent past its horizon: its next exchange from the same acked applies nothing again (Redis and the model alike)."""
    twins = Twins(client, "BUDGET")
    assert twins.run("a", NOW, *TIMING, 0, 0, 0, 0, 0, "", 0, *LEVEL)[1] == 10_000
    assert twins.run("a", NOW + 1, *TIMING, 0, 0, -3_000, 0, 0, "", 0, *LEVEL)[1] == 7_000
    later = NOW + 1 + 2_000_000  # the answer was lost; 2 s without Redis (horizon 1.2 s)
    mask, level, _, _ = twins.run("a", later, *TIMING, 0, 0, -3_000, 0, 0, 10_000, 0, *LEVEL)
    assert (level, mask & GONE) == (7_000, GONE)
    assert twins.run("a", later + 1, *TIMING, 0, -3_000, -4_000, 0, 0, 7_000, 0, *LEVEL)[1] == 6_000


@pytest.mark.parametrize("script", ["THROTTLE", "BREAKER"])
def test_a_count_member_forgotten_after_a_lost_answer_counts_once(client, script):
    """A throttle's or breaker's member whose answer to 3 and 2 counts was lost, silent past its horizon: resent from the same acked, they count once."""
    twins = Twins(client, script)
    extra = ["", 0, 200_000, *BREAKER] if script == "BREAKER" else [*THROTTLE]
    twins.run("a", NOW, *TIMING, 0, 0, 3, 0, 2, *extra)  # applied; its answer lost
    later = NOW + 1_300_000  # past the horizon (1.2 s), within the window (2 s)
    answer = twins.run("a", later, *TIMING, 0, 0, 3, 0, 2, *extra)
    totals = answer[1:3] if script == "THROTTLE" else answer[3:5]
    assert (sorted(totals), answer[0] & GONE) == ([2, 3], GONE)


SOON = (*TIMING[:3], 6_000)  # keys living 6 s: a member's fields kept 50 horizons (60 s)


@pytest.mark.parametrize(("ttl", "kept"), [(6_000, 60), (120_000, 120)])
def test_a_member_back_within_the_bound_counts_once_and_one_back_after_it_is_new(client, ttl, kept):
    """Two bucket members' answers lost (3 and 2 tokens' failures applied), both forgotten at their horizon (at 2 s) while b goes on: a, back within the bound (50 horizons, 60 s, or the keys' ttl if longer), applies nothing again; c, back past it, is new and its failures count again (Redis and the model alike)."""
    twins = Twins(client, "BUDGET")
    timing = (*TIMING[:3], ttl)

    def bucket(member, at, acked, cumulative, heard):
        return twins.run(member, at, *timing, 0, acked, cumulative, 0, 0, heard, 0, *LEVEL)

    assert bucket("a", NOW, 0, 0, "")[1] == 10_000
    assert bucket("c", NOW, 0, 0, "")[1] == 10_000
    assert bucket("a", NOW + 1, 0, -3_000, "")[1] == 7_000  # its answer lost
    assert bucket("c", NOW + 1, 0, -2_000, "")[1] == 5_000  # its answer lost
    seen = 0
    for second in range(1, kept + 12):  # b keeps the keys alive; a and c forgotten at 2 s
        seen |= bucket("b", NOW + second * 1_000_000, 0, 0, "")[0]
        if second == kept:
            back = NOW + 1 + (kept - 1) * 1_000_000
            assert bucket("a", back, 0, -3_000, 10_000)[1] == 5_000
    assert seen & GONE
    assert "a:c" not in twins.state()[2] and "a:a" in twins.state()[2]
    back = NOW + 1 + (kept + 10) * 1_000_000
    assert bucket("c", back, 0, -2_000, 10_000)[1] == 3_000  # counted as new


@pytest.mark.parametrize("what", ["hash for gone", "ghost gone"])
def test_a_gone_key_a_stray_client_wrote_is_repaired(client, what):
    """A hash in place of the gone key, or a member forgotten until ages ahead (beyond any bound): the next exchange repairs it and says so, and the member's fields go with its impossible entry (Redis and the model alike)."""
    twins = Twins(client, "BUDGET")
    twins.run("a", NOW, *TIMING, 0, 0, -1_000, 0, 0, "", 0, *LEVEL)
    twins.poison(what, "a")
    mask = twins.run("b", NOW + 1, *TIMING, 0, 0, 0, 0, 0, "", 0, *LEVEL)[0]
    assert mask & REPAIRED
    assert ("a:a" in twins.state()[2]) == (what == "hash for gone")


def test_a_gone_entry_a_microsecond_beyond_the_bound_is_repaired_and_one_at_it_kept(client):
    """Entries a stray client wrote to the gone key: one a microsecond beyond now plus the bound (the ttl here, 10**12 us) is impossible (dropped with the member's fields, and said), one at it is a member forgotten this very exchange (kept)."""
    twins = Twins(client, "BUDGET")
    for member in "ac":
        twins.run(member, NOW, *TIMING, 0, 0, -1_000, 0, 0, "", 0, *LEVEL)
    at = NOW + 1
    for member, score in (("a", at + 10**12 + 1), ("c", at + 10**12)):
        client.zadd(twins.keys[4], {member: score})
        twins.model.gone.add(member, score)
    mask = twins.run("b", at, *TIMING, 0, 0, 0, 0, 0, "", 0, *LEVEL)[0]
    assert mask & REPAIRED
    assert ("a:a" in twins.state()[2], "a:c" in twins.state()[2]) == (False, True)


def churn(run, generations, extra):
    """A process starts every second, exchanges once and crashes (never
    leaves), while one lives on: the ledger's fields after, and the largest
    number of members forgotten within the bound (60 s here) at any time."""
    for generation in range(generations):
        at = NOW + generation * 1_000_000
        run(f"pod-{generation}", at, *SOON, 0, 0, 1_000, 0, 0, *extra)
        run("long-lived", at + 500_000, *SOON, 0, 0, 0, 0, 0, *extra)


BUDGET_CHURN = ("", 0, *WINDOW)


def test_a_ledger_of_processes_that_come_and_go_stays_bounded():
    """2,000 processes crash one a second (the model): the ledger keeps about three fields for each member live or forgotten within 60 s, not the thousands that came and went."""
    model = Ledger()
    churn(model.budget, 2_000, BUDGET_CHURN)
    recent = len(model.members) + 61  # live, and forgotten within 60 s
    assert len(model.ledger) <= 3 * recent + 2, len(model.ledger)  # + leased, turn
    assert "a:pod-0" not in model.ledger and "a:pod-1990" in model.ledger


@pytest.mark.long_run(measured=True)
@pytest.mark.parametrize("script", ["BUDGET", "THROTTLE"])
def test_a_ledger_of_processes_that_come_and_go_stays_bounded_in_redis(client, script):
    """300 processes crash one a second, on a real redis-server beside the model: the same keys all along, and the ledger holds about three fields per member live or forgotten within 60 s."""
    twins = Twins(client, script)
    churn(twins.run, 300, BUDGET_CHURN if script == "BUDGET" else THROTTLE)
    members, ledger, gone = twins.state()[1], twins.state()[2], twins.state()[4]
    assert len(members) + len(gone) <= 63
    assert len(ledger) <= 3 * (len(members) + len(gone)) + 2, len(ledger)
    assert twins.seen & GONE


def test_an_open_breakers_keys_outlive_its_break_by_a_horizon(client):
    """Keys living 1 s: a circuit opened for a 10 s break keeps them, in Redis and the model, until the break's end plus the horizon (1.2 s); a member exchanging 5 s on hears it open."""
    twins = Twins(client, "BREAKER")
    timing = (*TIMING[:3], 1_000)  # ttl: 1 s

    def breaker(member, at, failures, duration=10_000_000):
        return twins.run(member, at, *timing, 0, 0, 0, 0, failures, "", 0, duration, *BREAKER)

    assert breaker("a", NOW, 4)[1] == 1  # opened
    ledger = twins.keys[2]
    assert 11_100 <= client.pttl(ledger) <= 11_200  # Redis's clock, not NOW: the break's end
    assert twins.model._expires == NOW + 11_200_000
    assert twins.model.breaker("b", NOW + 5_000_000, *timing, 0, 0, 0, 0, 0, "", 0, 1, *BREAKER)[
        :2
    ] == (twins.model._mask, 1)


def test_a_lease_of_a_member_lost_with_the_members_key_comes_back(client):
    """a, alone, is lent the whole room and dies; the members key is lost: b, the next to exchange, finds no member and takes back every lease held (Redis and the model alike)."""
    twins = Twins(client, "BUDGET")
    assert twins.run("a", NOW, *TIMING, 0, 0, 0, 0, 0, "", 0, *LEVEL)[3] == 10_000
    client.delete(twins.keys[1])
    twins.model.members = Scores()
    mask, _, n, lease = twins.run("b", NOW + 1, *TIMING, 0, 0, 0, 0, 0, "", 0, *LEVEL)
    assert (n, lease, mask & GONE) == (1, 10_000, GONE)
    assert twins.state()[2]["leased"] == "10000"


@pytest.mark.parametrize(
    ("after", "base", "value"),
    [(2_100_000, 6_000, 2_000), (500_000, 3_000, 8_000), (1_000_000, 3_000, 3_000)],
)
def test_a_window_counts_from_what_redis_applied_unless_it_applied_it_a_window_ago(
    client, after, base, value
):
    """A window's member whose 5,000 were applied (answer lost) sends 8,000 from where its window began: a window (1.5 s) later, Redis counts from there; within it, from the 5,000 it applied, once."""
    twins = Twins(client, "BUDGET")
    twins.run("a", NOW, *TIMING, 0, 0, 5_000, 0, 0, "", 0, *WINDOW)
    answer = twins.run("a", NOW + after, *TIMING, 0, base, 8_000, 0, 0, "", 0, *WINDOW)
    assert answer[1] == value
    assert twins.state()[2]["t:a"] == str(NOW + after)


def test_an_unreadable_time_of_a_windows_last_count_is_repaired(client):
    """A word where Redis keeps when it last applied a member's counts: flagged, and the member's count taken from what Redis applied."""
    twins = Twins(client, "BUDGET")
    twins.run("a", NOW, *TIMING, 0, 0, 5_000, 0, 0, "", 0, *WINDOW)
    twins.poison(("ledger", "t:@", "abc"), "a")
    mask, value, _, _ = twins.run("a", NOW + 1, *TIMING, 0, 0, 6_000, 0, 0, "", 0, *WINDOW)
    assert (mask & REPAIRED, value) == (REPAIRED, 6_000)


def test_a_lease_recorded_above_what_is_leased_in_all_is_dropped_not_taken_back(client):
    """a holds the whole room (10,000 leased); b's lease poisoned to 20,000: b's exchange flags it and takes back nothing, leased never going below 0."""
    twins = Twins(client, "BUDGET")
    twins.run("a", NOW, *TIMING, 0, 0, 0, 0, 0, "", 0, *LEVEL)
    twins.run("b", NOW + 1, *TIMING, 0, 0, 0, 0, 0, "", 0, *LEVEL)
    twins.poison(("ledger", "l:@", "20000"), "b")
    mask, _, n, lease = twins.run("b", NOW + 2, *TIMING, 0, 0, 0, 0, 0, "", 0, *LEVEL)
    assert (mask & REPAIRED, n, lease) == (REPAIRED, 2, 0)
    assert twins.state()[2]["leased"] == "10000"


@pytest.mark.parametrize("parameters", ["LEVEL", "WINDOW"])
def test_leases_summed_beyond_the_widest_room_are_counted_again(client, parameters):
    """'leased' poisoned to 2**52 (a whole number, so taken): no member was lent
    anything again, in any process, silently, and each exchange wrote it back.  The
    leases never add up past the widest room the part's parameters allow: beyond it
    they are counted again from each member's, flagged (Redis and the model alike)."""
    given = LEVEL if parameters == "LEVEL" else WINDOW
    twins = Twins(client, "BUDGET")
    twins.run("a", NOW, *TIMING, 0, 0, 0, 0, 0, "", 0, *given)
    twins.run("b", NOW + 1, *TIMING, 0, 0, 0, 0, 0, "", 0, *given)
    twins.poison(("ledger", "leased", str(2**52)), "a")
    mask, _, n, lease = twins.run("a", NOW + 2, *TIMING, 0, 0, 0, 0, 0, "", 0, *given)
    assert (mask & REPAIRED, n) == (REPAIRED, 2)
    assert lease > 0
    leases = sum(int(v) for k, v in twins.state()[2].items() if k.startswith("l:"))
    assert twins.state()[2]["leased"] == str(leases)


def test_the_level_stays_between_zero_and_its_cap():
    """Counts below 0 or above the cap stop there, and the script says so."""
    model = Ledger()
    mask, value, _, _ = exchange(model, "a", -50_000)
    assert value == 0 and mask & _budget_script.TRIMMED
    assert exchange(model, "a", 90_000, at=NOW + 1, acked=-50_000)[1] == 10_000


def test_a_quota_spent_beyond_empty_owes_it_until_refunds_pay_it_back():
    """A quota (owes=1) goes below 0 by what was spent beyond it, down to
    minus twice its capacity, and answers 0 meanwhile: refunds pay the debt
    first.  A bucket's level stops at 0 (above)."""
    model = Ledger()
    mask, value, _, lease = exchange(model, "a", -60_000, kind=QUOTA)
    assert (value, lease, model.counts["level"]) == (0, 0, -10_000) and mask & OWED
    assert not mask & TRIMMED
    mask, value, _, _ = exchange(model, "a", -55_000, at=NOW + 1, acked=-60_000, kind=QUOTA)
    assert (value, model.counts["level"]) == (0, -5_000) and mask & OWED
    mask, value, _, lease = exchange(model, "a", -45_000, at=NOW + 2, acked=-55_000, kind=QUOTA)
    assert (value, lease) == (5_000, 10_000) and not mask & OWED  # alone: all the room
    mask, value, _, _ = exchange(model, "a", -200_000, at=NOW + 3, acked=-45_000, kind=QUOTA)
    assert model.counts["level"] == -100_000 and mask & TRIMMED  # never owes more than 2 quotas


def test_shared_a_crumb_of_room_that_pays_for_no_retry_is_not_lent():
    """A quota whose retries cost 5 (timeouts 10): room for 2 retries (20,000
    halves).  b, quiet, may still spend 15,000: held for it; a, failing, is
    lent none of the 5,000 left, which pays for no retry.  Lent, such crumbs
    kept the last retry of a fleet's quota from every member: 5,000 + 2,500
    + 2,500 halves among three processes of the fleet tests, for 30 s (each
    kept its own: the members give them up, see test_fleet.py).  What a
    member may still spend is held as before, however small: it may have
    refunds of its own to add to it."""
    model = Ledger()
    assert exchange(model, "a", -40_000, kind=MIXED)[3] == 20_000  # alone: all the room
    assert exchange(model, "b", at=NOW + 1, want=1, kind=MIXED)[3] == 0  # a holds it
    quiet = {"acked": -40_000, "kind": MIXED}
    mask, _, _, lease = exchange(model, "a", -40_000, at=NOW + 2, keep=5_000, **quiet)
    assert (lease, model.ledger["l:a"], mask & CRUMB) == (0, 5_000, 0)  # held, not lent
    mask, _, _, lease = exchange(model, "b", at=NOW + 3, want=1, kind=MIXED)
    assert (lease, mask & CRUMB) == (15_000, 0)
    exchange(model, "a", -40_000, at=NOW + 4, **quiet)  # a gives its 5,000 back
    exchange(model, "b", at=NOW + 5, keep=15_000, kind=MIXED)
    assert model.ledger["l:b"] == 15_000
    mask, _, _, lease = exchange(model, "a", -40_000, at=NOW + 6, want=1, **quiet)
    assert lease == 0 and mask & CRUMB and "l:a" not in model.ledger  # 5,000 left: a crumb
    # (a bucket's retry is paid by any room at all: it lends 1,996 halves below)


def test_shared_no_lease_is_lent_that_pays_for_none_of_the_retries_the_member_asked_for():
    """A quota whose retries cost 5 and timeouts 10 (a lease of 20,000 halves
    pays for any), with 15,000 free: b, wanting a retry, is lent them when
    the cheapest retry it asked for lately cost 5 or 7.5 (need 10,000 or 15,000),
    and none when it cost a little more (need 15,001) or was a timeout (need
    20,000): lent, they would pay for none of its retries while other
    members could not add them up."""
    for need, lent in ((10_000, 15_000), (15_000, 15_000), (15_001, 0), (20_000, 0)):
        model = Ledger()
        assert exchange(model, "a", -42_500, kind=MIXED)[3] == 15_000  # alone: all the room
        assert exchange(model, "b", at=NOW + 1, want=1, kind=MIXED)[3] == 0  # a holds it
        assert exchange(model, "a", -42_500, at=NOW + 2, acked=-42_500, kind=MIXED)[3] == 0
        mask, _, _, lease = exchange(model, "b", at=NOW + 3, want=1, need=need, kind=MIXED)
        assert (lease, bool(mask & CRUMB)) == (lent, not lent)
        assert model.ledger.get("l:b", 0) == lent


def test_a_quota_too_small_to_lend_gives_quiet_members_a_retry_on_credit_in_turn():
    """Room for 1 retry among 5 quiet members (shares of a fifth of one): 2
    of every 5 quiet exchanges carry a retry on credit (twice the retries
    the room pays for), none a lease; a bucket, which does not owe, gives
    no credit."""
    for kind, credits in ((QUOTA, [2, 2, 2]), (("level", 20_000, 50_000, 50_000, 0, 1), [0, 0, 0])):
        model = Ledger()
        exchange(model, "m0", -40_000, kind=kind)  # alone: lent all the room
        leases(model, ["m1", "m2", "m3", "m4"], NOW, kind=kind)  # m0 holds it all: no credit
        for round_ in range(3):
            answers = [
                exchange(model, f"m{i}", at=NOW + 1 + round_, kind=kind, **spent)
                for i, spent in enumerate([{"acked": -40_000, "cumulative": -40_000}] + [{}] * 4)
            ]
            assert not any(lease for *_, lease in answers)
            assert sum(bool(mask & CREDIT) for mask, *_ in answers) == credits[round_]


def credits_given(model, rounds, members, spent):
    """How many quiet exchanges of *members* (``m0`` having spent *spent*), in
    *rounds*, carry a retry on credit; none may carry a lease."""
    given = 0
    for round_ in range(rounds):
        for member in members:
            counts = {"acked": spent, "cumulative": spent} if member == "m0" else {}
            mask, _, _, lease = exchange(model, member, at=NOW + 2 + round_, kind=QUOTA, **counts)
            assert lease == 0  # shares too small to lend
            given += bool(mask & CREDIT)
    return given


@pytest.mark.parametrize(
    ("m1", "given"),
    [
        ({"keep": QUOTA[1]}, 8),  # holds a retry's worth while its answer travels: 2 of 5
        # failed, and lent a retry's worth: 2 of every 4 quiet ones, and one
        # more for the turn m0's exchange left (4 of 5, before m1 failed)
        ({"want": 1}, 9),
    ],
)
def test_credit_comes_only_from_room_that_neither_leases_nor_wanting_members_hold(m1, given):
    """Room for 2 retries among 5 members: one holding a retry's worth (while
    its answer travels, or lent it for a failure) leaves credit for 2 in
    every 5 (or 4, the quiet ones) quiet exchanges, twice the one retry
    left; with room for 1 retry that a member which failed waits for (held
    elsewhere meanwhile), none."""
    model = Ledger()
    exchange(model, "m0", -30_000, kind=QUOTA)
    leases(model, ["m1", "m2", "m3", "m4"], NOW, kind=QUOTA)
    exchange(model, "m0", -30_000, acked=-30_000, at=NOW + 1, kind=QUOTA)
    assert exchange(model, "m1", at=NOW + 1, kind=QUOTA, **m1)[3] == m1.get("want", 0) * QUOTA[1]
    rounds = 5 if "keep" in m1 else 4
    assert credits_given(model, rounds, ["m0", "m2", "m3", "m4"], -30_000) == given

    model = Ledger()
    exchange(model, "m0", -40_000, kind=QUOTA)  # room for one retry, m0 alone holds it
    leases(model, ["m1", "m2", "m3"], NOW, kind=QUOTA)
    assert exchange(model, "m1", at=NOW + 1, want=1, kind=QUOTA)[3] == 0  # held by m0
    assert credits_given(model, 4, ["m0", "m2", "m3"], -40_000) == 0


def test_lost_counts_are_rebuilt_from_what_the_member_heard_never_from_full():
    """The counts gone (expired or deleted): a member that heard a level of 1,000 rebuilds them at 1,000 with its own counts since; one that heard nothing starts full."""
    model = Ledger()
    exchange(model, "a", -9_000)
    model.counts = {}
    mask, value, _, _ = exchange(model, "a", -9_500, at=NOW + 1, acked=-9_000, heard=1_000)
    assert value == 500 and mask & _budget_script.REBUILT
    model.counts = {}
    mask, value, _, _ = exchange(model, "b", at=NOW + 2)
    assert value == 10_000 and mask & _budget_script.FRESH


def test_for_a_horizon_after_a_rebuild_each_members_view_can_only_lower_the_counts():
    """Rebuilt from a stale view (8,000), the level is lowered by a member that heard 2,000 - within the horizon only."""
    model = Ledger()
    exchange(model, "a", -9_000)
    model.counts = {}
    assert exchange(model, "b", at=NOW + 1, heard=8_000)[1] == 8_000  # rebuilt from b's view
    mask, value, _, _ = exchange(model, "a", -9_000, at=NOW + 2, acked=-9_000, heard=2_000)
    assert value == 2_000 and mask & _budget_script.LOWERED
    assert (
        exchange(model, "c", at=NOW + 1 + 1_200_000, heard=1_000)[1] == 2_000
    )  # the horizon is over


def test_a_window_lost_keeps_what_its_members_owed_but_no_credit():
    """A RetryBudget's counts gone: a member that heard the window 3,000 in debt rebuilds that debt; one that heard credit rebuilds none."""
    model = Ledger()
    exchange(model, "a", -3_000, kind=WINDOW)
    model.counts = {}
    assert (
        exchange(model, "a", -3_000, at=NOW + 1, acked=-3_000, heard=-3_000, kind=WINDOW)[1]
        == -3_000
    )
    model.counts = {}
    assert exchange(model, "a", -3_000, at=NOW + 2, acked=-3_000, heard=2_000, kind=WINDOW)[1] == 0


def test_a_poisoned_level_is_dropped_and_rebuilt_from_the_member():
    """A level of 1e17, or a word, is no level: rebuilt from what the member heard, and the script says it repaired."""
    for poison in ("1e17", "many"):
        model = Ledger()
        exchange(model, "a", -6_000)
        model.counts["level"] = poison
        mask, value, _, _ = exchange(model, "a", -6_000, at=NOW + 1, acked=-6_000, heard=4_000)
        assert value == 4_000 and mask & REPAIRED


def window_exchange(twins, at, acked, cumulative, heard="", kind=WINDOW):
    """Member a's exchange of a RetryBudget's window, in Redis and the model alike."""
    return twins.run("a", at, *TIMING, 0, acked, cumulative, 0, 0, heard, 0, *kind)


def test_a_future_or_poisoned_slot_of_a_window_is_dropped(client):
    """1e17 in a slot a window ahead counts for nothing, nor in one that has left the
    window: dropped, and said so.  In the current one it was the fleet's count of that slot,
    lost: the window's room (the reserve of 3,000 here, and the 1,000 deposited) is counted
    spent, and nothing is lent (Redis and the model alike) - whether or not the exchange
    deposits more (500) into the current slot."""
    slot = NOW // 750_000
    for more in (0, 500):
        for field, value, lease in (
            (slot + 3, 1_000 + more, 4_000 + more),
            (slot - 2, 1_000 + more, 4_000 + more),
            (slot, -3_000, 0),
        ):
            twins = Twins(client, "BUDGET")
            window_exchange(twins, NOW, 0, 1_000)
            twins.poison(("counts", str(field), "1e17"), "a")
            mask, got, _, lent = window_exchange(twins, NOW + 1, 1_000, 1_000 + more)
            assert mask & REPAIRED and (got, lent) == (value, lease), (field, more)
            assert bool(mask & _budget_script.LOWERED) == (field == slot), (field, more)
            assert twins.model.counts[slot] == value, (field, more)


def test_a_poisoned_slot_just_ahead_of_the_clock_but_within_the_window_is_lost(client):
    """An exchange an interval before its slot ends counts the next slot in its window:
    poison there is a count lost, as in the current slot."""
    slot = NOW // 750_000
    late = (slot + 1) * 750_000 - 500  # the interval (1,000 us) reaches the next slot
    twins = Twins(client, "BUDGET")
    window_exchange(twins, late - 1, 0, 1_000)
    twins.poison(("counts", str(slot + 1), "many"), "a")
    mask, value, _, lease = window_exchange(twins, late, 1_000, 1_000)
    assert mask & _budget_script.LOWERED and (value, lease) == (-3_000, 0)


def test_a_lost_slot_counts_the_room_spent_and_debt_heard_deeper_stands(client):
    """The current slot, 4,000 in debt, poisoned: its count is lost, so the window's room
    (the reserve, 3,000) is counted spent - the other members may have spent it since this
    one last heard; a member that heard the window deeper in debt brings that debt back.
    Either way nothing is lent."""
    slot = NOW // 750_000
    for heard, value in ((-4_000, -4_000), (2_000, -3_000), (-3_500, -3_500)):
        twins = Twins(client, "BUDGET")
        window_exchange(twins, NOW, 0, -4_000)
        twins.poison(("counts", str(slot), "1e17"), "a")
        mask, got, _, lease = window_exchange(twins, NOW + 1, -4_000, -4_000, heard)
        assert mask & REPAIRED and mask & _budget_script.LOWERED, heard
        assert (got, lease, twins.model.counts[slot]) == (value, 0, value), heard


def test_a_slot_lost_while_the_window_is_in_debt_forgives_none_of_it(client):
    """The window 5,000 in debt, 2,000 beyond its reserve (room -2,000), and the slot
    before poisoned: nothing is left to count spent, and the debt stands as it was."""
    slot = NOW // 750_000
    twins = Twins(client, "BUDGET")
    window_exchange(twins, NOW, 0, -5_000)
    twins.poison(("counts", str(slot - 1), "many"), "a")
    mask, value, _, lease = window_exchange(twins, NOW + 1, -5_000, -5_000)
    assert mask & REPAIRED and not mask & _budget_script.LOWERED
    assert (value, lease, twins.model.counts[slot]) == (-5_000, 0, -5_000)


def test_a_lost_slot_keeps_the_current_one_readable(client):
    """Room beyond what one slot may hold lost with a slot (a reserve of 8,000, a slot
    holding at most 5,000 here): the current slot goes down to -5,000, no further - below,
    it would be poison itself, and dropped at the next exchange."""
    small = ("window", 1_000, 750_000, 2, 8_000, 5_000)
    slot = NOW // 750_000
    twins = Twins(client, "BUDGET")
    window_exchange(twins, NOW, 0, 1_000, kind=small)
    twins.poison(("counts", str(slot - 1), "many"), "a")
    mask, value, _, lease = window_exchange(twins, NOW + 1, 1_000, 1_000, kind=small)
    assert mask & _budget_script.LOWERED and twins.model.counts[slot] == -5_000
    assert (value, lease) == (-5_000, 3_000)
    # An exchange that withdrew more than a slot holds (6,000) in one go: that count is
    # itself dropped, as poison; the room is counted spent down to -5,000, as above.
    twins = Twins(client, "BUDGET")
    window_exchange(twins, NOW, 0, 0, kind=small)
    twins.poison(("counts", str(slot - 1), "many"), "a")
    mask, value, _, lease = window_exchange(twins, NOW + 1, 0, -6_000, kind=small)
    assert twins.model.counts[slot] == -5_000 and (value, lease) == (-5_000, 3_000)
    assert window_exchange(twins, NOW + 2, -6_000, -6_000, kind=small)[3] == 3_000  # and stays


def test_room_counted_spent_stays_spent_when_the_current_slot_is_leaving(client):
    """A window of one slot, an exchange within an interval of the slot's end (the slot
    about to leave: its deposit of 2,000 lends nothing) finds the next slot poisoned: the
    reserve (10,000) is counted spent in that next slot, and the next exchange lends
    nothing either - spent from the leaving slot, it came back as 2,000."""
    one = ("window", 1_000, 1_000_000, 1, 10_000, 10**11)
    slot = NOW // 1_000_000
    late = (slot + 1) * 1_000_000 - 500  # the interval (1,000 us) reaches the next slot
    twins = Twins(client, "BUDGET")
    window_exchange(twins, late - 2, 0, 2_000, kind=one)
    twins.poison(("counts", str(slot + 1), "many"), "a")
    mask, value, _, lease = window_exchange(twins, late - 1, 2_000, 2_000, kind=one)
    assert mask & _budget_script.LOWERED and (value, lease) == (-8_000, 0)
    assert twins.model.counts[slot + 1] == -10_000
    assert window_exchange(twins, late, 2_000, 2_000, kind=one)[3] == 0


def test_a_dropped_slot_other_than_the_current_one_lowers_the_window_too():
    """A slot ahead of the clock dropped: the member heard the window 1,000 in debt, and
    that debt stands, the current slot lowered to it.  A slot of the window whose count is
    a word: lost, the window's room (reserve 3,000 and the 1,000 deposited) counted spent."""
    slot = NOW // 750_000
    for field, poison, value in ((slot + 3, 5_000, -1_000), (slot - 1, "many", -3_000)):
        model = Ledger()
        exchange(model, "a", 1_000, kind=WINDOW)
        model.counts[field] = poison
        mask, got, _, _ = exchange(
            model, "a", 1_000, at=NOW + 1, acked=1_000, heard=-1_000, kind=WINDOW
        )
        assert mask & REPAIRED and mask & _budget_script.LOWERED, field
        assert got == value and model.counts[slot] == value, field


def test_window_counts_leave_after_the_window_and_deposits_about_to_leave_are_not_lent():
    """2 slots of 0.75 s: a deposit lends nothing from the moment it leaves within one interval, and is gone a window later."""
    model = Ledger()
    slot = 750_000
    start = (NOW // slot) * slot  # the start of a slot
    assert exchange(model, "a", 5_000, at=start, kind=WINDOW)[1::2] == (
        5_000,
        8_000,
    )  # reserve 3,000 + 5,000
    assert exchange(model, "a", 5_000, at=start + slot, acked=5_000, kind=WINDOW)[1::2] == (
        5_000,
        8_000,
    )
    at = start + 2 * slot - 100_000  # the deposit leaves at 2 slots: within one interval
    mask, value, _, lease = exchange(model, "a", 5_000, at=at, acked=5_000, kind=WINDOW)
    assert (value, lease) == (5_000, 3_000) and mask & _budget_script.LEAVING
    mask, value, _, lease = exchange(
        model, "a", 5_000, at=start + 2 * slot, acked=5_000, kind=WINDOW
    )
    assert (value, lease) == (0, 3_000) and mask & _budget_script.OLD


def test_withdrawals_about_to_leave_still_count_against_the_room():
    """A negative slot is counted until it has left: lending never runs ahead of the window."""
    model = Ledger()
    slot = 750_000
    start = (NOW // slot) * slot
    exchange(model, "a", -2_000, at=start, kind=WINDOW)
    value, _, lease = exchange(
        model, "a", -2_000, at=start + 2 * slot - 1, acked=-2_000, kind=WINDOW
    )[1:]
    assert (value, lease) == (-2_000, 1_000)


FAST = (100_000, 300_000, 1_200_000, 6_000)  # sync_interval=0.1: a horizon of 1.2 s, kept 60 s
SLOW = (1_000_000, 3_000_000, 12_000_000, 60_000)  # sync_interval=1: 12 s, kept 600 s


@pytest.mark.parametrize("script", ["BUDGET", "THROTTLE"])
def test_members_of_one_fleet_with_different_sync_intervals_keep_each_other(client, script):
    """A process with sync_interval=1 (horizon 12 s) in a fleet whose others use 0.1 (1.2 s), as in a rolling deploy that changes it: a fast member's exchange neither forgets the slow one (it took its lease back and counted one process, every time) nor drops what a slow one forgot as impossible, and says nothing was repaired (Redis and the model alike)."""
    twins = Twins(client, script)
    extra = ("", 0, *LEVEL) if script == "BUDGET" else THROTTLE
    twins.run("x", NOW, *SLOW, 0, 0, 1_000, 0, 0, *extra)  # a slow member, about to crash
    twins.run("s", NOW + 13_000_000, *SLOW, 0, 0, 0, 0, 0, *extra)  # forgets x, keeps its a: 600 s
    got = twins.run("a", NOW + 13_000_001, *FAST, 0, 0, 0, 0, 0, *extra)
    assert not got[0] & REPAIRED, got
    assert got[2 if script == "BUDGET" else 3] == 2  # n: a and s
    assert "s" in twins.state()[1] and "a:x" in twins.state()[2]
    if script == "BUDGET":  # s holds the lease it was lent alone: a is lent none of it
        assert (got[3], twins.state()[2]["l:s"]) == (0, "10000")


def test_the_longest_horizon_is_a_stores_at_its_longest_sync_interval():
    """The bound the scripts allow any member is the horizon of a RedisStore at sync_interval=60, the longest it takes."""
    assert LONGEST_HORIZON == round(Timing(60.0, 0.0).horizon * 1e6) == 720_000_000


def test_ghosts_a_stray_client_wrote_to_the_demand_are_dropped(client):
    """Entries of the demand key no exchange could have written (scored beyond any member's horizon) are dropped and said: they counted as members wanting room for good, and cut a failing member's lease to one retry's worth (Redis and the model alike)."""
    twins = Twins(client, "BUDGET")
    for member in "ab":
        twins.run(member, NOW, *TIMING, 0, 0, 0, 0, 0, "", 0, *LEVEL)
    bound = NOW + 1 + LONGEST_HORIZON  # the next exchange's now, plus the longest horizon
    ghosts = {"ghost-0": NOW * 4, "ghost-1": NOW * 4, "ghost-2": bound + 1, "edge": bound}
    client.zadd(twins.keys[3], ghosts)
    for ghost, score in ghosts.items():
        twins.model.demand.add(ghost, score)
    mask, _, n, lease = twins.run("a", NOW + 1, *TIMING, 0, 0, 0, 0, 3, "", 0, *LEVEL)
    assert mask & REPAIRED and n == 2
    # half the room: its share beside the one at the bound (with the ghosts, one retry's worth)
    assert lease == 5_000
    assert twins.state()[3] == {"a": NOW + 1 + TIMING[1], "edge": bound}


def test_a_rebuild_by_a_slower_member_is_lowered_by_a_faster_ones_view(client):
    """Counts lost and rebuilt by a member with sync_interval=1 (its horizon 12 s) from a stale view: a member with 0.1 that heard less lowers them, as any member's view may for the rebuilder's horizon (it took the rebuild's end for a stray value and kept the higher level)."""
    twins = Twins(client, "BUDGET")
    for member, timing in (("s", SLOW), ("a", FAST)):
        twins.run(member, NOW, *timing, 0, 0, 0, 0, 0, "", 0, *LEVEL)
    twins.poison("delete counts", "s")
    assert twins.run("s", NOW + 1, *SLOW, 0, 0, 0, 0, 0, 8_000, 0, *LEVEL)[1] == 8_000
    mask, value, _, _ = twins.run("a", NOW + 2, *FAST, 0, 0, 0, 0, 0, 2_000, 0, *LEVEL)
    assert value == 2_000 and mask & _budget_script.LOWERED and not mask & REPAIRED
