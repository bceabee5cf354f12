"""PROPFIND enrichment: extra live properties that a middleware plugs into a request.

docs/architecture.md#request-path: the Nextcloud middleware (or any other) puts ``Enricher`` objects
into the request environ under ``ENVIRON_ENRICHERS``. A collection's ``get_member_list()`` loads its
page of children in one query and then calls ``prefetch`` on each enricher once for the whole page
(one batched query each); each resource then answers an enricher's property names from what was
prefetched (``value`` one at a time; ``values`` all of an item's at once, for allprop). Without
enrichers in the environ the providers serve plain WebDAV and pay nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from lxml import etree

from oxidav.environ import ENVIRON_ENRICHERS

#: What a property getter may return: text, or a ready element (for nested XML).
PropertyValue = str | etree._Element


class Enricher(Protocol):
    """Adds live properties to resources of one provider kind.

    ``items`` are the provider's row objects (for files: the tree's node rows) for the
    resources about to be answered; ``prefetch`` is called once per page, before any ``value``
    call for those rows, and must not run one query per item.
    """

    def property_names(self, item: Any) -> Sequence[str]:
        """Clark names this enricher answers for ``item`` (listed in allprop / propname)."""
        ...

    def prefetch(self, items: Sequence[Any], environ: Mapping[str, Any]) -> None:
        """Load whatever the properties of ``items`` need, in a bounded number of queries."""
        ...

    def value(self, item: Any, name: str, environ: Mapping[str, Any]) -> PropertyValue | None:
        """The value of ``name`` for ``item``; None if this enricher does not answer it."""
        ...

    def values(
        self, item: Any, environ: Mapping[str, Any]
    ) -> Sequence[tuple[str, PropertyValue | None]]:
        """Every name ``property_names(item)`` gives, in its order, with its ``value``: an
        allprop answer's, in one call instead of one per name. Optional: an enricher without
        it is asked name by name (``values_of``)."""
        ...

    def set_value(
        self, item: Any, name: str, value: etree._Element | None, environ: Mapping[str, Any]
    ) -> bool:
        """Handle PROPPATCH of ``name`` (``value`` None = remove); False if not handled."""
        ...


def values_of(
    enricher: Enricher, item: Any, environ: Mapping[str, Any]
) -> Sequence[tuple[str, PropertyValue | None]]:
    """``enricher.values(item, environ)``; for an enricher written without it, the same from
    ``property_names`` and ``value``."""
    values = getattr(enricher, "values", None)
    if values is not None:
        found: Sequence[tuple[str, PropertyValue | None]] = values(item, environ)
        return found
    return [(name, enricher.value(item, name, environ)) for name in enricher.property_names(item)]


def enrichers(environ: Mapping[str, Any]) -> Sequence[Enricher]:
    """The enrichers installed for this request (empty without the middleware)."""
    found: Sequence[Enricher] = environ.get(ENVIRON_ENRICHERS, ())
    return found
