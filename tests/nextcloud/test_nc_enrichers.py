"""The oc:/nc: enrichers against tree rows directly (no HTTP), and favorites."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from lxml import etree
from sqlalchemy import insert

from oxidav.authz.authn.principal import Principal
from oxidav.db import Database
from oxidav.db.models.users import User
from oxidav.environ import ENVIRON_PRINCIPAL
from oxidav.nextcloud import enrichers as e
from oxidav.nextcloud.favorites import list_favorites, set_favorite
from oxidav.providers.dav.enrichment import values_of
from oxidav.tree import ensure_root, list_children, make_folder, write_file
from oxidav.tree.types import NodeInfo
from tests.support.engine_events import recorded_reads

_names = itertools.count()


class _Refs:
    def incref(self, session: Any, manifest_hash: str, n: int = 1) -> None:
        pass

    def decref(self, session: Any, manifest_hash: str, n: int = 1) -> None:
        pass


class _Content:
    def __init__(self, tag: str, size: int) -> None:
        self.manifest_hash, self.size, self.content_hash = f"m{tag}", size, f"c{tag}"


def _user(db: Database, display: str = "") -> int:
    with db.write() as session:
        uid = session.execute(
            insert(User)
            .values(username=f"u{next(_names)}", password_hash="x", display_name=display)
            .returning(User.id)
        ).scalar_one()
    ensure_root(db, uid)
    return int(uid)


def _tree(db: Database, uid: int) -> tuple[NodeInfo, list[NodeInfo]]:
    with db.write() as session:
        make_folder(session, uid, "/dir")
        for i in range(5):
            write_file(session, _Refs(), uid, f"/f{i}", _Content(str(i), 10 + i), checksums=None)
        write_file(session, _Refs(), uid, "/dir/x", _Content("x", 7), checksums="SHA1:abc")
    with db.read() as session:
        from oxidav.tree import resolve

        root = resolve(session, uid, "")
        assert root is not None
        return root, list_children(session, root.id)


def _count_queries(db: Database) -> Any:
    """The SELECTs sent while the block runs (prepared reads too)."""
    return recorded_reads(db)


def test_values_for_files_and_folders(database: Database) -> None:
    uid = _user(database, display="Alice A.")
    root, children = _tree(database, uid)
    enricher = e.NodeEnricher(database, "ocinst")
    environ: dict[str, Any] = {}
    enricher.prefetch([root, *children], environ)
    folder = next(n for n in children if n.is_folder)
    file = next(n for n in children if not n.is_folder)
    assert enricher.value(file, e.OC_ID, environ) == f"{file.id:08d}ocinst"
    assert enricher.value(file, e.OC_FILEID, environ) == str(file.id)
    assert enricher.value(file, e.OC_PERMISSIONS, environ) == "RGDNVW"
    assert enricher.value(folder, e.OC_PERMISSIONS, environ) == "RGDNVCK"
    assert enricher.value(root, e.OC_SIZE, environ) == str(sum(10 + i for i in range(5)) + 7)
    assert enricher.value(folder, e.OC_SIZE, environ) == "7"
    assert enricher.value(root, e.OC_DATA_FINGERPRINT, environ) == ""
    assert enricher.value(file, e.OC_DATA_FINGERPRINT, environ) is None
    assert e.OC_DATA_FINGERPRINT in enricher.property_names(root)
    assert e.OC_DATA_FINGERPRINT not in enricher.property_names(file)
    assert enricher.value(file, e.OC_OWNER_DISPLAY_NAME, environ) == "Alice A."
    assert enricher.value(file, e.NC_HAS_PREVIEW, environ) == "false"
    share_types = enricher.value(file, e.OC_SHARE_TYPES, environ)
    assert isinstance(share_types, etree._Element) and len(share_types) == 0
    assert enricher.value(file, e.OC_FAVORITE, environ) == "0"
    assert enricher.value(file, "{DAV:}getetag", environ) is None
    assert enricher.value(file, e.OC_CHECKSUMS, environ) is None
    with database.read() as session:
        (x,) = list_children(session, folder.id)
    checksums = enricher.value(x, e.OC_CHECKSUMS, environ)
    assert isinstance(checksums, etree._Element)
    assert checksums.findtext(e.OC + "checksum") == "SHA1:abc"


def test_prefetch_is_batched(database: Database) -> None:
    uid = _user(database)
    _root, children = _tree(database, uid)
    enricher = e.NodeEnricher(database, "i")
    environ: dict[str, Any] = {}
    with _count_queries(database) as queries:
        enricher.prefetch(children, environ)
        for node in children:
            for name in enricher.property_names(node):
                enricher.value(node, name, environ)
    assert len(queries) == 2, queries  # favorites + owners, for the whole page
    with _count_queries(database) as queries:
        enricher.prefetch(children, environ)  # already known: nothing to load
    assert queries == []


def test_favorite_set_and_report_query(database: Database) -> None:
    uid = _user(database)
    _root, children = _tree(database, uid)
    enricher = e.NodeEnricher(database, "i")
    file = children[1]
    environ: dict[str, Any] = {}
    one = etree.Element(e.OC_FAVORITE)
    one.text = "1"
    assert enricher.set_value(file, e.OC_FAVORITE, one, environ) is True
    assert enricher.set_value(file, "{DAV:}displayname", one, environ) is False
    assert enricher.value(file, e.OC_FAVORITE, environ) == "1"
    fresh: dict[str, Any] = {}
    assert enricher.value(file, e.OC_FAVORITE, fresh) == "1"  # not prefetched: lazy load
    with database.write() as session:
        set_favorite(session, uid, children[0].id, True)
        set_favorite(session, uid, children[0].id, True)  # idempotent
    with database.read() as session:
        assert [n.id for n in list_favorites(session, uid)] == sorted(
            [children[0].id, file.id], key=lambda i: next(c.path for c in children if c.id == i)
        )
        assert [n.path for n in list_favorites(session, uid, below="/dir")] == ["/dir"]
    assert enricher.set_value(file, e.OC_FAVORITE, None, environ) is True
    assert enricher.value(file, e.OC_FAVORITE, {}) == "0"


def _answer(value: Any) -> Any:
    """What a value answers: an element as its text, ``""`` as the empty element."""
    if isinstance(value, etree._Element):
        if not (len(value) or value.text or value.attrib):
            return ""
        return etree.tostring(value)
    return value


def test_values_are_each_listed_names_value(database: Database) -> None:
    uid = _user(database, display="Alice A.")
    root, children = _tree(database, uid)
    with database.read() as session:
        (x,) = list_children(session, next(n for n in children if n.is_folder).id)
    shared = children[0]

    def links(db: Database, user_id: int, ids: Sequence[int]) -> list[tuple[int, int]]:
        return [(shared.id, e.SHARE_LINK)] if shared.id in ids else []

    enricher = e.NodeEnricher(database, "ocinst", share_type_sources=[links])
    environ: dict[str, Any] = {ENVIRON_PRINCIPAL: Principal(uid, "alice")}
    nodes = [root, *children, x]
    enricher.prefetch(nodes, environ)
    for node in nodes:
        expected = [
            (name, _answer(enricher.value(node, name, environ)))
            for name in enricher.property_names(node)
        ]
        found = [(name, _answer(value)) for name, value in enricher.values(node, environ)]
        assert found == expected, node.path
    kinds = dict(enricher.values(shared, environ))[e.OC_SHARE_TYPES]
    assert isinstance(kinds, etree._Element)
    assert [k.text for k in kinds] == [str(e.SHARE_LINK)]
    assert dict(enricher.values(x, environ))[e.OC_CHECKSUMS] is not None
    fresh: dict[str, Any] = {}  # never prefetched: loaded on the first ask, as by value
    assert dict(enricher.values(shared, fresh))[e.OC_OWNER_DISPLAY_NAME] == "Alice A."


class _NameByName:
    """An enricher written before ``values``: names and values one at a time."""

    def __init__(self, inner: e.NodeEnricher) -> None:
        self.inner = inner

    def property_names(self, item: Any) -> Sequence[str]:
        return self.inner.property_names(item)

    def prefetch(self, items: Sequence[Any], environ: Mapping[str, Any]) -> None:
        self.inner.prefetch(items, environ)

    def value(self, item: Any, name: str, environ: Mapping[str, Any]) -> Any:
        return self.inner.value(item, name, environ)

    def set_value(self, item: Any, name: str, value: Any, environ: Mapping[str, Any]) -> bool:
        return False


def test_an_enricher_without_values_is_asked_name_by_name(database: Database) -> None:
    uid = _user(database)
    root, children = _tree(database, uid)
    enricher = e.NodeEnricher(database, "i")
    environ: dict[str, Any] = {ENVIRON_PRINCIPAL: Principal(uid, "u")}
    enricher.prefetch([root, *children], environ)
    for node in (root, *children):
        expected = [(name, _answer(value)) for name, value in enricher.values(node, environ)]
        old = values_of(_NameByName(enricher), node, environ)  # type: ignore[arg-type]
        assert [(name, _answer(value)) for name, value in old] == expected
        assert values_of(enricher, node, environ) == enricher.values(node, environ)
