"""addressbook-query through the store: SQL pre-filter + exact evaluation, on both backends.

The randomized test is the guard of the pre-filter: for many filters over cards with tricky
Unicode, the store's answer must equal evaluating every card in Python.
"""

from __future__ import annotations

import random

from lxml import etree
from sqlalchemy import select

from oxidav.contacts.evaluate import card_matches
from oxidav.contacts.filters import parse_filter
from oxidav.contacts.prefilter import prefilter, prefilter_condition
from oxidav.contacts.store import QUERY_BATCH, ContactStore
from oxidav.contacts.vcard import parse_vcards
from oxidav.db import Database
from oxidav.db.models.contacts import Card
from tests.support.contacts_samples import card

C = "urn:ietf:params:xml:ns:carddav"


def flt(body: str, test: str = "anyof"):
    return parse_filter(
        etree.fromstring(f'<C:filter xmlns:C="{C}" test="{test}">{body}</C:filter>')
    )


def tm(
    text: str, match: str = "contains", collation: str = "i;unicode-casemap", negate: bool = False
) -> str:
    neg = "yes" if negate else "no"
    return (
        f'<C:text-match collation="{collation}" match-type="{match}" negate-condition="{neg}">'
        f"{text}</C:text-match>"
    )


def pf(name: str, *children: str, test: str = "anyof") -> str:
    return f'<C:prop-filter name="{name}" test="{test}">{"".join(children)}</C:prop-filter>'


def fill(store: ContactStore, book_id: int) -> None:
    people = [
        (
            "alice",
            "Alice Ångström",
            ("alice@example.com", "ali@home.test"),
            ("+1 555 0100",),
            "4.0",
        ),
        ("bob", "Bob Straße", ("bob@EXAMPLE.org",), ("+49 30 1234",), "3.0"),
        ("carol", "Carol Éclair", (), ("+1 555 0199",), "4.0"),
        ("dave", "dave_100%", ("d_100%@x.test",), (), "3.0"),
    ]
    for uid, fn, emails, tels, version in people:
        store.put_object(
            book_id, f"{uid}.vcf", card(uid, fn, version=version, emails=emails, tels=tels)
        )


def names(result) -> list[str]:
    return [c.name for c in result.cards]


def test_queries(store: ContactStore, user: int) -> None:
    book = store.create_collection(user, "q")
    fill(store, book.id)
    q = lambda body, test="anyof", limit=None: names(store.query(book.id, flt(body, test), limit))  # noqa: E731
    assert q("") == ["alice.vcf", "bob.vcf", "carol.vcf", "dave.vcf"]
    assert q(pf("EMAIL", tm("example"))) == ["alice.vcf", "bob.vcf"]
    assert q(pf("EMAIL", tm("example", collation="i;octet"))) == ["alice.vcf"]
    assert q(pf("EMAIL", tm("EXAMPLE", collation="i;ascii-casemap"))) == ["alice.vcf", "bob.vcf"]
    assert q(pf("FN", tm("bob", "starts-with"))) == ["bob.vcf"]
    assert q(pf("FN", tm("STRASSE", "ends-with"))) == ["bob.vcf"]
    assert q(pf("FN", tm("éclair", "ends-with"))) == ["carol.vcf"]
    assert q(pf("TEL", tm("+1 555", "starts-with"))) == ["alice.vcf", "carol.vcf"]
    assert q(pf("EMAIL", "<C:is-not-defined/>")) == ["carol.vcf"]
    assert q(pf("EMAIL")) == ["alice.vcf", "bob.vcf", "dave.vcf"]
    assert q(pf("EMAIL", tm("example", negate=True))) == ["alice.vcf", "dave.vcf"]
    # LIKE wildcards in the needle are literal
    assert q(pf("FN", tm("_100%"))) == ["dave.vcf"]
    assert q(pf("FN", tm("dav_"))) == []  # "_" would match "e" in LIKE
    assert q(pf("FN", tm("100%", "ends-with"))) == ["dave.vcf"]
    # anyof / allof across prop-filters
    both = pf("EMAIL", tm("example")) + pf("TEL", tm("+49", "starts-with"))
    assert q(both, "allof") == ["bob.vcf"]
    assert q(both, "anyof") == ["alice.vcf", "bob.vcf"]
    # a non-indexed property falls back to evaluating every card
    assert q(pf("VERSION", tm("4.0", "equals"))) == ["alice.vcf", "carol.vcf"]


def test_limit_truncates(store: ContactStore, user: int) -> None:
    book = store.create_collection(user, "q")
    fill(store, book.id)
    result = store.query(book.id, flt(""), limit=2)
    assert names(result) == ["alice.vcf", "bob.vcf"] and result.truncated
    exact = store.query(book.id, flt(""), limit=4)
    assert len(exact.cards) == 4 and not exact.truncated
    none = store.query(book.id, flt(pf("EMAIL", tm("nowhere"))), limit=0)
    assert none.cards == [] and not none.truncated


def test_a_book_larger_than_a_page_is_read_whole_in_name_order(
    store: ContactStore, user: int
) -> None:
    book = store.create_collection(user, "big")
    count = 2 * QUERY_BATCH + 5
    for i in range(count):
        emails = (f"p{i}@even.test",) if i % 2 == 0 else ()
        store.put_object(book.id, f"c{i:04}.vcf", card(f"c{i}", f"Person {i}", emails=emails))
    assert names(store.query(book.id, flt(""))) == [f"c{i:04}.vcf" for i in range(count)]
    even = [f"c{i:04}.vcf" for i in range(0, count, 2)]
    assert names(store.query(book.id, flt(pf("EMAIL", tm("@even"))))) == even
    limited = store.query(book.id, flt(pf("EMAIL")), limit=QUERY_BATCH + 1)
    assert names(limited) == even[: QUERY_BATCH + 1] and limited.truncated


def test_a_card_with_a_long_indexed_value_is_stored_and_found(
    store: ContactStore, user: int
) -> None:
    """No index entry limit refuses it (PostgreSQL's B-tree entries are limited to ~2.7 kB;
    its card index does not hold the value)."""
    book = store.create_collection(user, "long")
    long_name = "Long " + "x" * 20_000 + " Name"
    store.put_object(book.id, "long.vcf", card("long", long_name))
    assert names(store.query(book.id, flt(pf("FN", tm("x name"))))) == ["long.vcf"]


def test_prefilter_selects_only_candidates(
    store: ContactStore, user: int, database: Database
) -> None:
    book = store.create_collection(user, "q")
    other = store.create_collection(user, "other")
    fill(store, book.id)
    fill(store, other.id)
    for i in range(50):
        store.put_object(
            book.id, f"n{i}.vcf", card(f"n{i}", f"Filler {i}", emails=(f"f{i}@filler.test",))
        )
    found = prefilter(flt(pf("EMAIL", tm("example"))))
    assert found is not None
    with database.read() as session:
        candidates = (
            session.execute(
                select(Card.name).where(
                    Card.addressbook_id == book.id, prefilter_condition(found.shape)
                ),
                {"book": book.id, **found.params},
            )
            .scalars()
            .all()
        )
    # For i;unicode-casemap the pre-filter is exact: no card is parsed in vain.
    assert sorted(candidates) == ["alice.vcf", "bob.vcf"]
    assert prefilter(flt(pf("EMAIL", tm("x", negate=True)))) is not None  # exists
    assert prefilter(flt(pf("EMAIL", "<C:is-not-defined/>"))) is None
    assert prefilter(flt(pf("EMAIL", tm("a")) + pf("TITLE"))) is None  # anyof


def test_filters_of_one_shape_share_a_statement_with_their_own_values() -> None:
    first = prefilter(flt(pf("EMAIL", tm("alice")) + pf("FN", tm("x", match="equals"))))
    second = prefilter(flt(pf("EMAIL", tm("bob")) + pf("FN", tm("y", match="equals"))))
    assert first is not None and second is not None
    assert first.shape == second.shape
    assert first.params != second.params
    other = prefilter(flt(pf("EMAIL", tm("alice")) + pf("FN", tm("x", match="contains"))))
    assert other is not None and other.shape != first.shape


ALPHABET = [
    "a",
    "A",
    "b",
    "ß",
    "SS",
    "é",
    "e\u0301",
    "É",
    "K",
    "\u212a",
    " ",
    "@",
    ".",
    "%",
    "_",
    "ü",
]


def random_text(rng: random.Random, size: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(size))


def random_filter(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(["EMAIL", "FN", "TEL", "NOTE"])
        kind = rng.random()
        if kind < 0.1:
            parts.append(pf(name, "<C:is-not-defined/>"))
        elif kind < 0.2:
            parts.append(pf(name))
        else:
            matches = [
                tm(
                    random_text(rng, rng.randint(0, 3)),
                    rng.choice(["equals", "contains", "starts-with", "ends-with"]),
                    rng.choice(["i;octet", "i;ascii-casemap", "i;unicode-casemap"]),
                    rng.random() < 0.2,
                )
                for _ in range(rng.randint(1, 2))
            ]
            if rng.random() < 0.2:
                matches.append('<C:param-filter name="TYPE"/>')
            parts.append(pf(name, *matches, test=rng.choice(["anyof", "allof"])))
    return "".join(parts)


def test_prefilter_never_loses_a_match(store: ContactStore, user: int) -> None:
    rng = random.Random(6352)
    book = store.create_collection(user, "r")
    texts = {}
    for i in range(40):
        emails = tuple(random_text(rng, rng.randint(1, 6)) for _ in range(rng.randint(0, 2)))
        extra = (f"NOTE:{random_text(rng, 4)}",) if rng.random() < 0.5 else ()
        text = card(
            f"r{i}",
            random_text(rng, rng.randint(1, 6)),
            version=rng.choice(["3.0", "4.0"]),
            emails=emails,
            tels=(random_text(rng, 3),) if rng.random() < 0.5 else (),
            extra=extra,
        )
        store.put_object(book.id, f"r{i:02}.vcf", text)
        texts[f"r{i:02}.vcf"] = parse_vcards(text)[0]
    for _ in range(150):
        body, test = random_filter(rng), rng.choice(["anyof", "allof"])
        query = flt(body, test)
        expected = sorted(name for name, vcard in texts.items() if card_matches(vcard, query))
        assert names(store.query(book.id, query)) == expected, (body, test)
