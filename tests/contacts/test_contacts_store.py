"""ContactStore on SQLite and PostgreSQL: books, cards, conditions, UID conflicts, sync log."""

from __future__ import annotations

import pytest

from oxidav.contacts.errors import (
    BookExistsError,
    BookNotFoundError,
    CardTooLargeError,
    InvalidCardError,
    PreconditionFailedError,
    UidConflictError,
)
from oxidav.contacts.store import Conditions, ContactStore, card_etag
from oxidav.db import Database
from oxidav.sync import InvalidSyncToken
from tests.support.contacts_samples import add_user, card


def test_default_book_created_once(store: ContactStore, user: int) -> None:
    books = store.ensure_default(user)
    assert [(b.uri, b.displayname) for b in books] == [("contacts", "Contacts")]
    assert store.ensure_default(user) == books
    assert store.collection(user, "contacts") == books[0]


def test_books_create_update_delete(store: ContactStore, user: int, database: Database) -> None:
    book = store.create_collection(user, "work", "Work", "colleagues")
    with pytest.raises(BookExistsError):
        store.create_collection(user, "work")
    other = add_user(database)
    assert store.create_collection(other, "work").id != book.id  # URIs are per user
    updated = store.update_collection(book.id, displayname="Job")
    assert (updated.displayname, updated.description) == ("Job", "colleagues")
    store.put_object(book.id, "a.vcf", card("a", "A", emails=("a@x",)))
    store.delete_collection(book.id)
    assert store.collection(user, "work") is None
    assert store.objects(book.id) == []
    with pytest.raises(BookNotFoundError):
        store.delete_collection(book.id)
    with pytest.raises(BookNotFoundError):
        store.update_collection(book.id, displayname="x")


def test_put_get_delete(store: ContactStore, user: int) -> None:
    book = store.create_collection(user, "b")
    text = card("uid-1", "Jörg Müller", emails=("j@example.com",))
    result = store.put_object(book.id, "one.vcf", text.encode())
    assert result.created and result.etag == card_etag(text)
    stored = store.object(book.id, "one.vcf")
    assert stored is not None
    assert (stored.text, stored.uid, stored.version, stored.etag) == (
        text,
        "uid-1",
        "3.0",
        result.etag,
    )
    assert stored.size == len(text.encode())
    changed = card("uid-1", "Jörg Müller", emails=("new@example.com",))
    again = store.put_object(book.id, "one.vcf", changed)
    assert not again.created and again.etag != result.etag
    assert [c.name for c in store.objects(book.id)] == ["one.vcf"]
    assert store.object_count(book.id) == 1
    assert store.delete_object(book.id, "one.vcf")
    assert not store.delete_object(book.id, "one.vcf")
    assert store.object(book.id, "one.vcf") is None


def test_invalid_bodies_are_refused(store: ContactStore, user: int) -> None:
    book = store.create_collection(user, "b")
    with pytest.raises(InvalidCardError):
        store.put_object(book.id, "x.vcf", b"not a card")
    with pytest.raises(CardTooLargeError):
        store.put_object(book.id, "x.vcf", card("a", "A", extra=("NOTE:" + "x" * 70000,)))
    assert store.objects(book.id) == []


def test_conditions(store: ContactStore, user: int) -> None:
    book = store.create_collection(user, "b")
    text = card("u", "U")
    # If-Match on a missing target fails (RFC 9110 §13.1.1) - WsgiDAV alone would not.
    with pytest.raises(PreconditionFailedError):
        store.put_object(book.id, "u.vcf", text, Conditions(if_match=("*",)))
    created = store.put_object(book.id, "u.vcf", text, Conditions(if_none_match=("*",)))
    with pytest.raises(PreconditionFailedError):
        store.put_object(book.id, "u.vcf", text, Conditions(if_none_match=("*",)))
    with pytest.raises(PreconditionFailedError):
        store.put_object(book.id, "u.vcf", text, Conditions(if_match=("other",)))
    with pytest.raises(PreconditionFailedError):
        store.put_object(book.id, "u.vcf", text, Conditions(if_none_match=(created.etag,)))
    updated = store.put_object(
        book.id, "u.vcf", card("u", "U2"), Conditions(if_match=("zzz", created.etag))
    )
    with pytest.raises(PreconditionFailedError):
        store.delete_object(book.id, "u.vcf", Conditions(if_match=(created.etag,)))
    with pytest.raises(PreconditionFailedError):
        store.delete_object(book.id, "gone.vcf", Conditions(if_match=("*",)))
    assert store.delete_object(book.id, "u.vcf", Conditions(if_match=(updated.etag,)))


def test_no_uid_conflict(store: ContactStore, user: int) -> None:
    book = store.create_collection(user, "b")
    other_book = store.create_collection(user, "c")
    store.put_object(book.id, "a.vcf", card("same", "A"))
    with pytest.raises(UidConflictError) as info:
        store.put_object(book.id, "b.vcf", card("same", "B"))
    assert info.value.existing_name == "a.vcf"
    assert info.value.condition == "no-uid-conflict"
    store.put_object(other_book.id, "b.vcf", card("same", "B"))  # other book: fine
    store.put_object(book.id, "a.vcf", card("renamed-uid", "A"))  # changing its own UID: fine
    store.put_object(book.id, "b.vcf", card("same", "B"))  # UID now free


def test_multiget_batches(store: ContactStore, user: int) -> None:
    book = store.create_collection(user, "b")
    for i in range(300):
        store.put_object(book.id, f"{i}.vcf", card(f"u{i}", f"N{i}"))
    names = [f"{i}.vcf" for i in range(0, 300, 2)] + ["missing.vcf"]
    found = store.objects_named(book.id, names)
    assert sorted(found) == sorted(names[:-1])
    assert found["10.vcf"].uid == "u10"


def test_sync_log(store: ContactStore, user: int) -> None:
    book = store.create_collection(user, "b")
    token0 = store.sync_token(book.id)
    store.put_object(book.id, "a.vcf", card("a", "A"))
    store.put_object(book.id, "b.vcf", card("b", "B"))
    token1 = store.sync_token(book.id)
    assert token1 != token0
    store.put_object(book.id, "a.vcf", card("a", "A2"))
    store.delete_object(book.id, "b.vcf")
    store.put_object(book.id, "c.vcf", card("c", "C"))
    delta = store.changes_since(book.id, token1, None)
    assert [(c.name, c.kind) for c in delta.changes] == [
        ("a.vcf", "modified"),
        ("b.vcf", "removed"),
        ("c.vcf", "added"),
    ]
    assert delta.token == store.sync_token(book.id)
    first = store.changes_since(book.id, None, None)
    assert sorted(c.name for c in first.changes) == ["a.vcf", "c.vcf"]
    page = store.changes_since(book.id, token1, 2)
    assert page.truncated and len(page.changes) == 2
    rest = store.changes_since(book.id, page.token, None)
    assert [c.name for c in rest.changes] == ["c.vcf"]
    # a deleted and re-created book does not accept the old tokens
    store.delete_collection(book.id)
    again = store.create_collection(user, "b")
    with pytest.raises(InvalidSyncToken):
        store.changes_since(again.id, token1, None)


def test_deleting_a_user_deletes_their_books(store: ContactStore, database: Database) -> None:
    from sqlalchemy import delete, func, select

    from oxidav.db.models.contacts import Card, CardIndex
    from oxidav.db.models.users import User

    user = add_user(database)
    book = store.create_collection(user, "b")
    store.put_object(book.id, "a.vcf", card("a", "A", emails=("a@x",)))
    with database.write() as session:
        session.execute(delete(User).where(User.id == user))
    assert store.collections(user) == []
    with database.read() as session:
        assert session.scalar(select(func.count()).select_from(Card)) == 0
        assert session.scalar(select(func.count()).select_from(CardIndex)) == 0


def test_concurrent_puts_of_one_uid(store: ContactStore, user: int) -> None:
    """Eight clients race to store the same UID under eight names: one wins, the others get
    no-uid-conflict (never an internal error), whatever the interleaving."""
    import threading

    book = store.create_collection(user, "race")
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def put(i: int) -> None:
        barrier.wait()
        try:
            store.put_object(book.id, f"n{i}.vcf", card("same-uid", f"N{i}"))
            outcomes.append("ok")
        except UidConflictError:
            outcomes.append("conflict")
        except Exception as exc:  # pragma: no cover - reported by the assertion
            outcomes.append(repr(exc))

    threads = [threading.Thread(target=put, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["conflict"] * 7 + ["ok"]
    assert len(store.objects(book.id)) == 1
