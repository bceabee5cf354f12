"""Concurrent writers in one tree: no deadlock, no lost roll-up (both backends)."""

from __future__ import annotations

import threading

from oxidav.tree import make_folder, move_node, resolve, write_file
from oxidav.tree.listing import list_subtree
from tests.support.tree import CountingRefs, content


def test_concurrent_writers_keep_sizes_consistent(database, user):
    refs = CountingRefs()
    lock = threading.Lock()

    class SafeRefs(CountingRefs):
        def incref(self, session, manifest_hash, n=1):
            with lock:
                refs.incref(session, manifest_hash, n)

        def decref(self, session, manifest_hash, n=1):
            with lock:
                refs.decref(session, manifest_hash, n)

    safe = SafeRefs()
    with database.write() as s:
        for t in range(4):
            make_folder(s, user, f"/t{t}")
            make_folder(s, user, f"/t{t}/deep")
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            for i in range(15):
                with database.write() as s:
                    write_file(s, safe, user, f"/t{t}/deep/f{i}", content(f"{t}-{i}", i + 1))
                if i % 5 == 4:
                    with database.write() as s:
                        move_node(s, user, f"/t{t}/deep/f{i}", f"/t{(t + 1) % 4}/m{t}-{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not errors, errors
    with database.read() as s:
        nodes = list_subtree(s, user, "")
        root = resolve(s, user, "")
        assert root is not None
        files = [n for n in nodes if not n.is_folder]
        assert len(files) == 60
        assert root.size == sum(n.size for n in files) == 4 * sum(range(1, 16))
        for folder in (n for n in nodes if n.is_folder):
            below = sum(f.size for f in files if f.path.startswith(folder.path + "/"))
            assert folder.size == below, folder.path
