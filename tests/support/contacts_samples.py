"""Sample vCards for the contacts tests: small, readable builders for 3.0 and 4.0 cards."""

from __future__ import annotations

import base64
import hashlib
import itertools

from sqlalchemy import insert

from oxidav.db import Database
from oxidav.db.models.users import User

#: A real (tiny) JPEG: the SOI/JFIF header and EOI around some bytes, long enough to fold.
JPEG = (
    b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    + hashlib.sha256(b"photo").digest() * 8
    + b"\xff\xd9"
)
JPEG_B64 = base64.b64encode(JPEG).decode("ascii")


def card(
    uid: str,
    fn: str,
    *,
    version: str = "3.0",
    emails: tuple[str, ...] = (),
    tels: tuple[str, ...] = (),
    org: str | None = None,
    n: str | None = None,
    photo: bool = False,
    extra: tuple[str, ...] = (),
) -> str:
    """A vCard with CRLF line ends; ``extra`` lines are inserted verbatim."""
    lines = ["BEGIN:VCARD", f"VERSION:{version}", f"UID:{uid}", f"FN:{fn}"]
    if n is not None:
        lines.append(f"N:{n}")
    for i, email in enumerate(emails):
        lines.append(f"EMAIL;TYPE={'work' if i == 0 else 'home'}:{email}")
    for tel in tels:
        if version == "4.0":
            lines.append(f"TEL;VALUE=uri;TYPE=cell:tel:{tel}")
        else:
            lines.append(f"TEL;TYPE=CELL:{tel}")
    if org is not None:
        lines.append(f"ORG:{org}")
    if photo:
        if version == "4.0":
            lines.append(f"PHOTO:data:image/jpeg;base64,{JPEG_B64}")
        else:
            lines.append(f"PHOTO;ENCODING=b;TYPE=JPEG:{JPEG_B64}")
    lines.extend(extra)
    lines.append("END:VCARD")
    return "\r\n".join(lines) + "\r\n"


_names = itertools.count(1)


def add_user(db: Database) -> int:
    """A user row (no password needed for storage tests); returns its id."""
    with db.write() as session:
        user_id = session.execute(
            insert(User)
            .values(username=f"cuser{next(_names)}", password_hash="x")
            .returning(User.id)
        ).scalar_one()
    return int(user_id)
