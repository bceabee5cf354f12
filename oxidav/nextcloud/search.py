"""``SEARCH`` (RFC 5323 DASL) over the user's file tree, the subset Nextcloud clients send.

A ``DAV:searchrequest`` holding one ``DAV:basicsearch`` (RFC 5323 §5):

- ``select/prop``: the properties to answer (enrichers included, as in PROPFIND);
- ``from/scope``: ``href`` ``/files/<user>/<path>`` (relative to ``/remote.php/dav``, or the
  absolute URL path) with ``depth`` ``1`` or ``infinity`` — only the caller's own tree;
- ``where``: ``and``/``or``/``not`` of ``like`` on ``displayname``; ``eq``/``like`` on
  ``getcontenttype`` (folders are ``httpd/unix-directory``); ``gt``/``gte``/``lt``/``lte``/``eq``
  on ``getlastmodified`` (Unix seconds or an RFC 1123 date), ``getcontentlength``/``oc:size``;
  ``eq`` on ``oc:favorite`` and ``oc:fileid``; ``is-collection`` (§5.18);
- ``orderby/order``: ``prop`` + ``ascending``/``descending`` (§5.6);
- ``limit/nresults`` (§5.17) and Nextcloud's ``nc:firstresult`` offset.

The query runs as one SQL statement on the tree's rows; the answer is a 207 multistatus
(RFC 5323 §2.3) whose responses are built from the files provider's own resources, so the
hrefs and property values are exactly PROPFIND's. An unsupported operator or property is 400
(§2.3 ``DAV:search-grammar-supported`` is not enforced more finely than that).
"""

from __future__ import annotations

import email.utils
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from lxml import etree
from sqlalchemy import ColumnElement, and_, exists, false, func, not_, or_, true
from wsgidav.dav_error import HTTP_BAD_REQUEST, HTTP_FORBIDDEN, HTTP_NOT_FOUND, DAVError

from oxidav import urls
from oxidav.db.models.nextcloud import Favorite
from oxidav.db.models.tree import Node
from oxidav.environ import base_path_of
from oxidav.nextcloud.enrichers import NC, OC, OC_FAVORITE, OC_FILEID, OC_SIZE
from oxidav.providers.dav.enrichment import enrichers
from oxidav.providers.dav.multistatus import property_names, response_bytes, send_multistatus
from oxidav.providers.files.context import Target
from oxidav.tree import InvalidName, normalize_path, resolve
from oxidav.tree.names import subtree_bounds
from oxidav.tree.nodes import select_live
from oxidav.tree.types import NodeInfo

D = "{DAV:}"
BASICSEARCH = D + "basicsearch"
DISPLAYNAME = D + "displayname"
CONTENT_TYPE = D + "getcontenttype"
LAST_MODIFIED = D + "getlastmodified"
CONTENT_LENGTH = D + "getcontentlength"
#: RFC 5323 §5.18: the advertised query grammar (OPTIONS ``DASL`` header).
DASL = "<DAV:basicsearch>"

_COMPARE = {"eq", "gt", "gte", "lt", "lte", "like"}


class SearchError(ValueError):
    """The search request is not in the supported grammar (400)."""


@dataclass(frozen=True)
class Query:
    user: str
    scope: str  # tree path of the scope folder
    depth: str  # "0", "1" or "infinity"
    props: list[str]
    where: etree._Element | None
    order: list[tuple[str, bool]]  # (property, descending)
    limit: int | None
    offset: int


def _one(parent: etree._Element, tag: str) -> etree._Element:
    found = parent.find(tag)
    if found is None:
        raise SearchError(f"missing {tag}")
    return found


def _scope_path(href: str, base_path: str = "") -> tuple[str, str]:
    """``/files/<user>/<path>`` (or ``[base_path]/remote.php/dav/files/…``) -> (user, tree
    path)."""
    path = unquote(href.strip())
    if "://" in path:
        path = "/" + path.split("://", 1)[1].partition("/")[2]
    if base_path and path.startswith(base_path + urls.DAV_ROOT + "/"):
        path = path[len(base_path) :]
    if path.startswith(urls.DAV_ROOT + "/"):
        path = path[len(urls.DAV_ROOT) :]
    prefix = urls.FILES[len(urls.DAV_ROOT) :] + "/"  # "/files/"
    if not path.startswith(prefix):
        raise SearchError("the scope must be below /files/<user>/")
    user, _, rest = path[len(prefix) :].partition("/")
    if not user:
        raise SearchError("the scope names no user")
    try:
        return user, normalize_path(rest)
    except InvalidName as exc:
        raise SearchError(str(exc)) from None


def parse(body: etree._Element, base_path: str = "") -> Query:
    """The ``Query`` of a ``DAV:searchrequest`` body; ``SearchError`` if unsupported.
    ``base_path``: the prefix an absolute scope href may start with."""
    if body.tag != D + "searchrequest":
        raise SearchError("the body is not a DAV:searchrequest")
    basic = _one(body, BASICSEARCH)
    select_el = _one(basic, D + "select")
    prop = select_el.find(D + "prop")
    props = property_names(prop) if prop is not None else []
    if not props:
        props = [D + "resourcetype"]
    scope = _one(_one(basic, D + "from"), D + "scope")
    user, path = _scope_path(_one(scope, D + "href").text or "", base_path)
    depth = (scope.findtext(D + "depth") or "infinity").strip().lower()
    if depth not in ("0", "1", "infinity"):
        raise SearchError(f"unsupported depth {depth!r}")
    where = basic.find(D + "where")
    conditions = [c for c in where if isinstance(c.tag, str)] if where is not None else []
    if len(conditions) > 1:
        raise SearchError("DAV:where holds more than one expression")
    order: list[tuple[str, bool]] = []
    orderby = basic.find(D + "orderby")
    for item in orderby.findall(D + "order") if orderby is not None else []:
        order_prop = item.find(D + "prop")
        names = (
            [c.tag for c in order_prop if isinstance(c.tag, str)] if order_prop is not None else []
        )
        if len(names) != 1:
            raise SearchError("DAV:order needs exactly one property")
        order.append((names[0], item.find(D + "descending") is not None))
    limit: int | None = None
    offset = 0
    limit_el = basic.find(D + "limit")
    if limit_el is not None:
        limit = _count(limit_el.findtext(D + "nresults"), "nresults")
        offset = _count(limit_el.findtext(NC + "firstresult"), "firstresult") or 0
    return Query(
        user, path, depth, props, conditions[0] if conditions else None, order, limit, offset
    )


#: What an integer literal may look like: ASCII digits (``str.isdigit`` also takes "²", which
#: ``int`` refuses), within the 64-bit range of the columns and of ``LIMIT``.
_INTEGER = re.compile(r"-?[0-9]{1,19}\Z")
_INT64 = range(-(2**63), 2**63)


def _integer(text: str) -> int | None:
    """``text`` as a 64-bit integer, or None when it is not one."""
    text = text.strip()
    if not _INTEGER.match(text):
        return None
    value = int(text)
    return value if value in _INT64 else None


def _count(text: str | None, what: str) -> int | None:
    if text is None or not text.strip():
        return None
    value = _integer(text)
    if value is None or value < 0:
        raise SearchError(f"{what} must be a non-negative 64-bit integer")
    return value


# -- the WHERE expression ------------------------------------------------------------------


def _prop_of(expr: etree._Element) -> str:
    prop = expr.find(D + "prop")
    names = [c.tag for c in prop if isinstance(c.tag, str)] if prop is not None else []
    if len(names) != 1:
        raise SearchError(f"{etree.QName(expr).localname} needs exactly one DAV:prop")
    return names[0]


def _literal(expr: etree._Element) -> str:
    literal = expr.find(D + "literal")
    if literal is None:
        raise SearchError(f"{etree.QName(expr).localname} needs a DAV:literal")
    return literal.text or ""


def _timestamp(text: str) -> datetime:
    """A Unix time or an RFC 1123 date; a 400 for anything else, "inf" and "nan" included, and
    for times outside what ``datetime`` holds (years 1 to 9999)."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is not None:
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (ValueError, OverflowError, OSError):
            raise SearchError(f"not a time in range: {text[:40]!r}") from None
    try:
        return email.utils.parsedate_to_datetime(text).astimezone(UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        raise SearchError(f"not a time: {text[:40]!r}") from None


def _ordered(column: Any, op: str, value: Any) -> ColumnElement[bool]:
    compare = {
        "eq": column == value,
        "gt": column > value,
        "gte": column >= value,
        "lt": column < value,
        "lte": column <= value,
    }
    if op not in compare:
        raise SearchError(f"{op} is not supported on this property")
    result: ColumnElement[bool] = compare[op]
    return result


def _condition(expr: etree._Element, user_id: int) -> ColumnElement[bool]:
    """The SQL condition of one RFC 5323 §5 search expression."""
    op = etree.QName(expr).localname
    if expr.tag == D + "and" or expr.tag == D + "or":
        parts = [_condition(c, user_id) for c in expr if isinstance(c.tag, str)]
        if not parts:
            return true() if op == "and" else false()
        return and_(*parts) if op == "and" else or_(*parts)
    if expr.tag == D + "not":
        parts = [_condition(c, user_id) for c in expr if isinstance(c.tag, str)]
        if len(parts) != 1:
            raise SearchError("DAV:not takes one expression")
        return not_(parts[0])
    if expr.tag == D + "is-collection":
        return Node.is_folder.is_(True)
    if expr.tag == D + "is-defined":
        return true()
    if not expr.tag.startswith(D) or op not in _COMPARE:
        raise SearchError(f"unsupported operator {expr.tag}")
    name, literal = _prop_of(expr), _literal(expr)
    if name == DISPLAYNAME:
        if op == "like":
            return func.lower(Node.name).like(literal.lower(), escape="\\")
        if op == "eq":
            return Node.name == literal
    elif name == CONTENT_TYPE:
        if op == "like":
            return Node.mime_type.like(literal, escape="\\")
        if op == "eq":
            return Node.mime_type == literal
    elif name == LAST_MODIFIED:
        return _ordered(Node.mtime, op, _timestamp(literal))
    elif name in (CONTENT_LENGTH, OC_SIZE):
        size = _integer(literal)
        if size is None:
            raise SearchError(f"not a 64-bit size: {literal[:40]!r}")
        return _ordered(Node.size, op, size)
    elif name == OC_FILEID and op == "eq":
        file_id = _integer(literal)
        return Node.id == file_id if file_id is not None else false()
    elif name == OC_FAVORITE and op == "eq":
        starred = exists().where(Favorite.user_id == user_id, Favorite.node_id == Node.id)
        return starred if literal.strip().lower() in ("1", "true", "yes") else not_(starred)
    raise SearchError(f"{op} on {name} is not supported")


_ORDER_COLUMNS: dict[str, Any] = {
    DISPLAYNAME: Node.name,
    CONTENT_TYPE: Node.mime_type,
    LAST_MODIFIED: Node.mtime,
    CONTENT_LENGTH: Node.size,
    OC_SIZE: Node.size,
    OC_FILEID: Node.id,
    OC + "id": Node.id,
}


def run(session: Any, user_id: int, scope: NodeInfo, query: Query) -> list[NodeInfo]:
    """The nodes that match ``query`` below ``scope`` (strict descendants), in order."""
    stmt = select_live().where(Node.user_id == user_id)
    if query.depth == "0":
        stmt = stmt.where(Node.id == scope.id)
    elif query.depth == "1":
        stmt = stmt.where(Node.parent_id == scope.id)
    else:
        lo, hi = subtree_bounds(scope.path)
        stmt = stmt.where(Node.path >= lo, Node.path < hi)
    if query.where is not None:
        stmt = stmt.where(_condition(query.where, user_id))
    for name, descending in query.order:
        column = _ORDER_COLUMNS.get(name)
        if column is None:
            raise SearchError(f"cannot order by {name}")
        stmt = stmt.order_by(column.desc() if descending else column.asc())
    stmt = stmt.order_by(Node.path)
    if query.offset:
        stmt = stmt.offset(query.offset)
    if query.limit is not None:
        stmt = stmt.limit(query.limit)
    return [NodeInfo.from_row(row) for row in session.execute(stmt)]


# -- the HTTP side -------------------------------------------------------------------------


class FilesSearch:
    """The SEARCH handler registered with ``OxiRequestServer`` (any URL; the scope decides)."""

    def __call__(
        self, server: Any, environ: dict[str, Any], start_response: Any, body: etree._Element
    ) -> Iterable[bytes]:
        try:
            query = parse(body, base_path_of(environ))
        except SearchError as exc:
            raise DAVError(HTTP_BAD_REQUEST, str(exc)) from None
        username = environ.get("wsgidav.auth.user_name") or ""
        if query.user != username:
            raise DAVError(HTTP_FORBIDDEN, "SEARCH is limited to your own files")
        provider = _files_provider(environ)
        share_env = {**environ, "wsgidav.provider": provider}
        user_id = provider.backend.user_id(username)
        if user_id is None:
            raise DAVError(HTTP_NOT_FOUND)
        with provider.backend.db.read() as session:
            scope = resolve(session, user_id, query.scope)
            if scope is None or not scope.is_folder:
                raise DAVError(HTTP_NOT_FOUND, "the search scope is not a folder")
            try:
                nodes = run(session, user_id, scope, query)
            except SearchError as exc:
                raise DAVError(HTTP_BAD_REQUEST, str(exc)) from None
        # Two batched loads instead of one query per result: the nodes into the files
        # provider's request cache, and the enrichers' page (favorites, owners).
        target = Target(username, user_id, query.scope)
        provider.backend.prefetch(share_env, target, [node.path for node in nodes])
        for enricher in enrichers(environ):
            enricher.prefetch(nodes, share_env)

        def responses() -> Iterator[bytes]:
            for node in nodes:
                member = provider.get_resource_inst(f"/{username}{node.path}", share_env)
                if member is None:
                    continue
                properties = member.get_properties("named", name_list=query.props)
                yield response_bytes(member.get_href(), properties)

        return send_multistatus(environ, start_response, responses())


def _files_provider(environ: dict[str, Any]) -> Any:
    mapping = environ["wsgidav.config"]["provider_mapping"]
    provider = mapping.get(urls.FILES)
    if provider is None:
        raise DAVError(HTTP_NOT_FOUND, "no files provider is mounted")
    return provider
