"""Conversion between vCard 3.0 (RFC 2426) and vCard 4.0 (RFC 6350), lines rewritten in place.

Only what differs between the versions is touched (RFC 6350 Appendix A); every other line,
unknown and ``X-`` properties included, passes through unchanged. Binary data is never decoded:
a 3.0 ``PHOTO;ENCODING=b;TYPE=JPEG:<base64>`` becomes the 4.0
``PHOTO:data:image/jpeg;base64,<base64>`` with the very same base64 text, and back, so a photo
survives any number of round trips byte for byte.
"""

from __future__ import annotations

import base64
import re
from copy import deepcopy
from urllib.parse import unquote_to_bytes

from oxidav.contacts.vcard import Property, VCard

#: Properties whose value is binary data or a URI to it, with the media type's major part.
BINARY_PROPERTIES = {"PHOTO": "image", "LOGO": "image", "SOUND": "audio", "KEY": "application"}
#: 3.0 properties that 4.0 removed (RFC 6350 Appendix A.2).
REMOVED_IN_4 = {"NAME", "MAILER", "LABEL", "CLASS", "PROFILE", "SORT-STRING"}
#: 4.0 properties and parameters that 3.0 cannot carry.
REMOVED_IN_3 = {"CLIENTPIDMAP", "XML"}
PARAMS_REMOVED_IN_3 = {"PID", "ALTID", "CALSCALE", "SORT-AS", "GEO", "TZ", "INDEX", "LEVEL"}
#: Apple's 3.0 spellings of 4.0 properties (Address Book, iOS), both ways.
APPLE_3_TO_4 = {
    "X-ADDRESSBOOKSERVER-KIND": "KIND",
    "X-ADDRESSBOOKSERVER-MEMBER": "MEMBER",
    "X-ANNIVERSARY": "ANNIVERSARY",
}
APPLE_4_TO_3 = {v4: v3 for v3, v4 in APPLE_3_TO_4.items()}
DATE_PROPERTIES = {"BDAY", "ANNIVERSARY", "X-ANNIVERSARY", "DEATHDATE"}
#: Year Apple writes for a birthday without a year, flagged by X-APPLE-OMIT-YEAR.
APPLE_NO_YEAR = "1604"
_MAGIC = {"/9j/": "jpeg", "iVBORw0KGgo": "png", "R0lGOD": "gif", "UklGR": "webp"}
_EXTENDED_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(T[\d:]+(?:[.,]\d+)?(?:Z|[+-][\d:]+)?)?$")
_BASIC_DATE = re.compile(r"^(\d{4}|--)(\d{2})(\d{2})(T\d{2,6}(?:Z|[+-]\d{2,4})?)?$")


def convert(card: VCard, version: str) -> VCard:
    """A copy of ``card`` as a vCard of ``version`` ("3.0" or "4.0"); ``card`` is unchanged."""
    if version not in ("3.0", "4.0"):
        raise ValueError(f"cannot convert to vCard {version}")
    result = deepcopy(card)
    if card.version == version:
        return result
    rewrite = _to_v4 if version == "4.0" else _to_v3
    seen: set[str] = set()
    props: list[Property] = []
    for prop in result.properties:
        if prop.name == "VERSION":
            prop.value = version
            props.append(prop)
            continue
        converted = rewrite(prop, seen)
        if converted is not None:
            props.append(converted)
    result.properties = props
    return result


# --- 3.0 -> 4.0 -----------------------------------------------------------------------------


def _to_v4(prop: Property, seen: set[str]) -> Property | None:
    if prop.name in REMOVED_IN_4:
        return None
    prop.name = APPLE_3_TO_4.get(prop.name, prop.name)
    _bare_params_to_types(prop)
    if prop.name in BINARY_PROPERTIES:
        _binary_to_v4(prop)
    elif prop.name in DATE_PROPERTIES:
        _date_to_v4(prop)
    elif prop.name == "GEO" and ";" in prop.value and not prop.value.startswith("geo:"):
        prop.value = "geo:" + ",".join(part.strip() for part in prop.value.split(";", 1))
    _types_to_v4(prop)
    return prop


def _bare_params_to_types(prop: Property) -> None:
    """``TEL;WORK;VOICE`` (2.1 habit) becomes ``TEL;TYPE=WORK,VOICE``; a bare ``BASE64`` is
    Apple's spelling of ``ENCODING=b``."""
    bare = [name for name, values in prop.params if not values]
    if not bare:
        return
    prop.params = [(name, values) for name, values in prop.params if values]
    types = [name for name in bare if name != "BASE64"]
    if "BASE64" in bare:
        prop.set_param("ENCODING", ["b"])
    if types:
        prop.set_param("TYPE", (prop.param("TYPE") or []) + types)


def _types_to_v4(prop: Property) -> None:
    """``TYPE=pref`` becomes ``PREF=1`` (RFC 6350 §5.3); ``TYPE=internet`` on EMAIL, the only
    kind 4.0 knows, is dropped."""
    types = prop.param("TYPE")
    if types is None:
        return
    kept: list[str] = []
    pref = False
    for value in types:
        for part in value.split(","):
            word = part.strip()
            if word.upper() == "PREF":
                pref = True
            elif not (prop.name == "EMAIL" and word.upper() == "INTERNET") and word:
                kept.append(word)
    if kept:
        prop.set_param("TYPE", kept)
    else:
        prop.remove_param("TYPE")
    if pref and not prop.has_param("PREF"):
        prop.params.append(("PREF", ["1"]))


def _binary_to_v4(prop: Property) -> None:
    encoding = [value.upper() for value in prop.param("ENCODING") or []]
    types = prop.param("TYPE") or []
    media = types[0] if types else None
    if "B" in encoding or "BASE64" in encoding:
        data = "".join(prop.value.split())
        subtype = (media or _sniff(data) or "octet-stream").lower()
        major = "application" if subtype == "octet-stream" else BINARY_PROPERTIES[prop.name]
        prop.value = f"data:{major}/{subtype};base64,{data}"
        prop.remove_param("ENCODING")
        prop.remove_param("TYPE")
    elif [value.upper() for value in prop.param("VALUE") or []] in (["URI"], ["URL"]):
        prop.remove_param("VALUE")
        if media and "/" not in media:
            prop.remove_param("TYPE")
            prop.set_param("MEDIATYPE", [f"{BINARY_PROPERTIES[prop.name]}/{media.lower()}"])


def _sniff(data: str) -> str | None:
    return next((kind for magic, kind in _MAGIC.items() if data.startswith(magic)), None)


def _date_to_v4(prop: Property) -> None:
    match = _EXTENDED_DATE.match(prop.value.strip())
    if match is None:
        return
    year, month, day, time = match.groups()
    omit = prop.param("X-APPLE-OMIT-YEAR")
    if omit and omit[0] == year and not time:
        prop.value = f"--{month}{day}"
        prop.remove_param("X-APPLE-OMIT-YEAR")
        return
    prop.value = f"{year}{month}{day}" + (time.replace(":", "") if time else "")


# --- 4.0 -> 3.0 -----------------------------------------------------------------------------


def _to_v3(prop: Property, seen: set[str]) -> Property | None:
    if prop.name in REMOVED_IN_3:
        return None
    if prop.name in ("FN", "N"):
        # 4.0 allows alternative representations (ALTID); 3.0 allows one FN and one N.
        if prop.name in seen:
            return None
        seen.add(prop.name)
    prop.name = APPLE_4_TO_3.get(prop.name, prop.name)
    pref = prop.param("PREF")
    for name in PARAMS_REMOVED_IN_3 | {"PREF"}:
        prop.remove_param(name)
    if prop.name in BINARY_PROPERTIES:
        _binary_to_v3(prop)
    elif prop.name in DATE_PROPERTIES:
        _date_to_v3(prop)
    elif prop.name == "TEL":
        _tel_to_v3(prop)
    elif prop.name == "GEO" and prop.value.lower().startswith("geo:"):
        prop.value = ";".join(prop.value[4:].split(";", 1)[0].split(",")[:2])
    if pref and pref[0].strip() == "1":
        prop.set_param("TYPE", [*(prop.param("TYPE") or []), "pref"])
    return prop


def _binary_to_v3(prop: Property) -> None:
    value = prop.value.strip()
    if value[:5].lower() == "data:" and "," in value:
        header, data = value[5:].split(",", 1)
        parts = header.split(";")
        media = parts[0] or "text/plain"
        if not any(part.lower() == "base64" for part in parts[1:]):
            data = base64.b64encode(unquote_to_bytes(data)).decode("ascii")
        prop.value = data
        prop.remove_param("VALUE")
        prop.remove_param("MEDIATYPE")
        prop.set_param("ENCODING", ["b"])
        prop.set_param("TYPE", [media.split("/", 1)[-1].upper()])
        return
    media_types = prop.param("MEDIATYPE")
    prop.remove_param("MEDIATYPE")
    prop.set_param("VALUE", ["uri"])
    if media_types:
        prop.set_param("TYPE", [media_types[0].split("/", 1)[-1].upper()])


def _date_to_v3(prop: Property) -> None:
    match = _BASIC_DATE.match(prop.value.strip())
    if match is None:
        return
    year, month, day, time = match.groups()
    if year == "--":
        prop.value = f"{APPLE_NO_YEAR}-{month}-{day}"
        prop.set_param("X-APPLE-OMIT-YEAR", [APPLE_NO_YEAR])
        return
    clock = ""
    if time:
        digits = time[1:].rstrip("Z").split("+")[0].split("-")[0]
        zone = time[1 + len(digits) :]
        clock = "T" + ":".join(digits[i : i + 2] for i in range(0, len(digits), 2)) + zone
    prop.value = f"{year}-{month}-{day}{clock}"


def _tel_to_v3(prop: Property) -> None:
    values = [value.lower() for value in prop.param("VALUE") or []]
    if values == ["uri"] and prop.value.lower().startswith("tel:"):
        prop.value = prop.value[4:]
        prop.remove_param("VALUE")
