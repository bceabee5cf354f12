"""Hypothesis strategies for the XML bodies of WebDAV, CalDAV, CardDAV and Nextcloud requests.

A body is drawn three ways: a well-formed request of the method with fuzzed names, values and
filters; such a request mutated at the byte level (truncated, bytes inserted, replaced); or a
hostile construct (DTD entities, deep nesting, many elements, invalid or foreign encodings).
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from hypothesis import strategies as st

NAMESPACES = {
    "D": "DAV:",
    "C": "urn:ietf:params:xml:ns:caldav",
    "A": "urn:ietf:params:xml:ns:carddav",
    "CS": "http://calendarserver.org/ns/",
    "OC": "http://owncloud.org/ns",
    "NC": "http://nextcloud.org/ns",
    "Z": "urn:fuzz",
}
_XMLNS = " ".join(f'xmlns:{p}="{uri}"' for p, uri in NAMESPACES.items())

PROPERTIES = [
    "D:displayname",
    "D:getetag",
    "D:getlastmodified",
    "D:getcontentlength",
    "D:getcontenttype",
    "D:resourcetype",
    "D:lockdiscovery",
    "D:supportedlock",
    "D:current-user-privilege-set",
    "D:owner",
    "D:acl",
    "D:sync-token",
    "D:quota-used-bytes",
    "D:quota-available-bytes",
    "D:principal-URL",
    "D:current-user-principal",
    "C:calendar-data",
    "C:calendar-home-set",
    "C:supported-calendar-component-set",
    "C:calendar-timezone",
    "A:address-data",
    "A:addressbook-home-set",
    "CS:getctag",
    "OC:fileid",
    "OC:permissions",
    "OC:size",
    "OC:favorite",
    "OC:share-types",
    "OC:checksums",
    "NC:has-preview",
    "NC:mount-type",
    "Z:dead",
    "Z:other",
]

_values = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
_names = st.sampled_from(PROPERTIES)
_words = st.sampled_from(
    [
        "",
        "VCALENDAR",
        "VEVENT",
        "VTODO",
        "VJOURNAL",
        "VALARM",
        "X",
        "FN",
        "EMAIL",
        "UID",
        "i;octet",
        "i;ascii-casemap",
        "i;unicode-casemap",
        "bogus",
        "anyof",
        "allof",
    ]
)
_stamps = st.one_of(
    st.sampled_from(
        [
            "20240101T000000Z",
            "20240301T000000Z",
            "18000101T000000Z",
            "99991231T235959Z",
            "20240101",
            "20240101T000000",
            "2024-01-01T00:00:00Z",
            "",
            "0",
            "garbage",
            "20241301T000000Z",
            "20240230T250000Z",
        ]
    ),
    _values,
)


def _text(value: str) -> str:
    return escape(value)


def _prop_list(names: list[str], as_set: bool = False) -> str:
    inner = "".join(f"<{n}/>" for n in names)
    return f"<D:prop>{inner}</D:prop>"


@st.composite
def _propfind(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["prop", "allprop", "propname", "empty", "include"]))
    if kind == "prop":
        inner = _prop_list(draw(st.lists(_names, max_size=12)))
    elif kind == "allprop":
        inner = "<D:allprop/>"
    elif kind == "include":
        inner = (
            "<D:allprop/><D:include>"
            + "".join(f"<{n}/>" for n in draw(st.lists(_names, max_size=5)))
            + "</D:include>"
        )
    elif kind == "propname":
        inner = "<D:propname/>"
    else:
        inner = ""
    return f"<D:propfind {_XMLNS}>{inner}</D:propfind>"


@st.composite
def _proppatch(draw: st.DrawFn) -> str:
    ops = []
    for _ in range(draw(st.integers(0, 4))):
        verb = draw(st.sampled_from(["set", "remove", "bogus"]))
        props = []
        for name in draw(st.lists(_names, min_size=0, max_size=4)):
            value = draw(
                st.one_of(
                    _values.map(_text),
                    st.builds(
                        lambda v: f"<Z:child a={quoteattr(v)}>{escape(v)}</Z:child>", _values
                    ),
                    st.just("<![CDATA[<x>]]>"),
                    st.just("<!-- c --><?pi x?>"),
                )
            )
            props.append(f"<{name}>{value}</{name}>")
        ops.append(f"<D:{verb}><D:prop>{''.join(props)}</D:prop></D:{verb}>")
    return f"<D:propertyupdate {_XMLNS}>{''.join(ops)}</D:propertyupdate>"


@st.composite
def _lockinfo(draw: st.DrawFn) -> str:
    scope = draw(st.sampled_from(["exclusive", "shared", "bogus"]))
    kind = draw(st.sampled_from(["write", "read"]))
    owner = draw(
        st.one_of(
            _values.map(_text),
            st.builds(lambda v: f"<D:href>{escape(v)}</D:href>", _values),
            st.builds(lambda v: f"<Z:who x={quoteattr(v)}>{escape(v)}</Z:who>", _values),
            st.just(""),
        )
    )
    owner_xml = draw(st.sampled_from([f"<D:owner>{owner}</D:owner>", ""]))
    return (
        f"<D:lockinfo {_XMLNS}><D:lockscope><D:{scope}/></D:lockscope>"
        f"<D:locktype><D:{kind}/></D:locktype>{owner_xml}</D:lockinfo>"
    )


@st.composite
def _comp_filter(draw: st.DrawFn, depth: int = 0) -> str:
    name = draw(_words)
    parts = []
    if draw(st.booleans()):
        start, end = draw(_stamps), draw(_stamps)
        parts.append(f"<C:time-range start={quoteattr(start)} end={quoteattr(end)}/>")
    if draw(st.booleans()):
        collation = draw(_words)
        negate = draw(st.sampled_from(["yes", "no", "maybe"]))
        parts.append(
            f"<C:prop-filter name={quoteattr(draw(_words))}>"
            f"<C:text-match collation={quoteattr(collation)} negate-condition={quoteattr(negate)}>"
            f"{_text(draw(_values))}</C:text-match></C:prop-filter>"
        )
    if draw(st.booleans()):
        parts.append("<C:is-not-defined/>")
    if depth < 3 and draw(st.booleans()):
        parts.append(draw(_comp_filter(depth + 1)))
    return f"<C:comp-filter name={quoteattr(name)}>{''.join(parts)}</C:comp-filter>"


@st.composite
def _calendar_data(draw: st.DrawFn) -> str:
    choice = draw(st.sampled_from(["plain", "expand", "limit", "comp", "none"]))
    if choice == "none":
        return ""
    if choice == "plain":
        return "<C:calendar-data/>"
    if choice == "expand":
        return (
            f"<C:calendar-data><C:expand start={quoteattr(draw(_stamps))} "
            f"end={quoteattr(draw(_stamps))}/></C:calendar-data>"
        )
    if choice == "limit":
        return (
            f"<C:calendar-data><C:limit-recurrence-set start={quoteattr(draw(_stamps))} "
            f"end={quoteattr(draw(_stamps))}/></C:calendar-data>"
        )
    return (
        f"<C:calendar-data><C:comp name={quoteattr(draw(_words))}>"
        f"<C:prop name={quoteattr(draw(_words))}/><C:allprop/></C:comp></C:calendar-data>"
    )


@st.composite
def _calendar_query(draw: st.DrawFn) -> str:
    props = "".join(f"<{n}/>" for n in draw(st.lists(_names, max_size=4)))
    return (
        f"<C:calendar-query {_XMLNS}><D:prop>{props}{draw(_calendar_data())}</D:prop>"
        f"<C:filter>{draw(_comp_filter())}</C:filter>"
        f"{draw(st.sampled_from(['', '<C:timezone>BEGIN:VCALENDAR</C:timezone>']))}"
        f"</C:calendar-query>"
    )


_hrefs = st.one_of(
    st.sampled_from(
        [
            "/remote.php/dav/calendars/alice/personal/seed.ics",
            "/remote.php/dav/addressbooks/users/alice/contacts/seed.vcf",
            "/remote.php/dav/calendars/bob/personal/x.ics",
            "/remote.php/dav/calendars/alice/personal/%2e%2e/x",
            "http://evil.example/remote.php/dav/calendars/alice/personal/seed.ics",
            "seed.ics",
            "",
            "/remote.php/dav/calendars/alice/personal/%ff",
            "/remote.php/dav/files/alice/a.txt",
        ]
    ),
    _values,
)


@st.composite
def _multiget(draw: st.DrawFn, root: str, data: str) -> str:
    hrefs = "".join(f"<D:href>{escape(h)}</D:href>" for h in draw(st.lists(_hrefs, max_size=8)))
    props = "".join(f"<{n}/>" for n in draw(st.lists(_names, max_size=4)))
    return f"<{root} {_XMLNS}><D:prop>{props}{data}</D:prop>{hrefs}</{root}>"


_match_types = st.sampled_from(["equals", "contains", "starts-with", "ends-with", "x"])


@st.composite
def _addressbook_query(draw: st.DrawFn) -> str:
    filters = []
    for _ in range(draw(st.integers(0, 3))):
        filters.append(
            f"<A:prop-filter name={quoteattr(draw(_words))} test={quoteattr(draw(_words))}>"
            f"<A:text-match collation={quoteattr(draw(_words))} "
            f"match-type={quoteattr(draw(_match_types))}>"
            f"{_text(draw(_values))}</A:text-match>"
            f"<A:param-filter name={quoteattr(draw(_words))}><A:is-not-defined/></A:param-filter>"
            f"</A:prop-filter>"
        )
    limit = draw(
        st.sampled_from(
            [
                "",
                "<A:limit><A:nresults>2</A:nresults></A:limit>",
                "<A:limit><A:nresults>-1</A:nresults></A:limit>",
                "<A:limit><A:nresults>99999999999999999999999</A:nresults></A:limit>",
                "<A:limit><A:nresults>x</A:nresults></A:limit>",
            ]
        )
    )
    data = draw(
        st.sampled_from(
            [
                "<A:address-data/>",
                "",
                '<A:address-data><A:prop name="FN"/></A:address-data>',
                '<A:address-data content-type="text/vcard" version="4.0"/>',
                '<A:address-data content-type="application/vcard+json"/>',
            ]
        )
    )
    return (
        f"<A:addressbook-query {_XMLNS}><D:prop><D:getetag/>{data}</D:prop>"
        f"<A:filter test={quoteattr(draw(_words))}>{''.join(filters)}</A:filter>{limit}"
        f"</A:addressbook-query>"
    )


@st.composite
def _sync_collection(draw: st.DrawFn) -> str:
    token = draw(
        st.one_of(
            st.sampled_from(
                [
                    "",
                    "http://sabre.io/ns/sync/1",
                    "http://sabre.io/ns/sync/-1",
                    "http://sabre.io/ns/sync/99999999999999999999999",
                    "garbage",
                    "1",
                ]
            ),
            _values,
        )
    )
    level = draw(st.sampled_from(["1", "infinite", "0", "x"]))
    limit = draw(
        st.sampled_from(
            [
                "",
                "<D:limit><D:nresults>1</D:nresults></D:limit>",
                "<D:limit><D:nresults>-5</D:nresults></D:limit>",
            ]
        )
    )
    props = "".join(f"<{n}/>" for n in draw(st.lists(_names, max_size=4)))
    return (
        f"<D:sync-collection {_XMLNS}><D:sync-token>{escape(token)}</D:sync-token>"
        f"<D:sync-level>{level}</D:sync-level>{limit}<D:prop>{props}</D:prop></D:sync-collection>"
    )


@st.composite
def _free_busy(draw: st.DrawFn) -> str:
    return (
        f"<C:free-busy-query {_XMLNS}><C:time-range start={quoteattr(draw(_stamps))} "
        f"end={quoteattr(draw(_stamps))}/></C:free-busy-query>"
    )


@st.composite
def _expand_property(draw: st.DrawFn) -> str:
    def one(depth: int) -> str:
        name = draw(
            st.sampled_from(
                [
                    "principal-URL",
                    "calendar-home-set",
                    "group-member-set",
                    "current-user-principal",
                    "displayname",
                    "bogus",
                ]
            )
        )
        ns = draw(st.sampled_from(["DAV:", "urn:ietf:params:xml:ns:caldav", ""]))
        inner = one(depth + 1) if depth < 3 and draw(st.booleans()) else ""
        return f"<D:property name={quoteattr(name)} namespace={quoteattr(ns)}>{inner}</D:property>"

    return f"<D:expand-property {_XMLNS}>{one(0)}{one(0)}</D:expand-property>"


@st.composite
def _files_report(draw: st.DrawFn) -> str:
    rules = "".join(
        f"<OC:favorite>{_text(draw(_values))}</OC:favorite>" for _ in range(draw(st.integers(0, 2)))
    )
    return (
        f"<OC:filter-files {_XMLNS}><D:prop><OC:fileid/><D:getetag/></D:prop>"
        f"<OC:filter-rules>{rules}</OC:filter-rules></OC:filter-files>"
    )


@st.composite
def _mkcol_extended(draw: st.DrawFn, root: str = "D:mkcol") -> str:
    types = draw(
        st.lists(
            st.sampled_from(["<D:collection/>", "<C:calendar/>", "<A:addressbook/>", "<Z:odd/>"]),
            max_size=3,
        )
    )
    comps = "".join(
        f"<C:comp name={quoteattr(draw(_words))}/>" for _ in range(draw(st.integers(0, 3)))
    )
    extra = "".join(
        f"<{n}>{_text(draw(_values))}</{n}>" for n in draw(st.lists(_names, max_size=3))
    )
    return (
        f"<{root} {_XMLNS}><D:set><D:prop><D:resourcetype>{''.join(types)}</D:resourcetype>"
        f"<D:displayname>{_text(draw(_values))}</D:displayname>"
        f"<C:supported-calendar-component-set>{comps}</C:supported-calendar-component-set>"
        f"{extra}</D:prop></D:set></{root}>"
    )


@st.composite
def _search(draw: st.DrawFn) -> str:
    op = draw(st.sampled_from(["eq", "lt", "gt", "lte", "gte", "like", "is-collection", "bogus"]))
    prop = draw(_names)
    literal = draw(
        st.one_of(
            st.sampled_from(
                [
                    "inf",
                    "-inf",
                    "nan",
                    "12345678901234567890123",
                    "%",
                    "",
                    "2024-01-01T00:00:00Z",
                    "1",
                    "httpd/unix-directory",
                ]
            ),
            _values,
        )
    )
    scope = draw(
        st.sampled_from(
            [
                "/files/alice",
                "/files/alice/sub",
                "/files/bob",
                "/files/alice/../bob",
                "",
                "files/alice",
            ]
        )
    )
    limit = draw(
        st.sampled_from(
            [
                "",
                "<D:limit><D:nresults>3</D:nresults></D:limit>",
                "<D:limit><D:nresults>-1</D:nresults></D:limit>",
            ]
        )
    )
    return (
        f"<D:searchrequest {_XMLNS}><D:basicsearch><D:select><D:prop><D:displayname/>"
        f"<{prop}/></D:prop></D:select><D:from><D:scope><D:href>{escape(scope)}</D:href>"
        f"<D:depth>{draw(st.sampled_from(['infinity', '1', '0', 'x']))}</D:depth></D:scope>"
        f"</D:from><D:where><D:{op}><D:prop><{prop}/></D:prop><D:literal>{escape(literal)}"
        f"</D:literal></D:{op}></D:where><D:orderby><D:order><D:prop><{prop}/></D:prop>"
        f"<D:{draw(st.sampled_from(['ascending', 'descending']))}/></D:order></D:orderby>"
        f"{limit}</D:basicsearch></D:searchrequest>"
    )


#: The well-formed body of each (method, kind).
WELL_FORMED: dict[str, st.SearchStrategy[str]] = {
    "propfind": _propfind(),
    "proppatch": _proppatch(),
    "lock": _lockinfo(),
    "calendar-query": _calendar_query(),
    "calendar-multiget": _multiget("C:calendar-multiget", "<C:calendar-data/>"),
    "addressbook-query": _addressbook_query(),
    "addressbook-multiget": _multiget("A:addressbook-multiget", "<A:address-data/>"),
    "sync-collection": _sync_collection(),
    "free-busy-query": _free_busy(),
    "expand-property": _expand_property(),
    "filter-files": _files_report(),
    "mkcol": _mkcol_extended(),
    "mkcalendar": _mkcol_extended("C:mkcalendar"),
    "search": _search(),
}


def _hostile(document: str) -> st.SearchStrategy[bytes]:
    """Hostile forms of ``document`` (a well-formed body)."""
    root_end = document.index(">") + 1
    head, tail = document[:root_end], document[root_end:]
    declarations = [
        '<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
        '<!DOCTYPE d [<!ENTITY x "expanded">]>',
        '<!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY x "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>',
        '<!DOCTYPE d SYSTEM "http://127.0.0.1:1/x.dtd">',
        '<!DOCTYPE d [<!ENTITY % p SYSTEM "http://127.0.0.1:1/x"> %p;]>',
    ]
    with_entity = st.sampled_from(declarations).map(
        lambda decl: (decl + head + tail.replace("</", "&x;</", 1)).encode()
    )
    nested = st.integers(10, 1000).map(
        lambda n: (head + "<Z:n>" * n + "</Z:n>" * n + tail).encode()
    )
    many = st.integers(10, 5000).map(lambda n: (head + "<Z:e/>" * n + tail).encode())
    encodings = st.sampled_from(
        [
            ("<?xml version='1.0' encoding='utf-16'?>" + document).encode("utf-16"),
            ("<?xml version='1.0' encoding='latin-1'?>" + document).encode("utf-8"),
            ("<?xml version='1.0' encoding='bogus'?>" + document).encode("utf-8"),
            b"\xef\xbb\xbf" + document.encode(),
            document.encode()[: len(head)] + b"\xff\xfe\xc0\xaf" + document.encode()[len(head) :],
            document.encode().replace(b">", b">\x00", 1),
            b"",
            b"not xml at all",
            b"<a>" * 3,
            document.replace('xmlns:D="DAV:"', 'xmlns:D=""').encode(),
            document.replace("D:", "").replace("xmlns:", "xmlns:q").encode(),
        ]
    )
    return st.one_of(with_entity, nested, many, encodings)


def _mutated(document: str) -> st.SearchStrategy[bytes]:
    data = document.encode("utf-8")

    @st.composite
    def mutate(draw: st.DrawFn) -> bytes:
        result = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            where = draw(st.integers(0, len(result)))
            action = draw(st.sampled_from(["cut", "insert", "replace", "truncate"]))
            if action == "truncate":
                del result[where:]
            elif action == "cut":
                del result[where : where + draw(st.integers(1, 20))]
            elif action == "insert":
                result[where:where] = draw(st.binary(min_size=1, max_size=12))
            elif where < len(result):
                result[where] = draw(st.integers(0, 255))
        return bytes(result)

    return mutate()


def bodies(kind: str) -> st.SearchStrategy[bytes]:
    """Bodies for ``kind`` (a key of ``WELL_FORMED``): well-formed, mutated, or hostile."""
    well_formed = WELL_FORMED[kind]
    return st.one_of(
        well_formed.map(lambda doc: doc.encode("utf-8")),
        well_formed.flatmap(_mutated),
        well_formed.flatmap(_hostile),
    )
