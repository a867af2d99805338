"""What an owner says its nodes have left (lending.LoanBook.left), as a borrower reads it."""

from __future__ import annotations

from fractions import Fraction

from vc_scheduler import ledger
from vc_scheduler.lending import (
    MAX_FREE_NODES,
    FreeAnswer,
    LoanAsk,
    LoanBook,
    NodeLeft,
    free_answer,
    loan_pods,
    read_free,
)

CAPACITY = {"cpu": Fraction(4), "pods": Fraction(10)}
VIEW = ledger.View(instance="owner", epoch=1, live=frozenset({"owner", "b"}))


def test_what_is_left_takes_off_what_the_owner_sees_and_what_it_lent() -> None:
    book = LoanBook()
    occupying = {"u-own": {"cpu": Fraction(1), "pods": Fraction(1)}}
    assert book.left("n1", CAPACITY, occupying, VIEW, 0.0) == {"cpu": Fraction(3), "pods": Fraction(9)}
    ask = LoanAsk("b", 1, loan_pods([("u-b", "ns/p", "n1")], {"u-b": {"cpu": Fraction(2)}}))
    assert book.grant(ask, {"n1": CAPACITY}, lambda _node: occupying, VIEW, 0.0).granted
    assert book.left("n1", CAPACITY, occupying, VIEW, 0.0) == {"cpu": Fraction(1), "pods": Fraction(8)}
    # Once the owner sees the borrower's pod on the node, it is counted once.
    seen = {**occupying, "u-b": {"cpu": Fraction(2), "pods": Fraction(1)}}
    assert book.left("n1", CAPACITY, seen, VIEW, 0.0) == {"cpu": Fraction(1), "pods": Fraction(8)}
    full = {f"u{i}": {"cpu": Fraction(2), "pods": Fraction(1)} for i in range(3)}
    assert book.left("n2", CAPACITY, full, VIEW, 0.0) == {"cpu": Fraction(0), "pods": Fraction(7)}


def test_an_answer_lists_the_nodes_with_room_and_reads_back_exactly() -> None:
    answer = free_answer(
        {"n1": {"cpu": Fraction(1, 2), "pods": Fraction(3)}, "full": {"cpu": Fraction(0), "pods": Fraction(0)}}
    )
    assert [entry.node for entry in answer.nodes] == ["n1"]
    assert read_free(answer) == {"n1": {"cpu": Fraction(1, 2), "pods": Fraction(3)}}


def test_an_answer_that_breaks_a_bound_or_a_form_is_refused() -> None:
    assert read_free(FreeAnswer([NodeLeft("n1", {"cpu": "-1"})])) is None
    assert read_free(FreeAnswer([NodeLeft("n1", {"cpu": "1e999"})])) is None
    assert read_free(FreeAnswer([NodeLeft("", {"cpu": "1"})])) is None
    assert read_free(FreeAnswer([NodeLeft(f"n{i}", {"cpu": "1"}) for i in range(MAX_FREE_NODES + 1)])) is None
    many = free_answer({f"n{i}": {"cpu": Fraction(1)} for i in range(MAX_FREE_NODES + 5)})
    assert len(many.nodes) == MAX_FREE_NODES


def test_a_loan_has_landed_once_the_borrowers_away_record_lists_its_pod() -> None:
    """An owner sent only its own shards' pods never sees a borrower's pod in its cache: the borrower's
    `away` record listing the pod on the node (View.landed) ends the loan's wait (a node changes owner
    only once none waits)."""
    book = LoanBook()
    ask = LoanAsk("b", 1, loan_pods([("u-b", "ns/p", "n1")], {"u-b": {"cpu": Fraction(2)}}))
    assert book.grant(ask, {"n1": CAPACITY}, lambda _node: {}, VIEW, 0.0).granted
    assert {uid: lent[:2] for uid, lent in book.lent(VIEW, 1.0).items()} == {"u-b": ("ns/p", "n1")}
    assert book.outstanding(VIEW, 1.0) == 1
    listed = ledger.View(instance="owner", epoch=1, live=VIEW.live, landed=lambda node: {"u-b"} if node == "n1" else ())
    assert book.lent(listed, 1.0) == {} and book.outstanding(listed, 1.0) == 0
    # Counted once on the node: the record's pod and the loan are one uid.
    away = {"u-b": {"cpu": Fraction(2), "pods": Fraction(1)}}
    assert book.left("n1", CAPACITY, away, listed, 1.0) == {"cpu": Fraction(2), "pods": Fraction(9)}


def test_a_landed_loan_holds_no_room_once_its_pod_leaves_the_borrowers_record() -> None:
    """Once the borrower's `away` record lists the pod, the record counts it and the loan ends: when the
    pod finishes and leaves the record, its room is free at once (the owner never sees the pod itself;
    a loan kept would hold the room until it lapsed, a minute later)."""
    book = LoanBook()
    ask = LoanAsk("b", 1, loan_pods([("u-b", "ns/p", "n1")], {"u-b": {"cpu": Fraction(2)}}))
    assert book.grant(ask, {"n1": CAPACITY}, lambda _node: {}, VIEW, 0.0).granted
    listed = ledger.View(instance="owner", epoch=1, live=VIEW.live, landed=lambda node: {"u-b"} if node == "n1" else ())
    away = {"u-b": {"cpu": Fraction(2), "pods": Fraction(1)}}
    assert book.left("n1", CAPACITY, away, listed, 1.0) == {"cpu": Fraction(2), "pods": Fraction(9)}
    assert not book.lends_on("n1")  # (the loan ended with its landing)
    finished = ledger.View(instance="owner", epoch=1, live=VIEW.live)  # the pod left the record
    assert book.left("n1", CAPACITY, {}, finished, 2.0) == CAPACITY
    own = {"u-own": ledger.Reservation("ns/own", "owner", 1, 2.0, {"cpu": "4"})}
    assert book.fits("n1", own, CAPACITY, {}, finished, 2.0) == ()
