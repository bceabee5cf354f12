"""The serving process's garbage-collector threshold (``oxidav.process_memory``): the members
of a listing's page, all in use while it is written, start no collection of the youngest
generation under ``GC_YOUNG_THRESHOLD``, as they do under CPython's default (both backends)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import select

from oxidav.db.models.users import User
from oxidav.process_memory import GC_YOUNG_THRESHOLD, raise_gc_threshold
from oxidav.providers.files.resources import PAGE_SIZE
from oxidav.tree import ensure_root, make_folder, write_file
from tests.support.files import url
from tests.support.live import LiveServer

CPYTHON_DEFAULT_YOUNG = 700


@contextmanager
def young_threshold(young: int) -> Iterator[None]:
    kept = gc.get_threshold()
    raise_gc_threshold(young)
    try:
        yield
    finally:
        gc.set_threshold(*kept)


@contextmanager
def collections_seen() -> Iterator[list[int]]:
    """The generation of every collection that starts while the block runs."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)


def test_raise_gc_threshold_keeps_the_older_generations() -> None:
    kept = gc.get_threshold()
    with young_threshold(12_345):
        assert gc.get_threshold() == (12_345, kept[1], kept[2])
    assert gc.get_threshold() == kept


def test_a_listing_page_starts_no_young_collection(live_server: LiveServer) -> None:
    assert live_server.services is not None
    db, chain = live_server.services.db, live_server.services.blobs
    with db.read() as session:
        user_id = session.scalar(select(User.id).where(User.username == "alice"))
    assert user_id is not None
    ensure_root(db, user_id)
    content = chain.ingest([b"x" * 100])
    with db.write() as session:
        make_folder(session, user_id, "/page")
        for i in range(PAGE_SIZE):
            write_file(session, chain, user_id, f"/page/f{i:04d}.txt", content)
    body = (
        '<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/>'
        "<d:getlastmodified/><d:getcontentlength/><d:resourcetype/></d:prop></d:propfind>"
    )

    def listing() -> list[int]:
        gc.collect()  # the count of the youngest generation starts from nothing
        with collections_seen() as seen:
            answer = live_server.request("PROPFIND", url("/page/"), body, {"Depth": "1"})
        assert answer.status == 207
        assert answer.body.count(b"<D:response>") == PAGE_SIZE + 1
        return seen

    with young_threshold(CPYTHON_DEFAULT_YOUNG):
        assert listing(), "the default threshold collects during a page"
    with young_threshold(GC_YOUNG_THRESHOLD):
        assert listing() == []
