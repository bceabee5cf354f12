"""The URL grammar of the CardDAV provider."""

from __future__ import annotations

import pytest

from oxidav.providers.carddav.context import CardDavPath


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/", CardDavPath("root")),
        ("", CardDavPath("root")),
        ("/users/", CardDavPath("users")),
        ("/users/alice", CardDavPath("home", "alice")),
        ("/users/alice/", CardDavPath("home", "alice")),
        ("/users/alice/contacts/", CardDavPath("book", "alice", "contacts")),
        ("/users/alice/contacts/a b.vcf", CardDavPath("card", "alice", "contacts", "a b.vcf")),
        ("/users/alice/contacts/x/y", CardDavPath("invalid")),
        ("/groups/x/", CardDavPath("invalid")),
    ],
)
def test_parse(path: str, expected: CardDavPath) -> None:
    assert CardDavPath.parse(path) == expected
    if expected.kind in ("book", "card"):
        assert expected.book_path == "/users/alice/contacts/"
