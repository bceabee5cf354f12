"""addressbook-query filters: parsing (RFC 6352 §10.5), collations and exact evaluation."""

from __future__ import annotations

import pytest
from lxml import etree

from oxidav.collation import fold, text_matches
from oxidav.contacts.errors import (
    BadRequestError,
    UnsupportedCollationError,
    UnsupportedFilterError,
)
from oxidav.contacts.evaluate import card_matches
from oxidav.contacts.filters import (
    ALLOF,
    Filter,
    ParamFilter,
    PropFilter,
    TextMatch,
    parse_filter,
    parse_limit,
)
from oxidav.contacts.vcard import parse_vcards
from tests.support.contacts_samples import card

C = "urn:ietf:params:xml:ns:carddav"


def xml(body: str) -> etree._Element:
    return etree.fromstring(f'<C:filter xmlns:C="{C}" xmlns:D="DAV:" {body}')


JANE = parse_vcards(
    card(
        "jane",
        "Jane Doe",
        n="Doe;Jane;;;",
        emails=("jane@Example.com", "jd@home.example"),
        tels=("+1 555 0100",),
        org="ACME Ltd.",
        extra=("NICKNAME:Janie", "item1.X-ABLABEL:Best"),
    )
)[0]
STRASSE = parse_vcards(card("s", "Straße Ångström", version="4.0", tels=("+49-30-1234",)))[0]


def test_parse_full_filter() -> None:
    flt = parse_filter(
        xml(
            'test="allof">'
            '<C:prop-filter name="email" test="allof">'
            '<C:text-match collation="i;octet" match-type="starts-with" negate-condition="yes">x'
            "</C:text-match>"
            '<C:param-filter name="type"><C:text-match match-type="equals">work</C:text-match>'
            "</C:param-filter>"
            '<C:param-filter name="pref"><C:is-not-defined/></C:param-filter>'
            "</C:prop-filter>"
            '<C:prop-filter name="item1.X-ABLABEL"/>'
            '<C:prop-filter name="TITLE"><C:is-not-defined/></C:prop-filter>'
            "</C:filter>"
        )
    )
    assert flt == Filter(
        test=ALLOF,
        prop_filters=(
            PropFilter(
                name="EMAIL",
                test=ALLOF,
                text_matches=(TextMatch("x", "i;octet", "starts-with", negate=True),),
                param_filters=(
                    ParamFilter("TYPE", text_match=TextMatch("work", match_type="equals")),
                    ParamFilter("PREF", is_not_defined=True),
                ),
            ),
            PropFilter(name="X-ABLABEL", group="ITEM1"),
            PropFilter(name="TITLE", is_not_defined=True),
        ),
    )


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            '><C:prop-filter name="FN"><C:text-match collation="i;foo">x</C:text-match>'
            "</C:prop-filter></C:filter>",
            UnsupportedCollationError,
        ),
        (
            '><C:prop-filter name="FN"><C:text-match match-type="regex">x</C:text-match>'
            "</C:prop-filter></C:filter>",
            UnsupportedFilterError,
        ),
        ("><C:prop-filter><C:is-not-defined/></C:prop-filter></C:filter>", UnsupportedFilterError),
        ('test="some"></C:filter>', UnsupportedFilterError),
        ('><C:comp-filter name="VCARD"/></C:filter>', UnsupportedFilterError),
        (
            '><C:prop-filter name="FN"><C:is-not-defined/><C:text-match>x</C:text-match>'
            "</C:prop-filter></C:filter>",
            UnsupportedFilterError,
        ),
        (
            '><C:prop-filter name="FN"><C:text-match negate-condition="maybe">x</C:text-match>'
            "</C:prop-filter></C:filter>",
            UnsupportedFilterError,
        ),
    ],
)
def test_parse_errors(body: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        parse_filter(xml(body))


def test_parse_limit() -> None:
    assert parse_limit(None) is None
    limit = etree.fromstring(f'<C:limit xmlns:C="{C}"><C:nresults>7</C:nresults></C:limit>')
    assert parse_limit(limit) == 7
    dav = etree.fromstring('<D:limit xmlns:D="DAV:"><D:nresults>0</D:nresults></D:limit>')
    assert parse_limit(dav) == 0
    for bad in ("<C:nresults>x</C:nresults>", "<C:nresults>-1</C:nresults>", ""):
        with pytest.raises(BadRequestError):
            parse_limit(etree.fromstring(f'<C:limit xmlns:C="{C}">{bad}</C:limit>'))


@pytest.mark.parametrize(
    ("value", "needle", "collation", "match_type", "expected"),
    [
        ("Jane@Example.com", "example", "i;ascii-casemap", "contains", True),
        ("Jane@Example.com", "example", "i;octet", "contains", False),
        ("Jane@Example.com", "Example", "i;octet", "contains", True),
        ("Straße", "STRASSE", "i;unicode-casemap", "equals", True),
        ("Straße", "STRASSE", "i;ascii-casemap", "equals", False),
        ("Ångström", "ÅNGSTRÖM", "i;ascii-casemap", "equals", False),
        ("Ångström", "ångström", "i;unicode-casemap", "equals", True),
        ("e\u0301clair", "\u00e9CLAIR", "i;unicode-casemap", "equals", True),
        ("jane doe", "JANE", "i;unicode-casemap", "starts-with", True),
        ("jane doe", "DOE", "i;unicode-casemap", "starts-with", False),
        ("jane doe", "DOE", "i;unicode-casemap", "ends-with", True),
        ("jane doe", "", "i;octet", "contains", True),
    ],
)
def test_collations(
    value: str, needle: str, collation: str, match_type: str, expected: bool
) -> None:
    assert text_matches(value, needle, collation, match_type) is expected


def test_fold_is_a_per_character_map() -> None:
    # The property the SQL pre-filter relies on: fold(a + b) == fold(a) + fold(b).
    samples = ["Straße", "ÅNGSTRÖM", "e\u0301", "ǅ", "℡", "İstanbul", "ﬃ", "Σίσυφος"]
    for a in samples:
        for b in samples:
            assert fold(a + b) == fold(a) + fold(b)
    assert fold("℡") == "tel"


def prop(name: str, *children: str, test: str = "anyof") -> str:
    return f'<C:prop-filter name="{name}" test="{test}">{"".join(children)}</C:prop-filter>'


def tm(
    text: str, match: str = "contains", collation: str = "i;unicode-casemap", negate: bool = False
) -> str:
    neg = "yes" if negate else "no"
    return (
        f'<C:text-match collation="{collation}" match-type="{match}" negate-condition="{neg}">'
        f"{text}</C:text-match>"
    )


def matches(vcard_filter: str, test: str = "anyof", vcard: object = JANE) -> bool:
    flt = parse_filter(xml(f'test="{test}">{vcard_filter}</C:filter>'))
    return card_matches(vcard, flt)  # type: ignore[arg-type]


def test_evaluation_basics() -> None:
    assert matches("")  # empty filter matches all
    assert matches(prop("EMAIL", tm("example.com")))
    assert matches(prop("EMAIL", tm("HOME.EXAMPLE", "ends-with")))
    assert not matches(prop("EMAIL", tm("nobody")))
    assert matches(prop("FN", tm("jane", "starts-with")))
    assert not matches(prop("FN", tm("doe", "starts-with")))
    assert matches(prop("FN", tm("Jane Doe", "equals", "i;octet")))
    assert matches(prop("N", tm("Doe;Jane", "starts-with")))
    assert matches(prop("ORG", tm("acme")))
    assert matches(prop("NICKNAME", tm("janie", "equals")))
    assert matches(prop("TEL", tm("555 01")))
    assert matches(prop("TITLE", "<C:is-not-defined/>"))
    assert not matches(prop("FN", "<C:is-not-defined/>"))
    assert matches(prop("X-ABLABEL"))
    assert matches(prop("ITEM1.X-ABLABEL"))
    assert not matches(prop("ITEM2.X-ABLABEL"))


def test_tel_uri_matches_like_text() -> None:
    assert matches(prop("TEL", tm("+49-30", "starts-with")), vcard=STRASSE)
    assert matches(prop("FN", tm("STRASSE", "starts-with")), vcard=STRASSE)


def test_negation_is_per_property_instance() -> None:
    # One EMAIL does not contain "example.com"-with-capital, the other does: negate matches.
    assert matches(prop("EMAIL", tm("Example.com", collation="i;octet", negate=True)))
    # Both contain "example": negation fails on both instances.
    assert not matches(prop("EMAIL", tm("example", negate=True)))
    # An absent property never matches a (negated) text-match.
    assert not matches(prop("TITLE", tm("x", negate=True)))


def test_prop_filter_test_attribute() -> None:
    both = (tm("jane"), tm("home"))
    # anyof: one EMAIL instance matching either text-match is enough
    assert matches(prop("EMAIL", *both))
    # allof: one instance must satisfy both: none does (jane@Example.com has no "home")
    assert not matches(prop("EMAIL", *both, test="allof"))
    assert matches(prop("EMAIL", tm("jd"), tm("home"), test="allof"))


def test_filter_test_attribute() -> None:
    yes, no = prop("FN", tm("jane")), prop("FN", tm("zzz"))
    assert matches(yes + no, "anyof")
    assert not matches(yes + no, "allof")
    assert matches(yes + yes, "allof")


def test_param_filters() -> None:
    type_work = '<C:param-filter name="TYPE">' + tm("work", "equals") + "</C:param-filter>"
    type_fax = '<C:param-filter name="TYPE">' + tm("fax", "equals") + "</C:param-filter>"
    assert matches(prop("EMAIL", type_work))
    assert not matches(prop("EMAIL", type_fax))
    assert matches(prop("EMAIL", '<C:param-filter name="TYPE"/>'))
    assert matches(
        prop("EMAIL", '<C:param-filter name="PREF"><C:is-not-defined/></C:param-filter>')
    )
    assert not matches(prop("EMAIL", '<C:param-filter name="PREF"/>'))
    not_work = (
        '<C:param-filter name="TYPE">' + tm("work", "equals", negate=True) + "</C:param-filter>"
    )
    assert matches(prop("EMAIL", not_work))  # the home EMAIL
    # allof on one instance: the work EMAIL containing "jane"
    assert matches(prop("EMAIL", tm("jane"), type_work, test="allof"))
    assert not matches(prop("EMAIL", tm("jd@"), type_work, test="allof"))


def test_bare_and_comma_types() -> None:
    vcard = parse_vcards(card("b", "B", extra=("TEL;WORK;VOICE:1", 'EMAIL;TYPE="home,pref":x@y')))[
        0
    ]
    voice = '<C:param-filter name="TYPE">' + tm("voice", "equals") + "</C:param-filter>"
    pref = '<C:param-filter name="TYPE">' + tm("pref", "equals") + "</C:param-filter>"
    assert matches(prop("TEL", voice), vcard=vcard)
    assert matches(prop("EMAIL", pref), vcard=vcard)
